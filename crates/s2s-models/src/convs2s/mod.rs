//! Convolutional sequence to sequence learning (Gehring et al. 2017), following fairseq's
//! `fconv.py`: [`embedding::ConvEmbedding`] (tokens + learned positions), the
//! [`encoder::ConvEncoder`] and [`decoder::ConvDecoder`] stacks of [`conv::ConvGlu`] blocks with
//! residuals scaled by `sqrt(0.5)`, and [`attention::MultiStepAttention`] in every decoder layer.
//!
//! Differences from fairseq, on purpose: no weight normalisation (plain weights with the same
//! initial scale; Adam with clipping trains them fine), one kernel width and one channel count for
//! all layers (so residuals need no projections), and positions counted from 0.

pub mod attention;
pub mod conv;
pub mod decoder;
pub mod embedding;
pub mod encoder;
pub mod model;

pub use model::{ConvS2S, ConvS2SState};

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConvS2SConfig {
    /// Token and position embedding size (also the attention size).
    pub emb_dim: usize,
    /// Channels of every convolution (after the GLU).
    pub hidden: usize,
    pub enc_layers: usize,
    pub dec_layers: usize,
    /// Convolution width, odd (the encoder centres it), at least 3.
    pub kernel: usize,
    /// Size of the decoder's projection before the vocabulary (fairseq's `out_embed_dim`).
    pub out_dim: usize,
    pub dropout: f64,
    /// Size of the learned position tables (longer inputs reuse their last row).
    pub max_positions: usize,
    /// The decoder layer (0-based) whose attention is reported; default: the mean over layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment_layer: Option<usize>,
}

impl ConvS2SConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.emb_dim == 0 || self.hidden == 0 || self.out_dim == 0 {
            return Err("emb_dim, hidden and out_dim must be at least 1".into());
        }
        if self.enc_layers == 0 || self.dec_layers == 0 {
            return Err("enc_layers and dec_layers must be at least 1".into());
        }
        if self.kernel < 3 || self.kernel.is_multiple_of(2) {
            return Err(format!(
                "kernel = {} must be odd and at least 3 (e.g. 3 or 5)",
                self.kernel
            ));
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(format!("dropout = {} must be in [0, 1)", self.dropout));
        }
        if self.max_positions == 0 {
            return Err("max_positions must be at least 1".into());
        }
        crate::config::check_alignment_layer(self.alignment_layer, self.dec_layers)?;
        Ok(())
    }
}
