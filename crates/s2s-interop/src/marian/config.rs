//! `config.json` of a Hugging Face MarianMT model, and its translation to and from s2s's
//! [`TransformerConfig`]: which Marian options map to which config option, and which are refused.

use s2s_models::transformer::{Activation, Positions, TransformerConfig};
use serde::{Deserialize, Serialize};

use crate::{Result, unsupported};

/// The fields of `MarianConfig` that decide the model's shape and behaviour. Fields of older
/// checkpoints that s2s cannot express are read so that they can be refused by name.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MarianConfig {
    pub model_type: String,
    pub vocab_size: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoder_vocab_size: Option<usize>,
    pub d_model: usize,
    pub encoder_layers: usize,
    pub decoder_layers: usize,
    pub encoder_attention_heads: usize,
    pub decoder_attention_heads: usize,
    pub encoder_ffn_dim: usize,
    pub decoder_ffn_dim: usize,
    pub activation_function: String,
    #[serde(default)]
    pub dropout: f64,
    #[serde(default)]
    pub attention_dropout: f64,
    #[serde(default)]
    pub activation_dropout: f64,
    pub max_position_embeddings: usize,
    #[serde(default = "yes")]
    pub scale_embedding: bool,
    pub pad_token_id: u32,
    pub eos_token_id: u32,
    pub decoder_start_token_id: u32,
    #[serde(default = "yes")]
    pub share_encoder_decoder_embeddings: bool,
    #[serde(default = "yes")]
    pub tie_word_embeddings: bool,
    /// Older checkpoints: pre-norm layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize_before: Option<bool>,
    /// Older checkpoints: a layer norm on the embeddings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize_embedding: Option<bool>,
    /// Older checkpoints: a layer norm after each stack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_final_layer_norm: Option<bool>,
    /// Older checkpoints: fixed (true) or learned position embeddings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub static_position_embeddings: Option<bool>,
}

fn yes() -> bool {
    true
}

impl MarianConfig {
    /// Reads `config.json`'s text; `what` names the file in errors.
    pub fn parse(text: &str, what: &str) -> Result<Self> {
        let cfg: MarianConfig = serde_json::from_str(text).map_err(|e| {
            unsupported(format!(
                "{what}: not a MarianMT config.json ({e}); fix: pass the folder a MarianMTModel \
                 was saved to"
            ))
        })?;
        if cfg.model_type != "marian" {
            return Err(unsupported(format!(
                "{what}: model_type is `{}`, not `marian`; only MarianMT models (OPUS-MT) are imported",
                cfg.model_type
            )));
        }
        Ok(cfg)
    }

    /// The s2s Transformer with the same computation, or the first option that stands in the way.
    pub fn to_transformer(&self, what: &str) -> Result<TransformerConfig> {
        let refuse = |field: &str, why: &str| {
            unsupported(format!(
                "{what}: {field} {why}; s2s cannot import this model"
            ))
        };
        let activation = match self.activation_function.as_str() {
            "swish" | "silu" => Activation::Swish,
            "relu" => Activation::Relu,
            "gelu" => Activation::Gelu,
            other => {
                return Err(refuse(
                    &format!("activation_function = \"{other}\""),
                    "is not supported (swish, silu, relu and gelu are)",
                ));
            }
        };
        let post_norm = "is not supported (post-norm layers with fixed sinusoids are)";
        for (field, set, why) in [
            (
                "normalize_before = true",
                self.normalize_before == Some(true),
                post_norm,
            ),
            (
                "normalize_embedding = true",
                self.normalize_embedding == Some(true),
                post_norm,
            ),
            (
                "add_final_layer_norm = true",
                self.add_final_layer_norm == Some(true),
                post_norm,
            ),
            (
                "static_position_embeddings = false",
                self.static_position_embeddings == Some(false),
                post_norm,
            ),
            (
                "share_encoder_decoder_embeddings = false",
                !self.share_encoder_decoder_embeddings
                    || self
                        .decoder_vocab_size
                        .is_some_and(|v| v != self.vocab_size),
                "(separate source and target vocabularies) is not supported yet",
            ),
            (
                "encoder_attention_heads != decoder_attention_heads",
                self.encoder_attention_heads != self.decoder_attention_heads,
                "is not supported (s2s has one head count)",
            ),
            (
                "encoder_ffn_dim != decoder_ffn_dim",
                self.encoder_ffn_dim != self.decoder_ffn_dim,
                "is not supported (s2s has one FFN width)",
            ),
            (
                "decoder_start_token_id != pad_token_id",
                self.decoder_start_token_id != self.pad_token_id,
                "is not supported (Marian starts decoding from <pad>)",
            ),
        ] {
            if set {
                return Err(refuse(field, why));
            }
        }
        let cfg = TransformerConfig {
            d_model: self.d_model,
            heads: self.encoder_attention_heads,
            enc_layers: self.encoder_layers,
            dec_layers: self.decoder_layers,
            ffn_dim: self.encoder_ffn_dim,
            dropout: self.dropout,
            attention_dropout: self.attention_dropout,
            activation_dropout: self.activation_dropout,
            positions: Positions::SinusoidalConcat,
            max_positions: self.max_position_embeddings,
            pre_norm: false,
            share_embeddings: true,
            tie_output: self.tie_word_embeddings,
            activation,
            scale_embeddings: self.scale_embedding,
            logits_bias: true,
            // Set by the importer from the weights (a zero `<pad>` row is a zero start).
            zero_start: false,
            alignment_layer: None,
            copy: false,
            speech: None,
        };
        cfg.validate()
            .map_err(|e| unsupported(format!("{what}: {e}")))?;
        Ok(cfg)
    }

