//! Grapheme-to-phoneme plumbing through the real binary: `s2s data g2p` on a small dictionary in
//! CMUdict's format, `s2s prepare` with char letters and word phones, and `s2s eval --metrics
//! ser,per` against every pronunciation of a word; a bad dictionary writes nothing.

mod common;

use common::{run, s2s, stderr};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

/// `s2s data g2p` on `dir/DICT` with `dir/train.words` and `dir/test.words`.
fn data_g2p(dir: &Path, dict: &str, valid_words: &str, out: &Path) -> Output {
    let mut c = s2s();
    c.args(["data", "g2p", "--valid-words", valid_words, "--dict"])
        .arg(dir.join(dict))
        .arg("--train-words")
        .arg(dir.join("train.words"))
        .arg("--test-words")
        .arg(dir.join("test.words"))
        .arg("--out")
        .arg(out);
    run(c)
}

fn eval_json(hyp: &Path, refs: &[&Path]) -> Value {
    let mut c = s2s();
    c.args(["eval", "--metrics", "ser,per", "--json", "--hyp"])
        .arg(hyp);
    for r in refs {
        c.arg("--ref").arg(r);
    }
    let out = run(c);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn dictionary_to_files_to_prepare_and_scores() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let mut dict = String::from("# CMUdict-style\n");
    let mut train = String::new();
    for (i, w) in ["ab", "ba", "abc", "cab", "bad", "dab", "cad", "dcba"]
        .iter()
        .enumerate()
    {
        let phones: Vec<String> = w
            .chars()
            .map(|c| format!("{}1", c.to_ascii_uppercase()))
            .collect();
        dict += &format!("{w} {} # word {i}\n", phones.join(" "));
        train += &format!("{w}\n");
    }
    dict += "tomato T AH0 M EY1 T OW2\ntomato(2) T AH0 M AA1 T OW2\nhello HH AH0 L OW1\n";
    write(&src, "d.dict", &dict);
    write(&src, "train.words", &train);
    write(&src, "test.words", "tomato\nhello\n");

    let text = root.path().join("text");
    let out = data_g2p(&src, "d.dict", "2", &text);
    assert!(out.status.success(), "{}", stderr(&out));
    // Two of the eight training words are held out for validation, evenly spread.
    assert_eq!(read(&text, "valid.src"), "ab\nbad\n");
    assert_eq!(read(&text, "valid.tgt"), "A1 B1\nB1 A1 D1\n");
    assert_eq!(read(&text, "train.src").lines().count(), 6);
    assert_eq!(read(&text, "test.src"), "tomato\nhello\n");
    assert_eq!(read(&text, "test.tgt"), "T AH0 M EY1 T OW2\nHH AH0 L OW1\n");
    assert_eq!(read(&text, "test.tgt.2"), "T AH0 M AA1 T OW2\n\n");
    assert!(!text.join("test.tgt.3").exists());

    let data = root.path().join("data");
    let mut c = s2s();
    c.args([
        "prepare",
        "--src-tokenizer",
        "char",
        "--tgt-tokenizer",
        "word",
    ])
    .arg("--train-src")
    .arg(text.join("train.src"))
    .arg("--train-tgt")
    .arg(text.join("train.tgt"))
    .arg("--valid-src")
    .arg(text.join("valid.src"))
    .arg("--valid-tgt")
    .arg(text.join("valid.tgt"))
    .arg("--out")
    .arg(&data);
    let out = run(c);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(data.join("data.toml").is_file());

    // The second pronunciation of "tomato" counts as right; "hello" is one phoneme off its only
    // pronunciation: 1 of 2 words wrong, 1 edit over 6 + 4 phonemes.
    write(&src, "hyp.txt", "T AH0 M AA1 T OW2\nHH AH0 L OW2\n");
    let refs = [text.join("test.tgt"), text.join("test.tgt.2")];
    let refs: Vec<&Path> = refs.iter().map(|p| p.as_path()).collect();
    let scores = eval_json(&src.join("hyp.txt"), &refs);
    assert_eq!(scores["ser"]["score"].as_f64(), Some(50.0));
    assert_eq!(scores["ser"]["wrong"].as_u64(), Some(1));
    assert_eq!(scores["per"]["edits"].as_u64(), Some(1));
    assert_eq!(scores["per"]["ref_units"].as_u64(), Some(10));
    assert_eq!(scores["per"]["score"].as_f64(), Some(10.0));
    // Against the first pronunciations alone, "tomato" is wrong too.
    let scores = eval_json(&src.join("hyp.txt"), &refs[..1]);
    assert_eq!(scores["ser"]["score"].as_f64(), Some(100.0));
    assert_eq!(scores["per"]["edits"].as_u64(), Some(2));
}

#[test]
fn a_bad_dictionary_names_its_line_and_writes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let src = root.path();
    write(src, "d.dict", "ab A1 B1\nba\n");
    write(src, "train.words", "ab\n");
    write(src, "test.words", "ba\n");
    let out_dir = src.join("text");
    let out = data_g2p(src, "d.dict", "0", &out_dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("d.dict:2:") && err.contains("no phones"),
        "{err}"
    );
    assert!(!out_dir.exists());

    // A listed word that the dictionary lacks is named, and nothing is written either.
    write(src, "e.dict", "ab A1 B1\n");
    let out = data_g2p(src, "e.dict", "0", &out_dir);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("test.words") && err.contains("\"ba\""),
        "{err}"
    );
    assert!(!out_dir.exists());
}
