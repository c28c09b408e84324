//! WER and CER against the real `jiwer` (from PyPI) on random corpora with one reference: the
//! same edit counts, segment by segment and for the corpus, e.g.
//!
//! ```text
//! python3 -m venv .ci/venv && .ci/venv/bin/pip install jiwer==4.0.0
//! S2S_JIWER_PYTHON=.ci/venv/bin/python cargo test -p s2s-eval --test jiwer_parity
//! ```
//!
//! Without `S2S_JIWER_PYTHON` the test says it is skipped (`.ci/run` sets it).

use std::process::Command;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_eval::{Units, corpus_error_counts};
use serde_json::Value;

const PYTHON: &str = r#"
import json, sys, jiwer
data = json.load(open(sys.argv[1], encoding="utf-8"))
out = {"segments": []}
for r, h in zip(data["refs"], data["hyps"]):
    w = jiwer.process_words(r, h)
    c = jiwer.process_characters(r, h)
    out["segments"].append([
        w.substitutions + w.deletions + w.insertions,
        c.substitutions + c.deletions + c.insertions,
    ])
out["wer"] = jiwer.wer(data["refs"], data["hyps"])
out["cer"] = jiwer.cer(data["refs"], data["hyps"])
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
"#;

/// Phoneme-like tokens from a small alphabet (so that edits are common), separated by one to
/// three spaces, with stray spaces at the ends.
fn sequence(rng: &mut ChaCha8Rng, len: usize) -> Vec<&'static str> {
    const PHONES: [&str; 9] = ["AA1", "B", "K", "AH0", "T", "IY0", "S", "é", "ŋ"];
    (0..len).map(|_| *PHONES.choose(rng).unwrap()).collect()
}

fn join(rng: &mut ChaCha8Rng, tokens: &[&str]) -> String {
    let mut s = " ".repeat(rng.random_range(0..2));
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            s.push_str(&" ".repeat(rng.random_range(1..4)));
        }
        s.push_str(t);
    }
    s.push_str(&" ".repeat(rng.random_range(0..2)));
    s
}

fn corpus(n: usize) -> (Vec<String>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(28);
    let (mut hyps, mut refs) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let len = rng.random_range(1..12);
        let r = sequence(&mut rng, len);
        let mut h = r.clone();
        for _ in 0..rng.random_range(0..4) {
            match rng.random_range(0..3) {
                0 if !h.is_empty() => {
                    let i = rng.random_range(0..h.len());
                    h.remove(i);
                }
                1 => {
                    let i = rng.random_range(0..=h.len());
                    h.insert(i, sequence(&mut rng, 1)[0]);
                }
                _ if !h.is_empty() => {
                    let i = rng.random_range(0..h.len());
                    h[i] = sequence(&mut rng, 1)[0];
                }
                _ => {}
            }
        }
        refs.push(join(&mut rng, &r));
        hyps.push(join(&mut rng, &h));
    }
    (hyps, refs)
}

#[test]
fn parity_with_jiwer() {
    let Some(python) = std::env::var_os("S2S_JIWER_PYTHON") else {
        eprintln!("skipped: set S2S_JIWER_PYTHON to a Python with jiwer (e.g. ==4.0.0) installed");
        return;
    };
    let (hyps, refs) = corpus(400);
    let dir = tempfile::tempdir().unwrap();
    let (input, output, script) = (
        dir.path().join("in.json"),
        dir.path().join("out.json"),
        dir.path().join("jiwer_parity.py"),
    );
    std::fs::write(
        &input,
        serde_json::json!({"hyps": hyps, "refs": refs}).to_string(),
    )
    .unwrap();
    std::fs::write(&script, PYTHON).unwrap();
    let status = Command::new(&python)
        .args([&script, &input, &output])
        .status()
        .unwrap_or_else(|e| panic!("cannot run S2S_JIWER_PYTHON={python:?}: {e}"));
    assert!(status.success(), "the jiwer script failed: {status}");
    let out: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();

    let segments = out["segments"].as_array().unwrap();
    assert_eq!(segments.len(), hyps.len());
    let mut total_edits = [0usize; 2];
    for (i, want) in segments.iter().enumerate() {
        for (k, units) in [Units::Tokens, Units::Chars].into_iter().enumerate() {
            let ours = corpus_error_counts(&hyps[i..=i], &[&refs[i..=i]], units, false).unwrap();
            assert_eq!(
                ours.edits as u64,
                want[k].as_u64().unwrap(),
                "{units:?} edits of hypothesis {:?} against {:?}",
                hyps[i],
                refs[i]
            );
            total_edits[k] += ours.edits;
        }
    }
    assert!(total_edits[0] > 100, "the corpus has edits to count");
    for (units, key) in [(Units::Tokens, "wer"), (Units::Chars, "cer")] {
        let ours = corpus_error_counts(&hyps, &[&refs], units, false).unwrap();
        let want = 100.0 * out[key].as_f64().unwrap();
        assert!(
            (ours.rate() - want).abs() < 1e-9,
            "{key}: ours {} jiwer {want}",
            ours.rate()
        );
    }
}
