//! Weights on disk, written atomically and loaded with shape checks that name the tensor:
//! safetensors for the best model (portable), burnpack for checkpoints (it keeps parameter ids,
//! which key the optimiser state, so a resumed optimiser finds its moments), and safetensors with
//! int8 tensors for an int8 model ([`save_int8_weights`]).

use crate::Seq2SeqModel;
use crate::engine::CacheFormat;
use crate::engine::int8::Int8Matrix;
use burn::store::{BurnpackStore, ModuleSnapshot, ModuleStore, SafetensorsStore};
use safetensors::{Dtype, SafeTensors, tensor::TensorView};
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    apply(model, &mut { store }, name, &BTreeSet::new())
}

/// The prefix of a Transformer's tensor names (the model's variant, as burn names it).
const TRANSFORMER: &str = "Transformer";

/// The int8 weights file's `format` metadata.
pub const INT8_FORMAT: &str = "s2s-int8";

/// The int8 weights file's metadata naming how decoding keeps the keys and values it attends
/// over ([`crate::engine::CacheFormat`]); files written before it existed decode with f32.
pub const KV_CACHE: &str = "kv_cache";

/// Serialises an int8 model ([`crate::transformer::TransformerSeq2Seq::quantize`]) to
/// safetensors: each quantised weight as an `I8` tensor `[rows, cols]` whose rows are the outputs
/// (a linear layer's `[d_out, d_in]`, an embedding's `[vocab, d]`) under its f32 name, with its
/// per-row scales as `F32` `<name>.scale`; every other parameter as in [`save_weights`].
pub fn int8_weights_to_bytes(model: &mut Seq2SeqModel) -> Result<Vec<u8>, WeightsError> {
    let floats = weights_to_bytes(model)?;
    let floats =
        SafeTensors::deserialize(&floats).map_err(|e| WeightsError::Serialise(e.to_string()))?;
    let Seq2SeqModel::Transformer(m) = model else {
        return Err(WeightsError::Serialise(
            "int8 weights cover the Transformer only".to_string(),
        ));
    };
    let mut int8 = BTreeMap::new();
    for (name, layer) in m.quantizable_mut() {
        let w = layer.int8().ok_or_else(|| {
            WeightsError::Serialise(format!("{name} is not quantised; quantise the model first"))
        })?;
        let values: Vec<u8> = w.values().into_iter().map(|v| v as u8).collect();
        let scales: Vec<u8> = w.scales().iter().flat_map(|x| x.to_le_bytes()).collect();
        int8.insert(
            format!("{TRANSFORMER}.{name}"),
            (vec![w.rows(), w.cols()], values, scales),
        );
    }
    let mut views = Vec::new();
    for (name, view) in floats.tensors() {
        if !int8.contains_key(&name) {
            views.push((name, view));
        }
    }
    let st = |e: safetensors::SafeTensorError| WeightsError::Serialise(e.to_string());
    for (name, (shape, values, scales)) in &int8 {
        views.push((
            name.clone(),
            TensorView::new(Dtype::I8, shape.clone(), values).map_err(st)?,
        ));
        views.push((
            format!("{name}.scale"),
            TensorView::new(Dtype::F32, vec![shape[0]], scales).map_err(st)?,
        ));
    }
    let metadata = HashMap::from([
        ("format".to_string(), INT8_FORMAT.to_string()),
        (KV_CACHE.to_string(), m.decoder.kv_cache.name().to_string()),
    ]);
    safetensors::serialize(views, Some(metadata)).map_err(st)
}

/// Writes an int8 model's weights atomically ([`int8_weights_to_bytes`]).
pub fn save_int8_weights(model: &mut Seq2SeqModel, path: &Path) -> Result<(), WeightsError> {
    let bytes = int8_weights_to_bytes(model)?;
    s2s_data::atomic_write(path, &bytes).map_err(|source| WeightsError::Write {
        path: path.display().to_string(),
        source,
    })
}

