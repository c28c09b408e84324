//! SpecAugment (Park et al. 2019) without time warping: bands of bins and runs of frames set to
//! 0, the mean of normalised features.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use super::Features;

/// How many masks of what width (`[train.spec_augment]`); all zero (the default) is off.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpecAugment {
    /// Frequency masks per utterance.
    pub freq_masks: usize,
    /// Each of width uniform in `0..=freq_width` bins.
    pub freq_width: usize,
    /// Time masks per utterance.
    pub time_masks: usize,
    /// Each of width uniform in `0..=time_width` frames...
    pub time_width: usize,
    /// ...and at most this fraction of the utterance's frames (0: no such limit).
    pub time_ratio: f32,
}

/// A uniform draw in `0..=max`.
fn upto(rng: &mut ChaCha8Rng, max: usize) -> usize {
    ((rng.next_u64() as u128 * (max as u128 + 1)) >> 64) as usize
}

impl SpecAugment {
    pub fn is_off(&self) -> bool {
        (self.freq_masks == 0 || self.freq_width == 0)
            && (self.time_masks == 0 || self.time_width == 0)
    }

    /// The widest time mask for an utterance of `frames` frames.
    pub fn max_time_width(&self, frames: usize) -> usize {
        if self.time_ratio > 0.0 {
            self.time_width
                .min((self.time_ratio * frames as f32).floor() as usize)
        } else {
            self.time_width
        }
    }

    /// Masks `f`; the masks are a function of `seed` and the shape of `f` only.
    pub fn apply(&self, f: &mut Features, seed: u64) {
        if self.is_off() || f.frames == 0 {
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let bins = f.bins;
        for _ in 0..self.freq_masks {
            let width = upto(&mut rng, self.freq_width.min(bins));
            let start = upto(&mut rng, bins - width);
            for row in f.data.chunks_exact_mut(bins) {
                row[start..start + width].fill(0.0);
            }
        }
        let max_width = self.max_time_width(f.frames);
        for _ in 0..self.time_masks {
            let width = upto(&mut rng, max_width.min(f.frames));
            let start = upto(&mut rng, f.frames - width);
            f.data[start * bins..(start + width) * bins].fill(0.0);
        }
    }
}
