#![allow(dead_code)]
//! Helpers shared by the integration tests.

use s2s_data::{TextTokenizer, TokenizerKind, TokenizerSpec, clean_line, train_tokenizer};
use std::path::PathBuf;

/// The embedded corpus directory.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/tatoeba-cmn-eng")
}

/// The first `n` lines of an embedded corpus file (e.g. `train.en`).
pub fn corpus_lines(file: &str, n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(corpus_dir().join(file)).expect("embedded corpus");
    text.lines().take(n).map(str::to_owned).collect()
}

/// Lines `n..n+k` of an embedded corpus file.
pub fn corpus_slice(file: &str, start: usize, k: usize) -> Vec<String> {
    let text = std::fs::read_to_string(corpus_dir().join(file)).expect("embedded corpus");
    text.lines()
        .skip(start)
        .take(k)
        .map(str::to_owned)
        .collect()
}

/// The first `n` lines of an embedded corpus file, cleaned as `prepare` cleans them, without
/// the lines cleaning empties.
pub fn cleaned_lines(file: &str, n: usize) -> Vec<String> {
    corpus_lines(file, n)
        .iter()
        .map(|l| clean_line(l, &Default::default(), false))
        .filter(|l| !l.is_empty())
        .collect()
}

/// A tokenizer of `kind` trained on `lines`.
pub fn trained(
    kind: TokenizerKind,
    lines: &[String],
    vocab_size: usize,
    min_freq: u64,
) -> TextTokenizer {
    let spec = TokenizerSpec {
        kind,
        vocab_size,
        min_freq,
        signatures: false,
    };
    train_tokenizer(&spec, lines.iter()).unwrap_or_else(|e| panic!("training {kind}: {e}"))
}
