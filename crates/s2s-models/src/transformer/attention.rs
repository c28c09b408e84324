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
use crate::kernels::{Segment, single_query_attention};
use crate::{MASKED, compose_rows, row_ids};

/// Projected keys and values, split into heads: `[batch, heads, len, d_k]` each.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Tensor<4>,
    pub value: Tensor<4>,
}

impl KeyValue {
    pub fn select_rows(&self, idx: &Tensor<1, Int>) -> KeyValue {
        KeyValue {
            key: self.key.clone().select(0, idx.clone()),
            value: self.value.clone().select(0, idx.clone()),
        }
    }
}

/// Self-attention keys and values of the prefix decoded so far, for all live rows: one block per
/// decoding step, as that step projected them for the rows alive then, each with the row map that
/// takes live rows to the rows they descend from. Beam search reorders rows every step; a reorder
/// only composes the maps and appending a step adds a block, so the step kernel reads the whole
/// prefix in place and nothing is copied. The tensor-op path ([`PrefixCache::collapse`]) gathers
/// the blocks into one tensor first.
#[derive(Clone, Debug)]
pub struct PrefixCache {
    blocks: Vec<(KeyValue, Option<Vec<usize>>)>,
}

impl PrefixCache {
    pub fn new(kv: KeyValue) -> Self {
        Self {
            blocks: vec![(kv, None)],
        }
    }

    /// Row `i` becomes row `idx[i]` (see [`crate::decoder`]'s reorder).
    pub fn select_rows(&self, idx: &[usize]) -> Self {
        Self {
            blocks: self
                .blocks
                .iter()
                .map(|(kv, rows)| (kv.clone(), Some(compose_rows(rows.as_deref(), idx))))
                .collect(),
        }
    }

    /// Adds the live rows' next positions.
    pub fn append(&mut self, new: KeyValue) {
        self.blocks.push((new, None));
    }

    /// The blocks as the step kernel reads them.
    pub fn segments(&self) -> Vec<Segment<'_>> {
        self.blocks
            .iter()
            .map(|(kv, rows)| Segment {
                key: &kv.key,
                value: &kv.value,
                pad: None,
                rows: rows.as_deref(),
            })
            .collect()
    }

    /// The prefix of the live rows as one tensor, which then replaces the blocks: each call
    /// copies only what came since the last.
    pub fn collapse(&mut self) -> KeyValue {
        if let [(kv, None)] = &self.blocks[..] {
            return kv.clone();
        }
        let (keys, values): (Vec<_>, Vec<_>) = self
            .blocks
            .drain(..)
            .map(|(kv, rows)| match rows {
                Some(rows) => kv.select_rows(&row_ids(&rows, &kv.key.device())),
                None => kv,
            })
            .map(|kv| (kv.key, kv.value))
            .unzip();
        let kv = KeyValue {
            key: Tensor::cat(keys, 2),
            value: Tensor::cat(values, 2),
        };
        self.blocks = vec![(kv.clone(), None)];
        kv
    }
}

/// Scores are `q . k / sqrt(d_k)` for queries `q: [.., d_k]`.
fn score_divisor(q: &Tensor<4>) -> f32 {
    (q.dims()[3] as f32).sqrt()
}

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
        let [_, q_len, _] = x.dims();
        let q = self.split_heads(self.query.forward(x));
        // A decoding step: one query per row, nothing to mask but padding.
        let segment = Segment {
            key: &kv.key,
            value: &kv.value,
            pad: key_pad,
            rows: kv_rows,
        };
        if q_len == 1
            && causal.is_none()
            && let Some((context, weights)) =
                single_query_attention(&q, &[segment], score_divisor(&q))
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
        self.attend(q, kv, key_pad, causal)
    }

    /// A decoding step's self-attention from `x: [rows, 1, d_model]` over the cached prefix
    /// (which already holds this position). Returns the output `[rows, 1, d_model]`.
    pub fn forward_cached(&self, x: Tensor<3>, cache: &mut PrefixCache) -> Tensor<3> {
        let q = self.split_heads(self.query.forward(x));
        assert_eq!(q.dims()[2], 1, "cached decoding is one step at a time");
        if let Some((context, _)) = single_query_attention(&q, &cache.segments(), score_divisor(&q))
        {
            return self.output.forward(context);
        }
        let kv = cache.collapse();
        self.attend(q, &kv, None, None).0
    }

    /// The general path: `q: [batch, heads, q_len, d_k]` over `kv` with one row per query row.
    fn attend(
        &self,
        q: Tensor<4>,
        kv: &KeyValue,
        key_pad: Option<&Tensor<2, Bool>>,
        causal: Option<&Tensor<2, Bool>>,
    ) -> (Tensor<3>, Tensor<4>) {
        let [b, h, q_len, d_k] = q.dims();
        let k_len = kv.key.dims()[2];
        let divisor = score_divisor(&q);
        let mut scores = q.matmul(kv.key.clone().swap_dims(2, 3)).div_scalar(divisor);
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
            .reshape([b, q_len, h * d_k]);
        (self.output.forward(context), weights)
    }
}
