//! Log-mel filterbank features.
//!
//! # Definition
//! For samples `x` at `sample_rate`, with `win = round(sample_rate * window_ms / 1000)` and
//! `hop = round(sample_rate * hop_ms / 1000)`:
//! - with `dither > 0`, Gaussian noise of deviation `dither / 32768` (`dither` steps of 16-bit
//!   audio, as Kaldi's `--dither`) is added to every sample, drawn from a generator seeded with
//!   a hash of the samples (so one audio always gets the same features): without it, digital
//!   silence has no energy at all and its log is the floor, far from any real sound;
//! - frames start every `hop` samples: `1 + (len - win) / hop` frames when `len >= win`, one
//!   frame zero-padded to `win` when `0 < len < win`, none for no samples;
//! - each frame: the frame's mean is subtracted (DC), then pre-emphasis `y[i] = x[i] - p x[i-1]`
//!   (with `x[-1] = x[0]`), then a symmetric Hann window `0.5 - 0.5 cos(2 pi i / (win - 1))`;
//! - zero-padded to `n_fft`, the next power of two `>= win`; the power spectrum `|X[k]|^2` for
//!   `k = 0..=n_fft/2` (bin `k` at `k * sample_rate / n_fft` Hz);
//! - `n_mels` triangular filters whose corners are equally spaced on the HTK mel scale
//!   (`2595 log10(1 + f / 700)`) between `f_min` and `f_max` (0: Nyquist), each weighting a bin
//!   by its frequency's position between the filter's corners on the mel scale (Kaldi's
//!   filters), peak 1;
//! - the feature is `ln(max(energy, 1e-10))`.

use std::sync::Arc;

use realfft::num_complex::Complex;
use realfft::{RealFftPlanner, RealToComplex};
use serde::{Deserialize, Serialize};

use crate::error::{DataError, Result};

/// How audio becomes features (recorded in `data.toml`'s `[audio.fbank]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FbankConfig {
    /// Audio at another rate is resampled to this one first.
    pub sample_rate: u32,
    pub window_ms: f32,
    pub hop_ms: f32,
    pub n_mels: usize,
    pub f_min: f32,
    /// 0: the Nyquist frequency.
    pub f_max: f32,
    pub preemphasis: f32,
    /// Noise added before analysis, in steps of 16-bit audio (module docs); 0: none.
    pub dither: f32,
}

impl Default for FbankConfig {
    fn default() -> Self {
        Self {
            sample_rate: 16_000,
            window_ms: 25.0,
            hop_ms: 10.0,
            n_mels: 80,
            f_min: 20.0,
            f_max: 0.0,
            preemphasis: 0.97,
            dither: 1.0,
        }
    }
}

impl FbankConfig {
    /// Samples per window and per hop.
    pub fn window_hop(&self) -> (usize, usize) {
        let rate = self.sample_rate as f32;
        (
            (rate * self.window_ms / 1000.0).round() as usize,
            (rate * self.hop_ms / 1000.0).round() as usize,
        )
    }

    /// The FFT size: the next power of two of the window.
    pub fn n_fft(&self) -> usize {
        self.window_hop().0.max(1).next_power_of_two()
    }

    fn f_max(&self) -> f32 {
        if self.f_max > 0.0 {
            self.f_max
        } else {
            self.sample_rate as f32 / 2.0
        }
    }

    /// Checks the config; the error says which field to change.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(DataError::Config(format!("audio features: {m}")));
        let (win, hop) = self.window_hop();
        if self.sample_rate < 1000 {
            return bad(format!("sample_rate {} is below 1000 Hz", self.sample_rate));
        }
        if win < 16 || hop == 0 {
            return bad(format!(
                "window_ms {} and hop_ms {} give {win} and {hop} samples; fix: a window of at least 16 samples and a hop of at least 1",
                self.window_ms, self.hop_ms
            ));
        }
        let nyquist = self.sample_rate as f32 / 2.0;
        if self.f_min < 0.0 || self.f_max() > nyquist || self.f_min >= self.f_max() {
            return bad(format!(
                "f_min {} and f_max {} must satisfy 0 <= f_min < f_max <= {nyquist} (the Nyquist frequency)",
                self.f_min,
                self.f_max()
            ));
        }
        let bins = self.n_fft() / 2 + 1;
        if self.n_mels == 0 || self.n_mels > bins / 2 {
            return bad(format!(
                "n_mels {} for an FFT of {bins} bins; fix: 1 to {} mel bins, or a longer window",
                self.n_mels,
                bins / 2
            ));
        }
        if !(0.0..=100.0).contains(&self.dither) {
            return bad(format!(
                "dither {} must be in [0, 100] (16-bit steps)",
                self.dither
            ));
        }
        if !(0.0..1.0).contains(&self.preemphasis) {
            return bad(format!(
                "preemphasis {} must be in [0, 1)",
                self.preemphasis
            ));
        }
        Ok(())
    }
}

/// Features of one utterance: `frames` rows of `bins` values, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Features {
    pub frames: usize,
    pub bins: usize,
    pub data: Vec<f32>,
}

impl Features {
    /// Frame `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.bins..(i + 1) * self.bins]
    }
}

/// The HTK mel scale.
pub fn hz_to_mel(f: f32) -> f32 {
    2595.0 * (1.0 + f / 700.0).log10()
}

