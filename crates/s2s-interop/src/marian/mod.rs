//! Hugging Face MarianMT (the layout of OPUS-MT's models) in and out of MODEL_DIR.
//!
//! ```text
//! import:  config.json -> config.toml (a Transformer with Marian's options)
//!          model.safetensors -> model.safetensors (names and layouts by `weights`)
//!          source.spm, target.spm, vocab.json -> tokenizer.src.json, tokenizer.tgt.json
//!          generation_config.json (num_beams, length_penalty) -> decoding.toml
//! export:  the same in reverse, plus tokenizer_config.json
//! ```
//!
//! Both write into a staging folder beside `out` and rename it into place at the end, so a failed
//! conversion leaves nothing half-written.

pub mod config;
pub mod weights;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use s2s_data::sentencepiece::{SpmModel, marian_tokenizer, to_spm};
use s2s_data::tokenizer::{MARIAN_EOS, MARIAN_PAD, MARIAN_UNK};
use s2s_data::{
    CleanConfig, DataOptions, DataToml, SourceFile, SplitStats, SplitsInfo, TextTokenizer,
    TokenizerInfo, TokenizerKind, TokenizersInfo,
};
use s2s_infer::decoding::MAX_ALPHA;
use s2s_infer::model_dir::{self, BEST, SRC_SPM, SRC_TOKENIZER, TGT_SPM, TGT_TOKENIZER};
use s2s_infer::{Decoding, RunConfig, TrainConfig};
use s2s_models::transformer::{Positions, TransformerConfig};
use s2s_models::{ModelConfig, Seq2SeqModel};

pub use config::MarianConfig;
use weights::HostTensor;

use crate::{InteropError, Result, unsupported};

/// The files of a MarianMT folder.
pub const CONFIG_JSON: &str = "config.json";
pub const WEIGHTS: &str = "model.safetensors";
pub const VOCAB_JSON: &str = "vocab.json";
pub const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
pub const GENERATION_CONFIG: &str = "generation_config.json";

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            unsupported(format!(
                "{} is missing; a MarianMT folder has {CONFIG_JSON}, {WEIGHTS}, {SRC_SPM}, \
                 {TGT_SPM} and {VOCAB_JSON}",
                path.display()
            ))
        } else {
            InteropError::io(path, e)
        }
    })
}

fn read_text(path: &Path) -> Result<String> {
    String::from_utf8(read(path)?)
        .map_err(|_| unsupported(format!("{} is not UTF-8 text", path.display())))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    s2s_data::atomic_write(&path, bytes).map_err(|e| InteropError::io(&path, e))
}

fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serialises");
    text.push('\n');
    write(dir, name, text.as_bytes())
}

/// `vocab.json` as a list of pieces in id order (ids must be `0..n`).
pub fn read_vocab(path: &Path) -> Result<Vec<String>> {
    let what = path.display().to_string();
    let map: BTreeMap<String, u32> = serde_json::from_str(&read_text(path)?)
        .map_err(|e| unsupported(format!("{what}: not a JSON object of piece -> id ({e})")))?;
    let mut vocab = vec![None; map.len()];
    for (piece, id) in map {
        match vocab.get_mut(id as usize) {
            Some(slot @ None) => *slot = Some(piece),
            _ => {
                return Err(unsupported(format!(
                    "{what}: id {id} of `{piece}` is out of range or repeated; ids must be 0..{}",
                    vocab.len()
                )));
            }
        }
    }
    Ok(vocab
        .into_iter()
        .map(|p| p.expect("every id filled"))
        .collect())
}

/// What an import wrote.
#[derive(Debug)]
pub struct Imported {
    pub out: PathBuf,
    pub vocab_size: usize,
    pub parameters: usize,
    pub model: TransformerConfig,
    /// Target-language tags in the vocabulary (multilingual models).
    pub language_tags: Vec<String>,
    /// The decoding defaults written as `decoding.toml`, when the folder states any.
    pub decoding: Option<Decoding>,
    /// What the import could not carry over as it was, for the user to hear.
    pub notes: Vec<String>,
}

