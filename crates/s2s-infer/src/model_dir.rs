//! MODEL_DIR: the one format every producer of models writes and every consumer reads.
//!
//! ```text
//! config.toml          RunConfig: architecture and training options (validated whole on load)
//! data.toml            the data directory's record (cleaning options, tokenizers, sources)
//! tokenizer.src.json   HF tokenizers
//! tokenizer.tgt.json
//! model.safetensors    best weights
//! model.int8.safetensors  an int8 model's weights (`s2s quantize`), instead of model.safetensors
//! metrics.jsonl        one line per validation (numbers that are not finite are null)
//! decoding.toml        optional: the model's default beam and alpha (`s2s tune`; crate::decoding)
//! model.json           {"arch": ..., "parameters": N}: the model's size, for reports
//! checkpoint/          last state, enough to resume exactly (s2s-train's)
//! .lock                held while a process writes the directory (see [`lock`])
//! source.spm           imported Marian models only: the SentencePiece models the
//! target.spm           tokenizers were converted from (for `s2s export`)
//! ```
//!
//! Every file is written atomically (a temporary file `.NAME.tmp.PID.N` renamed over the old
//! one), so a reader sees the old file or the new one, never half of one. A kill can leave such a
//! temporary behind; `s2s train` and `s2s quickstart` remove those of dead processes when they
//! start.

use crate::{InferError, RunConfig};
use burn::tensor::Device;
use s2s_data::{DataDir, DataToml, TextTokenizer};
use s2s_models::Seq2SeqModel;
use std::io::Write;
use std::path::Path;

pub const CONFIG: &str = "config.toml";
pub const DATA_TOML: &str = "data.toml";
pub const SRC_TOKENIZER: &str = "tokenizer.src.json";
pub const TGT_TOKENIZER: &str = "tokenizer.tgt.json";
pub const BEST: &str = "model.safetensors";
/// An int8 model's weights ([`s2s_models::io::save_int8_weights`]), in place of [`BEST`].
pub const INT8: &str = "model.int8.safetensors";
pub const MODEL_JSON: &str = "model.json";
pub const METRICS: &str = "metrics.jsonl";
pub const LOCK: &str = ".lock";
/// The SentencePiece models an imported Marian model came with (kept for `s2s export`).
pub const SRC_SPM: &str = "source.spm";
pub const TGT_SPM: &str = "target.spm";

/// Starts a MODEL_DIR for a model trained on `data`: creates `dir`, writes `config.toml` (after
/// validating `run`) and copies in the data record and both tokenizers.
pub fn create(dir: &Path, run: &RunConfig, data: &DataDir) -> Result<(), InferError> {
    run.validate().map_err(InferError::Config)?;
    std::fs::create_dir_all(dir).map_err(|e| InferError::io(dir, e))?;
    write_run_config(dir, run)?;
    let tok = &data.meta.tokenizers;
    for (from, to) in [
        (data.path.join(DATA_TOML), DATA_TOML),
        (data.path.join(&tok.src.file), SRC_TOKENIZER),
        (data.path.join(&tok.tgt.file), TGT_TOKENIZER),
    ] {
        copy_file(&from, &dir.join(to))?;
    }
    Ok(())
}

/// Copies `from` to `to` atomically.
pub fn copy_file(from: &Path, to: &Path) -> Result<(), InferError> {
    let bytes = std::fs::read(from).map_err(|e| InferError::io(from, e))?;
    s2s_data::atomic_write(to, &bytes).map_err(|e| InferError::io(to, e))
}

/// Writes `config.toml` atomically.
pub fn write_run_config(dir: &Path, run: &RunConfig) -> Result<(), InferError> {
    let text = toml::to_string(run).map_err(|e| InferError::Config(e.to_string()))?;
    let path = dir.join(CONFIG);
    s2s_data::atomic_write(&path, text.as_bytes()).map_err(|e| InferError::io(&path, e))
}