    /// The Marian config of an s2s Transformer with `vocab_size` entries whose `<pad>` (and
    /// decoder start) is `pad` and `</s>` is `eos`, or the first option that stands in the way.
    pub fn from_transformer(
        cfg: &TransformerConfig,
        vocab_size: usize,
        pad: u32,
        eos: u32,
    ) -> Result<Self> {
        let refuse = |option: &str, fix: &str| {
            unsupported(format!(
                "the model's `{option}` cannot be expressed as a MarianMT model; {fix}"
            ))
        };
        if cfg.positions != Positions::SinusoidalConcat {
            return Err(refuse(
                &format!("positions = \"{}\"", positions_name(cfg.positions)),
                "train with `positions = \"sinusoidal-concat\"` (Marian's layout: all sines, then all cosines)",
            ));
        }
        if cfg.pre_norm {
            return Err(refuse("pre_norm = true", "train with `pre_norm = false`"));
        }
        if cfg.speech.is_some() {
            return Err(refuse(
                "[model.speech]",
                "MarianMT reads tokens, not audio; only text models export",
            ));
        }
        if cfg.copy {
            return Err(refuse(
                "copy = true",
                "MarianMT has no copy gate; train with `copy = false` to export",
            ));
        }
        if !cfg.share_embeddings {
            return Err(refuse(
                "share_embeddings = false",
                "prepare the data with `--joint --tokenizer unigram` and train with `share_embeddings = true`",
            ));
        }
        let activation = match cfg.activation {
            Activation::Relu => "relu",
            Activation::Swish => "swish",
            Activation::Gelu => "gelu",
        };
        Ok(MarianConfig {
            model_type: "marian".into(),
            vocab_size,
            decoder_vocab_size: Some(vocab_size),
            d_model: cfg.d_model,
            encoder_layers: cfg.enc_layers,
            decoder_layers: cfg.dec_layers,
            encoder_attention_heads: cfg.heads,
            decoder_attention_heads: cfg.heads,
            encoder_ffn_dim: cfg.ffn_dim,
            decoder_ffn_dim: cfg.ffn_dim,
            activation_function: activation.into(),
            dropout: cfg.dropout,
            attention_dropout: cfg.attention_dropout,
            activation_dropout: cfg.activation_dropout,
            max_position_embeddings: cfg.max_positions.max(512),
            scale_embedding: cfg.scale_embeddings,
            pad_token_id: pad,
            eos_token_id: eos,
            decoder_start_token_id: pad,
            share_encoder_decoder_embeddings: true,
            tie_word_embeddings: cfg.tie_output,
            normalize_before: None,
            normalize_embedding: None,
            add_final_layer_norm: None,
            static_position_embeddings: None,
        })
    }
}

fn positions_name(p: Positions) -> &'static str {
    match p {
        Positions::Sinusoidal => "sinusoidal",
        Positions::SinusoidalConcat => "sinusoidal-concat",
        Positions::Learned => "learned",
    }
}