/// Loads an int8 weights file ([`save_int8_weights`]) into `model`, built from the matching
/// config with [`Seq2SeqModel::for_loading`]: the quantised layers take their int8 weights and
/// their f32 weights stay undrawn; every other parameter loads as in [`load_weights`].
pub fn load_int8_weights(model: Seq2SeqModel, path: &Path) -> Result<Seq2SeqModel, WeightsError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| WeightsError::Read {
        path: name.clone(),
        source,
    })?;
    let corrupt = |detail: String| WeightsError::Corrupt {
        path: name.clone(),
        detail,
    };
    let mismatch = |detail: String| WeightsError::Mismatch {
        path: name.clone(),
        detail,
    };
    let file = SafeTensors::deserialize(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let Seq2SeqModel::Transformer(mut m) = model else {
        return Err(mismatch(
            "int8 weights are for a Transformer but config.toml builds another model".to_string(),
        ));
    };
    let (_, header) = SafeTensors::read_metadata(&bytes).map_err(|e| corrupt(e.to_string()))?;
    m.decoder.kv_cache = match header.metadata().as_ref().and_then(|m| m.get(KV_CACHE)) {
        None => CacheFormat::F32,
        Some(name) => CacheFormat::parse(name).ok_or_else(|| {
            corrupt(format!(
                "metadata `{KV_CACHE}` is `{name}`, not f32 or int8; write the file again with `s2s quantize`"
            ))
        })?,
    };
    let mut quantized = BTreeSet::new();
    for (tensor, mut layer) in m.quantizable_mut() {
        let tensor = format!("{TRANSFORMER}.{tensor}");
        let [rows, cols] = layer.int8_shape();
        let values = file
            .tensor(&tensor)
            .map_err(|_| mismatch(format!("tensor `{tensor}` is missing")))?;
        if values.dtype() != Dtype::I8 {
            return Err(mismatch(format!(
                "tensor `{tensor}` is {:?}, not int8: this is not an int8 model's file; run `s2s quantize` on the f32 model",
                values.dtype()
            )));
        }
        let scales = file
            .tensor(&format!("{tensor}.scale"))
            .map_err(|_| mismatch(format!("tensor `{tensor}.scale` is missing")))?;
        if scales.dtype() != Dtype::F32 {
            return Err(mismatch(format!(
                "tensor `{tensor}.scale` is {:?}, not f32",
                scales.dtype()
            )));
        }
        if values.shape() != [rows, cols] || scales.shape() != [rows] {
            return Err(mismatch(format!(
                "tensor `{tensor}` has shape {:?} (scales {:?}) in the file but config.toml builds it with shape [{rows}, {cols}]",
                values.shape(),
                scales.shape()
            )));
        }
        let q: Vec<i8> = values.data().iter().map(|&b| b as i8).collect();
        let s: Vec<f32> = scales
            .data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        layer.set_int8(Int8Matrix::from_quantized(&q, s, rows, cols));
        quantized.insert(format!("{tensor}.scale"));
        quantized.insert(tensor);
    }
    // The f32 rest, through burn's loader with its checks; the quantised weights are expected
    // to be missing from it.
    let mut views = Vec::new();
    for (tensor, view) in file.tensors() {
        if !quantized.contains(&tensor) {
            views.push((tensor, view));
        }
    }
    let floats = safetensors::serialize(views, None).map_err(|e| corrupt(e.to_string()))?;
    drop(file);
    drop(bytes);
    let store = SafetensorsStore::from_bytes(Some(floats))
        .validate(false)
        .allow_partial(true);
    apply(
        Seq2SeqModel::Transformer(m),
        &mut { store },
        &name,
        &quantized,
    )
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
    apply(
        model,
        &mut { store },
        &path.display().to_string(),
        &BTreeSet::new(),
    )
}

/// Loads `store` into `model`; every parameter must be in it except those named in `absent`.
fn apply<S: ModuleStore>(
    mut model: Seq2SeqModel,
    store: &mut S,
    name: &str,
    absent: &BTreeSet<String>,
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
    let missing: Vec<_> = result
        .missing
        .iter()
        .filter(|(m, _)| !absent.contains(m))
        .collect();
    if !result.errors.is_empty() || !missing.is_empty() || !result.unused.is_empty() {
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
        if let Some((m, _)) = missing.first() {
            parts.push(format!(
                "tensor `{m}` is missing ({} missing in all)",
                missing.len()
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
