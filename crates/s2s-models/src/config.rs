//! Model configs and the named presets of the interface document (`--arch`).

use crate::attention::Score;
use crate::convs2s::ConvS2SConfig;
use crate::labeller::{CharConfig, EncoderKind, Head, LabellerConfig};
use crate::rnn::model::Bridge;
use crate::rnn::{CellKind, ContextMode, RnnAttention, RnnConfig};
use crate::transformer::{Activation, Positions, TransformerConfig};
use s2s_data::Task;
use serde::{Deserialize, Serialize};

/// An architecture and its hyperparameters, as written to `config.toml` under `[model]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ModelConfig {
    Rnn(RnnConfig),
    Transformer(TransformerConfig),
    #[serde(rename = "convs2s")]
    ConvS2S(ConvS2SConfig),
    /// An encoder and a label head: tagging or classification.
    Labeller(LabellerConfig),
}

impl ModelConfig {
    pub fn validate(&self) -> Result<(), String> {
        match self {
            ModelConfig::Rnn(c) => c.validate(),
            ModelConfig::Transformer(c) => c.validate(),
            ModelConfig::ConvS2S(c) => c.validate(),
            ModelConfig::Labeller(c) => c.validate(),
        }
    }

    /// The task a model of this config is for: a labeller's head decides between tagging and
    /// classification; every encoder-decoder translates.
    pub fn task(&self) -> Task {
        match self {
            ModelConfig::Labeller(c) if c.head.per_token() => Task::Tagging,
            ModelConfig::Labeller(_) => Task::Classification,
            ModelConfig::Transformer(c) if c.speech.is_some() => Task::Asr,
            _ => Task::Translation,
        }
    }

    /// Whether the model reads audio (feature frames, `[model.speech]`) rather than token ids.
    pub fn reads_audio(&self) -> bool {
        match self {
            ModelConfig::Transformer(c) => c.speech.is_some(),
            ModelConfig::Labeller(c) => c.speech.is_some(),
            ModelConfig::Rnn(_) | ModelConfig::ConvS2S(_) => false,
        }
    }

    /// Whether the model can read a vector condition ([`crate::PaddedSource::vectors`]) in place
    /// of source ids: the recurrent encoder-decoders and the Transformer, which embed it through
    /// their own source table, except a copy model (there is nothing to copy from a vector) and
    /// a Transformer whose source table is its target's (`share_embeddings`).
    pub fn reads_vectors(&self) -> bool {
        match self {
            ModelConfig::Rnn(c) => !c.copy,
            ModelConfig::Transformer(c) => !c.copy && !c.share_embeddings && c.speech.is_none(),
            ModelConfig::ConvS2S(_) | ModelConfig::Labeller(_) => false,
        }
    }

    /// Whether the model reads each source token's spelling as well as its id
    /// (`[model.chars]`).
    pub fn reads_characters(&self) -> bool {
        matches!(self, ModelConfig::Labeller(c) if c.char_model().is_some())
    }

    /// Whether a model of this config does `task`: an encoder-decoder both translates and
    /// generates (1 vs N is N vs M with a one-label source).
    pub fn fits(&self, task: Task) -> bool {
        match task {
            Task::Generation => self.task() == Task::Translation,
            t => self.task() == t,
        }
    }

    /// Checks what depends on the data's vocabularies (a Transformer's `share_embeddings` needs
    /// one joint vocabulary).
    /// Whether the model copies source tokens ([`crate::copy`]).
    pub fn copies(&self) -> bool {
        match self {
            ModelConfig::Transformer(c) => c.copy,
            ModelConfig::Rnn(c) => c.copy,
            _ => false,
        }
    }

    pub fn check_vocab(&self, src_vocab: usize, tgt_vocab: usize) -> Result<(), String> {
        if self.copies() && src_vocab != tgt_vocab {
            return Err(format!(
                "copy = true copies source tokens into the target, which needs one joint \
                 vocabulary, but the source has {src_vocab} types and the target {tgt_vocab}; \
                 prepare the data with --joint, or set copy = false"
            ));
        }
        match self {
            ModelConfig::Transformer(c) => c.check_vocab(src_vocab, tgt_vocab),
            _ => Ok(()),
        }
    }
}

