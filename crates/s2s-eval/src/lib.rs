//! Evaluation metrics that match [sacreBLEU](https://github.com/mjpost/sacrebleu) 2.x exactly:
//! corpus and sentence BLEU (tokenizers `13a`, `zh`, `intl`, `char`, `none`; smoothing `exp`,
//! `floor`, `add-k`, `none`; effective order; multiple references) and chrF / chrF++.
//!
//! Also: WER/CER/PER/SER error rates ([`corpus_error_counts`]), accuracy and macro-F1 for
//! tagging and classification ([`labels`]), and ROUGE-N/L/Lsum as Google's `rouge-score`
//! computes them, with NLTK's Porter stemmer ([`corpus_rouge`]); and the simple baselines those
//! scores are read against ([`baseline`]: Lead-N, retrieval), and the parts of extractive
//! summarisation that are not its classifier ([`extractive`]).
//!
//! Scores are on sacreBLEU's 0-100 scale. Parity with sacreBLEU 2.5.1/2.6.0 is tested on random
//! corpora (`tests/sacrebleu_parity.rs`), including Python's notions of whitespace and
//! lowercasing that sacreBLEU inherits.
//!
//! ```
//! use s2s_eval::{BleuConfig, ChrfConfig, Tokenize, corpus_bleu, corpus_chrf};
//! let hyps = vec!["The dog bit the man.".to_string()];
//! let refs = vec!["The dog bit the man.".to_string()];
//! let bleu = corpus_bleu(&hyps, &[&refs], &BleuConfig::with_tokenize(Tokenize::Intl)).unwrap();
//! let chrf = corpus_chrf(&hyps, &[&refs], &ChrfConfig::default()).unwrap();
//! assert!((bleu.score - 100.0).abs() < 1e-9 && (chrf.score - 100.0).abs() < 1e-9);
//! ```

pub mod baseline;
mod bleu;
mod chrf;
mod error_rate;
pub mod extractive;
mod files;
pub mod labels;
mod porter;
mod pystr;
mod report;
mod rouge;
mod tokenizer;

use std::path::PathBuf;

pub use bleu::{
    BleuConfig, BleuScore, BleuStats, MAX_NGRAM_ORDER, Smooth, compute_bleu, corpus_bleu,
    corpus_bleu_stats, segment_bleu_stats, sentence_bleu,
};
pub use chrf::{ChrfConfig, ChrfScore, corpus_chrf, segment_chrf_stats, sentence_chrf};
pub use error_rate::{ErrorCounts, Units, corpus_error_counts};
pub use files::{EvalInputs, load_inputs, read_lines};
pub use labels::{LabelScores, LabelStat, label_scores};
pub use porter::stem as porter_stem;
pub use report::{EvalOptions, EvalReport, Metric, evaluate, ranking_rouge, ranking_score};
pub use rouge::{
    CorpusRouge, RougeConfig, RougeScore, RougeType, corpus_rouge, rouge_tokenize, sentence_rouge,
};
pub use tokenizer::Tokenize;

/// This crate's version, used in signatures as `version:s2s-<version>`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `version` field of our signatures: we are not sacreBLEU, so we say who we are.
pub(crate) fn signature_version() -> String {
    format!("s2s-{VERSION}")
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("unknown tokenizer {0:?} (expected one of: 13a, zh, intl, char, none)")]
    UnknownTokenizer(String),
    #[error(
        "unknown smoothing method {0:?} (expected exp, none, floor, add-k, or floor[V], add-k[V])"
    )]
    UnknownSmooth(String),
    #[error(
        "unknown metric {0:?} (expected bleu, chrf, chrf++, wer, cer, per, ser, accuracy, f1 or \
         rouge)"
    )]
    UnknownMetric(String),
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error("no references given")]
    NoReferences,
    #[error("reference stream {stream} has {found} segments but there are {expected} hypotheses")]
    StreamLengthMismatch {
        stream: usize,
        expected: usize,
        found: usize,
    },
    #[error(
        "line count mismatch: {} has {first_lines} lines but {} has {second_lines}",
        first.display(),
        second.display()
    )]
    LineCountMismatch {
        first: PathBuf,
        first_lines: usize,
        second: PathBuf,
        second_lines: usize,
    },
    /// The I/O error is part of the message (and deliberately not chained as a `source`, so
    /// that `anyhow`'s `{:#}` does not print it twice).
    #[error("cannot read {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: line {line} is not valid UTF-8", path.display())]
    InvalidUtf8 { path: PathBuf, line: usize },
    /// A hypothesis line has another number of labels than its reference line.
    #[error(
        "line {line}: the hypothesis has {hyp} label(s) but the reference has {reference}; fix: \
         give exactly one label per reference label (for tagging one tag per token, for \
         classification one label per line)"
    )]
    LabelCount {
        /// 1-based line number.
        line: usize,
        hyp: usize,
        reference: usize,
    },
}

/// Checks that every reference stream has one segment per hypothesis.
pub(crate) fn check_streams<R: AsRef<str>, S: AsRef<[R]>>(
    n_hyps: usize,
    refs: &[S],
) -> Result<(), EvalError> {
    if refs.is_empty() {
        return Err(EvalError::NoReferences);
    }
    for (i, stream) in refs.iter().enumerate() {
        let found = stream.as_ref().len();
        if found != n_hyps {
            return Err(EvalError::StreamLengthMismatch {
                stream: i + 1,
                expected: n_hyps,
                found,
            });
        }
    }
    Ok(())
}