/// Reads `config.toml` and checks all of it (model shape, vocabularies, training options), so a
/// hand-edited file is refused with a message naming the file, never a panic later.
pub fn read_run_config(dir: &Path) -> Result<RunConfig, InferError> {
    let path = dir.join(CONFIG);
    if !dir.is_dir() {
        return Err(InferError::Config(format!(
            "model directory {} does not exist; train one with `s2s train --out {}`",
            dir.display(),
            dir.display()
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            InferError::Config(format!(
                "{} is not a model directory: it has no {CONFIG}",
                dir.display()
            ))
        } else {
            InferError::io(&path, e)
        }
    })?;
    let run: RunConfig = toml::from_str(&text)
        .map_err(|e| InferError::Config(format!("{}: {e}", path.display())))?;
    run.validate().map_err(|e| {
        InferError::Config(format!(
            "{}: {e}; fix the file, or train the model again",
            path.display()
        ))
    })?;
    Ok(run)
}

/// `model.json`'s content: the preset (if any), the model family, its task and the number of trainable
/// parameters (tied or shared weights counted once), for reports such as the benchmark table.
pub fn model_info(run: &RunConfig, parameters: usize) -> serde_json::Value {
    let family = match &run.model {
        s2s_models::ModelConfig::Rnn(_) => "rnn",
        s2s_models::ModelConfig::Transformer(_) => "transformer",
        s2s_models::ModelConfig::ConvS2S(_) => "convs2s",
        s2s_models::ModelConfig::Labeller(_) => "labeller",
    };
    serde_json::json!({
        "arch": run.arch,
        "family": family,
        "task": run.task(),
        "parameters": parameters,
        "src_vocab": run.src_vocab,
        "tgt_vocab": run.tgt_vocab,
    })
}

/// Writes `MODEL_DIR/model.json` ([`model_info`]).
pub fn write_model_info(dir: &Path, run: &RunConfig, parameters: usize) -> Result<(), InferError> {
    write_json(&dir.join(MODEL_JSON), &model_info(run, parameters))
}

/// Writes `value` as pretty JSON with a final newline, atomically.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), InferError> {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serialises");
    text.push('\n');
    s2s_data::atomic_write(path, text.as_bytes()).map_err(|e| InferError::io(path, e))
}

/// A trained model ready for inference.
pub struct LoadedModel {
    pub run: RunConfig,
    pub data: DataToml,
    pub model: Seq2SeqModel,
    pub src_tokenizer: TextTokenizer,
    pub tgt_tokenizer: TextTokenizer,
    /// `decoding.toml`, or the built-in defaults.
    pub decoding: crate::Decoding,
    pub device: Device,
}

/// Loads config, tokenizers and the best weights, checking that they fit together.
pub fn load(dir: &Path, device: &Device) -> Result<LoadedModel, InferError> {
    let run = read_run_config(dir)?;
    let decoding = crate::Decoding::read(dir)?;
    let data = s2s_data::read_data_toml(dir).map_err(|e| InferError::Config(e.to_string()))?;
    let (src_tokenizer, tgt_tokenizer) =
        TextTokenizer::pair_from_files(dir.join(SRC_TOKENIZER), dir.join(TGT_TOKENIZER))
            .map_err(|e| InferError::Config(e.to_string()))?;
    // A speech model's source is frames of the data's bins, and a vector-conditioned one's
    // vectors, not the (transcripts' or texts') tokens.
    let src_side = match (&data.audio, &data.vectors) {
        (None, Some(v)) => {
            if v.dim != run.src_vocab {
                return Err(InferError::Config(format!(
                    "{} records vectors of {} numbers but {CONFIG} says the model reads {}: the data record does not belong to this model",
                    dir.join(DATA_TOML).display(),
                    v.dim,
                    run.src_vocab
                )));
            }
            None
        }
        (Some(audio), _) => {
            if audio.fbank.n_mels != run.src_vocab {
                return Err(InferError::Config(format!(
                    "{} records {} mel bins but {CONFIG} says the model reads {}: the data record does not belong to this model",
                    dir.join(DATA_TOML).display(),
                    audio.fbank.n_mels,
                    run.src_vocab
                )));
            }
            None
        }
        (None, None) => Some((&src_tokenizer, SRC_TOKENIZER, run.src_vocab)),
    };
    for (t, name, want) in
        src_side
            .into_iter()
            .chain([(&tgt_tokenizer, TGT_TOKENIZER, run.tgt_vocab)])
    {
        if t.vocab_size() != want {
            return Err(InferError::Config(format!(
                "{} has {} tokens but {CONFIG} says the model's vocabulary has {want}: the tokenizer does not belong to this model; copy the one it was trained with",
                dir.join(name).display(),
                t.vocab_size()
            )));
        }
    }
    let weights = weights(dir)?;
    let model = Seq2SeqModel::for_loading(&run.model, run.src_vocab, run.tgt_vocab, device)
        .map_err(InferError::Config)?;
    let model = match weights {
        Weights::Float(path) => s2s_models::io::load_weights(model, &path)?,
        Weights::Int8(path) => s2s_models::io::load_int8_weights(model, &path)?,
    };
    Ok(LoadedModel {
        run,
        data,
        model,
        src_tokenizer,
        tgt_tokenizer,
        decoding,
        device: device.clone(),
    })
}

