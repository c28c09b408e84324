//! Mean and variance normalisation of features, per bin.

use serde::{Deserialize, Serialize};

use super::Features;
use crate::error::{DataError, Result};

/// Deviations below this count as constant: such a bin is centred but not scaled.
const MIN_STD: f64 = 1e-5;

/// Makes every bin of `f` mean 0 and deviation 1 over the utterance's frames.
pub fn normalize_utterance(f: &mut Features) {
    if let Ok(stats) = GlobalCmvn::from_features([&*f]) {
        stats.apply(f);
    }
}

/// Per-bin mean and deviation of a training split, applied to every split and at inference
/// (recorded in `data.toml`'s `[audio.cmvn]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GlobalCmvn {
    pub mean: Vec<f32>,
    pub std: Vec<f32>,
}

impl GlobalCmvn {
    /// The pooled statistics of every frame of `utterances` (accumulated in f64).
    pub fn from_features<'a>(utterances: impl IntoIterator<Item = &'a Features>) -> Result<Self> {
        let mut sum: Vec<f64> = Vec::new();
        let mut sq: Vec<f64> = Vec::new();
        let mut n = 0usize;
        for f in utterances {
            if sum.is_empty() {
                sum = vec![0.0; f.bins];
                sq = vec![0.0; f.bins];
            } else if f.bins != sum.len() {
                return Err(DataError::Config(format!(
                    "features of {} and {} bins cannot be pooled",
                    sum.len(),
                    f.bins
                )));
            }
            for row in f.data.chunks_exact(f.bins.max(1)) {
                for ((s, q), &x) in sum.iter_mut().zip(&mut sq).zip(row) {
                    *s += f64::from(x);
                    *q += f64::from(x) * f64::from(x);
                }
            }
            n += f.frames;
        }
        if n == 0 {
            return Err(DataError::Config(
                "no audio frames to normalise with; fix: give utterances of at least one window"
                    .into(),
            ));
        }
        let n = n as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
        let std = sq
            .iter()
            .zip(&mean)
            .map(|(q, m)| ((q / n - m * m).max(0.0)).sqrt().max(MIN_STD) as f32)
            .collect();
        Ok(GlobalCmvn {
            mean: mean.into_iter().map(|m| m as f32).collect(),
            std,
        })
    }

    /// `(x - mean) / std` on every frame of `f`.
    pub fn apply(&self, f: &mut Features) {
        for row in f.data.chunks_exact_mut(f.bins.max(1)) {
            for ((x, m), s) in row.iter_mut().zip(&self.mean).zip(&self.std) {
                *x = (*x - m) / s;
            }
        }
    }
}
