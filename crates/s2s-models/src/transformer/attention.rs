//! Multi-head scaled dot-product attention (Vaswani 2017, section 3.2), written here rather than
//! taken from burn-nn because decoding needs two things burn's module does not give together: the
//! key/value projections as a value the caller owns (computed once per sentence for encoder-decoder
//! attention, grown one position per step for self-attention, and reordered with the beam), and a
//! per-row key padding mask applied to a cache of any length.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Bool, Device, Tensor};

use crate::engine::{self, RowMap};
use crate::init::xavier_linear;
use crate::layers::Linear;

pub use crate::engine::{CacheFormat, CachedKeyValue, KeyValue, PrefixCache};

#[derive(Module, Debug)]
pub struct MultiHeadAttention {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    pub output: Linear,
    /// Dropout on the attention weights (fairseq's `attention_dropout`).
    pub dropout: Dropout,
    pub heads: usize,
}

impl MultiHeadAttention {
    pub fn new(d_model: usize, heads: usize, dropout: f64, device: &Device) -> Self {
        Self {
            query: xavier_linear(d_model, d_model, true, device).into(),
            key: xavier_linear(d_model, d_model, true, device).into(),
            value: xavier_linear(d_model, d_model, true, device).into(),
            output: xavier_linear(d_model, d_model, true, device).into(),
            dropout: DropoutConfig::new(dropout).init(),
            heads,
        }
    }

    /// `[batch, len, d_model]` to `[batch, heads, len, d_k]`.
    fn split_heads(&self, x: Tensor<3>) -> Tensor<4> {
        let [b, len, d] = x.dims();
        x.reshape([b, len, self.heads, d / self.heads])
            .swap_dims(1, 2)
    }

    /// Projects the memory to be attended over (`[batch, len, d_model]`). Callers keep the result:
    /// encoder-decoder attention computes it once per sentence, self-attention grows it per step.
    pub fn keys_values(&self, x: Tensor<3>) -> KeyValue {
        KeyValue {
            key: self.split_heads(self.key.forward(x.clone())),
            value: self.split_heads(self.value.forward(x)),
        }
    }

    /// Attends from `x: [batch, q_len, d_model]` over `kv` (`k_len` positions).
    ///
    /// - `kv_rows`: row `i` of `x` attends over row `kv_rows.get(i)` of `kv` and `key_pad` (beams
    ///   of one sentence share its encoder side);
    /// - `key_pad: [batch, k_len]`, true at padded keys;
    /// - `causal: [q_len, k_len]`, true where a query may not look (the future).
    ///
    /// Returns the output `[batch, q_len, d_model]` and the weights `[batch, heads, q_len, k_len]`
    /// (before attention dropout).
    pub fn forward(
        &self,
        x: Tensor<3>,
        kv: &CachedKeyValue,
        kv_rows: &RowMap,
        key_pad: Option<&Tensor<2, Bool>>,
        causal: Option<&Tensor<2, Bool>>,
    ) -> (Tensor<3>, Tensor<4>) {
        let q = self.split_heads(self.query.forward(x));
        let (context, weights) =
            engine::multi_head_attention(q, kv, kv_rows, key_pad, causal, &self.dropout);
        (self.output.forward(context), weights)
    }

    /// A decoding step's self-attention from `x: [rows, 1, d_model]` over the cached prefix
    /// (which already holds this position). Returns the output `[rows, 1, d_model]`.
    pub fn forward_cached(&self, x: Tensor<3>, cache: &mut PrefixCache) -> Tensor<3> {
        let q = self.split_heads(self.query.forward(x));
        self.output
            .forward(engine::prefix_attention(q, cache, &self.dropout))
    }
}
