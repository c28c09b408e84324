//! `s2s baseline lead|retrieval` through the real binary: outputs line by line, errors that name
//! the file, and (where `../shared/data` is present) the sentence splitter against SciTLDR's own
//! sentence lists.

mod common;

use common::{run, s2s, stderr};
use std::path::Path;

fn baseline(args: &[&str]) -> std::process::Output {
    let mut c = s2s();
    c.arg("baseline").args(args);
    run(c)
}

#[test]
fn lead_writes_the_first_sentences_of_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(
        &input,
        "First one. Second one.\nOnly (e.g. this) one.\n\nA? B! C.\n",
    )
    .unwrap();
    let out = dir.path().join("lead.txt");
    let o = baseline(&[
        "lead",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "First one.\nOnly (e.g. this) one.\n\nA?\n"
    );
    let o = baseline(&["lead", "--sentences", "2", "-i", input.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "First one. Second one.\nOnly (e.g. this) one.\n\nA? B!\n"
    );
}

#[test]
fn retrieval_answers_from_the_training_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let w = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let src = w(
        "train.src",
        "a cheap place in the north\nan italian place in the south\n",
    );
    let tgt = w("train.tgt", "Try Da Vinci.\nTry Pizza Hut.\n");
    let input = w("test.src", "something Italian?\ncheap please\n");
    let o = baseline(&[
        "retrieval",
        "--train-src",
        &src,
        "--train-tgt",
        &tgt,
        "--input",
        &input,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        "Try Pizza Hut.\nTry Da Vinci.\n"
    );

    // Misaligned training files: refused, naming both, and no output written.
    let short = w("short.tgt", "Try Da Vinci.\n");
    let out = dir.path().join("out.txt");
    let o = baseline(&[
        "retrieval",
        "--train-src",
        &src,
        "--train-tgt",
        &short,
        "--input",
        &input,
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("train.src has 2 lines") && err.contains("short.tgt has 1"),
        "{err}"
    );
    assert!(!out.exists());
    // A missing input names the file.
    let o = baseline(&["lead", "--input", "/nonexistent/in.txt"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("/nonexistent/in.txt"), "{}", stderr(&o));
}

/// SciTLDR lists each abstract's sentences as its authors split them (some lists break
/// sentences at PDF line ends, which no splitter should copy): the first sentence found in the
/// joined abstract must be theirs for nearly every paper.
#[test]
fn sentence_splitter_agrees_with_scitldr() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/scitldr");
    if !shared.join("test.jsonl").exists() {
        eprintln!("skipped: no {}", shared.display());
        return;
    }
    let (mut papers, mut agree) = (0, 0);
    for split in ["train", "dev", "test"] {
        let text = std::fs::read_to_string(shared.join(format!("{split}.jsonl"))).unwrap();
        for line in text.lines() {
            let j: serde_json::Value = serde_json::from_str(line).unwrap();
            let sentences: Vec<String> = j["source"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    s.as_str()
                        .unwrap()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            let lead = s2s_eval::baseline::lead(&sentences.join(" "), 1);
            papers += 1;
            agree += usize::from(lead == sentences[0]);
        }
    }
    assert!(papers > 3000, "{papers}");
    let share = agree as f64 / papers as f64;
    assert!(share > 0.95, "{agree} of {papers} first sentences agree");
}
