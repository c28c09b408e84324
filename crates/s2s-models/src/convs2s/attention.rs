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
use burn::tensor::{Bool, Device, Tensor};

use crate::engine::{self, RowMap, row_ids};
use crate::init::normal_linear;

/// The encoder side of every decoder layer's attention, computed once per sentence.
#[derive(Clone, Debug)]
pub struct ConvMemory {
    /// `z_j`: `[sentences, src_len, emb]`.
    pub keys: Tensor<3>,
    /// `(z_j + e_j) * sqrt(0.5)`: `[sentences, src_len, emb]`.
    pub values: Tensor<3>,
    /// `[sentences, src_len]`, true at padding.
    pub pad: Tensor<2, Bool>,
    /// `m * sqrt(1/m) = sqrt(m)` for the length `m` of each decoder row's sentence: `[rows, 1, 1]`
    /// (tiny, so it is reordered with the rows).
    pub scale: Tensor<3>,
    /// Decoder row `i` attends over sentence `rows.get(i)`. Beams read their sentence's memory
    /// instead of each holding a copy.
    pub rows: RowMap,
}

impl ConvMemory {
    /// Row `i` becomes row `idx[i]`: only the row map and the scales move.
    pub fn select_rows(&self, idx: &[usize]) -> ConvMemory {
        ConvMemory {
            keys: self.keys.clone(),
            values: self.values.clone(),
            pad: self.pad.clone(),
            scale: self
                .scale
                .clone()
                .select(0, row_ids(idx, &self.scale.device())),
            rows: self.rows.compose(idx),
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
        let query = (self.in_proj.forward(x.clone()) + target_emb).mul_scalar(half);
        let (context, weights) = engine::dot_attention_seq(
            query,
            &memory.keys,
            &memory.values,
            &memory.pad,
            &memory.rows,
        );
        let context = context * memory.scale.clone();
        let out = (self.out_proj.forward(context) + x).mul_scalar(half);
        (out, weights)
    }
}