/// Which weights a MODEL_DIR holds.
pub enum Weights {
    /// [`BEST`]: f32, trainable.
    Float(std::path::PathBuf),
    /// [`INT8`]: an int8 model, for inference only.
    Int8(std::path::PathBuf),
}

/// The weights file of `dir`: [`BEST`] or [`INT8`], exactly one of them.
pub fn weights(dir: &Path) -> Result<Weights, InferError> {
    let (best, int8) = (dir.join(BEST), dir.join(INT8));
    match (best.exists(), int8.exists()) {
        (true, false) => Ok(Weights::Float(best)),
        (false, true) => Ok(Weights::Int8(int8)),
        (true, true) => Err(InferError::Config(format!(
            "{} holds both {BEST} and {INT8}: remove one (`s2s quantize --out` writes an int8 model to a directory of its own)",
            dir.display()
        ))),
        (false, false) => Err(InferError::Config(format!(
            "{} has no {BEST} yet: training has not reached its first validation",
            dir.display()
        ))),
    }
}

/// The f32 weights of `dir`, for a use that needs them (`what`: training from them, averaging,
/// exporting); an int8 model's directory is refused with the fix.
pub fn float_weights(dir: &Path, what: &str) -> Result<std::path::PathBuf, InferError> {
    match weights(dir)? {
        Weights::Float(path) => Ok(path),
        Weights::Int8(_) => Err(InferError::Config(format!(
            "{} holds an int8 model ({INT8}): {what} needs the f32 model it was quantised from",
            dir.display()
        ))),
    }
}

/// Runs `fill` on a fresh staging folder beside `out`, then puts it in `out`'s place, so a
/// failure leaves nothing half-written. `out` must be absent or empty (a lock file aside) unless
/// `force`; an existing `out` is [`lock`]ed first, so a directory that a trainer (or another
/// import) is writing is refused, not replaced under it.
pub fn write_staged<E: From<InferError>>(
    out: &Path,
    force: bool,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    if let Ok(entries) = std::fs::read_dir(out)
        && entries
            .flatten()
            .any(|e| e.file_name() != std::ffi::OsStr::new(LOCK))
        && !force
    {
        return Err(InferError::Config(format!(
            "{} is not empty; choose another --out, or pass --force to replace it",
            out.display()
        ))
        .into());
    }
    // Held until `out` is replaced: the lock file goes with the old directory.
    let _lock = if out.is_dir() { Some(lock(out)?) } else { None };
    let name = out
        .file_name()
        .ok_or_else(|| InferError::Config(format!("--out {} names no folder", out.display())))?;
    let staging = out.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| InferError::io(&staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| InferError::io(&staging, e))?;
    if let Err(e) = fill(&staging) {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| InferError::io(out, e))?;
    }
    std::fs::rename(&staging, out).map_err(|e| InferError::io(out, e).into())
}

/// Exclusive use of a MODEL_DIR by one writer (`s2s train`, `s2s average`, and `s2s import`,
/// `s2s export` and `s2s quantize` replacing an existing directory), released when
/// dropped or when the process ends, however it ends (an OS file lock on `MODEL_DIR/.lock`, not
/// the file's existence, so a killed trainer never locks the directory out).
#[derive(Debug)]
pub struct ModelDirLock {
    _file: std::fs::File,
}