/// The defaults the folder gives transformers' `generate()`, as s2s's `decoding.toml`:
/// `num_beams` and `length_penalty` (`score = logprob / L^length_penalty`, s2s's alpha) of
/// `generation_config.json`, or of `config.json` in folders older than that file. `None` when
/// neither states either (s2s's own defaults then apply). A `length_penalty` left out is
/// transformers' default, 1.0; a value s2s does not take (outside `0..=MAX_ALPHA`) leaves s2s's
/// own alpha, and a note says so.
pub fn decoding_defaults(
    src: &Path,
    generation_config: Option<&[u8]>,
    config_json: &serde_json::Value,
) -> Result<(Option<Decoding>, Vec<String>)> {
    let (name, generation) = match generation_config {
        Some(bytes) => {
            let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
                unsupported(format!(
                    "{}: not JSON ({e}); fix it, or delete it to import without its decoding defaults",
                    src.join(GENERATION_CONFIG).display()
                ))
            })?;
            (GENERATION_CONFIG, value)
        }
        None => (CONFIG_JSON, config_json.clone()),
    };
    let mut notes = Vec::new();
    let num_beams = &generation["num_beams"];
    let length_penalty = &generation["length_penalty"];
    if num_beams.is_null() && length_penalty.is_null() {
        return Ok((None, notes));
    }
    let beam = match num_beams.as_u64() {
        Some(k) if k >= 1 => k as usize,
        None if num_beams.is_null() => s2s_infer::defaults::BEAM,
        _ => {
            notes.push(format!(
                "{name}: num_beams = {num_beams} is not a beam width; decoding.toml keeps s2s's beam {}",
                s2s_infer::defaults::BEAM
            ));
            s2s_infer::defaults::BEAM
        }
    };
    const HF_LENGTH_PENALTY: f64 = 1.0;
    let alpha = match length_penalty.as_f64() {
        None if length_penalty.is_null() => HF_LENGTH_PENALTY as f32,
        Some(lp) if (0.0..=f64::from(MAX_ALPHA)).contains(&lp) => lp as f32,
        _ => {
            notes.push(format!(
                "{name}: length_penalty = {length_penalty} is outside the 0 to {MAX_ALPHA} s2s                  takes; decoding.toml keeps s2s's alpha {} (pass --alpha to choose another)",
                s2s_infer::defaults::ALPHA
            ));
            s2s_infer::defaults::ALPHA
        }
    };
    if generation["do_sample"].as_bool() == Some(true) {
        notes.push(format!(
            "{name} samples (do_sample = true); s2s decodes with beam search unless told              `--search sample`"
        ));
    }
    let stated = |v: &serde_json::Value, default: &str| {
        if v.is_null() {
            default.to_owned()
        } else {
            v.to_string()
        }
    };
    let decoding = Decoding {
        beam,
        alpha,
        from: Some(format!(
            "{name} of the imported model: num_beams {}, length_penalty {}",
            stated(num_beams, "not given"),
            stated(length_penalty, "not given (transformers' default 1.0)")
        )),
        tuned: None,
    };
    Ok((Some(decoding), notes))
}