/// Every preset name accepted by `--arch`.
pub fn preset_names() -> Vec<&'static str> {
    let mut names = Vec::new();
    for base in ["rnn-lstm", "rnn-gru-cho", "rnnsearch", "luong"] {
        names.push(base);
    }
    for tiny in [
        "rnn-lstm-tiny",
        "rnn-gru-cho-tiny",
        "rnnsearch-tiny",
        "luong-tiny",
    ] {
        names.push(tiny);
    }
    names.extend([
        "transformer-tiny",
        "transformer-small",
        "transformer-base",
        "speech-transformer-tiny",
        "speech-transformer-small",
        "convs2s-tiny",
        "convs2s-small",
        "bilstm-tagger",
        "bilstm-tagger-tiny",
        "bilstm-classifier",
        "bilstm-classifier-tiny",
        "transformer-classifier",
        "transformer-classifier-tiny",
        "cnn-classifier",
        "cnn-classifier-tiny",
        "speech-classifier",
        "speech-classifier-tiny",
    ]);
    names
}

fn labeller(
    encoder: EncoderKind,
    head: Head,
    emb: usize,
    hidden: usize,
    layers: usize,
) -> LabellerConfig {
    LabellerConfig {
        encoder,
        head,
        emb_dim: emb,
        hidden,
        layers,
        bidirectional: matches!(encoder, EncoderKind::Lstm | EncoderKind::Gru),
        heads: 4,
        ffn_dim: 4 * hidden,
        dropout: 0.33,
        max_positions: 1024,
        widths: vec![3, 4, 5],
        speech: None,
        chars: None,
    }
}

/// The labelling presets: a BiLSTM tagger (Plank et al. 2016's shape, with Ma and Hovy 2016's
/// character CNN in place of their character BiLSTM), a BiLSTM classifier with max pooling
/// (Conneau et al. 2017's encoder) and a small Transformer classifier with attention pooling.
fn labelling(name: &str) -> Option<ModelConfig> {
    let (base, tiny) = match name.strip_suffix("-tiny") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let cfg = match base {
        "bilstm-tagger" => LabellerConfig {
            chars: Some(CharConfig {
                dim: 32,
                maps: 64,
                width: 3,
            }),
            ..labeller(EncoderKind::Lstm, Head::Tokens, 128, 256, 2)
        },
        "bilstm-classifier" => LabellerConfig {
            dropout: 0.5,
            ..labeller(EncoderKind::Lstm, Head::Max, 256, 256, 1)
        },
        "transformer-classifier" => LabellerConfig {
            dropout: 0.2,
            ..labeller(EncoderKind::Transformer, Head::Attention, 256, 256, 2)
        },
        // Kim 2014's CNN-rand: 300-dimensional embeddings, 100 maps of widths 3, 4 and 5, max
        // pooling, dropout 0.5 on the pooled features.
        "cnn-classifier" => LabellerConfig {
            dropout: 0.5,
            ..labeller(EncoderKind::Cnn, Head::Max, 300, 100, 1)
        },
        // Spoken words (FSDD's digits): the speech Transformer's front end under a BiLSTM with
        // attention pooling.
        "speech-classifier" => LabellerConfig {
            dropout: 0.3,
            speech: Some(crate::speech::SpeechConfig {
                channels: 32,
                ctc_weight: 0.0,
            }),
            ..labeller(EncoderKind::Lstm, Head::Attention, 256, 128, 1)
        },
        _ => return None,
    };
    Some(ModelConfig::Labeller(if tiny {
        LabellerConfig {
            emb_dim: 32,
            hidden: 32,
            layers: 1,
            ffn_dim: 64,
            dropout: 0.0,
            speech: cfg
                .speech
                .map(|s| crate::speech::SpeechConfig { channels: 8, ..s }),
            chars: cfg.chars.map(|c| CharConfig {
                dim: 8,
                maps: 16,
                ..c
            }),
            ..cfg
        }
    } else {
        cfg
    }))
}

