//! Multi-head scaled dot-product attention (Vaswani 2017, section 3.2), written here rather than
//! taken from burn-nn because decoding needs two things burn's module does not give together: the
//! key/value projections as a value the caller owns (computed once per sentence for encoder-decoder
//! attention, grown one position per step for self-attention, and reordered with the beam), and a
//! per-row key padding mask applied to a cache of any length.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::init::xavier_linear;
use crate::kernels::{select_rows_then_cat, single_query_attention};
use crate::{compose_rows, row_ids};

/// Projected keys and values, split into heads: `[batch, heads, len, d_k]` each.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Tensor<4>,
    pub value: Tensor<4>,
}

impl KeyValue {
    /// Appends `new` after `self` along the sequence axis (one more decoded position).
    pub fn append(self, new: KeyValue) -> KeyValue {
        KeyValue {
            key: Tensor::cat(vec![self.key, new.key], 2),
            value: Tensor::cat(vec![self.value, new.value], 2),
        }
    }

    pub fn select_rows(&self, idx: &Tensor<1, Int>) -> KeyValue {
        KeyValue {
            key: self.key.clone().select(0, idx.clone()),
            value: self.value.clone().select(0, idx.clone()),
        }
    }
}

/// Self-attention keys and values of the prefix decoded so far, for all live rows. Beam search
/// reorders rows every step; the reorder is only recorded here and done by the next
/// [`PrefixCache::append`], which gathers the surviving rows and adds the new position in one
/// copy of the cache instead of two.
#[derive(Clone, Debug)]
pub struct PrefixCache {
    kv: KeyValue,
    /// Live row `i` is row `rows[i]` of `kv`; `None` while they are in order.
    rows: Option<Vec<usize>>,
}

impl PrefixCache {
    pub fn new(kv: KeyValue) -> Self {
        Self { kv, rows: None }
    }

    /// Row `i` becomes row `idx[i]` (see [`crate::decoder`]'s reorder).
    pub fn select_rows(&self, idx: &[usize]) -> Self {
        Self {
            kv: self.kv.clone(),
            rows: Some(compose_rows(self.rows.as_deref(), idx)),
        }
    }

    /// The prefix of the live rows followed by `new` (their next position).
    pub fn append(self, new: KeyValue) -> KeyValue {
        match self.rows {
            None => self.kv.append(new),
            Some(rows) => KeyValue {
                key: select_rows_then_cat(self.kv.key, &rows, new.key),
                value: select_rows_then_cat(self.kv.value, &rows, new.value),
            },
        }
    }
}

/// Large negative score for masked keys: `exp` of it underflows to exactly zero, so masked keys
/// contribute nothing (not merely little) and padding cannot change a sentence's results.
pub(crate) const MASKED: f32 = -1.0e9;

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
            query: xavier_linear(d_model, d_model, true, device),
            key: xavier_linear(d_model, d_model, true, device),
            value: xavier_linear(d_model, d_model, true, device),
            output: xavier_linear(d_model, d_model, true, device),
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
    /// - `kv_rows`: row `i` of `x` attends over row `kv_rows[i]` of `kv` and `key_pad` (beams of
    ///   one sentence share its encoder side); `None`: row `i`;
    /// - `key_pad: [batch, k_len]`, true at padded keys;
    /// - `causal: [q_len, k_len]`, true where a query may not look (the future).
    ///
    /// Returns the output `[batch, q_len, d_model]` and the weights `[batch, heads, q_len, k_len]`
    /// (before attention dropout).
    pub fn forward(
        &self,
        x: Tensor<3>,
        kv: &KeyValue,
        kv_rows: Option<&[usize]>,
        key_pad: Option<&Tensor<2, Bool>>,
        causal: Option<&Tensor<2, Bool>>,
    ) -> (Tensor<3>, Tensor<4>) {
        let [b, q_len, d] = x.dims();
        let q = self.split_heads(self.query.forward(x));
        let scale = ((d / self.heads) as f32).sqrt();
        // A decoding step: one query per row, nothing to mask but padding.
        if q_len == 1
            && causal.is_none()
            && let Some((context, weights)) =
                single_query_attention(&q, &kv.key, &kv.value, key_pad, kv_rows, scale)
        {
            return (self.output.forward(context), weights);
        }
        let (shared, shared_pad);
        let (kv, key_pad) = match kv_rows {
            Some(rows) => {
                let idx = row_ids(rows, &q.device());
                shared_pad = key_pad.map(|p| p.clone().select(0, idx.clone()));
                shared = kv.select_rows(&idx);
                (&shared, shared_pad.as_ref())
            }
            None => (kv, key_pad),
        };
        let [_, h, k_len, _] = kv.key.dims();
        let mut scores = q.matmul(kv.key.clone().swap_dims(2, 3)).div_scalar(scale);
        if let Some(pad) = key_pad {
            let mask = pad
                .clone()
                .reshape([b, 1, 1, k_len])
                .expand([b, h, q_len, k_len]);
            scores = scores.mask_fill(mask, MASKED);
        }
        if let Some(causal) = causal {
            let mask = causal
                .clone()
                .reshape([1, 1, q_len, k_len])
                .expand([b, h, q_len, k_len]);
            scores = scores.mask_fill(mask, MASKED);
        }
        let weights = softmax(scores, 3);
        let context = self
            .dropout
            .forward(weights.clone())
            .matmul(kv.value.clone())
            .swap_dims(1, 2)
            .reshape([b, q_len, d]);
        (self.output.forward(context), weights)
    }
}
