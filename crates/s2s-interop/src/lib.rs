//! `s2s-interop`: other toolkits' model formats in and out of MODEL_DIR.
//!
//! - [`marian::import`]: a Hugging Face MarianMT folder (OPUS-MT's layout: `config.json`,
//!   `model.safetensors`, `source.spm`, `target.spm`, `vocab.json`) becomes an ordinary
//!   MODEL_DIR that translate, serve, eval, average and fine-tuning use unchanged;
//! - [`marian::export`]: an s2s Transformer whose options fit that layout is written as such a
//!   folder, which `transformers.MarianMTModel.from_pretrained` loads and
//!   `ct2-transformers-converter` converts;
//! - [`hub`]: fetches a model folder from the Hugging Face hub by id.
//!
//! The weight names of both directions come from one table ([`marian::weights`]).

pub mod hub;
pub mod marian;

/// What can go wrong converting a model.
#[derive(Debug, thiserror::Error)]
pub enum InteropError {
    #[error("{path}: {source}{hint}", hint = s2s_data::io::write_error_hint(.source))]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// The input is not what the format says, or uses something s2s does not support; the
    /// message names the file, the field and the fix.
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Infer(#[from] s2s_infer::InferError),
    #[error(transparent)]
    Data(#[from] s2s_data::DataError),
    #[error(transparent)]
    Weights(#[from] s2s_models::io::WeightsError),
}

impl InteropError {
    pub fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        InteropError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, InteropError>;

/// An `Unsupported` error.
pub(crate) fn unsupported(message: impl Into<String>) -> InteropError {
    InteropError::Unsupported(message.into())
}
