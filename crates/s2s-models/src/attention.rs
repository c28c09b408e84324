//! Attention over an encoder memory: additive (Bahdanau; also Luong's `concat`), dot and general.
//! Key projections are computed once per sentence in [`Attention::prepare`], not at every step.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Bool, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::engine::{self, RowMap};

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
    /// Decoder row `i` attends over sentence `rows.get(i)`. Beams read their sentence's memory
    /// instead of each holding a copy.
    pub rows: RowMap,
}

impl Memory {
    /// Row `i` becomes row `idx[i]`: only the row map changes.
    pub fn select_rows(&self, idx: &[usize]) -> Memory {
        Memory {
            rows: self.rows.compose(idx),
            ..self.clone()
        }
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
            rows: RowMap::identity(),
        }
    }

    /// Returns the context `[batch, value_dim]` and the weights `[batch, src_len]`.
    pub fn attend(&self, query: Tensor<2>, memory: &Memory) -> (Tensor<2>, Tensor<2>) {
        let Memory {
            keys,
            values,
            pad,
            rows,
        } = memory;
        match (&self.query_proj, &self.v) {
            (Some(w_q), Some(v)) => engine::additive_attention(
                w_q.forward(query),
                keys,
                &v.weight.val(),
                values,
                pad,
                rows,
            ),
            _ => engine::dot_attention(query, keys, values, pad, rows),
        }
    }
}
