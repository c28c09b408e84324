//! Attention over an encoder memory: additive (Bahdanau; also Luong's `concat`), dot and general.
//! Key projections are computed once per sentence in [`Attention::prepare`], not at every step.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::kernels::{Segment, additive_attention, single_query_attention};
use crate::{MASKED, compose_rows, gather_rows};

/// How a query is scored against a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Score {
    /// `v^T tanh(W_q q + W_k k)`; Bahdanau's additive score and Luong's `concat`.
    Additive,
    /// `q^T k` (query and key of the same size).
    Dot,
    /// `q^T W k`.
    General,
}

/// The encoder side of attention, prepared once per batch of sentences.
#[derive(Clone, Debug)]
pub struct Memory {
    /// `[sentences, src_len, value_dim]`
    pub values: Tensor<3>,
    /// `[sentences, src_len, key_dim]`: projected keys for additive/general, the values for dot.
    pub keys: Tensor<3>,
    /// `[sentences, src_len]`, true at padding.
    pub pad: Tensor<2, Bool>,
    /// Decoder row `i` attends over sentence `rows[i]`; `None`: sentence `i`. Beams read their
    /// sentence's memory instead of each holding a copy.
    pub rows: Option<Vec<usize>>,
}

impl Memory {
    /// Row `i` becomes row `idx[i]`: only the row map changes.
    pub fn select_rows(&self, idx: &[usize]) -> Memory {
        Memory {
            rows: Some(compose_rows(self.rows.as_deref(), idx)),
            ..self.clone()
        }
    }

    /// Keys, values and padding with one row per decoder row (the tensor-op path's layout).
    fn per_row(&self) -> (Tensor<3>, Tensor<3>, Tensor<2, Bool>) {
        gather_rows(self.rows.as_deref(), &self.keys, &self.values, &self.pad)
    }
}

#[derive(Module, Debug)]
pub struct Attention {
    /// Additive: keys `W_k`; general: `W`.
    pub key_proj: Option<Linear>,
    /// Additive only: `W_q`.
    pub query_proj: Option<Linear>,
    /// Additive only: `v`.
    pub v: Option<Linear>,
}

impl Attention {
    pub fn new(
        score: Score,
        query_dim: usize,
        value_dim: usize,
        attn_dim: usize,
        device: &Device,
    ) -> Self {
        match score {
            Score::Additive => Self {
                key_proj: Some(
                    LinearConfig::new(value_dim, attn_dim)
                        .with_bias(false)
                        .init(device),
                ),
                query_proj: Some(LinearConfig::new(query_dim, attn_dim).init(device)),
                v: Some(LinearConfig::new(attn_dim, 1).with_bias(false).init(device)),
            },
            Score::General => Self {
                key_proj: Some(
                    LinearConfig::new(value_dim, query_dim)
                        .with_bias(false)
                        .init(device),
                ),
                query_proj: None,
                v: None,
            },
            Score::Dot => {
                assert_eq!(
                    query_dim, value_dim,
                    "dot attention needs query and key of one size"
                );
                Self {
                    key_proj: None,
                    query_proj: None,
                    v: None,
                }
            }
        }
    }

    /// Precomputes keys. `pad`: `[batch, src_len]`, true at padding.
    pub fn prepare(&self, values: Tensor<3>, pad: Tensor<2, Bool>) -> Memory {
        let keys = match &self.key_proj {
            Some(proj) => proj.forward(values.clone()),
            None => values.clone(),
        };
        Memory {
            values,
            keys,
            pad,
            rows: None,
        }
    }

    /// Returns the context `[batch, value_dim]` and the weights `[batch, src_len]`.
    pub fn attend(&self, query: Tensor<2>, memory: &Memory) -> (Tensor<2>, Tensor<2>) {
        let [b, _] = query.dims();
        let [n, s, d_k] = memory.keys.dims();
        let d_v = memory.values.dims()[2];
        let rows = memory.rows.as_deref();
        // Decoding on the CPU: one kernel per score, the same function as the ops below.
        let query = match (&self.query_proj, &self.v) {
            (Some(wq), Some(v)) => {
                let q = wq.forward(query); // [b,a]
                let (keys, values, pad) = (&memory.keys, &memory.values, &memory.pad);
                if let Some(out) = additive_attention(&q, keys, &v.weight.val(), values, pad, rows)
                {
                    return out;
                }
                Query::Additive(q, v)
            }
            _ => {
                let (keys, values) = (
                    memory.keys.clone().reshape([n, 1, s, d_k]),
                    memory.values.clone().reshape([n, 1, s, d_v]),
                );
                let segment = Segment {
                    key: &keys,
                    value: &values,
                    pad: Some(&memory.pad),
                    rows,
                };
                let q = query.clone().reshape([b, 1, 1, d_k]);
                if let Some((context, weights)) = single_query_attention(&q, &[segment], 1.0) {
                    return (context.reshape([b, d_v]), weights.reshape([b, s]));
                }
                Query::Dot(query)
            }
        };
        let (keys, values, pad) = memory.per_row();
        let energies: Tensor<2> = match query {
            Query::Additive(q, v) => v
                .forward((keys + q.unsqueeze_dim::<3>(1)).tanh())
                .reshape([b, s]),
            Query::Dot(q) => keys.matmul(q.unsqueeze_dim::<3>(2)).reshape([b, s]),
        };
        let weights = softmax(energies.mask_fill(pad, MASKED), 1);
        let context = weights.clone().unsqueeze_dim::<3>(1).matmul(values);
        (context.reshape([b, d_v]), weights)
    }
}

/// The query as the tensor-op path scores it: additive (projected, with `v`) or by dot product.
enum Query<'a> {
    Additive(Tensor<2>, &'a Linear),
    Dot(Tensor<2>),
}
