//! The resumable checkpoint in `MODEL_DIR/checkpoint/`: weights, optimiser moments, trainer
//! counters and a manifest of sha256 sums that loading verifies.
//!
//! A new checkpoint is written whole into `checkpoint.new/` (each file atomically), then swapped
//! in by two renames. If a kill lands between them, `checkpoint.old/` still holds the previous
//! complete checkpoint, and [`load`] falls back to it.

use crate::TrainError;
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
}

fn sha256_file(path: &Path) -> Result<String, TrainError> {
    let bytes = fs::read(path).map_err(|e| TrainError::io(path, e))?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
}

/// Writes a checkpoint: `files` are (name, bytes).
pub fn save(model_dir: &Path, files: &[(&str, Vec<u8>)]) -> Result<(), TrainError> {
    let new = model_dir.join("checkpoint.new");
    let cur = model_dir.join("checkpoint");
    let old = model_dir.join("checkpoint.old");
    if new.exists() {
        fs::remove_dir_all(&new).map_err(|e| TrainError::io(&new, e))?;
    }
    fs::create_dir_all(&new).map_err(|e| TrainError::io(&new, e))?;
    let mut manifest = BTreeMap::new();
    for (name, bytes) in files {
        let path = new.join(name);
        atomic_write(&path, bytes).map_err(|e| TrainError::io(&path, e))?;
        manifest.insert(name.to_string(), format!("{:x}", Sha256::digest(bytes)));
    }
    let m = serde_json::to_vec_pretty(&manifest).expect("manifest serialises");
    atomic_write(new.join(MANIFEST), &m).map_err(|e| TrainError::io(new.join(MANIFEST), e))?;
    if old.exists() {
        fs::remove_dir_all(&old).map_err(|e| TrainError::io(&old, e))?;
    }
    if cur.exists() {
        fs::rename(&cur, &old).map_err(|e| TrainError::io(&cur, e))?;
    }
    fs::rename(&new, &cur).map_err(|e| TrainError::io(&new, e))?;
    s2s_data::io::sync_dir(model_dir).map_err(|e| TrainError::io(model_dir, e))?;
    if old.exists() {
        fs::remove_dir_all(&old).map_err(|e| TrainError::io(&old, e))?;
    }
    Ok(())
}

/// Finds the newest complete checkpoint directory and verifies its manifest.
pub fn locate(model_dir: &Path) -> Result<PathBuf, TrainError> {
    let mut last_err = None;
    for name in ["checkpoint", "checkpoint.old"] {
        let dir = model_dir.join(name);
        if !dir.join(MANIFEST).exists() {
            continue;
        }
        match verify(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last_err = Some(e),
        }
    }
    Err(last_err.unwrap_or_else(|| TrainError::NoCheckpoint(model_dir.display().to_string())))
}

/// Checks every file against the manifest.
pub fn verify(dir: &Path) -> Result<(), TrainError> {
    let mpath = dir.join(MANIFEST);
    let text = fs::read(&mpath).map_err(|e| TrainError::io(&mpath, e))?;
    let manifest: BTreeMap<String, String> = serde_json::from_slice(&text)
        .map_err(|e| TrainError::Corrupt(format!("{}: {e}", mpath.display())))?;
    for name in [WEIGHTS, OPTIMIZER, STATE] {
        let want = manifest.get(name).ok_or_else(|| {
            TrainError::Corrupt(format!("{} does not list {name}", mpath.display()))
        })?;
        let path = dir.join(name);
        let got = sha256_file(&path)?;
        if &got != want {
            return Err(TrainError::Corrupt(format!(
                "{} does not match its manifest (sha256 {got}, expected {want}): the checkpoint is truncated or corrupted",
                path.display()
            )));
        }
    }
    Ok(())
}
