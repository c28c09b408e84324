//! ROUGE against the real `rouge-score` (PyPI, with NLTK's Porter stemmer) on generated
//! summaries: the same precision, recall and F-measure for every segment, type and stemming
//! setting, with one to three references, and the stemmer word by word against NLTK's, e.g.
//!
//! ```text
//! python3 -m venv .ci/venv && .ci/venv/bin/pip install rouge-score==0.1.2 nltk==3.10.4
//! S2S_ROUGE_PYTHON=.ci/venv/bin/python cargo test -p s2s-eval --test rouge_parity
//! ```
//!
//! Without `S2S_ROUGE_PYTHON` the tests say they are skipped (`.ci/run` sets it).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_eval::{RougeConfig, corpus_rouge, porter_stem, sentence_rouge};
use serde_json::{Value, json};

const PYTHON: &str = r#"
import json, sys
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer
data = json.load(open(sys.argv[1], encoding="utf-8"))
stemmer = PorterStemmer()
out = {"stems": [stemmer.stem(w) for w in data["words"]], "cases": []}
types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
for stem in (False, True):
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=stem)
    segments = []
    for hyp, refs in zip(data["hyps"], data["refs"]):
        targets = [r.replace("<n>", "\n") for r in refs]
        s = scorer.score_multi(targets, hyp.replace("<n>", "\n"))
        segments.append([[s[t].precision, s[t].recall, s[t].fmeasure] for t in types])
    n = len(segments)
    means = [[100.0 * (sum(seg[k][j] for seg in segments) / n) if n else 0.0 for j in range(3)] for k in range(4)]
    out["cases"].append({"stem": stem, "segments": segments, "means": means})
json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
"#;

fn run_python(data: &Value) -> Option<Value> {
    let Some(python) = std::env::var_os("S2S_ROUGE_PYTHON") else {
        eprintln!(
            "skipped: set S2S_ROUGE_PYTHON to a Python with rouge-score (==0.1.2) and nltk installed"
        );
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    let (input, output, script) = (
        dir.path().join("in.json"),
        dir.path().join("out.json"),
        dir.path().join("rouge_parity.py"),
    );
    std::fs::write(&input, data.to_string()).unwrap();
    std::fs::write(&script, PYTHON).unwrap();
    let status = Command::new(&python)
        .args([&script, &input, &output])
        .status()
        .unwrap_or_else(|e| panic!("cannot run S2S_ROUGE_PYTHON={python:?}: {e}"));
    assert!(status.success(), "the rouge-score script failed: {status}");
    Some(serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap())
}

/// Stems and suffixes that exercise every step of Porter's algorithm (and NLTK's changes to it).
const STEMS: [&str; 24] = [
    "relat", "condit", "rat", "hop", "fil", "troubl", "siz", "agr", "motor", "sing", "electr",
    "gener", "happ", "adjust", "control", "analog", "sk", "d", "cr", "formal", "sens", "cat",
    "fall", "2k",
];
const SUFFIXES: [&str; 40] = [
    "", "s", "es", "ies", "ied", "sses", "ss", "eed", "ed", "ing", "ings", "y", "ational",
    "tional", "enci", "anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation",
    "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "fulli", "logi",
    "icate", "ative", "alize", "ement", "ll", "e",
];

/// Words for the stemmer: every stem-suffix pair, random letter strings with a suffix, and the
/// English words of Multi30k's training side where the shared data is present.
fn words() -> Vec<String> {
    let mut rng = ChaCha8Rng::seed_from_u64(30);
    let mut words = BTreeSet::new();
    for stem in STEMS {
        for suffix in SUFFIXES {
            words.insert(format!("{stem}{suffix}"));
        }
    }
    const LETTERS: &[u8] = b"aeiouybcdlmnprstwxz";
    for _ in 0..20_000 {
        let len = rng.random_range(1..7);
        let mut w: String = (0..len)
            .map(|_| *LETTERS.choose(&mut rng).unwrap() as char)
            .collect();
        w.push_str(SUFFIXES.choose(&mut rng).unwrap());
        words.insert(w);
    }
    let multi30k =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/multi30k/train.en");
    if let Ok(text) = std::fs::read_to_string(&multi30k) {
        for w in s2s_eval::rouge_tokenize(&text, false) {
            words.insert(w);
        }
    }
    words.into_iter().collect()
}

/// A summary-like line: inflected words, digits, punctuation, capitals, a few non-ASCII letters
/// and `<n>` sentence breaks.
fn line(rng: &mut ChaCha8Rng, len: usize) -> String {
    const WORDS: [&str; 26] = [
        "the",
        "The",
        "cats",
        "cat",
        "running",
        "runs",
        "ran",
        "relational",
        "relations",
        "sky",
        "skies",
        "happily",
        "happy",
        "2024",
        "e-mail",
        "emails",
        "meeting",
        "meet",
        "Ölflasche",
        "\u{130}stanbul",
        "\u{212A}elvin",
        "don't",
        "U.S.",
        "generalization",
        "general",
        "of",
    ];
    let mut s = String::new();
    for i in 0..len {
        if i > 0 {
            s.push_str(match rng.random_range(0..10) {
                0 => "<n>",
                1 => ", ",
                2 => ". ",
                _ => " ",
            });
        }
        s.push_str(WORDS.choose(rng).unwrap());
    }
    s
}

fn corpus(n: usize) -> (Vec<String>, Vec<Vec<String>>) {
    let mut rng = ChaCha8Rng::seed_from_u64(2004);
    let mut hyps = Vec::new();
    let mut streams = vec![Vec::new(); 3];
    for i in 0..n {
        let len = if i % 25 == 0 {
            0
        } else {
            rng.random_range(1..15)
        };
        hyps.push(line(&mut rng, len));
        for (k, stream) in streams.iter_mut().enumerate() {
            // Later references are often missing (an empty line).
            let r = if k > 0 && rng.random_bool(0.4) {
                String::new()
            } else {
                let len = rng.random_range(usize::from(k == 0)..15);
                line(&mut rng, len)
            };
            stream.push(r);
        }
    }
    (hyps, streams)
}

/// Equal but for the last bit: serde_json's default float parser is not always correctly
/// rounded, so a value Python printed exactly may come back one ulp off.
fn same(ours: [f64; 3], want: &[f64]) -> bool {
    want.len() == 3
        && ours
            .iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs().max(1e-300))
}

