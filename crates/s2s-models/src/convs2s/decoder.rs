//! The convolutional decoder (fairseq's `FConvDecoder`): causal GLU convolutions, each followed by
//! its own [`MultiStepAttention`] and a scaled residual, then two projections to the vocabulary.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Device, Tensor};

use super::ConvS2SConfig;
use super::attention::{ConvMemory, MultiStepAttention};
use super::conv::ConvGlu;
use crate::init::normal_linear;

#[derive(Module, Debug)]
pub struct DecoderLayer {
    pub conv: ConvGlu,
    pub attention: MultiStepAttention,
}

#[derive(Module, Debug)]
pub struct ConvDecoder {
    /// Embedding to conv width.
    pub fc_in: Linear,
    pub layers: Vec<DecoderLayer>,
    /// Conv width to `out_dim`.
    pub fc_out: Linear,
    /// `out_dim` to the vocabulary.
    pub output: Linear,
    pub dropout: Dropout,
}

impl ConvDecoder {
    pub fn new(cfg: &ConvS2SConfig, tgt_vocab: usize, device: &Device) -> Self {
        let (e, h, p) = (cfg.emb_dim, cfg.hidden, cfg.dropout);
        Self {
            fc_in: normal_linear(e, h, ((1.0 - p) / e as f64).sqrt(), device),
            layers: (0..cfg.dec_layers)
                .map(|_| DecoderLayer {
                    conv: ConvGlu::new(h, h, cfg.kernel, p, true, device),
                    attention: MultiStepAttention::new(h, e, device),
                })
                .collect(),
            fc_out: normal_linear(h, cfg.out_dim, (1.0 / h as f64).sqrt(), device),
            output: normal_linear(
                cfg.out_dim,
                tgt_vocab,
                ((1.0 - p) / cfg.out_dim as f64).sqrt(),
                device,
            ),
            dropout: DropoutConfig::new(p).init(),
        }
    }

    /// The layers over a whole target. `emb: [batch, len, emb]` are the previous tokens' embeddings;
    /// `conv(l, x)` runs layer `l`'s convolution (all positions at once, or one cached step).
    /// Returns the hidden states that enter `output` (`[batch, len, out_dim]`) and each layer's
    /// attention `[batch, len, src_len]`.
    pub fn forward(
        &self,
        emb: Tensor<3>,
        memory: &ConvMemory,
        mut conv: impl FnMut(usize, &ConvGlu, Tensor<3>) -> Tensor<3>,
    ) -> (Tensor<3>, Vec<Tensor<3>>) {
        let half = 0.5f64.sqrt();
        let mut x = self.fc_in.forward(emb.clone());
        let mut attns = Vec::with_capacity(self.layers.len());
        for (l, layer) in self.layers.iter().enumerate() {
            let residual = x.clone();
            x = conv(l, &layer.conv, self.dropout.forward(x));
            let (y, a) = layer.attention.forward(x, emb.clone(), memory);
            attns.push(a);
            x = (y + residual).mul_scalar(half);
        }
        (self.dropout.forward(self.fc_out.forward(x)), attns)
    }
}
