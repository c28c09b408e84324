//! The decoder stack: causal self-attention, encoder-decoder attention and the FFN. The same code
//! serves the parallel teacher-forced pass (whole target, causal mask) and incremental decoding
//! (one position, attending over the cached keys and values of the prefix, so no mask is needed).

use burn::module::Module;
use burn::nn::{LayerNorm, LayerNormConfig};
use burn::tensor::{Bool, Device, Tensor};

use super::TransformerConfig;
use super::attention::{CachedKeyValue, MultiHeadAttention, PrefixCache};
use super::feed_forward::FeedForward;
use super::sublayer::Sublayer;
use crate::engine::{CacheFormat, RowMap};

#[derive(Module, Debug)]
pub struct DecoderLayer {
    pub self_attn: MultiHeadAttention,
    pub self_attn_sub: Sublayer,
    pub cross_attn: MultiHeadAttention,
    pub cross_attn_sub: Sublayer,
    pub ffn: FeedForward,
    pub ffn_sub: Sublayer,
}

/// The encoder side a decoder layer attends over: the projected encoder outputs of its
/// cross-attention and their padding (`[n, src_len]`), row `i` reading row `rows.get(i)` of both.
pub struct EncoderSide<'a> {
    pub kv: &'a CachedKeyValue,
    pub rows: &'a RowMap,
    pub pad: &'a Tensor<2, Bool>,
}

/// What one decoder layer returns besides its output.
pub struct LayerOutput {
    pub x: Tensor<3>,
    /// Self-attention keys and values of every position so far (to cache when decoding).
    pub self_kv: PrefixCache,
    /// Encoder-decoder attention weights `[batch, heads, q_len, src_len]`.
    pub cross_weights: Tensor<4>,
}

impl DecoderLayer {
    pub fn new(cfg: &TransformerConfig, device: &Device) -> Self {
        let d = cfg.d_model;
        let attn = || MultiHeadAttention::new(d, cfg.heads, cfg.attention_dropout, device);
        let sub = || Sublayer::new(d, cfg.dropout, cfg.pre_norm, device);
        Self {
            self_attn: attn(),
            self_attn_sub: sub(),
            cross_attn: attn(),
            cross_attn_sub: sub(),
            ffn: FeedForward::new(
                d,
                cfg.ffn_dim,
                cfg.activation,
                cfg.activation_dropout,
                device,
            ),
            ffn_sub: sub(),
        }
    }

    /// `x: [batch, q_len, d]` holds the positions after `past` (the cached prefix, if any; a new
    /// one keeps its later positions in `kv_cache`). `causal: [q_len, q_len]` masks the future
    /// within `x` when `q_len > 1`.
    pub fn forward(
        &self,
        x: Tensor<3>,
        past: Option<PrefixCache>,
        kv_cache: CacheFormat,
        causal: Option<&Tensor<2, Bool>>,
        cross: &EncoderSide<'_>,
    ) -> LayerOutput {
        let (x, self_kv) = self.self_attn_sub.forward(x, |h| {
            let new = self.self_attn.keys_values(h.clone());
            match past {
                Some(mut past) => {
                    past.append(new);
                    (self.self_attn.forward_cached(h, &mut past), past)
                }
                None => {
                    let identity = RowMap::identity();
                    let out = (self.self_attn)
                        .forward(h, &new.clone().into(), &identity, None, causal)
                        .0;
                    (out, PrefixCache::new(new, kv_cache))
                }
            }
        });
        let (x, cross_weights) = self.cross_attn_sub.forward(x, |h| {
            self.cross_attn
                .forward(h, cross.kv, cross.rows, Some(cross.pad), None)
        });
        let x = self.ffn_sub.forward(x, |h| (self.ffn.forward(h), ())).0;
        LayerOutput {
            x,
            self_kv,
            cross_weights,
        }
    }
}

#[derive(Module, Debug)]
pub struct TransformerDecoder {
    pub layers: Vec<DecoderLayer>,
    /// Pre-norm only: the normalisation after the last layer.
    pub final_norm: Option<LayerNorm>,
    /// How decoding keeps the keys and values it attends over: f32, or int8 in an int8 model
    /// that asks for it (`s2s quantize --kv-cache`).
    #[module(skip)]
    pub kv_cache: CacheFormat,
}

impl TransformerDecoder {
    pub fn new(cfg: &TransformerConfig, device: &Device) -> Self {
        Self {
            layers: (0..cfg.dec_layers)
                .map(|_| DecoderLayer::new(cfg, device))
                .collect(),
            final_norm: cfg
                .pre_norm
                .then(|| LayerNormConfig::new(cfg.d_model).init(device)),
            kv_cache: CacheFormat::F32,
        }
    }

    pub fn final_norm(&self, x: Tensor<3>) -> Tensor<3> {
        match &self.final_norm {
            Some(norm) => norm.forward(x),
            None => x,
        }
    }
}