/// Imports the MarianMT folder `src` as the MODEL_DIR `out` (absent or empty unless `force`).
pub fn import(src: &Path, out: &Path, force: bool) -> Result<Imported> {
    let file = |name: &str| src.join(name);
    if !src.is_dir() {
        return Err(unsupported(format!("{} is not a folder", src.display())));
    }
    let cfg_what = file(CONFIG_JSON).display().to_string();
    let marian = MarianConfig::parse(&read_text(&file(CONFIG_JSON))?, &cfg_what)?;
    let model_cfg = marian.to_transformer(&cfg_what)?;
    if !file(WEIGHTS).exists() {
        let fix = if file("pytorch_model.bin").exists() {
            "it has only pytorch_model.bin, which s2s does not read (pickle); convert it with \
             `MarianMTModel.from_pretrained(dir).save_pretrained(dir, safe_serialization=True)`"
        } else {
            "download the model's model.safetensors too; if it has only pytorch_model.bin, \
             convert it with transformers: \
             `MarianMTModel.from_pretrained(dir).save_pretrained(dir, safe_serialization=True)`"
        };
        return Err(unsupported(format!(
            "{} has no {WEIGHTS}: {fix}",
            src.display()
        )));
    }
    let vocab = read_vocab(&file(VOCAB_JSON))?;
    if vocab.len() != marian.vocab_size {
        return Err(unsupported(format!(
            "{} has {} entries but {CONFIG_JSON} says vocab_size = {}",
            file(VOCAB_JSON).display(),
            vocab.len(),
            marian.vocab_size
        )));
    }
    // Each input file is read once: parsed, hashed for data.toml, and the SentencePiece models
    // copied.
    let raw: HashMap<&str, Vec<u8>> = [CONFIG_JSON, WEIGHTS, VOCAB_JSON, SRC_SPM, TGT_SPM]
        .into_iter()
        .map(|name| Ok((name, read(&file(name))?)))
        .collect::<Result<_>>()?;
    let tokenizer = |spm: &str| -> Result<TextTokenizer> {
        let what = file(spm).display().to_string();
        let model = SpmModel::parse(&raw[spm], &what)?;
        Ok(marian_tokenizer(&model, &vocab, &what)?)
    };
    let (src_tok, tgt_tok) = (tokenizer(SRC_SPM)?, tokenizer(TGT_SPM)?);
    let specials = tgt_tok.specials();
    if specials.eos != marian.eos_token_id || specials.pad != marian.pad_token_id {
        return Err(unsupported(format!(
            "{cfg_what}: eos_token_id = {} and pad_token_id = {} but {VOCAB_JSON} has {MARIAN_EOS} \
             = {} and {MARIAN_PAD} = {}",
            marian.eos_token_id, marian.pad_token_id, specials.eos, specials.pad
        )));
    }

    // Weights: renamed and relaid, then loaded into the model its config.toml builds, so a
    // shape that does not fit fails here, naming the tensor.
    let weights_what = file(WEIGHTS).display().to_string();
    let hf = weights::read_safetensors(&raw[WEIGHTS], &weights_what)?;
    let d = model_cfg.d_model;
    let sinusoids = |rows: usize| {
        let t = s2s_models::transformer::positions::sinusoids(
            Positions::SinusoidalConcat,
            0,
            rows,
            d,
            &s2s_models::backend::default_device(),
        );
        HostTensor {
            shape: vec![rows, d],
            data: t.into_data().try_into_vec::<f32>().expect("f32 positions"),
        }
    };
    let s2s = weights::to_s2s(hf, &model_cfg, sinusoids, &weights_what)?;
    // OPUS-MT's `<pad>` row is zero: Marian starts decoding from a zero vector, and so will s2s
    // (which keeps it so when fine-tuning). A model with a learned start row keeps using it.
    let mut model_cfg = model_cfg;
    model_cfg.zero_start = s2s[weights::S2S_EMBEDDING].row_is_zero(marian.pad_token_id as usize);
    let bytes = weights::write_safetensors(&s2s, None)?;
    let v = vocab.len();
    let run = RunConfig {
        arch: None,
        task: Some(s2s_data::Task::Translation),
        src_vocab: v,
        tgt_vocab: v,
        src_vectors: false,
        model: ModelConfig::Transformer(model_cfg.clone()),
        train: TrainConfig::default(),
    };
    run.validate()
        .map_err(|e| unsupported(format!("{cfg_what}: {e}")))?;
    let model = Seq2SeqModel::try_new(&run.model, v, v, &s2s_models::backend::default_device())
        .map_err(|e| unsupported(format!("{cfg_what}: {e}")))?;
    let model = s2s_models::io::load_weights_bytes(model, bytes, &weights_what)?;
    let parameters = burn::module::Module::num_params(&model);

    let tok_cfg: serde_json::Value = match std::fs::read_to_string(file(TOKENIZER_CONFIG)) {
        Ok(t) => serde_json::from_str(&t).unwrap_or_default(),
        Err(_) => serde_json::Value::Null,
    };
    let lang = |key: &str| tok_cfg[key].as_str().map(str::to_owned);
    let (src_lang, tgt_lang) = (lang("source_lang"), lang("target_lang"));
    let is_chinese = |l: &Option<String>| {
        l.as_deref()
            .is_some_and(|l| ["zh", "cmn", "yue", "wuu"].iter().any(|z| l.starts_with(z)))
    };
    let config_json: serde_json::Value =
        serde_json::from_slice(&raw[CONFIG_JSON]).unwrap_or_default();
    let generation_config = match std::fs::read(file(GENERATION_CONFIG)) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(InteropError::io(file(GENERATION_CONFIG), e)),
    };
    let (decoding, notes) = decoding_defaults(src, generation_config.as_deref(), &config_json)?;
    let mut raw = raw;
    let mut files = vec![
        (CONFIG_JSON, "both"),
        (WEIGHTS, "both"),
        (VOCAB_JSON, "both"),
        (SRC_SPM, "src"),
        (TGT_SPM, "tgt"),
    ];
    if let (Some(_), Some(bytes)) = (&decoding, generation_config) {
        raw.insert(GENERATION_CONFIG, bytes);
        files.push((GENERATION_CONFIG, "both"));
    }
    let mut sources = Vec::new();
    for (name, side) in files {
        let path = file(name);
        sources.push(SourceFile {
            split: "import".into(),
            side: side.into(),
            path: std::fs::canonicalize(&path)
                .unwrap_or(path.clone())
                .display()
                .to_string(),
            sha256: s2s_data::sha256_hex(&raw[name]),
            lines: 0,
            format: "marian".into(),
            src_col: None,
            tgt_col: None,
        });
    }
    let info = |file: &str| TokenizerInfo {
        file: file.into(),
        kind: TokenizerKind::Unigram,
        vocab_size: v,
        signatures: false,
    };
    let data = DataToml {
        format_version: s2s_data::datadir::FORMAT_VERSION,
        created_by: format!("s2s import marian ({})", env!("CARGO_PKG_VERSION")),
        options: DataOptions {
            task: s2s_data::Task::Translation,
            src_tokenizer: TokenizerKind::Unigram,
            tgt_tokenizer: TokenizerKind::Unigram,
            vocab_size: v,
            src_min_freq: 0,
            tgt_min_freq: 0,
            joint: true,
            max_len: 0,
            max_src_tokens: 0,
            clean: CleanConfig::default(),
            src_is_chinese: is_chinese(&src_lang),
            tgt_is_chinese: is_chinese(&tgt_lang),
            src_lang,
            tgt_lang,
        },
        tokenizers: TokenizersInfo {
            src: info(SRC_TOKENIZER),
            tgt: info(TGT_TOKENIZER),
        },
        splits: SplitsInfo {
            train: SplitStats::default(),
            valid: None,
            test: None,
        },
        sources,
        audio: None,
        vectors: None,
    };
    let mut run = run;
    if data.options.tgt_is_chinese {
        run.train.bleu_tokenize = "zh".into();
    }

    model_dir::write_staged(out, force, |dir| -> Result<()> {
        model_dir::write_run_config(dir, &run)?;
        s2s_data::datadir::write_data_toml(dir, &data)?;
        src_tok.save(dir.join(SRC_TOKENIZER))?;
        tgt_tok.save(dir.join(TGT_TOKENIZER))?;
        s2s_models::io::save_weights(&model, &dir.join(BEST))?;
        model_dir::write_model_info(dir, &run, parameters)?;
        for name in [SRC_SPM, TGT_SPM] {
            write(dir, name, &raw[name])?;
        }
        if let Some(decoding) = &decoding {
            decoding.write(dir)?;
        }
        Ok(())
    })?;
    let language_tags = vocab
        .iter()
        .filter(|t| s2s_data::sentencepiece::is_language_tag(t))
        .cloned()
        .collect();
    Ok(Imported {
        out: out.to_path_buf(),
        vocab_size: v,
        parameters,
        model: model_cfg,
        language_tags,
        decoding,
        notes,
    })
}

