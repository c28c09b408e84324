//! The resumable checkpoint in `MODEL_DIR/checkpoint/`: weights, optimiser moments, trainer
//! counters and a manifest of sha256 sums that loading verifies.
//!
//! A new checkpoint is written whole into `checkpoint.new/` (each file atomically), then swapped
//! in by two renames. If a kill lands between them, `checkpoint.old/` still holds the previous
//! complete checkpoint, and [`locate`] falls back to it. With `keep_last = N > 1` the previous
//! checkpoint is moved to `checkpoints/step-NNNNNNNN/` instead of being deleted, and archived
//! ones beyond the newest N - 1 are deleted, only once the new checkpoint is in place; [`locate`]
//! falls back to them, newest first, when the newer ones fail their manifest.

use crate::TrainError;
use crate::schedule::DecayPlan;
use s2s_data::atomic_write;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Weights with parameter ids (burnpack), which key the optimiser state.
pub const WEIGHTS: &str = "model.bpk";
pub const OPTIMIZER: &str = "optimizer.bpk";
pub const STATE: &str = "state.json";
pub const MANIFEST: &str = "manifest.json";

/// Trainer counters: everything besides tensors that an exact resume needs. Random streams are
/// derived from `(seed, step)` and `(seed, epoch)`, so counters are their whole state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainerState {
    /// Optimiser steps taken.
    pub step: usize,
    /// Current epoch (0-based) and the next batch index within it.
    pub epoch: usize,
    pub batch_in_epoch: usize,
    /// Best validation score so far (higher is better; loss is stored negated).
    pub best: Option<f64>,
    /// The validation loss of the best model, which breaks ties in `best` (absent in states
    /// written before it was kept: no tie then replaces the best model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_loss: Option<f64>,
    /// Validations since the best one (early stopping).
    pub bad_validations: usize,
    /// Consecutive non-finite losses.
    pub bad_steps: usize,
    /// Training wall-clock seconds so far, over all runs.
    pub elapsed_sec: f64,
    /// Loss accumulators since the last validation.
    pub loss_sum: f64,
    pub loss_tokens: usize,
    pub train_sec_since_valid: f64,
    /// Set once training has finished (limit reached or early stop).
    pub finished: bool,
    /// Where a time-budgeted decay stands (absent in step-based runs, whose plan is fixed by
    /// the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decay: Option<DecayPlan>,
}