/// A post-norm Transformer with sinusoidal positions and a tied output projection. Embeddings are
/// not shared by default: that needs a joint vocabulary (`prepare --joint`), so configs for joint
/// data set `share_embeddings = true` themselves.
fn transformer(
    d: usize,
    heads: usize,
    layers: usize,
    ffn: usize,
    dropout: f64,
) -> TransformerConfig {
    TransformerConfig {
        d_model: d,
        heads,
        enc_layers: layers,
        dec_layers: layers,
        ffn_dim: ffn,
        dropout,
        attention_dropout: 0.0,
        activation_dropout: 0.0,
        positions: Positions::Sinusoidal,
        max_positions: 1024,
        pre_norm: false,
        share_embeddings: false,
        tie_output: true,
        activation: Activation::Relu,
        scale_embeddings: true,
        logits_bias: false,
        zero_start: false,
        alignment_layer: None,
        copy: false,
        speech: None,
    }
}

/// A Transformer that reads feature frames through [`crate::speech`]'s front end (the
/// Speech-Transformer shape): no source embeddings to share.
fn speech_transformer(transformer: TransformerConfig, channels: usize) -> ModelConfig {
    ModelConfig::Transformer(TransformerConfig {
        speech: Some(crate::speech::SpeechConfig {
            channels,
            ..Default::default()
        }),
        ..transformer
    })
}

fn convs2s(emb: usize, hidden: usize, layers: usize, dropout: f64) -> ConvS2SConfig {
    ConvS2SConfig {
        emb_dim: emb,
        hidden,
        enc_layers: layers,
        dec_layers: layers,
        kernel: 3,
        out_dim: emb,
        dropout,
        max_positions: 1024,
        alignment_layer: None,
    }
}

/// The Transformer and ConvS2S presets.
fn non_recurrent(name: &str) -> Option<ModelConfig> {
    Some(match name {
        // For tests and smoke runs.
        "transformer-tiny" => ModelConfig::Transformer(transformer(64, 2, 2, 128, 0.0)),
        // The Multi30k anchor's recipe (d 256, 4 heads, 3+3 layers, FFN 1024, dropout 0.1).
        "transformer-small" => ModelConfig::Transformer(transformer(256, 4, 3, 1024, 0.1)),
        // Vaswani 2017's base model.
        "transformer-base" => ModelConfig::Transformer(transformer(512, 8, 6, 2048, 0.1)),
        "speech-transformer-tiny" => speech_transformer(transformer(64, 2, 2, 128, 0.0), 8),
        // The speech recipes' model: transformer-small's layers over a 32-channel front end.
        "speech-transformer-small" => speech_transformer(transformer(256, 4, 3, 1024, 0.1), 32),
        "convs2s-tiny" => ModelConfig::ConvS2S(ConvS2SConfig {
            max_positions: 256,
            ..convs2s(64, 64, 3, 0.0)
        }),
        // Gehring 2017 uses 512-768 channels and 15-20 layers; this is a size that trains on a
        // few CPU cores in about the time of `transformer-small`.
        "convs2s-small" => ModelConfig::ConvS2S(convs2s(256, 256, 8, 0.1)),
        _ => return None,
    })
}

fn rnn(cell: CellKind, emb: usize, hidden: usize, layers: usize) -> RnnConfig {
    RnnConfig {
        cell,
        emb_dim: emb,
        hidden,
        enc_layers: layers,
        dec_layers: layers,
        bidirectional: false,
        dropout: 0.3,
        attention: RnnAttention::None,
        score: Score::General,
        attn_dim: hidden,
        input_feed: false,
        context_mode: ContextMode::Init,
        bridge: Bridge::Last,
        readout_dim: 0,
        reverse_source: false,
        copy: false,
    }
}

