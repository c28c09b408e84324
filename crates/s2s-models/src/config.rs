//! Model configs and the named presets of the interface document (`--arch`).

use crate::attention::Score;
use crate::rnn::model::Bridge;
use crate::rnn::{CellKind, ContextMode, RnnAttention, RnnConfig};
use serde::{Deserialize, Serialize};

/// An architecture and its hyperparameters, as written to `config.toml` under `[model]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ModelConfig {
    Rnn(RnnConfig),
}

impl ModelConfig {
    pub fn validate(&self) -> Result<(), String> {
        match self {
            ModelConfig::Rnn(c) => c.validate(),
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
    names
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
    }
}

/// The config of a named preset, or `None` for an unknown name.
pub fn preset(name: &str) -> Option<ModelConfig> {
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
    }
}
