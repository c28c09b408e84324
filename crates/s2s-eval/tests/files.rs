//! The file handling and report behind `s2s eval`: line counting, error messages, empty
//! hypothesis files and the JSON/text output.

use std::path::{Path, PathBuf};

use s2s_eval::{EvalError, EvalOptions, Metric, Tokenize, evaluate, load_inputs, read_lines};

fn write(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

const REF: &str = "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n";
const HYP: &str = "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n";

#[test]
fn reads_lines_like_sacrebleu() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "a.txt", b"a b \r\n\n  c\t\nlast");
    assert_eq!(read_lines(&p).unwrap(), ["a b", "", "  c", "last"]);
    let p = write(dir.path(), "b.txt", b"x\n");
    assert_eq!(read_lines(&p).unwrap(), ["x"]);
    let p = write(dir.path(), "c.txt", b"");
    assert!(read_lines(&p).unwrap().is_empty());
    let p = write(dir.path(), "d.txt", b"\n");
    assert_eq!(read_lines(&p).unwrap(), [""]);
}

#[test]
fn mismatched_line_counts_name_both_files_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let hyp = write(dir.path(), "hyp.txt", b"one\ntwo\n");
    let reference = write(dir.path(), "ref.txt", REF.as_bytes());
    let err = load_inputs(&hyp, &[&reference]).unwrap_err();
    assert!(matches!(
        err,
        EvalError::LineCountMismatch {
            first_lines: 2,
            second_lines: 3,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(msg.contains("hyp.txt") && msg.contains("ref.txt"), "{msg}");
    assert!(msg.contains('2') && msg.contains('3'), "{msg}");

    // Two references that disagree with each other.
    let short_ref = write(dir.path(), "ref2.txt", b"a\n");
    let hyp3 = write(dir.path(), "hyp3.txt", HYP.as_bytes());
    let msg = load_inputs(&hyp3, &[&reference, &short_ref])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("ref.txt")
            && msg.contains("ref2.txt")
            && msg.contains('3')
            && msg.contains('1'),
        "{msg}"
    );
}

#[test]
fn missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let reference = write(dir.path(), "ref.txt", REF.as_bytes());
    let missing = dir.path().join("no-such-hyp.txt");
    let msg = load_inputs(&missing, &[&reference])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no-such-hyp.txt"), "{msg}");
    let hyp = write(dir.path(), "hyp.txt", HYP.as_bytes());
    let msg = load_inputs(&hyp, &[dir.path().join("no-such-ref.txt")])
        .unwrap_err()
        .to_string();
    assert!(msg.contains("no-such-ref.txt"), "{msg}");
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let hyp = write(
        dir.path(),
        "bad.txt",
        b"fine\nalso fine\nbroken \xff\xfe here\n",
    );
    let reference = write(dir.path(), "ref.txt", REF.as_bytes());
    let err = load_inputs(&hyp, &[&reference]).unwrap_err();
    assert!(matches!(err, EvalError::InvalidUtf8 { line: 3, .. }));
    let msg = err.to_string();
    assert!(msg.contains("bad.txt") && msg.contains("line 3"), "{msg}");
}

#[test]
fn empty_hypothesis_file_scores_zero() {
    let dir = tempfile::tempdir().unwrap();
    let hyp = write(dir.path(), "empty.txt", b"");
    let reference = write(dir.path(), "ref.txt", REF.as_bytes());
    let inputs = load_inputs(&hyp, &[&reference]).unwrap();
    assert!(inputs.hyp_file_was_empty);
    assert_eq!(inputs.hyps, ["", "", ""]);
    let opts = EvalOptions {
        metrics: vec![Metric::Bleu, Metric::Chrf, Metric::ChrfPlusPlus],
        ..EvalOptions::default()
    };
    let report = evaluate(&inputs, &opts).unwrap();
    let bleu = report.bleu.as_ref().unwrap();
    assert_eq!(
        (bleu.score, bleu.sys_len, bleu.ref_len, bleu.bp),
        (0.0, 0, 17, 0.0)
    );
    assert_eq!(report.chrf.as_ref().unwrap().score, 0.0);
    assert_eq!(report.chrf_plus_plus.as_ref().unwrap().score, 0.0);
    let json: serde_json::Value = serde_json::from_str(&report.to_json(2)).unwrap();
    assert_eq!(json["bleu"]["score"], 0.0);

    // Blank lines (a system that produced nothing for each segment) behave the same.
    let blank = write(dir.path(), "blank.txt", b"\n\n\n");
    let inputs = load_inputs(&blank, &[&reference]).unwrap();
    assert!(!inputs.hyp_file_was_empty);
    assert_eq!(evaluate(&inputs, &opts).unwrap().bleu.unwrap().score, 0.0);

    // Both empty: an empty test set scores 0 too.
    let empty_ref = write(dir.path(), "empty_ref.txt", b"");
    let inputs = load_inputs(&hyp, &[&empty_ref]).unwrap();
    assert!(!inputs.hyp_file_was_empty);
    assert_eq!(evaluate(&inputs, &opts).unwrap().bleu.unwrap().score, 0.0);
}

#[test]
fn json_report_has_the_requested_metrics_only() {
    let dir = tempfile::tempdir().unwrap();
    let hyp = write(dir.path(), "hyp.txt", HYP.as_bytes());
    let r1 = write(dir.path(), "ref1.txt", REF.as_bytes());
    let r2 = write(
        dir.path(),
        "ref2.txt",
        "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.\n".as_bytes(),
    );
    let inputs = load_inputs(&hyp, &[&r1, &r2]).unwrap();

    let report = evaluate(&inputs, &EvalOptions::default()).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json(2)).unwrap();
    let obj = json.as_object().unwrap();
    assert_eq!(obj.keys().collect::<Vec<_>>(), ["bleu", "chrf"]);
    let bleu = &json["bleu"];
    assert_eq!(bleu["score"], 48.53);
    assert_eq!(bleu["sys_len"], 17);
    assert_eq!(bleu["ref_len"], 18);
    assert_eq!(bleu["precisions"].as_array().unwrap().len(), 4);
    let version = format!("version:s2s-{}", s2s_eval::VERSION);
    assert_eq!(
        bleu["signature"],
        format!("nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|{version}")
    );
    assert_eq!(
        json["chrf"]["signature"],
        format!("nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|{version}")
    );

    let opts = EvalOptions {
        tokenize: Tokenize::Intl,
        lowercase: true,
        metrics: vec![Metric::ChrfPlusPlus],
        ..EvalOptions::default()
    };
    let report = evaluate(&inputs, &opts).unwrap();
    let json: serde_json::Value = serde_json::from_str(&report.to_json(4)).unwrap();
    assert_eq!(
        json.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["chrf++"]
    );
    assert!(
        json["chrf++"]["signature"]
            .as_str()
            .unwrap()
            .starts_with("nrefs:2|case:lc|eff:yes|nc:6|nw:2|")
    );

    let text = evaluate(&inputs, &EvalOptions::default())
        .unwrap()
        .to_text(2);
    assert!(text.starts_with("BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)\n"), "{text}");
    assert!(text.contains("\nchrF2 = "), "{text}");
}
