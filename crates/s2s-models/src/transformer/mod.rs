//! The Transformer (Vaswani et al. 2017), built from one small component per type in the manner
//! of the Annotated Transformer: [`attention::MultiHeadAttention`], [`feed_forward::FeedForward`],
//! the residual [`sublayer::Sublayer`] (post- or pre-norm), [`positions::PositionEncoding`], the
//! [`encoder`] and [`decoder`] stacks, and the [`model::TransformerSeq2Seq`] that joins them.
//!
//! Training runs the whole target in one parallel pass under a causal mask; search decodes one
//! position at a time with a KV cache ([`model::TransformerState`]).

pub mod attention;
pub mod decoder;
pub mod encoder;
pub mod feed_forward;
pub mod model;
pub mod positions;
pub mod sublayer;

pub use feed_forward::Activation;
pub use model::{Quantizable, TransformerSeq2Seq, TransformerState};
pub use positions::Positions;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransformerConfig {
    /// Width of embeddings and of every layer's residual stream.
    pub d_model: usize,
    /// Attention heads (`d_model` must be a multiple).
    pub heads: usize,
    pub enc_layers: usize,
    pub dec_layers: usize,
    /// Inner width of the position-wise feed-forward network.
    pub ffn_dim: usize,
    /// Dropout on embeddings and on every sublayer's output before the residual sum.
    pub dropout: f64,
    /// Dropout on attention weights.
    pub attention_dropout: f64,
    /// Dropout after the FFN's ReLU.
    pub activation_dropout: f64,
    pub positions: Positions,
    /// Size of a learned position table (longer inputs reuse its last row); unused by sinusoids.
    pub max_positions: usize,
    /// Layer normalisation on each sublayer's input (plus one after each stack) instead of after
    /// the residual sum.
    pub pre_norm: bool,
    /// One embedding table for source and target (needs one joint vocabulary).
    pub share_embeddings: bool,
    /// The output projection is the transposed target embedding table.
    pub tie_output: bool,
    /// The feed-forward network's nonlinearity (Marian's models use `swish`).
    #[serde(default)]
    pub activation: Activation,
    /// Multiply token embeddings by `sqrt(d_model)` before adding positions (Vaswani 2017; Marian's
    /// `scale_embedding`).
    #[serde(default = "yes")]
    pub scale_embeddings: bool,
    /// A learned bias over the vocabulary added to the output logits (Marian's
    /// `final_logits_bias`).
    #[serde(default)]
    pub logits_bias: bool,
    /// The decoder's first input is a zero vector (plus its position) instead of the `<bos>`
    /// embedding: how Marian and CTranslate2 start decoding, so an exported model converts to
    /// CTranslate2 exactly.
    #[serde(default)]
    pub zero_start: bool,
    /// The decoder layer (0-based) whose encoder-decoder attention, averaged over heads, is
    /// reported for alignments and heatmaps; default: the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alignment_layer: Option<usize>,
    /// Copy source tokens through the reported attention ([`crate::copy`]; needs one joint
    /// vocabulary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
    /// Reads feature frames through a convolutional front end instead of source tokens: a
    /// speech recogniser (the `asr` task; `[model.speech]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<crate::speech::SpeechConfig>,
}

fn yes() -> bool {
    true
}

impl TransformerConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.d_model == 0 || self.heads == 0 || self.ffn_dim == 0 {
            return Err("d_model, heads and ffn_dim must be at least 1".into());
        }
        if !self.d_model.is_multiple_of(self.heads) {
            return Err(format!(
                "d_model = {} is not a multiple of heads = {}; choose heads dividing d_model",
                self.d_model, self.heads
            ));
        }
        if self.positions.is_sinusoidal() && !self.d_model.is_multiple_of(2) {
            return Err(format!(
                "sinusoidal positions need an even d_model, got {}",
                self.d_model
            ));
        }
        if self.enc_layers == 0 || self.dec_layers == 0 {
            return Err("enc_layers and dec_layers must be at least 1".into());
        }
        for (name, p) in [
            ("dropout", self.dropout),
            ("attention_dropout", self.attention_dropout),
            ("activation_dropout", self.activation_dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(format!("{name} = {p} must be in [0, 1)"));
            }
        }
        if self.positions == Positions::Learned && self.max_positions == 0 {
            return Err("learned positions need max_positions >= 1".into());
        }
        crate::config::check_alignment_layer(self.alignment_layer, self.dec_layers)?;
        if let Some(speech) = &self.speech {
            speech.validate()?;
            if self.share_embeddings || self.copy {
                return Err(
                    "a speech model ([model.speech]) reads frames, not tokens: set share_embeddings = false and copy = false"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// Checks what depends on the data: shared embeddings need one vocabulary.
    pub fn check_vocab(&self, src_vocab: usize, tgt_vocab: usize) -> Result<(), String> {
        if self.speech.is_some() && src_vocab < 4 {
            return Err(format!(
                "a speech model reads frames of at least 4 feature bins, but the data has {src_vocab}; prepare it with more mel bins"
            ));
        }
        if self.share_embeddings && src_vocab != tgt_vocab {
            return Err(format!(
                "share_embeddings = true needs one joint vocabulary, but the source has {src_vocab} \
                 types and the target {tgt_vocab}; prepare the data with --joint, or set \
                 share_embeddings = false"
            ));
        }
        Ok(())
    }
}
