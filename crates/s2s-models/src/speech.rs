//! The front end of a speech encoder: feature frames `[batch, frames, bins]` (log-mel
//! filterbanks, `s2s_data::audio`) to encoder inputs `[batch, ceil(frames / 4), d]`.
//!
//! Two 3x3 convolutions of stride 2 over time and frequency, each followed by a ReLU (the
//! `Conv2dSubsampling` of ESPnet and of the Speech-Transformer), then a linear projection of the
//! channels x remaining bins to `d`. Quartering the frame rate (100 to 25 per second) makes
//! self-attention over an utterance affordable and brings the source nearer the target's length.
//!
//! Padded frames are zero, and the first convolution's outputs at padded positions are zeroed
//! before the second reads them: a row's result is then the same whatever the batch pads it to
//! (batch invariance), since a convolution's own zero padding sees the same zeros.

use std::sync::Arc;

use burn::module::Module;
use burn::nn::PaddingConfig2d;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::tensor::activation::relu;
use burn::tensor::{Bool, Device, Tensor};
use s2s_data::audio::Features;
use s2s_search::Source;
use serde::{Deserialize, Serialize};

use crate::PaddedSource;
use crate::init::xavier_linear;
use crate::layers::Linear;

/// How a speech model reads its frames.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechConfig {
    /// Output channels of both convolutions.
    #[serde(default = "default_channels")]
    pub channels: usize,
    /// Joint CTC (Kim, Hori and Watanabe 2017): the weight of a CTC loss on the encoder output
    /// (its own projection to the vocabulary, blank = the padding id) beside the decoder's
    /// cross-entropy, `(1 - w) CE + w CTC`; 0: none. It teaches the encoder a monotonic
    /// alignment early, which attention alone finds slowly. Training only: decoding is the
    /// decoder's.
    #[serde(default = "default_ctc_weight")]
    pub ctc_weight: f64,
}

fn default_channels() -> usize {
    32
}

fn default_ctc_weight() -> f64 {
    0.3
}

impl Default for SpeechConfig {
    fn default() -> Self {
        Self {
            channels: default_channels(),
            ctc_weight: default_ctc_weight(),
        }
    }
}

impl SpeechConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.channels == 0 {
            return Err("[model.speech] channels must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.ctc_weight) {
            return Err(format!(
                "[model.speech] ctc_weight = {} must be in [0, 1)",
                self.ctc_weight
            ));
        }
        Ok(())
    }
}

/// The length after one convolution of kernel 3, stride 2 and padding 1.
fn halved(n: usize) -> usize {
    n.div_ceil(2)
}

/// The number of encoder positions for `frames` feature frames: `ceil(ceil(frames / 2) / 2)`.
pub fn subsampled_len(frames: usize) -> usize {
    halved(halved(frames))
}

#[derive(Module, Debug)]
pub struct ConvSubsampling {
    pub conv1: Conv2d,
    pub conv2: Conv2d,
    /// `channels * ceil(ceil(bins / 2) / 2)` to `d`.
    pub proj: Linear,
}

impl ConvSubsampling {
    /// A front end for frames of `bins` features, producing `d`-wide positions.
    pub fn new(cfg: &SpeechConfig, bins: usize, d: usize, device: &Device) -> Self {
        let conv = |c_in: usize| {
            Conv2dConfig::new([c_in, cfg.channels], [3, 3])
                .with_stride([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
        };
        Self {
            conv1: conv(1),
            conv2: conv(cfg.channels),
            proj: xavier_linear(cfg.channels * subsampled_len(bins), d, true, device).into(),
        }
    }

    /// `frames: [batch, t, bins]` with `pad: [batch, t]` (true at padding) to the positions
    /// `[batch, subsampled_len(t), d]` and their padding mask.
    pub fn forward(
        &self,
        frames: Tensor<3>,
        pad: &Tensor<2, Bool>,
    ) -> (Tensor<3>, Tensor<2, Bool>) {
        let [batch, t, bins] = frames.dims();
        let keep = pad.clone().bool_not().float().reshape([batch, 1, t, 1]);
        let x = frames.reshape([batch, 1, t, bins]) * keep;
        let x = relu(self.conv1.forward(x));
        // Position i of the first convolution is real when frame 2i is.
        let pad1 = every_other(pad.clone());
        let [_, _, t1, _] = x.dims();
        let keep1 = pad1.clone().bool_not().float().reshape([batch, 1, t1, 1]);
        let x = relu(self.conv2.forward(x * keep1));
        let pad2 = every_other(pad1);
        let [_, _, t2, b2] = x.dims();
        debug_assert_eq!((t2, b2), (subsampled_len(t), subsampled_len(bins)));
        let x = x
            .swap_dims(1, 2)
            .reshape([batch, t2, self.conv2.weight.dims()[0] * b2]);
        (self.proj.forward(x), pad2)
    }
}

/// Columns 0, 2, 4, ... of a `[batch, t]` mask: `[batch, ceil(t / 2)]`.
fn every_other(pad: Tensor<2, Bool>) -> Tensor<2, Bool> {
    let [batch, t] = pad.dims();
    let half = halved(t);
    if t % 2 == 1 {
        // Pad one column so that the pairs reshape evenly; the extra column is dropped.
        let extra = Tensor::<2, Bool>::full([batch, 1], true, &pad.device());
        return every_other_even(Tensor::cat(vec![pad, extra], 1), half);
    }
    every_other_even(pad, half)
}

fn every_other_even(pad: Tensor<2, Bool>, half: usize) -> Tensor<2, Bool> {
    let [batch, _] = pad.dims();
    pad.reshape([batch, half, 2])
        .narrow(2, 0, 1)
        .reshape([batch, half])
}

/// One utterance's feature frames, as a speech model's search reads them (shared, not copied,
/// between the batches and workers of a search).
#[derive(Clone, Debug)]
pub struct Frames(pub Arc<Features>);

impl Source for Frames {
    /// The positions attention spans: the frames after subsampling.
    fn len(&self) -> usize {
        subsampled_len(self.0.frames)
    }

    /// FNV-1a over the shape and the values' bits: the same on every build and platform.
    fn fingerprint(&self, key: u64) -> u64 {
        let shape = [self.0.frames as u64, self.0.bins as u64];
        crate::decoder::fingerprint_floats(key, &shape, &self.0.data)
    }
}

impl Frames {
    /// The padded batch of `sources` (zero frames past each row's end).
    pub fn pad_batch(sources: &[Frames], device: &Device) -> PaddedSource {
        let bins = sources.first().map_or(1, |f| f.0.bins);
        let len = sources.iter().map(|f| f.0.frames).max().unwrap_or(0).max(1);
        let mut data = vec![0.0f32; sources.len() * len * bins];
        for (row, f) in data.chunks_mut(len * bins).zip(sources) {
            assert_eq!(
                f.0.bins, bins,
                "every utterance of a batch has the same bins"
            );
            row[..f.0.data.len()].copy_from_slice(&f.0.data);
        }
        let lens: Vec<usize> = sources.iter().map(|f| f.0.frames).collect();
        PaddedSource::from_frames(data, &lens, len, bins, device)
    }
}
