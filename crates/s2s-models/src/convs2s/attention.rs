//! Multi-step attention (Gehring 2017, 3.3): every decoder layer attends over the encoder on its
//! own, with fairseq's `AttentionLayer` arithmetic.
//!
//! - query `d_i = (W_d h_i + b_d + g_i) * sqrt(0.5)`: the layer's state projected to the embedding
//!   size plus the embedding `g_i` of the previous target token;
//! - keys: the encoder outputs `z_j`; values: `(z_j + e_j) * sqrt(0.5)`, adding back the source
//!   embedding `e_j` ("point information" about the exact token);
//! - the context, a weighted sum over `m` source positions, is scaled by `m * sqrt(1/m)` to undo
//!   the variance change of averaging (with `m` the sentence's real length, so padding cannot
//!   change it), projected back to the layer's width and added to the state, `* sqrt(0.5)`.

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::init::normal_linear;

/// The encoder side of every decoder layer's attention, computed once per sentence.
#[derive(Clone, Debug)]
pub struct ConvMemory {
    /// `z_j`: `[batch, src_len, emb]`.
    pub keys: Tensor<3>,
    /// `(z_j + e_j) * sqrt(0.5)`: `[batch, src_len, emb]`.
    pub values: Tensor<3>,
    /// `[batch, src_len]`, true at padding.
    pub pad: Tensor<2, Bool>,
    /// `m * sqrt(1/m) = sqrt(m)` for each sentence's length `m`: `[batch, 1, 1]`.
    pub scale: Tensor<3>,
}

impl ConvMemory {
    pub fn select_rows(&self, idx: &Tensor<1, Int>) -> ConvMemory {
        ConvMemory {
            keys: self.keys.clone().select(0, idx.clone()),
            values: self.values.clone().select(0, idx.clone()),
            pad: self.pad.clone().select(0, idx.clone()),
            scale: self.scale.clone().select(0, idx.clone()),
        }
    }
}

#[derive(Module, Debug)]
pub struct MultiStepAttention {
    /// Decoder state to embedding size (`W_d`).
    pub in_proj: Linear,
    /// Context back to the decoder's width.
    pub out_proj: Linear,
}

impl MultiStepAttention {
    pub fn new(hidden: usize, emb_dim: usize, device: &Device) -> Self {
        // fairseq's Linear without dropout: N(0, sqrt(1 / fan_in)), zero bias.
        Self {
            in_proj: normal_linear(hidden, emb_dim, (1.0 / hidden as f64).sqrt(), device),
            out_proj: normal_linear(emb_dim, hidden, (1.0 / emb_dim as f64).sqrt(), device),
        }
    }

    /// `x: [batch, len, hidden]` (the GLU output), `target_emb: [batch, len, emb]`. Returns the
    /// new state `[batch, len, hidden]` and the weights `[batch, len, src_len]`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        target_emb: Tensor<3>,
        memory: &ConvMemory,
    ) -> (Tensor<3>, Tensor<3>) {
        let half = 0.5f64.sqrt();
        let [b, len, _] = x.dims();
        let s = memory.keys.dims()[1];
        let query = (self.in_proj.forward(x.clone()) + target_emb).mul_scalar(half);
        let scores = query.matmul(memory.keys.clone().swap_dims(1, 2));
        let mask = memory.pad.clone().reshape([b, 1, s]).expand([b, len, s]);
        let weights = softmax(scores.mask_fill(mask, -1.0e9), 2);
        let context = weights.clone().matmul(memory.values.clone()) * memory.scale.clone();
        let out = (self.out_proj.forward(context) + x).mul_scalar(half);
        (out, weights)
    }
}
