//! What a data directory is for: the task decides the input formats `prepare` reads, the
//! tokenizers it may use, and the head, loss and metric a model trained on it gets.

use serde::{Deserialize, Serialize};

use crate::error::DataError;

/// The task of a data directory and of the models trained on it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// N vs M: a target sequence of its own length (translation, G2P, summaries).
    #[default]
    Translation,
    /// N vs N: one label per source token (part-of-speech tagging).
    Tagging,
    /// N vs 1: one label per sequence (sentiment, question type).
    Classification,
    /// 1 vs N: a target sequence from a condition of one label (or a few), such as a question
    /// of a given type.
    Generation,
    /// Speech recognition: a transcript from audio, read as feature frames ([`crate::audio`]).
    Asr,
}

/// The side of a pair that holds labels rather than text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelSide {
    Source,
    Target,
}

impl Task {
    pub const ALL: [Task; 5] = [
        Task::Translation,
        Task::Tagging,
        Task::Classification,
        Task::Generation,
        Task::Asr,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Task::Translation => "translation",
            Task::Tagging => "tagging",
            Task::Classification => "classification",
            Task::Generation => "generation",
            Task::Asr => "asr",
        }
    }

    /// The side that is labels (one `split` token each) rather than text: the tags and class
    /// labels of the labelling tasks, the condition of generation.
    pub fn label_side(self) -> Option<LabelSide> {
        match self {
            Task::Translation | Task::Asr => None,
            Task::Tagging | Task::Classification => Some(LabelSide::Target),
            Task::Generation => Some(LabelSide::Source),
        }
    }

    /// Whether the model labels its input (tagging, classification) rather than writing a
    /// sequence of its own (translation, generation, which an encoder-decoder does).
    pub fn labels_input(self) -> bool {
        self.label_side() == Some(LabelSide::Target)
    }
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Task {
    type Err = DataError;
    fn from_str(s: &str) -> Result<Self, DataError> {
        Task::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| {
                DataError::Config(format!(
                    "unknown task `{s}`; fix: use translation, tagging, classification, generation or asr"
                ))
            })
    }
}