/// A feature extractor: the window, the mel filters and the FFT plan, built once.
pub struct Fbank {
    cfg: FbankConfig,
    win: usize,
    hop: usize,
    n_fft: usize,
    window: Vec<f32>,
    /// Per mel bin: the first FFT bin it weights and the weights from there.
    filters: Vec<(usize, Vec<f32>)>,
    fft: Arc<dyn RealToComplex<f32>>,
}

impl Fbank {
    pub fn new(cfg: &FbankConfig) -> Result<Fbank> {
        cfg.validate()?;
        let (win, hop) = cfg.window_hop();
        let n_fft = cfg.n_fft();
        let window = (0..win)
            .map(|i| {
                let x = 2.0 * std::f64::consts::PI * i as f64 / (win - 1) as f64;
                (0.5 - 0.5 * x.cos()) as f32
            })
            .collect();
        let (lo, hi) = (hz_to_mel(cfg.f_min), hz_to_mel(cfg.f_max()));
        let step = (hi - lo) / (cfg.n_mels + 1) as f32;
        let bin_mel: Vec<f32> = (0..=n_fft / 2)
            .map(|k| hz_to_mel(k as f32 * cfg.sample_rate as f32 / n_fft as f32))
            .collect();
        let filters = (0..cfg.n_mels)
            .map(|m| {
                let (left, centre, right) = (
                    lo + m as f32 * step,
                    lo + (m + 1) as f32 * step,
                    lo + (m + 2) as f32 * step,
                );
                let weights: Vec<(usize, f32)> = bin_mel
                    .iter()
                    .enumerate()
                    .filter(|&(_, &mel)| mel > left && mel < right)
                    .map(|(k, &mel)| {
                        let w = if mel <= centre {
                            (mel - left) / (centre - left)
                        } else {
                            (right - mel) / (right - centre)
                        };
                        (k, w)
                    })
                    .collect();
                let first = weights.first().map_or(0, |&(k, _)| k);
                (first, weights.into_iter().map(|(_, w)| w).collect())
            })
            .collect();
        let fft = RealFftPlanner::<f32>::new().plan_fft_forward(n_fft);
        Ok(Fbank {
            cfg: cfg.clone(),
            win,
            hop,
            n_fft,
            window,
            filters,
            fft,
        })
    }

    pub fn config(&self) -> &FbankConfig {
        &self.cfg
    }

    /// The number of frames of `len` samples (see the module docs).
    pub fn num_frames(&self, len: usize) -> usize {
        match len {
            0 => 0,
            n if n < self.win => 1,
            n => 1 + (n - self.win) / self.hop,
        }
    }

    /// The log-mel features of `samples` (at the config's rate).
    pub fn features(&self, samples: &[f32]) -> Features {
        if self.cfg.dither > 0.0 {
            let dithered = dither(samples, self.cfg.dither / 32768.0);
            return self.features_of(&dithered);
        }
        self.features_of(samples)
    }

    fn features_of(&self, samples: &[f32]) -> Features {
        let frames = self.num_frames(samples.len());
        let bins = self.cfg.n_mels;
        let mut data = Vec::with_capacity(frames * bins);
        let mut frame = vec![0.0f32; self.win];
        let mut input = vec![0.0f32; self.n_fft];
        let mut spectrum = vec![Complex::new(0.0f32, 0.0); self.n_fft / 2 + 1];
        let mut scratch = self.fft.make_scratch_vec();
        let mut power = vec![0.0f32; self.n_fft / 2 + 1];
        let p = self.cfg.preemphasis;
        for t in 0..frames {
            let start = t * self.hop;
            let end = (start + self.win).min(samples.len());
            frame.fill(0.0);
            frame[..end - start].copy_from_slice(&samples[start..end]);
            let mean = frame.iter().map(|&x| f64::from(x)).sum::<f64>() / self.win as f64;
            frame.iter_mut().for_each(|x| *x -= mean as f32);
            for i in (1..self.win).rev() {
                frame[i] -= p * frame[i - 1];
            }
            frame[0] -= p * frame[0];
            for ((dst, &x), &w) in input.iter_mut().zip(&frame).zip(&self.window) {
                *dst = x * w;
            }
            input[self.win..].fill(0.0);
            self.fft
                .process_with_scratch(&mut input, &mut spectrum, &mut scratch)
                .expect("buffers of the plan's sizes");
            for (pw, c) in power.iter_mut().zip(&spectrum) {
                *pw = c.norm_sqr();
            }
            for (first, weights) in &self.filters {
                let energy: f32 = weights
                    .iter()
                    .zip(&power[*first..])
                    .map(|(w, pw)| w * pw)
                    .sum();
                data.push(energy.max(1e-10).ln());
            }
        }
        Features { frames, bins, data }
    }
}

/// `samples` plus Gaussian noise of deviation `std` (Box-Muller), seeded with an FNV-1a hash of
/// the samples' bits.
fn dither(samples: &[f32], std: f32) -> Vec<f32> {
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::{RngCore, SeedableRng};
    let seed = samples.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ u64::from(x.to_bits())).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut uniform = move || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    samples
        .iter()
        .map(|&x| {
            let (u, v) = (uniform(), uniform());
            let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            x + std * z as f32
        })
        .collect()
}
