//! `MODEL_DIR/metrics.jsonl`: one JSON object per validation, written by the trainer and read by
//! `s2s plot` and reports.

use crate::InferError;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsRecord {
    pub step: usize,
    pub epoch: usize,
    pub train_loss: f64,
    pub valid_loss: f64,
    pub valid_ppl: f64,
    pub valid_bleu: f64,
    pub tokens_per_sec: f64,
    pub elapsed_sec: f64,
    pub lr: f64,
    pub teacher_forcing: f64,
}

pub fn read(path: &Path) -> Result<Vec<MetricsRecord>, InferError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(InferError::io(path, e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| InferError::Corrupt(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Rewrites the file atomically with `records`.
pub fn write(path: &Path, records: &[MetricsRecord]) -> Result<(), InferError> {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("metrics serialise"));
        out.push('\n');
    }
    s2s_data::atomic_write(path, out.as_bytes()).map_err(|e| InferError::io(path, e))
}
