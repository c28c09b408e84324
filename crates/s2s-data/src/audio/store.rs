//! A split's features in one safetensors file (readable with `safetensors.numpy.load_file`):
//! `frames`, F32 `[total_frames, bins]`, every utterance's frames one after the other, and
//! `offsets`, I64 `[utterances + 1]`: utterance `i` is rows `offsets[i]..offsets[i + 1]`.

use std::collections::HashMap;
use std::path::Path;

use safetensors::tensor::{Dtype, TensorView};

use super::Features;
use crate::error::{DataError, Result};

const FORMAT: &str = "s2s-features-1";

fn bad(path: &Path, what: impl std::fmt::Display) -> DataError {
    DataError::Audio {
        path: path.to_path_buf(),
        message: format!("not a features file of s2s ({what}); fix: re-run `s2s prepare`"),
    }
}

/// Writes `utterances` (all of one width) to `path`, atomically.
pub fn write_features(path: &Path, utterances: &[Features]) -> Result<()> {
    let bins = utterances.first().map_or(0, |f| f.bins);
    if let Some(f) = utterances.iter().find(|f| f.bins != bins) {
        return Err(DataError::Config(format!(
            "{}: utterances of {bins} and {} bins cannot share a file",
            path.display(),
            f.bins
        )));
    }
    let mut offsets: Vec<i64> = vec![0];
    let mut frames: Vec<u8> = Vec::new();
    for f in utterances {
        offsets.push(offsets.last().unwrap() + f.frames as i64);
        frames.extend(f.data.iter().flat_map(|x| x.to_le_bytes()));
    }
    let total = *offsets.last().unwrap() as usize;
    let offset_bytes: Vec<u8> = offsets.iter().flat_map(|x| x.to_le_bytes()).collect();
    let views = [
        (
            "frames",
            TensorView::new(Dtype::F32, vec![total, bins], &frames).map_err(|e| bad(path, e))?,
        ),
        (
            "offsets",
            TensorView::new(Dtype::I64, vec![offsets.len()], &offset_bytes)
                .map_err(|e| bad(path, e))?,
        ),
    ];
    let meta = HashMap::from([("format".to_owned(), FORMAT.to_owned())]);
    let bytes = safetensors::serialize(views, Some(meta)).map_err(|e| bad(path, e))?;
    crate::io::atomic_write(path, &bytes).map_err(|e| DataError::io(path, e))
}

/// Reads a file of [`write_features`].
pub fn read_features(path: &Path) -> Result<Vec<Features>> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).map_err(|e| bad(path, e))?;
    if meta
        .metadata()
        .as_ref()
        .and_then(|m| m.get("format"))
        .map(String::as_str)
        != Some(FORMAT)
    {
        return Err(bad(path, format!("no `format = {FORMAT}` in its metadata")));
    }
    let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| bad(path, e))?;
    let frames = st.tensor("frames").map_err(|e| bad(path, e))?;
    let offsets = st.tensor("offsets").map_err(|e| bad(path, e))?;
    if frames.dtype() != Dtype::F32 || offsets.dtype() != Dtype::I64 || frames.shape().len() != 2 {
        return Err(bad(path, "wrong tensor types"));
    }
    let bins = frames.shape()[1];
    let values: Vec<f32> = frames
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let offsets: Vec<usize> = offsets
        .data()
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()).max(0) as usize)
        .collect();
    let total = frames.shape()[0];
    let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
    for w in offsets.windows(2) {
        if w[0] > w[1] || w[1] > total {
            return Err(bad(path, "offsets out of order or past the frames"));
        }
        out.push(Features {
            frames: w[1] - w[0],
            bins,
            data: values[w[0] * bins..w[1] * bins].to_vec(),
        });
    }
    Ok(out)
}