/// A JSON list of numbers.
fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn stemmer_matches_nltk() {
    let words = words();
    let Some(out) = run_python(&json!({"words": words, "hyps": [], "refs": []})) else {
        return;
    };
    let want = out["stems"].as_array().unwrap();
    assert_eq!(want.len(), words.len());
    let mut changed = 0;
    for (w, want) in words.iter().zip(want) {
        let ours = porter_stem(w);
        assert_eq!(ours, want.as_str().unwrap(), "stem of {w:?}");
        changed += usize::from(&ours != w);
    }
    assert!(changed > words.len() / 3, "most words lose a suffix");
}

#[test]
fn scores_match_rouge_score() {
    let (hyps, streams) = corpus(300);
    // rouge-score takes the references each segment has: the first, and later ones not empty.
    let refs: Vec<Vec<&str>> = (0..hyps.len())
        .map(|i| {
            streams
                .iter()
                .enumerate()
                .filter(|(k, s)| *k == 0 || !s[i].is_empty())
                .map(|(_, s)| s[i].as_str())
                .collect()
        })
        .collect();
    let Some(out) = run_python(&json!({"words": [], "hyps": hyps, "refs": refs})) else {
        return;
    };
    let mut nonzero = 0;
    for case in out["cases"].as_array().unwrap() {
        let cfg = RougeConfig {
            stem: case["stem"].as_bool().unwrap(),
            sentence_sep: Some("<n>".into()),
            ..RougeConfig::default()
        };
        for (i, want) in case["segments"].as_array().unwrap().iter().enumerate() {
            let ours = sentence_rouge(&hyps[i], &refs[i], &cfg);
            for (k, (s, want)) in ours.iter().zip(want.as_array().unwrap()).enumerate() {
                let want = floats(want);
                assert!(
                    same([s.precision, s.recall, s.fmeasure], &want),
                    "{:?} vs {want:?}: {:?} of {:?} against {:?} (stem {})",
                    [s.precision, s.recall, s.fmeasure],
                    cfg.types[k],
                    hyps[i],
                    refs[i],
                    cfg.stem
                );
                nonzero += usize::from(s.fmeasure > 0.0 && s.fmeasure < 1.0);
            }
        }
        let corpus = corpus_rouge(&hyps, &streams, &cfg).unwrap();
        for ((_, s), want) in corpus.scores.iter().zip(case["means"].as_array().unwrap()) {
            let want = floats(want);
            assert!(
                same([s.precision, s.recall, s.fmeasure], &want),
                "{s:?} vs {want:?}"
            );
        }
    }
    assert!(nonzero > 1000, "partial matches to compare: {nonzero}");
}
