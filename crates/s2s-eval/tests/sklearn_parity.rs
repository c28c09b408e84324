//! Accuracy, macro-F1 and per-label precision, recall, F1 and support against the real
//! scikit-learn (from PyPI) on random tagging and classification corpora, e.g.
//!
//! ```text
//! python3 -m venv .ci/venv && .ci/venv/bin/pip install scikit-learn
//! S2S_SKLEARN_PYTHON=.ci/venv/bin/python cargo test -p s2s-eval --test sklearn_parity
//! ```
//!
//! Without `S2S_SKLEARN_PYTHON` the test says it is skipped.

use std::process::Command;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_eval::label_scores;
use serde_json::Value;

const PYTHON: &str = r#"
import json, sys
from sklearn.metrics import accuracy_score, f1_score, precision_recall_fscore_support
data = json.load(open(sys.argv[1], encoding="utf-8"))
out = []
for case in data:
    y_true = [l for line in case["refs"] for l in line.split()]
    y_pred = [l for line in case["hyps"] for l in line.split()]
    labels = sorted(set(y_true) | set(y_pred))
    p, r, f, s = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, zero_division=0)
    out.append({
        "accuracy": accuracy_score(y_true, y_pred),
        "macro_f1": f1_score(y_true, y_pred, average="macro", zero_division=0),
        "labels": labels,
        "precision": list(map(float, p)),
        "recall": list(map(float, r)),
        "f1": list(map(float, f)),
        "support": list(map(int, s)),
    })
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
"#;

/// Tags with skewed frequencies (so that some labels are rare, some only predicted), non-ASCII
/// ones included.
const TAGS: [&str; 8] = ["NOUN", "VERB", "DET", "ADJ", "PUNCT", "É", "名词", "X"];

fn tag(rng: &mut ChaCha8Rng) -> &'static str {
    // The last two are rare; `X` never occurs in references (see `corpus`).
    let weights = [0.3, 0.25, 0.15, 0.1, 0.1, 0.05, 0.03, 0.02];
    let x: f64 = rng.random();
    let mut acc = 0.0;
    for (t, w) in TAGS.iter().zip(weights) {
        acc += w;
        if x < acc {
            return t;
        }
    }
    TAGS[0]
}

/// `n` lines of `len(rng)` labels each, and hypotheses with about `err` of them replaced.
fn corpus(seed: u64, n: usize, max_len: usize, err: f64) -> (Vec<String>, Vec<String>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut hyps, mut refs) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let len = rng.random_range(1..=max_len);
        let r: Vec<&str> = (0..len)
            .map(|_| {
                loop {
                    let t = tag(&mut rng);
                    if t != "X" {
                        break t;
                    }
                }
            })
            .collect();
        let h: Vec<&str> = r
            .iter()
            .map(|&t| {
                if rng.random_bool(err) {
                    *TAGS.choose(&mut rng).unwrap()
                } else {
                    t
                }
            })
            .collect();
        // Stray whitespace is not a label.
        let sep = if rng.random_bool(0.2) { "  " } else { " " };
        hyps.push(h.join(sep));
        refs.push(r.join(" "));
    }
    (hyps, refs)
}

#[test]
fn parity_with_scikit_learn() {
    let Some(python) = std::env::var_os("S2S_SKLEARN_PYTHON") else {
        eprintln!("skipped: set S2S_SKLEARN_PYTHON to a Python with scikit-learn installed");
        return;
    };
    // Tagging (many labels per line), classification (one per line), and a nearly perfect one.
    let cases = [
        corpus(1, 300, 12, 0.15),
        corpus(2, 400, 1, 0.3),
        corpus(3, 50, 5, 0.01),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (input, output, script) = (
        dir.path().join("in.json"),
        dir.path().join("out.json"),
        dir.path().join("sklearn_parity.py"),
    );
    let data: Vec<Value> = cases
        .iter()
        .map(|(h, r)| serde_json::json!({"hyps": h, "refs": r}))
        .collect();
    std::fs::write(&input, Value::Array(data).to_string()).unwrap();
    std::fs::write(&script, PYTHON).unwrap();
    let status = Command::new(&python)
        .args([&script, &input, &output])
        .status()
        .unwrap_or_else(|e| panic!("cannot run S2S_SKLEARN_PYTHON={python:?}: {e}"));
    assert!(status.success(), "the scikit-learn script failed: {status}");
    let out: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();

    let close = |a: f64, b: f64, what: &str| assert!((a - b).abs() < 1e-9, "{what}: {a} vs {b}");
    for ((hyps, refs), want) in cases.iter().zip(out.as_array().unwrap()) {
        let ours = label_scores(hyps, refs).unwrap();
        close(
            ours.accuracy,
            100.0 * want["accuracy"].as_f64().unwrap(),
            "accuracy",
        );
        close(
            ours.macro_f1,
            100.0 * want["macro_f1"].as_f64().unwrap(),
            "macro-F1",
        );
        let names: Vec<&str> = want["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let our_names: Vec<&str> = ours.labels.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(our_names, names);
        for (k, l) in ours.labels.iter().enumerate() {
            let at = |key: &str| 100.0 * want[key][k].as_f64().unwrap();
            close(
                l.precision,
                at("precision"),
                &format!("precision of {}", l.label),
            );
            close(l.recall, at("recall"), &format!("recall of {}", l.label));
            close(l.f1, at("f1"), &format!("f1 of {}", l.label));
            assert_eq!(l.support as u64, want["support"][k].as_u64().unwrap());
        }
    }
    // The corpora exercise what they should: errors, and a label only ever predicted.
    let (h, r) = &cases[0];
    let s = label_scores(h, r).unwrap();
    assert!(s.accuracy < 95.0 && s.accuracy > 70.0, "{}", s.accuracy);
    assert!(s.labels.iter().any(|l| l.label == "X" && l.support == 0));
}
