//! Training for s2s models: the criterion, schedules, checkpoints that resume exactly, metrics
//! and the loop itself.
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

pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod data_parallel;
pub mod loss;
pub mod metrics;
pub mod model_dir;
pub mod schedule;
pub mod trainer;

pub use burn::train::Interrupter;
pub use config::{RunConfig, TrainConfig};
pub use trainer::{Corpus, StopReason, TrainOptions, TrainOutcome, train, train_on};

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{path}: {source}")]
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
        "{0} non-finite losses in a row at step {1}: training stopped; the last good checkpoint is kept. Lower the learning rate or enable clipping"
    )]
    Diverged(usize, usize),
    #[error("{0}")]
    Config(String),
}

impl TrainError {
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
}