fn sha256_file(path: &Path) -> Result<String, TrainError> {
    let bytes = fs::read(path).map_err(|e| TrainError::io(path, e))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

/// Where older checkpoints are kept when `keep_last > 1`: `checkpoints/step-00000123/`.
pub const ARCHIVE: &str = "checkpoints";

fn archive_name(step: usize) -> String {
    format!("step-{step:08}")
}

fn step_of(state_json: &[u8]) -> Option<usize> {
    serde_json::from_slice::<TrainerState>(state_json)
        .ok()
        .map(|s| s.step)
}

/// The step a checkpoint directory was written at (from its `state.json`).
pub fn step_in(dir: &Path) -> Result<usize, TrainError> {
    let path = dir.join(STATE);
    let bytes = fs::read(&path).map_err(|e| TrainError::io(&path, e))?;
    step_of(&bytes).ok_or_else(|| {
        TrainError::Corrupt(format!(
            "{} is not a trainer state; restore the checkpoint directory from a backup",
            path.display()
        ))
    })
}

fn remove_dir(dir: &Path) -> Result<(), TrainError> {
    fs::remove_dir_all(dir).map_err(|e| TrainError::io(dir, e))
}

/// Archived checkpoints as (step, directory), oldest first.
pub fn archived(model_dir: &Path) -> Vec<(usize, PathBuf)> {
    let mut out: Vec<(usize, PathBuf)> = fs::read_dir(model_dir.join(ARCHIVE))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let step = name.strip_prefix("step-")?.parse().ok()?;
            Some((step, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Retires the previous checkpoint directory `prev`: archived under `checkpoints/` when
/// `keep_last > 1` (and it is not the same step as `current_step`), removed otherwise.
fn retire(
    model_dir: &Path,
    prev: &Path,
    current_step: Option<usize>,
    keep_last: usize,
) -> Result<(), TrainError> {
    // Only complete checkpoints are archived (the previous one may be the damaged one that a
    // resume fell back from).
    let step = (keep_last > 1 && verify(prev).is_ok())
        .then(|| fs::read(prev.join(STATE)).ok().and_then(|b| step_of(&b)))
        .flatten();
    match step {
        Some(step) if Some(step) != current_step => {
            let archive = model_dir.join(ARCHIVE);
            fs::create_dir_all(&archive).map_err(|e| TrainError::io(&archive, e))?;
            let dest = archive.join(archive_name(step));
            if dest.exists() {
                remove_dir(&dest)?;
            }
            fs::rename(prev, &dest).map_err(|e| TrainError::io(prev, e))?;
            s2s_data::io::sync_dir(&archive).map_err(|e| TrainError::io(&archive, e))
        }
        _ => remove_dir(prev),
    }
}

/// Writes a checkpoint: `files` are (name, bytes). It becomes `checkpoint/`; the previous one is
/// kept under `checkpoints/step-N/` when `keep_last > 1`, and archived ones beyond the newest
/// `keep_last - 1` are deleted, always after the new checkpoint is complete and in place.
pub fn save(
    model_dir: &Path,
    files: &[(&str, Vec<u8>)],
    keep_last: usize,
) -> Result<(), TrainError> {
    let new = model_dir.join("checkpoint.new");
    let cur = model_dir.join("checkpoint");
    let old = model_dir.join("checkpoint.old");
    let step = files
        .iter()
        .find(|(n, _)| *n == STATE)
        .and_then(|(_, b)| step_of(b));
    if new.exists() {
        remove_dir(&new)?;
    }
    let written = write_dir(&new, files);
    if written.is_err() {
        // Leave no half-written directory behind; the current checkpoint was not touched.
        let _ = fs::remove_dir_all(&new);
        return written;
    }
    if old.exists() {
        if cur.exists() {
            // A kill landed after the last swap but before the clean-up.
            retire(model_dir, &old, step, keep_last)?;
        } else {
            // A kill landed between the two renames: `old` is the last complete checkpoint.
            fs::rename(&old, &cur).map_err(|e| TrainError::io(&old, e))?;
        }
    }
    if cur.exists() {
        fs::rename(&cur, &old).map_err(|e| TrainError::io(&cur, e))?;
    }
    fs::rename(&new, &cur).map_err(|e| TrainError::io(&new, e))?;
    s2s_data::io::sync_dir(model_dir).map_err(|e| TrainError::io(model_dir, e))?;
    if old.exists() {
        retire(model_dir, &old, step, keep_last)?;
    }
    let archive = archived(model_dir);
    let keep = keep_last.max(1) - 1;
    for (_, dir) in &archive[..archive.len().saturating_sub(keep)] {
        remove_dir(dir)?;
    }
    Ok(())
}

fn write_dir(new: &Path, files: &[(&str, Vec<u8>)]) -> Result<(), TrainError> {
    fs::create_dir_all(new).map_err(|e| TrainError::io(new, e))?;
    let mut manifest = BTreeMap::new();
    for (name, bytes) in files {
        let path = new.join(name);
        atomic_write(&path, bytes).map_err(|e| TrainError::io(&path, e))?;
        manifest.insert(name.to_string(), format!("{:x}", Sha256::digest(bytes)));
    }
    let m = serde_json::to_vec_pretty(&manifest).expect("manifest serialises");
    let mpath = new.join(MANIFEST);
    atomic_write(&mpath, &m).map_err(|e| TrainError::io(&mpath, e))
}

/// Finds the newest complete checkpoint directory and verifies its manifest: `checkpoint/`, then
/// `checkpoint.old/` (a kill between the swap's renames), then archived ones, newest first.
pub fn locate(model_dir: &Path) -> Result<PathBuf, TrainError> {
    let mut last_err = None;
    let mut candidates = vec![
        model_dir.join("checkpoint"),
        model_dir.join("checkpoint.old"),
    ];
    candidates.extend(archived(model_dir).into_iter().rev().map(|(_, d)| d));
    for dir in candidates {
        if !dir.join(MANIFEST).exists() {
            continue;
        }
        match verify(&dir) {
            Ok(()) => {
                if let Some(e) = last_err {
                    eprintln!(
                        "warning: {e}; using the older complete checkpoint {}",
                        dir.display()
                    );
                }
                return Ok(dir);
            }
            Err(e) => {
                if last_err.is_none() {
                    last_err = Some(e);
                }
            }
        }
    }
    Err(last_err.unwrap_or_else(|| TrainError::NoCheckpoint(model_dir.display().to_string())))
}

/// Checks every file against the manifest.
pub fn verify(dir: &Path) -> Result<(), TrainError> {
    let mpath = dir.join(MANIFEST);
    let text = fs::read(&mpath).map_err(|e| TrainError::io(&mpath, e))?;
    let manifest: BTreeMap<String, String> = serde_json::from_slice(&text)
        .map_err(|e| {
            TrainError::Corrupt(format!(
                "{}: {e}: the checkpoint manifest is corrupted; restore the directory from a backup, or start again with --force",
                mpath.display()
            ))
        })?;
    for name in [WEIGHTS, OPTIMIZER, STATE] {
        let want = manifest.get(name).ok_or_else(|| {
            TrainError::Corrupt(format!("{} does not list {name}", mpath.display()))
        })?;
        let path = dir.join(name);
        let got = sha256_file(&path)?;
        if &got != want {
            return Err(TrainError::Corrupt(format!(
                "{} does not match its manifest (sha256 {got}, expected {want}): the checkpoint is truncated or corrupted; restore the directory from a backup, or start again with --force (keep_last keeps older checkpoints to fall back on)",
                path.display()
            )));
        }
    }
    Ok(())
}
