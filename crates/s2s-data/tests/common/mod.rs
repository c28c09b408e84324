#![allow(dead_code)]
//! Helpers shared by the integration tests.

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
