//! Attention over an encoder memory: additive (Bahdanau; also Luong's `concat`), dot and general.
//! Key projections are computed once per sentence in [`Attention::prepare`], not at every step.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Int, Tensor};
use serde::{Deserialize, Serialize};

use crate::kernels::additive_attention;

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
    /// `[batch, src_len, value_dim]`
    pub values: Tensor<3>,
    /// `[batch, src_len, key_dim]`: projected keys for additive/general, the values for dot.
    pub keys: Tensor<3>,
    /// `[batch, src_len]`, true at padding.
    pub pad: Tensor<2, Bool>,
}

impl Memory {
    pub fn select_rows(&self, idx: &Tensor<1, Int>) -> Memory {
        Memory {
            values: self.values.clone().select(0, idx.clone()),
            keys: self.keys.clone().select(0, idx.clone()),
            pad: self.pad.clone().select(0, idx.clone()),
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
        Memory { values, keys, pad }
    }

    /// Returns the context `[batch, value_dim]` and the weights `[batch, src_len]`.
    pub fn attend(&self, query: Tensor<2>, memory: &Memory) -> (Tensor<2>, Tensor<2>) {
        let [b, s, _] = memory.keys.dims();
        let energies: Tensor<2> = match (&self.query_proj, &self.v) {
            (Some(wq), Some(v)) => {
                let q = wq.forward(query); // [b,a]
                // Decoding on the CPU: one fused kernel, same function.
                if let Some(out) = additive_attention(
                    &q,
                    &memory.keys,
                    &v.weight.val(),
                    &memory.values,
                    &memory.pad,
                ) {
                    return out;
                }
                v.forward((memory.keys.clone() + q.unsqueeze_dim::<3>(1)).tanh())
                    .reshape([b, s])
            }
            _ => memory
                .keys
                .clone()
                .matmul(query.unsqueeze_dim::<3>(2))
                .reshape([b, s]),
        };
        let weights = softmax(energies.mask_fill(memory.pad.clone(), -1.0e9), 1);
        let context = weights
            .clone()
            .unsqueeze_dim::<3>(1)
            .matmul(memory.values.clone());
        let dv = context.dims()[2];
        (context.reshape([b, dv]), weights)
    }
}