/// What an export wrote.
#[derive(Debug)]
pub struct Exported {
    pub out: PathBuf,
    pub vocab_size: usize,
    /// Whether the vocabulary's ids were reordered into Marian's layout (`</s>` 0, `<unk>` 1,
    /// `<pad>` last), which s2s's own layout needs.
    pub reordered: bool,
    /// Whether the model starts decoding from a zero vector (`zero_start`), as CTranslate2's
    /// converter assumes of every Marian model; otherwise `ct2-transformers-converter` builds a
    /// model that computes something else.
    pub zero_start: bool,
}

/// Exports the Transformer in `model_dir` as a MarianMT folder `out` (absent or empty unless
/// `force`), or says which option stands in the way.
pub fn export(model_dir: &Path, out: &Path, force: bool) -> Result<Exported> {
    let run = model_dir::read_run_config(model_dir)?;
    let ModelConfig::Transformer(cfg) = &run.model else {
        return Err(unsupported(format!(
            "{} holds a recurrent, convolutional or labelling model; only Transformer translation models can be exported as MarianMT",
            model_dir.display()
        )));
    };
    let (src_tok, tgt_tok) = TextTokenizer::pair_from_files(
        model_dir.join(SRC_TOKENIZER),
        model_dir.join(TGT_TOKENIZER),
    )?;
    let s = tgt_tok.specials();
    let v = tgt_tok.vocab_size();
    let has_spm = model_dir.join(SRC_SPM).exists() && model_dir.join(TGT_SPM).exists();
    // Marian's layout: `</s>`, `<unk>`, the pieces, and `<pad>` (the decoder start). s2s's own
    // vocabulary is reordered into it: its `<bos>` row becomes Marian's `<pad>` (the token the
    // decoder starts from) and its `<pad>` row, never an input or output, is dropped.
    let (keep, names, pad, eos): (Vec<usize>, Vec<String>, u32, u32) = if tgt_tok.is_marian() {
        let names = (0..v as u32)
            .map(|id| tgt_tok.piece(id).unwrap_or_default())
            .collect();
        ((0..v).collect(), names, s.pad, s.eos)
    } else {
        if src_tok.to_json()? != tgt_tok.to_json()? {
            return Err(unsupported(
                "the model's source and target tokenizers differ; MarianMT needs one joint \
                 vocabulary: prepare the data with `--joint --tokenizer unigram`",
            ));
        }
        let specials = [s.pad, s.unk, s.bos, s.eos];
        let mut keep = vec![s.eos as usize, s.unk as usize];
        keep.extend(
            (0..v as u32)
                .filter(|id| !specials.contains(id))
                .map(|id| id as usize),
        );
        keep.push(s.bos as usize);
        let mut names: Vec<String> = keep
            .iter()
            .map(|&id| tgt_tok.piece(id as u32).unwrap_or_default())
            .collect();
        names[0] = MARIAN_EOS.into();
        names[1] = MARIAN_UNK.into();
        *names.last_mut().expect("non-empty") = MARIAN_PAD.into();
        let pad = (keep.len() - 1) as u32;
        (keep, names, pad, 0)
    };
    let marian = MarianConfig::from_transformer(cfg, keep.len(), pad, eos)?;
    let (src_spm, tgt_spm) = if has_spm {
        (
            read(&model_dir.join(SRC_SPM))?,
            read(&model_dir.join(TGT_SPM))?,
        )
    } else {
        let what = model_dir.join(SRC_TOKENIZER).display().to_string();
        let spm = to_spm(&src_tok, &what)?;
        (spm.clone(), spm)
    };
    let weights_path = model_dir::float_weights(model_dir, "export")?;
    let s2s =
        weights::read_safetensors(&read(&weights_path)?, &weights_path.display().to_string())?;
    let mut hf = weights::to_hf(s2s, cfg, &keep)?;
    if cfg.zero_start {
        // The decoder start, which s2s feeds as a zero vector, is Marian's `<pad>` row.
        let table = hf
            .get_mut(weights::HF_EMBEDDING)
            .expect("the embedding is written");
        table.zero_row(pad as usize);
    }
    let bytes = weights::write_safetensors(
        &hf,
        Some(HashMap::from([("format".to_owned(), "pt".to_owned())])),
    )?;

    let mut config = serde_json::to_value(&marian).expect("config serialises");
    let extra = serde_json::json!({
        "architectures": ["MarianMTModel"],
        "is_encoder_decoder": true,
        "forced_eos_token_id": eos,
        "bad_words_ids": [[pad]],
        "init_std": 0.02,
        "use_cache": true,
        "num_hidden_layers": cfg.enc_layers,
    });
    for (k, val) in extra.as_object().expect("object") {
        config[k] = val.clone();
    }
    // The model's own decoding defaults (`s2s tune`), which transformers' generate() then uses.
    let decoding = s2s_infer::Decoding::read(model_dir)?;
    let generation = serde_json::json!({
        "bad_words_ids": [[pad]],
        "decoder_start_token_id": pad,
        "eos_token_id": eos,
        "forced_eos_token_id": eos,
        "pad_token_id": pad,
        "num_beams": decoding.beam,
        "length_penalty": decoding.alpha,
        "max_length": 512,
    });
    let data = s2s_data::read_data_toml(model_dir).ok();
    let lang = |l: Option<&String>| l.cloned().map_or(serde_json::Value::Null, Into::into);
    let tokenizer_config = serde_json::json!({
        "tokenizer_class": "MarianTokenizer",
        "eos_token": MARIAN_EOS,
        "unk_token": MARIAN_UNK,
        "pad_token": MARIAN_PAD,
        "model_max_length": 512,
        "separate_vocabs": false,
        "sp_model_kwargs": {},
        "source_lang": lang(data.as_ref().and_then(|d| d.options.src_lang.as_ref())),
        "target_lang": lang(data.as_ref().and_then(|d| d.options.tgt_lang.as_ref())),
    });
    let vocab_json: serde_json::Map<String, serde_json::Value> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), serde_json::Value::from(i)))
        .collect();
    if vocab_json.len() != names.len() {
        return Err(unsupported(
            "the vocabulary has two entries with the same piece; it cannot be written as vocab.json",
        ));
    }
    model_dir::write_staged(out, force, |dir| -> Result<()> {
        write(dir, WEIGHTS, &bytes)?;
        write_json(dir, CONFIG_JSON, &config)?;
        write_json(dir, GENERATION_CONFIG, &generation)?;
        write_json(dir, TOKENIZER_CONFIG, &tokenizer_config)?;
        write_json(dir, VOCAB_JSON, &serde_json::Value::Object(vocab_json))?;
        write(dir, SRC_SPM, &src_spm)?;
        write(dir, TGT_SPM, &tgt_spm)?;
        Ok(())
    })?;
    Ok(Exported {
        out: out.to_path_buf(),
        vocab_size: keep.len(),
        reordered: !tgt_tok.is_marian(),
        zero_start: cfg.zero_start,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decoding_defaults` of a folder with `generation_config.json` = `generation` (none when
    /// `None`) and `config.json` = `config`.
    fn defaults_of(
        generation: Option<&str>,
        config: serde_json::Value,
    ) -> Result<(Option<Decoding>, Vec<String>)> {
        decoding_defaults(Path::new("opus-mt"), generation.map(str::as_bytes), &config)
    }

    #[test]
    fn generate_defaults_become_the_models_decoding_defaults() {
        let none = serde_json::json!({});
        // OPUS-MT's own: num_beams only, so transformers' length penalty of 1.0 applies.
        let (d, notes) =
            defaults_of(Some(r#"{"num_beams": 4, "max_length": 512}"#), none.clone()).unwrap();
        let d = d.unwrap();
        assert_eq!((d.beam, d.alpha), (4, 1.0));
        assert!(d.from.unwrap().contains(GENERATION_CONFIG));
        assert!(notes.is_empty(), "{notes:?}");
        let (d, _) = defaults_of(
            Some(r#"{"num_beams": 6, "length_penalty": 0.6}"#),
            none.clone(),
        )
        .unwrap();
        let d = d.unwrap();
        assert_eq!((d.beam, d.alpha), (6, 0.6));
        // Older folders state them in config.json; generation_config.json wins where present.
        let old = serde_json::json!({"num_beams": 3, "length_penalty": 0.5});
        let (d, _) = defaults_of(None, old.clone()).unwrap();
        let d = d.unwrap();
        assert_eq!((d.beam, d.alpha), (3, 0.5));
        assert!(d.from.unwrap().contains(CONFIG_JSON));
        let (d, _) = defaults_of(Some(r#"{"num_beams": 2}"#), old).unwrap();
        assert_eq!(d.unwrap().beam, 2);
        // Nothing stated: s2s's own defaults, and no file.
        assert!(defaults_of(Some("{}"), none.clone()).unwrap().0.is_none());
        assert!(defaults_of(None, none).unwrap().0.is_none());
    }

    #[test]
    fn what_s2s_cannot_take_is_said_and_what_is_broken_refused() {
        let none = serde_json::json!({});
        let (d, notes) = defaults_of(
            Some(r#"{"num_beams": 5, "length_penalty": -1.0, "do_sample": true}"#),
            none.clone(),
        )
        .unwrap();
        let d = d.unwrap();
        assert_eq!((d.beam, d.alpha), (5, s2s_infer::defaults::ALPHA));
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("length_penalty = -1.0"), "{notes:?}");
        assert!(notes[1].contains("do_sample"), "{notes:?}");
        let (d, notes) = defaults_of(Some(r#"{"num_beams": 0}"#), none.clone()).unwrap();
        assert_eq!(d.unwrap().beam, s2s_infer::defaults::BEAM);
        assert!(notes[0].contains("num_beams = 0"), "{notes:?}");
        let err = defaults_of(Some("{num_beams: 4"), none)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(GENERATION_CONFIG) && err.contains("delete it"),
            "{err}"
        );
    }
}
