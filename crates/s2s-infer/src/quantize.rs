//! `s2s quantize`: an int8 copy of a Transformer MODEL_DIR, for inference. Every linear layer and
//! the token embeddings become int8 with one scale per output row; biases, layer norms and
//! positions stay f32 (`s2s_models::engine::int8`); decoding keeps the keys and values it attends
//! over in int8 too unless asked for f32 (`s2s_models::engine::CacheFormat`). The copy translates, serves and scores like
//! its original; it cannot be trained, averaged or exported, which need the f32 weights.

use std::path::{Path, PathBuf};

use s2s_models::Seq2SeqModel;
use s2s_models::engine::CacheFormat;

use crate::InferError;
use crate::model_dir::{
    self, CONFIG, DATA_TOML, INT8, METRICS, MODEL_JSON, SRC_SPM, SRC_TOKENIZER, TGT_SPM,
    TGT_TOKENIZER,
};

/// What [`quantize`] wrote.
#[derive(Debug)]
pub struct Quantized {
    pub out: PathBuf,
    /// Layers made int8.
    pub layers: usize,
    /// Sizes of the f32 weights file read and the int8 one written.
    pub float_bytes: u64,
    pub int8_bytes: u64,
}

/// The files of a MODEL_DIR an int8 copy keeps as they are (those present); the training
/// history stays readable (`s2s plot`) and the decoding defaults hold.
const COPIED: [&str; 8] = [
    CONFIG,
    crate::decoding::DECODING,
    DATA_TOML,
    SRC_TOKENIZER,
    TGT_TOKENIZER,
    SRC_SPM,
    TGT_SPM,
    METRICS,
];

/// Writes an int8 copy of `model_dir` to `out` (staged: a failure leaves nothing behind), whose
/// decoding keeps the keys and values it attends over in `kv_cache`. `out` must be absent or empty
/// unless `force`, and cannot be `model_dir` itself.
pub fn quantize(
    model_dir: &Path,
    out: &Path,
    kv_cache: CacheFormat,
    force: bool,
) -> Result<Quantized, InferError> {
    let run = model_dir::read_run_config(model_dir)?;
    let float = model_dir::float_weights(model_dir, "quantising")?;
    let family = match &run.model {
        s2s_models::ModelConfig::Transformer(t) if t.copy => Some("a copy model"),
        s2s_models::ModelConfig::Transformer(t) if t.speech.is_some() => Some("a speech model"),
        s2s_models::ModelConfig::Transformer(_) => None,
        s2s_models::ModelConfig::Rnn(_) => Some("a recurrent model"),
        s2s_models::ModelConfig::ConvS2S(_) => Some("a ConvS2S model"),
        s2s_models::ModelConfig::Labeller(_) => Some("a labelling model"),
    };
    if let Some(family) = family {
        return Err(InferError::Config(format!(
            "{} holds {family}: int8 inference covers the text Transformer without copying, so translate it in f32 as it is",
            model_dir.display()
        )));
    }
    if let (Ok(a), Ok(b)) = (model_dir.canonicalize(), out.canonicalize())
        && a == b
    {
        return Err(InferError::Config(format!(
            "--out {} is the model directory itself; write the int8 model to a directory of its own",
            out.display()
        )));
    }
    let device = s2s_models::backend::parse_device("cpu").map_err(InferError::Config)?;
    let mut model = model_dir::load(model_dir, &device)?.model;
    let Seq2SeqModel::Transformer(m) = &mut model else {
        unreachable!("checked above")
    };
    m.quantize();
    m.decoder.kv_cache = kv_cache;
    let layers = m.quantizable_mut().len();
    model_dir::write_staged(out, force, |dir| -> Result<(), InferError> {
        for name in COPIED {
            let from = model_dir.join(name);
            if from.exists() {
                model_dir::copy_file(&from, &dir.join(name))?;
            }
        }
        let mut info = model_dir::model_info(&run, burn::module::Module::num_params(&model));
        info["weights"] = "int8".into();
        info["kv_cache"] = kv_cache.name().into();
        model_dir::write_json(&dir.join(MODEL_JSON), &info)?;
        s2s_models::io::save_int8_weights(&mut model, &dir.join(INT8))?;
        Ok(())
    })?;
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    Ok(Quantized {
        out: out.to_path_buf(),
        layers,
        float_bytes: size(&float),
        int8_bytes: size(&out.join(INT8)),
    })
}
