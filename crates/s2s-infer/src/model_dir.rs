//! MODEL_DIR: what training writes besides checkpoints, and how a trained model is loaded back.
//!
//! ```text
//! config.toml          RunConfig: architecture and training options
//! data.toml            the data directory's record (cleaning options, tokenizers, sources)
//! tokenizer.src.json   HF tokenizers
//! tokenizer.tgt.json
//! model.safetensors    best weights
//! metrics.jsonl        one line per validation
//! model.json           {"arch": ..., "parameters": N}: the model's size, for reports
//! checkpoint/          last state, enough to resume exactly
//! ```

use crate::{RunConfig, TrainError};
use burn::tensor::Device;
use s2s_data::{DataToml, TextTokenizer};
use s2s_models::Seq2SeqModel;
use std::path::Path;

pub const CONFIG: &str = "config.toml";
pub const DATA_TOML: &str = "data.toml";
pub const SRC_TOKENIZER: &str = "tokenizer.src.json";
pub const TGT_TOKENIZER: &str = "tokenizer.tgt.json";
pub const BEST: &str = "model.safetensors";
pub const MODEL_JSON: &str = "model.json";

/// Writes `MODEL_DIR/model.json`: the preset (if any), the model family and the number of
/// trainable parameters (tied or shared weights counted once), for reports such as the benchmark
/// table.
pub fn write_model_info(dir: &Path, run: &RunConfig, parameters: usize) -> Result<(), TrainError> {
    let family = match &run.model {
        s2s_models::ModelConfig::Rnn(_) => "rnn",
        s2s_models::ModelConfig::Transformer(_) => "transformer",
        s2s_models::ModelConfig::ConvS2S(_) => "convs2s",
    };
    let info = serde_json::json!({
        "arch": run.arch,
        "family": family,
        "parameters": parameters,
        "src_vocab": run.src_vocab,
        "tgt_vocab": run.tgt_vocab,
    });
    write_json(&dir.join(MODEL_JSON), &info)
}

/// Writes `value` as pretty JSON with a final newline, atomically.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), TrainError> {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serialises");
    text.push('\n');
    s2s_data::atomic_write(path, text.as_bytes()).map_err(|e| TrainError::io(path, e))
}

/// A trained model ready for inference.
pub struct LoadedModel {
    pub run: RunConfig,
    pub data: DataToml,
    pub model: Seq2SeqModel,
    pub src_tokenizer: TextTokenizer,
    pub tgt_tokenizer: TextTokenizer,
    pub device: Device,
}

impl LoadedModel {
    /// Cleans and encodes a source sentence the way the training corpus was.
    pub fn encode_source(&self, text: &str) -> Vec<u32> {
        let cleaned = s2s_data::clean_line(
            text,
            &self.data.options.clean,
            self.data.options.src_is_chinese,
        );
        self.src_tokenizer.encode(&cleaned)
    }
}

pub fn read_run_config(dir: &Path) -> Result<RunConfig, TrainError> {
    let path = dir.join(CONFIG);
    if !dir.is_dir() {
        return Err(TrainError::Config(format!(
            "model directory {} does not exist; train one with `s2s train --out {}`",
            dir.display(),
            dir.display()
        )));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            TrainError::Config(format!(
                "{} is not a model directory: it has no {CONFIG}",
                dir.display()
            ))
        } else {
            TrainError::io(&path, e)
        }
    })?;
    toml::from_str(&text).map_err(|e| TrainError::Config(format!("{}: {e}", path.display())))
}

/// Loads config, tokenizers and the best weights, checking that they fit together.
pub fn load(dir: &Path, device: &Device) -> Result<LoadedModel, TrainError> {
    let run = read_run_config(dir)?;
    let data = s2s_data::read_data_toml(dir).map_err(|e| TrainError::Config(e.to_string()))?;
    let tok = |name: &str, want: usize| -> Result<TextTokenizer, TrainError> {
        let path = dir.join(name);
        let t = TextTokenizer::from_file(&path).map_err(|e| TrainError::Config(e.to_string()))?;
        if t.vocab_size() != want {
            return Err(TrainError::Config(format!(
                "{} has {} tokens but {CONFIG} says the model's vocabulary has {want}: the tokenizer does not belong to this model; copy the one it was trained with",
                path.display(),
                t.vocab_size()
            )));
        }
        Ok(t)
    };
    let src_tokenizer = tok(SRC_TOKENIZER, run.src_vocab)?;
    let tgt_tokenizer = tok(TGT_TOKENIZER, run.tgt_vocab)?;
    let best = dir.join(BEST);
    if !best.exists() {
        return Err(TrainError::Config(format!(
            "{} has no {BEST} yet: training has not reached its first validation",
            dir.display()
        )));
    }
    let model = Seq2SeqModel::for_loading(&run.model, run.src_vocab, run.tgt_vocab, device)
        .map_err(TrainError::Config)?;
    let model = s2s_models::io::load_weights(model, &best)?;
    Ok(LoadedModel {
        run,
        data,
        model,
        src_tokenizer,
        tgt_tokenizer,
        device: device.clone(),
    })
}
