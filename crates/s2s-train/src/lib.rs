//! Training for s2s models: the criterion, schedules, checkpoints that resume exactly, checkpoint
//! averaging and the loop itself. MODEL_DIR's files other than the checkpoints (config.toml,
//! metrics.jsonl, the best weights, the lock) are `s2s-infer`'s.
//!
//! # Why a loop of our own around burn-train's parts
//! burn-train 0.22's `SupervisedTraining` checkpoints at epoch boundaries and restarts an
//! interrupted epoch from its first batch; s2s must resume mid-epoch at the exact batch, with the
//! same random streams, and validate with search-based BLEU. So [`trainer::train`] owns the
//! single-device step loop (what burn-train's `SingleDeviceTrainEpoch` does: forward, backward,
//! `ModuleOptimizer::step`) and uses burn-train's [`burn::train::Interrupter`] for stopping. The
//! optimiser state is burn-optim's own record, saved in the checkpoint.
//!
//! With several devices, [`data_parallel`] runs one batch per device on forks of the model and
//! averages their gradients on the first, as burn-train's `MultiDeviceOptim::OptimMainDevice`
//! does; see `docs/scaling.md`.

pub mod average;
pub mod bench;
pub mod checkpoint;
pub mod data_parallel;
pub mod loss;
pub mod schedule;
pub mod trainer;

pub use burn::train::Interrupter;
pub use trainer::{Corpus, StopReason, TrainOptions, TrainOutcome, encode_split, train, train_on};

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{path}: {source}{hint}", hint = s2s_data::io::write_error_hint(.source))]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Corrupt(String),
    #[error("no checkpoint in {0}: nothing to resume; train without --resume first")]
    NoCheckpoint(String),
    #[error(transparent)]
    Weights(#[from] s2s_models::io::WeightsError),
    #[error("validation decoding failed: {0}")]
    Search(#[from] s2s_search::SearchError),
    #[error(
        "{0} non-finite losses or gradient norms in a row at step {1}: training stopped; the last good checkpoint is kept. Lower the learning rate or enable clipping, then continue with --resume"
    )]
    Diverged(usize, usize),
    #[error(
        "validation loss is {1} at step {0}: the weights have diverged, so training stopped without saving them; the last good checkpoint and best model are kept. Lower the learning rate or enable clipping, then continue with --resume"
    )]
    DivergedValidation(usize, f64),
    #[error("{0}")]
    Config(String),
    /// Reading or writing MODEL_DIR (config, metrics, best weights, the lock).
    #[error(transparent)]
    ModelDir(#[from] s2s_infer::InferError),
}

impl TrainError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