/// Takes the lock of `dir` (which must exist), or says which process holds it.
pub fn lock(dir: &Path) -> Result<ModelDirLock, InferError> {
    let path = dir.join(LOCK);
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| InferError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path)
                .ok()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .map(|pid| format!(" (pid {pid})"))
                .unwrap_or_default();
            return Err(InferError::Locked {
                dir: dir.display().to_string(),
                holder,
            });
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(InferError::io(&path, e)),
    }
    // The holder's pid, for the message another process gets; the lock is what counts.
    file.set_len(0).map_err(|e| InferError::io(&path, e))?;
    write!(file, "{}", std::process::id()).map_err(|e| InferError::io(&path, e))?;
    Ok(ModelDirLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_config(arch: &str) -> RunConfig {
        let (arch, model, train) = crate::config::resolve(Some(arch), None, None).unwrap();
        RunConfig {
            arch,
            task: None,
            src_vocab: 20,
            tgt_vocab: 20,
            src_vectors: false,
            model,
            train,
        }
    }

    type Edit = fn(String) -> String;

    /// Writes `run` as config.toml with `edit` applied to its text, and reads it back.
    fn read_edited(run: &RunConfig, edit: impl Fn(String) -> String) -> Result<RunConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let text = edit(toml::to_string(run).unwrap());
        std::fs::write(dir.path().join(CONFIG), text).unwrap();
        read_run_config(dir.path()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_hand_edited_config_is_refused_with_the_file_and_the_field_named() {
        for arch in ["transformer-tiny", "rnnsearch-tiny", "convs2s-tiny"] {
            let run = run_config(arch);
            assert_eq!(read_edited(&run, |t| t).unwrap(), run, "{arch} round trip");
        }
        let run = run_config("transformer-tiny");
        let cases: [(&str, Edit); 8] = [
            ("heads", |t| t.replace("heads = 2", "heads = 3")),
            ("lr", |t| t.replace("lr = 0.001", "lr = nan")),
            ("bleu_tokenize", |t| t.replace("\"13a\"", "\"klingon\"")),
            ("tgt_vocab", |t| {
                t.replace("tgt_vocab = 20", "tgt_vocab = 2")
            }),
            ("label_smoothing", |t| {
                t.replace("label_smoothing = 0.1", "label_smoothing = 1.5")
            }),
            ("max_tokens", |t| {
                t.replace("max_tokens = 4096", "max_tokens = 0")
            }),
            // A decay to zero with neither max_steps nor max_minutes to end it.
            ("schedule", |t| {
                t.lines()
                    .map(|l| match l.starts_with("schedule = ") {
                        true => "schedule = \"cosine\"",
                        false => l,
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            }),
            ("average_span", |t| {
                t.replace("average_span = 0.2", "average_span = 0.0")
            }),
        ];
        for (field, edit) in cases {
            let edited = edit(toml::to_string(&run).unwrap());
            assert_ne!(
                edited,
                toml::to_string(&run).unwrap(),
                "{field}: the edit applies"
            );
            let e = read_edited(&run, edit).unwrap_err();
            assert!(e.contains(CONFIG) && e.contains(field), "{field}: {e}");
        }
        let e = read_edited(&run, |t| t + "\nbogus = 1\n").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn a_locked_directory_is_not_replaced() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("model");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join(CONFIG), "the trainer's").unwrap();
        let held = lock(&out).unwrap();
        let fill = |dir: &Path| {
            std::fs::write(dir.join(CONFIG), "new").map_err(|e| InferError::io(dir, e))
        };
        let e = write_staged(&out, true, fill).unwrap_err().to_string();
        assert!(e.contains("in use by another s2s process"), "{e}");
        assert_eq!(
            std::fs::read_to_string(out.join(CONFIG)).unwrap(),
            "the trainer's"
        );
        assert!(!root.path().join(".model.partial").exists());
        drop(held);
        write_staged(&out, true, fill).unwrap();
        assert_eq!(std::fs::read_to_string(out.join(CONFIG)).unwrap(), "new");
        // A directory holding only a lock file is empty: no --force needed.
        let empty = root.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        drop(lock(&empty).unwrap());
        write_staged(&empty, false, fill).unwrap();
        assert!(empty.join(CONFIG).exists());
    }

    #[test]
    fn a_second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock(dir.path()).unwrap();
        let e = lock(dir.path()).unwrap_err().to_string();
        assert!(e.contains("in use by another s2s process"), "{e}");
        assert!(e.contains(&format!("pid {}", std::process::id())), "{e}");
        drop(first);
        lock(dir.path()).expect("free again once dropped");
    }
}
