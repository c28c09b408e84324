//! Token plus learned position embeddings (Gehring 2017, 3.1): `e_j = w_j + p_j`, both drawn
//! from `N(0, 0.1)` as in fairseq, the padding row zero.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Embedding};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::init::embedding;

#[derive(Module, Debug)]
pub struct ConvEmbedding {
    pub tokens: Embedding,
    /// `[max_positions, emb_dim]`; positions past the end reuse the last row.
    pub positions: Embedding,
    pub dropout: Dropout,
}

impl ConvEmbedding {
    pub fn new(
        vocab: usize,
        emb_dim: usize,
        max_positions: usize,
        dropout: f64,
        device: &Device,
    ) -> Self {
        Self {
            tokens: embedding(vocab, emb_dim, 0.1, Some(s2s_data::PAD), device),
            positions: embedding(max_positions, emb_dim, 0.1, None, device),
            dropout: DropoutConfig::new(dropout).init(),
        }
    }

    /// Embeds `ids: [batch, len]` at positions `start..start+len`: `[batch, len, emb_dim]`.
    pub fn forward(&self, ids: Tensor<2, Int>, start: usize) -> Tensor<3> {
        let [_, len] = ids.dims();
        let device = ids.device();
        let max = self.positions.weight.dims()[0];
        let pos: Vec<i64> = (start..start + len)
            .map(|p| p.min(max - 1) as i64)
            .collect();
        let pos: Tensor<2, Int> = Tensor::from_data(TensorData::new(pos, [1, len]), &device);
        self.dropout
            .forward(self.tokens.forward(ids) + self.positions.forward(pos))
    }
}
