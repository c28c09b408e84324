//! The convolutional encoder (fairseq's `FConvEncoder`): embeddings projected to the conv width,
//! residual GLU convolutions, and a projection back to the embedding size giving the keys `z_j`
//! and values `(z_j + e_j) * sqrt(0.5)` of the decoder's attention.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Bool, Device, Tensor};

use super::ConvS2SConfig;
use super::attention::ConvMemory;
use super::conv::ConvGlu;
use crate::engine::RowMap;
use crate::init::normal_linear;

#[derive(Module, Debug)]
pub struct ConvEncoder {
    /// Embedding to conv width.
    pub fc_in: Linear,
    pub convs: Vec<ConvGlu>,
    /// Conv width back to the embedding size.
    pub fc_out: Linear,
    /// Dropout on every convolution's input.
    pub dropout: Dropout,
    /// Decoder layers attending over this encoder (for the gradient scaling of its output).
    pub attention_layers: usize,
}

/// Scales the gradient flowing back through `x` by `scale` and leaves the value alone (fairseq's
/// `GradMultiply`): the encoder output receives gradients from every decoder layer's attention,
/// and this keeps their sum from growing with the number of layers (Gehring 2017, 3.4).
fn grad_multiply(x: Tensor<3>, scale: f64) -> Tensor<3> {
    if !x.device().is_autodiff() {
        return x;
    }
    x.clone().mul_scalar(scale) + x.mul_scalar(1.0 - scale).detach()
}

impl ConvEncoder {
    pub fn new(cfg: &ConvS2SConfig, device: &Device) -> Self {
        let (e, h, p) = (cfg.emb_dim, cfg.hidden, cfg.dropout);
        Self {
            fc_in: normal_linear(e, h, ((1.0 - p) / e as f64).sqrt(), device),
            convs: (0..cfg.enc_layers)
                .map(|_| ConvGlu::new(h, h, cfg.kernel, p, false, device))
                .collect(),
            fc_out: normal_linear(h, e, (1.0 / h as f64).sqrt(), device),
            dropout: DropoutConfig::new(p).init(),
            attention_layers: cfg.dec_layers,
        }
    }

    /// `emb: [batch, src_len, emb]` (token + position embeddings), `pad: [batch, src_len]`.
    pub fn forward(&self, emb: Tensor<3>, pad: Tensor<2, Bool>) -> ConvMemory {
        let half = 0.5f64.sqrt();
        let [b, s, _] = emb.dims();
        let keep2: Tensor<2> = pad.clone().bool_not().float();
        let keep: Tensor<3> = keep2.clone().reshape([b, s, 1]);
        let mut x = self.fc_in.forward(emb.clone());
        for conv in &self.convs {
            let residual = x.clone();
            // Zero the padding before every convolution: a real position's window may reach
            // past the sentence's end, and must read zeros there whatever the batch's length.
            x = conv.forward(self.dropout.forward(x * keep.clone()));
            x = (x + residual).mul_scalar(half);
        }
        let z = self.fc_out.forward(x) * keep;
        let z = grad_multiply(z, 1.0 / (2.0 * self.attention_layers as f64));
        let values = (z.clone() + emb).mul_scalar(half);
        let scale = keep2.sum_dim(1).sqrt().reshape([b, 1, 1]);
        ConvMemory {
            keys: z,
            values,
            pad,
            scale,
            rows: RowMap::identity(),
        }
    }
}
