//! `s2s eval --metrics rouge` through the real binary: the stemmer on and off, and ROUGE-Lsum's
//! sentences marked within a line (hand-counted scores; `s2s-eval`'s parity test holds the
//! arithmetic against rouge-score).

mod common;

use common::{run, s2s, stderr};
use serde_json::Value;

fn rouge(dir: &std::path::Path, extra: &[&str]) -> Value {
    let mut c = s2s();
    c.args(["eval", "--metrics", "rouge", "--json", "--hyp"])
        .arg(dir.join("hyp"))
        .arg("--ref")
        .arg(dir.join("ref"))
        .args(extra);
    let out = run(c);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    json["rouge"].clone()
}

#[test]
fn stemming_and_summary_level_lcs() {
    let dir = tempfile::tempdir().unwrap();
    // The hypothesis has both reference sentences' words, in the other sentence order.
    std::fs::write(dir.path().join("hyp"), "Dogs ran.<n>The cats sat\n").unwrap();
    std::fs::write(dir.path().join("ref"), "the cat sat.<n>A dog ran away\n").unwrap();

    // Stemmed: the, cat, sat, dog, ran match (P 5/5, R 5/7); the LCS across the line is 3.
    let r = rouge(dir.path(), &["--rouge-sentence-sep", "<n>"]);
    assert_eq!(r["stemmer"], Value::Bool(true));
    assert_eq!(r["segments"], 1);
    assert_eq!(r["rouge1"]["precision"], 100.0);
    assert_eq!(r["rouge1"]["recall"], 71.43);
    assert_eq!(r["rouge1"]["fmeasure"], 83.33);
    assert_eq!(r["rougeL"]["fmeasure"], 50.0);
    // Sentence by sentence, the union LCS finds all five.
    assert_eq!(r["rougeLsum"]["fmeasure"], 83.33);

    // Without the separator a line is one sentence: Lsum is L.
    let r = rouge(dir.path(), &[]);
    assert_eq!(r["rougeLsum"], r["rougeL"]);

    // Without the stemmer only the, sat and ran match: P 3/5, R 3/7.
    let r = rouge(
        dir.path(),
        &["--no-rouge-stemmer", "--rouge-sentence-sep", "<n>"],
    );
    assert_eq!(r["stemmer"], Value::Bool(false));
    assert_eq!(r["rouge1"]["precision"], 60.0);
    assert_eq!(r["rouge1"]["fmeasure"], 50.0);

    let mut c = s2s();
    c.args(["eval", "--metrics", "rogue", "--hyp"])
        .arg(dir.path().join("hyp"))
        .arg("--ref")
        .arg(dir.path().join("ref"));
    let out = run(c);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("rouge"), "{}", stderr(&out));
}
