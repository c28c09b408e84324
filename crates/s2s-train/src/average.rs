//! Checkpoint averaging (Vaswani et al. 2017, section 6.1; fairseq's `average_checkpoints.py`):
//! the element-wise mean of the weights of the last N checkpoints, written as a new MODEL_DIR
//! that `translate` and `serve` use like any other. The mean of points along the end of the
//! trajectory sits nearer the middle of the basin than any one of them, which usually buys a
//! fraction of a BLEU point for no training time.
//!
//! The checkpoints are the ones `keep_last = N` keeps (`checkpoint/` and `checkpoints/step-*/`),
//! each checked against its manifest first. Parameters are matched by name and summed in f64.

use crate::TrainError;
use crate::checkpoint::{self, WEIGHTS};
use burn::store::{ModuleSnapshot, bridge};
use burn::tensor::{DType, Device, Shape, TensorData};
use s2s_infer::model_dir::{
    self, BEST, CONFIG, DATA_TOML, MODEL_JSON, SRC_TOKENIZER, TGT_TOKENIZER,
};
use s2s_models::Seq2SeqModel;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What [`average_checkpoints`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Averaged {
    /// Steps of the averaged checkpoints, oldest first.
    pub steps: Vec<usize>,
    /// The new model directory.
    pub out: PathBuf,
}

/// Record of an averaged model, written to `OUT/average.json`.
pub const AVERAGE_JSON: &str = "average.json";

/// The newest `last` checkpoints of `model_dir` as (step, directory), oldest first. Every one
/// must pass its manifest: a damaged checkpoint is an error, not silently left out.
pub fn newest_checkpoints(
    model_dir: &Path,
    last: usize,
) -> Result<Vec<(usize, PathBuf)>, TrainError> {
    if last == 0 {
        return Err(TrainError::Config(
            "--last must be at least 1 checkpoint".to_string(),
        ));
    }
    let mut all: BTreeMap<usize, PathBuf> = checkpoint::archived(model_dir).into_iter().collect();
    let current = model_dir.join("checkpoint");
    if current.join(checkpoint::MANIFEST).exists() {
        all.insert(checkpoint::step_in(&current)?, current);
    }
    let found = all.len();
    if found < last {
        return Err(TrainError::Config(format!(
            "{} holds {found} checkpoint(s) but {last} were asked for; train with `--keep-last {last}` (or `keep_last = {last}` under [train]) so that training keeps them, or average fewer",
            model_dir.display()
        )));
    }
    let chosen: Vec<(usize, PathBuf)> = all.into_iter().skip(found - last).collect();
    for (_, dir) in &chosen {
        checkpoint::verify(dir)?;
    }
    Ok(chosen)
}

/// Parameters by name: shape and running sum.
type Sums = BTreeMap<String, (Shape, Vec<f64>)>;

fn accumulate(sums: &mut Sums, model: &Seq2SeqModel, source: &Path) -> Result<(), TrainError> {
    let fresh = sums.is_empty();
    let mut seen = 0usize;
    for tensor in model.collect(None, None, false) {
        let name = tensor.name.clone();
        if tensor.dtype != DType::F32 {
            return Err(TrainError::Corrupt(format!(
                "{}: tensor `{name}` is {:?}; only f32 weights can be averaged",
                source.display(),
                tensor.dtype
            )));
        }
        let data = bridge::into_data(tensor)
            .map_err(|e| TrainError::Corrupt(format!("{}: `{name}`: {e}", source.display())))?;
        let shape = data.shape().clone();
        let values = data
            .try_into_vec::<f32>()
            .map_err(|e| TrainError::Corrupt(format!("{}: `{name}`: {e:?}", source.display())))?;
        seen += 1;
        match sums.get_mut(&name) {
            Some((s, acc)) if *s == shape => acc
                .iter_mut()
                .zip(&values)
                .for_each(|(a, v)| *a += *v as f64),
            Some((s, _)) => {
                return Err(TrainError::Corrupt(format!(
                    "{}: tensor `{name}` has shape {:?} but {:?} in the other checkpoints; they are not from one training run",
                    source.display(),
                    shape.as_slice(),
                    s.as_slice()
                )));
            }
            None if fresh => {
                sums.insert(name, (shape, values.iter().map(|v| *v as f64).collect()));
            }
            None => {
                return Err(TrainError::Corrupt(format!(
                    "{}: tensor `{name}` is not in the other checkpoints; they are not from one training run",
                    source.display()
                )));
            }
        }
    }
    if seen != sums.len() {
        return Err(TrainError::Corrupt(format!(
            "{} has {seen} tensors but the other checkpoints have {}; they are not from one training run",
            source.display(),
            sums.len()
        )));
    }
    Ok(())
}

/// Averages the weights of the newest `last` checkpoints of `model_dir` into a new MODEL_DIR
/// `out` (config, data record and tokenizers copied; `model.safetensors` the mean; no
/// `checkpoint/`, so it cannot be resumed). `out` must not exist unless `force`, and is never
/// `model_dir` itself.
pub fn average_checkpoints(
    model_dir: &Path,
    last: usize,
    out: &Path,
    force: bool,
    device: &Device,
) -> Result<Averaged, TrainError> {
    let run = model_dir::read_run_config(model_dir)?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(model_dir, out) {
        return Err(TrainError::Config(format!(
            "--out {} is the model directory itself; write the average to a new directory",
            out.display()
        )));
    }
    if out.join("checkpoint").exists() || out.join(checkpoint::ARCHIVE).exists() {
        return Err(TrainError::Config(format!(
            "{} holds a training run's checkpoints, which the average would not match; choose another --out",
            out.display()
        )));
    }
    if out.exists()
        && !force
        && std::fs::read_dir(out)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        return Err(TrainError::Config(format!(
            "{} already exists and is not empty; pass --force to overwrite it",
            out.display()
        )));
    }
    let chosen = newest_checkpoints(model_dir, last)?;

    let build = || {
        Seq2SeqModel::for_loading(&run.model, run.src_vocab, run.tgt_vocab, device)
            .map_err(TrainError::Config)
    };
    let mut sums = Sums::new();
    for (_, dir) in &chosen {
        let path = dir.join(WEIGHTS);
        let model = s2s_models::io::load_checkpoint(build()?, &path)?;
        accumulate(&mut sums, &model, &path)?;
    }
    let n = chosen.len() as f64;
    let tensors = sums
        .into_iter()
        .map(|(name, (shape, acc))| {
            let mean: Vec<f32> = acc.into_iter().map(|s| (s / n) as f32).collect();
            bridge::from_data(TensorData::new(mean, shape), name, None)
        })
        .collect();
    let mut model = build()?;
    let applied = model.apply(tensors, None, None, false);
    if !applied.errors.is_empty() || !applied.missing.is_empty() || !applied.unused.is_empty() {
        return Err(TrainError::Corrupt(format!(
            "the averaged weights do not fit the model {CONFIG} builds: {applied:?}"
        )));
    }

    std::fs::create_dir_all(out).map_err(|e| TrainError::io(out, e))?;
    let _lock = model_dir::lock(out)?;
    for name in [CONFIG, DATA_TOML, SRC_TOKENIZER, TGT_TOKENIZER, MODEL_JSON] {
        let from = model_dir.join(name);
        if name == MODEL_JSON && !from.exists() {
            continue;
        }
        let bytes = std::fs::read(&from).map_err(|e| TrainError::io(&from, e))?;
        let to = out.join(name);
        s2s_data::atomic_write(&to, &bytes).map_err(|e| TrainError::io(&to, e))?;
    }
    s2s_models::io::save_weights(&model, &out.join(BEST))?;
    let steps: Vec<usize> = chosen.iter().map(|(s, _)| *s).collect();
    let record = serde_json::json!({
        "averaged_from": model_dir.display().to_string(),
        "steps": steps,
    });
    model_dir::write_json(&out.join(AVERAGE_JSON), &record)?;
    Ok(Averaged {
        steps,
        out: out.to_path_buf(),
    })
}
