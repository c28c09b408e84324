//! Weights on disk, written atomically and loaded with shape checks that name the tensor:
//! safetensors for the best model (portable), burnpack for checkpoints (it keeps parameter ids,
//! which key the optimiser state, so a resumed optimiser finds its moments).

use crate::Seq2SeqModel;
use burn::store::{BurnpackStore, ModuleSnapshot, ModuleStore, SafetensorsStore};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("cannot read weights {path}: {source}; check that the model directory is complete")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write weights {path}: {source}; check free disk space and permissions")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("weights {path} are corrupt or truncated ({detail}); restore the file or retrain")]
    Corrupt { path: String, detail: String },
    #[error(
        "weights {path} do not match config.toml: {detail}; use the config.toml the weights were trained with"
    )]
    Mismatch { path: String, detail: String },
    #[error("cannot serialise weights: {0}")]
    Serialise(String),
}

/// Serialises the model's parameters to safetensors bytes.
pub fn weights_to_bytes(model: &Seq2SeqModel) -> Result<Vec<u8>, WeightsError> {
    let mut store = SafetensorsStore::from_bytes(None);
    model
        .save_into(&mut store)
        .map_err(|e| WeightsError::Serialise(e.to_string()))?;
    store
        .get_bytes()
        .map_err(|e| WeightsError::Serialise(e.to_string()))
}

/// Writes the model's parameters atomically (temp file, fsync, rename, fsync of the directory).
pub fn save_weights(model: &Seq2SeqModel, path: &Path) -> Result<(), WeightsError> {
    let bytes = weights_to_bytes(model)?;
    s2s_data::atomic_write(path, &bytes).map_err(|source| WeightsError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Loads parameters into `model` (built from the matching config); every tensor must be present
/// with the right shape.
pub fn load_weights(model: Seq2SeqModel, path: &Path) -> Result<Seq2SeqModel, WeightsError> {
    let bytes = std::fs::read(path).map_err(|source| WeightsError::Read {
        path: path.display().to_string(),
        source,
    })?;
    load_weights_bytes(model, bytes, &path.display().to_string())
}

pub fn load_weights_bytes(
    model: Seq2SeqModel,
    bytes: Vec<u8>,
    name: &str,
) -> Result<Seq2SeqModel, WeightsError> {
    // Without the store's own validation, shape errors come back one by one (with the tensor's
    // name and both shapes) instead of as one debug dump.
    let store = SafetensorsStore::from_bytes(Some(bytes))
        .validate(false)
        .allow_partial(true);
    apply(model, &mut { store }, name)
}

/// Serialises parameters with their ids (burnpack), for checkpoints.
pub fn checkpoint_to_bytes(model: &Seq2SeqModel) -> Result<Vec<u8>, WeightsError> {
    let mut store = BurnpackStore::from_bytes(None);
    model
        .save_into(&mut store)
        .map_err(|e| WeightsError::Serialise(e.to_string()))?;
    Ok(store
        .get_bytes()
        .map_err(|e| WeightsError::Serialise(e.to_string()))?
        .to_vec())
}

/// Loads a checkpoint written by [`checkpoint_to_bytes`], restoring parameter ids too.
pub fn load_checkpoint(model: Seq2SeqModel, path: &Path) -> Result<Seq2SeqModel, WeightsError> {
    let bytes = std::fs::read(path).map_err(|source| WeightsError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let bytes = burn::tensor::Bytes::from_bytes_vec(bytes);
    let store = BurnpackStore::from_bytes(Some(bytes))
        .validate(false)
        .allow_partial(true);
    apply(model, &mut { store }, &path.display().to_string())
}

fn apply<S: ModuleStore>(
    mut model: Seq2SeqModel,
    store: &mut S,
    name: &str,
) -> Result<Seq2SeqModel, WeightsError> {
    let result = model.load_from(store).map_err(|e| {
        let detail = e.to_string();
        if detail.contains("hape") {
            WeightsError::Mismatch {
                path: name.to_string(),
                detail,
            }
        } else {
            WeightsError::Corrupt {
                path: name.to_string(),
                detail,
            }
        }
    })?;
    if !result.errors.is_empty() || !result.missing.is_empty() || !result.unused.is_empty() {
        let mut parts = Vec::new();
        if let Some(e) = result.errors.first() {
            parts.push(match e {
                burn::store::ApplyError::ShapeMismatch {
                    path,
                    expected,
                    found,
                } => format!(
                    "tensor `{path}` has shape {:?} in the file but config.toml builds it with shape {:?}",
                    found.as_slice(), expected.as_slice()
                ),
                other => other.to_string(),
            });
            if result.errors.len() > 1 {
                parts.push(format!("{} tensors differ in all", result.errors.len()));
            }
        }
        if let Some((m, _)) = result.missing.first() {
            parts.push(format!(
                "tensor `{m}` is missing ({} missing in all)",
                result.missing.len()
            ));
        }
        if let Some(u) = result.unused.first() {
            parts.push(format!(
                "tensor `{u}` is not in the model ({} unexpected in all)",
                result.unused.len()
            ));
        }
        return Err(WeightsError::Mismatch {
            path: name.to_string(),
            detail: parts.join("; "),
        });
    }
    Ok(model)
}