/// The config of a named preset, or `None` for an unknown name.
pub fn preset(name: &str) -> Option<ModelConfig> {
    if name.ends_with("-tagger")
        || name.ends_with("-classifier")
        || name.ends_with("-tagger-tiny")
        || name.ends_with("-classifier-tiny")
    {
        return labelling(name);
    }
    if name.starts_with("transformer")
        || name.starts_with("speech-transformer")
        || name.starts_with("convs2s")
    {
        return non_recurrent(name);
    }
    let (base, tiny) = match name.strip_suffix("-tiny") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let (emb, hidden) = if tiny { (32, 64) } else { (256, 512) };
    let cfg = match base {
        // Sutskever 2014: a stacked LSTM whose final states initialise the decoder.
        "rnn-lstm" => rnn(CellKind::Lstm, emb, hidden, 2),
        // Cho 2014: a GRU whose context is its initial state and an input at every step,
        // with the previous output, the state and the context all feeding the output layer.
        "rnn-gru-cho" => RnnConfig {
            context_mode: ContextMode::EveryStep,
            ..rnn(CellKind::Gru, emb, hidden, 1)
        },
        // Bahdanau 2015: bidirectional GRU encoder, additive attention on the previous state.
        "rnnsearch" => RnnConfig {
            bidirectional: true,
            attention: RnnAttention::Bahdanau,
            score: Score::Additive,
            bridge: Bridge::Linear,
            readout_dim: emb,
            ..rnn(CellKind::Gru, emb, hidden, 1)
        },
        // Luong 2015: stacked LSTMs, general score on the current state, input feeding.
        "luong" => RnnConfig {
            attention: RnnAttention::Luong,
            score: Score::General,
            input_feed: true,
            ..rnn(CellKind::Lstm, emb, hidden, 2)
        },
        _ => return None,
    };
    let cfg = if tiny {
        RnnConfig {
            dropout: 0.0,
            ..cfg
        }
    } else {
        cfg
    };
    Some(ModelConfig::Rnn(cfg))
}

/// The decoder layer whose attention is reported must exist (shared by the architectures that
/// let you choose one).
pub(crate) fn check_alignment_layer(layer: Option<usize>, dec_layers: usize) -> Result<(), String> {
    match layer {
        Some(l) if l >= dec_layers => Err(format!(
            "alignment_layer = {l} but the decoder has {dec_layers} layers (0-based)"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid_and_round_trips_through_toml() {
        for name in preset_names() {
            let cfg = preset(name).unwrap();
            cfg.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            let text = toml::to_string(&cfg).unwrap();
            let back: ModelConfig = toml::from_str(&text).unwrap();
            assert_eq!(back, cfg, "{name}");
        }
        assert!(preset("no-such-model").is_none());
        assert!(preset("transformer-base-tiny").is_none());
        for (name, tag) in [
            ("transformer-small", "type = \"transformer\""),
            ("convs2s-small", "type = \"convs2s\""),
        ] {
            let text = toml::to_string(&preset(name).unwrap()).unwrap();
            assert!(text.contains(tag), "{name}: {text}");
        }
    }

    #[test]
    fn unknown_fields_and_bad_values_are_config_errors() {
        let mut text = toml::to_string(&preset("transformer-tiny").unwrap()).unwrap();
        text.push_str("no_such_field = 1\n");
        assert!(toml::from_str::<ModelConfig>(&text).is_err());
        let mut text = toml::to_string(&preset("convs2s-tiny").unwrap()).unwrap();
        text.push_str("no_such_field = 1\n");
        assert!(toml::from_str::<ModelConfig>(&text).is_err());

        let Some(ModelConfig::Transformer(t)) = preset("transformer-tiny") else {
            unreachable!()
        };
        let bad = TransformerConfig {
            heads: 3,
            ..t.clone()
        };
        assert!(bad.validate().unwrap_err().contains("multiple of heads"));
        let shared = ModelConfig::Transformer(TransformerConfig {
            share_embeddings: true,
            ..t
        });
        shared.validate().unwrap();
        assert!(shared.check_vocab(10, 10).is_ok());
        assert!(shared.check_vocab(10, 12).unwrap_err().contains("joint"));

        let Some(ModelConfig::ConvS2S(c)) = preset("convs2s-tiny") else {
            unreachable!()
        };
        assert!(
            ConvS2SConfig {
                kernel: 4,
                ..c.clone()
            }
            .validate()
            .is_err()
        );
        assert!(
            ConvS2SConfig {
                alignment_layer: Some(3),
                ..c
            }
            .validate()
            .is_err()
        );
    }
}
