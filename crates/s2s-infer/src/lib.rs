//! The inference layer: everything between a trained model and a front end (`s2s translate`,
//! `s2s serve`, the trainer's validation, and the importers and exporters to come).
//!
//! - [`model_dir`]: MODEL_DIR, the one format every producer writes and every consumer reads:
//!   file names, loading with the whole `config.toml` validated, atomic writes, and the lock
//!   that keeps two trainers out of one directory;
//! - [`config`]: `config.toml`'s schema (the model and its training options) and how `--arch` and
//!   `--config` resolve into it;
//! - [`metrics`]: `metrics.jsonl`, one line per validation;
//! - [`defaults`]: the search defaults, in one place;
//! - [`decoding`]: a model's own beam and alpha (`decoding.toml`, written by `s2s tune`), over them;
//! - [`extractive`]: extractive summaries, a sentence classifier's best-rated sentences;
//! - [`translator`]: text in, hypotheses out (clean, tokenise, search, detokenise, scores and
//!   attention labelled with tokens);
//! - [`plot`]: attention heatmaps and training curves as SVG;
//! - [`quantize`]: an int8 copy of a Transformer MODEL_DIR (`s2s quantize`).
//!
//! It knows models through `s2s-models` and search through `s2s-search`, and nothing of training
//! or HTTP: `s2s-train` and `s2s-serve` build on it, never the other way round.

pub mod config;
pub mod decoding;
pub mod defaults;
pub mod extractive;
pub mod metrics;
pub mod model_dir;
pub mod plot;
pub mod quantize;
pub mod translator;

pub use config::{RunConfig, TrainConfig};
pub use decoding::Decoding;
pub use model_dir::{LoadedModel, ModelDirLock};
pub use s2s_data::Specials;
pub use s2s_models::decoder::TextSource;
pub use translator::{Attention, Hyp, Translation, Translator};

use std::path::Path;

/// What can go wrong reading or writing a MODEL_DIR, or decoding with its model.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error("{path}: {source}{hint}", hint = s2s_data::io::write_error_hint(.source))]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// A file that exists but cannot be used as it is; the message names it and the fix.
    #[error("{0}")]
    Config(String),
    /// A file whose content is damaged (not what s2s wrote).
    #[error("{0}")]
    Corrupt(String),
    #[error(transparent)]
    Weights(#[from] s2s_models::io::WeightsError),
    #[error(transparent)]
    Search(#[from] s2s_search::SearchError),
    /// A request this model cannot serve (e.g. a target language it does not have).
    #[error("{0}")]
    Request(String),
    #[error(
        "{dir} is in use by another s2s process{holder}; wait for it to finish, stop it, or choose another directory"
    )]
    Locked { dir: String, holder: String },
}

impl InferError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        InferError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
