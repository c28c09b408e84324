//! The encoder stack: self-attention over the source with padded keys masked, then the FFN, each
//! inside a residual [`Sublayer`].

use burn::module::Module;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::{Bool, Device, Tensor};

use super::TransformerConfig;
use super::attention::MultiHeadAttention;
use super::feed_forward::FeedForward;
use super::sublayer::Sublayer;
use crate::engine::RowMap;

#[derive(Module, Debug)]
pub struct EncoderLayer {
    pub self_attn: MultiHeadAttention,
    pub self_attn_sub: Sublayer,
    pub ffn: FeedForward,
    pub ffn_sub: Sublayer,
}

impl EncoderLayer {
    pub fn new(cfg: &TransformerConfig, device: &Device) -> Self {
        let d = cfg.d_model;
        Self {
            self_attn: MultiHeadAttention::new(d, cfg.heads, cfg.attention_dropout, device),
            self_attn_sub: Sublayer::new(d, cfg.dropout, cfg.pre_norm, device),
            ffn: FeedForward::new(
                d,
                cfg.ffn_dim,
                cfg.activation,
                cfg.activation_dropout,
                device,
            ),
            ffn_sub: Sublayer::new(d, cfg.dropout, cfg.pre_norm, device),
        }
    }

    /// `x: [batch, src_len, d]`, `pad: [batch, src_len]` (true at padding).
    pub fn forward(&self, x: Tensor<3>, pad: &Tensor<2, Bool>) -> Tensor<3> {
        let (x, ()) = self.self_attn_sub.forward(x, |h| {
            let kv = self.self_attn.keys_values(h.clone()).into();
            (
                self.self_attn
                    .forward(h, &kv, &RowMap::identity(), Some(pad), None)
                    .0,
                (),
            )
        });
        self.ffn_sub.forward(x, |h| (self.ffn.forward(h), ())).0
    }
}

#[derive(Module, Debug)]
pub struct TransformerEncoder {
    pub layers: Vec<EncoderLayer>,
    /// Pre-norm only: the normalisation after the last layer (its residual stream is unnormalised).
    pub final_norm: Option<LayerNorm>,
}

impl TransformerEncoder {
    pub fn new(cfg: &TransformerConfig, device: &Device) -> Self {
        Self {
            layers: (0..cfg.enc_layers)
                .map(|_| EncoderLayer::new(cfg, device))
                .collect(),
            final_norm: cfg
                .pre_norm
                .then(|| LayerNormConfig::new(cfg.d_model).init(device)),
        }
    }

    /// Embedded source `[batch, src_len, d]` to the encoder output.
    pub fn forward(&self, mut x: Tensor<3>, pad: &Tensor<2, Bool>) -> Tensor<3> {
        for layer in &self.layers {
            x = layer.forward(x, pad);
        }
        match &self.final_norm {
            Some(norm) => norm.forward(x),
            None => x,
        }
    }
}
