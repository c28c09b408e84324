//! Bad corpora: every failure is a typed error whose message names the file, the line and the
//! fix; empty and over-long lines are dropped and counted.

use std::path::Path;

use s2s_data::{CorpusSource, DataError, PrepareConfig, TokenizerKind, prepare};

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

fn config(src: &Path, tgt: &Path, out: &Path) -> PrepareConfig {
    let mut cfg = PrepareConfig::new(
        CorpusSource::Parallel {
            src: src.to_path_buf(),
            tgt: tgt.to_path_buf(),
        },
        out,
    );
    cfg.src_tokenizer = Some(TokenizerKind::Word);
    cfg.tgt_tokenizer = Some(TokenizerKind::Char);
    cfg
}

const EN: &str = "I like cats.\nYou like dogs.\nWe like birds.\n";
const ZH: &str = "我喜欢猫。\n你喜欢狗。\n我们喜欢鸟。\n";

#[test]
fn mismatched_line_counts_name_both_files_and_counts() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.as_bytes());
    let tgt = write(d.path(), "a.zh", "我喜欢猫。\n你喜欢狗。\n".as_bytes());
    let err = prepare(&config(&src, &tgt, &d.path().join("out")), &|_| {}).unwrap_err();
    assert!(matches!(
        err,
        DataError::LineCountMismatch {
            src_lines: 3,
            tgt_lines: 2,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(msg.contains("a.en") && msg.contains("a.zh"), "{msg}");
    assert!(msg.contains("3 lines") && msg.contains("has 2"), "{msg}");
    assert!(!d.path().join("out").exists(), "nothing written on failure");
}

#[test]
fn invalid_utf8_names_file_line_and_byte_offset() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.as_bytes());
    // Line 2 of the target: "你" then an invalid byte.
    let mut bytes = "我喜欢猫。\n你".as_bytes().to_vec();
    let offset = bytes.len();
    bytes.extend_from_slice(&[0xFF, b'\n']);
    bytes.extend_from_slice("我们喜欢鸟。\n".as_bytes());
    let tgt = write(d.path(), "a.zh", &bytes);
    let err = prepare(&config(&src, &tgt, &d.path().join("out")), &|_| {}).unwrap_err();
    match &err {
        DataError::InvalidUtf8 {
            line,
            offset: off,
            column,
            path,
        } => {
            assert_eq!(*line, 2);
            assert_eq!(*off as usize, offset);
            assert_eq!(*column, "你".len());
            assert_eq!(path, &tgt);
        }
        other => panic!("wrong error {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("a.zh:2:"), "{msg}");
    assert!(msg.contains(&format!("byte offset {offset}")), "{msg}");
    assert!(msg.contains("UTF-8"), "{msg}");
}

#[test]
fn missing_file_is_named() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.as_bytes());
    let tgt = d.path().join("missing.zh");
    let err = prepare(&config(&src, &tgt, &d.path().join("out")), &|_| {}).unwrap_err();
    assert!(matches!(err, DataError::MissingFile { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("missing.zh") && msg.contains("no such file"),
        "{msg}"
    );
}

#[test]
fn tsv_with_too_few_columns_names_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    let tsv = write(d.path(), "c.tsv", "Hi.\t嗨。\tattr\nRun.\n".as_bytes());
    let cfg = PrepareConfig::new(
        CorpusSource::Tsv {
            path: tsv.clone(),
            src_col: 1,
            tgt_col: 2,
        },
        d.path().join("out"),
    );
    let err = prepare(&cfg, &|_| {}).unwrap_err();
    assert!(matches!(
        err,
        DataError::TsvColumns {
            line: 2,
            found: 1,
            needed: 2,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("c.tsv:2:") && msg.contains("--src-col"),
        "{msg}"
    );
}

#[test]
fn empty_lines_are_dropped_and_counted_in_every_split() {
    let d = tempfile::tempdir().unwrap();
    let src = write(
        d.path(),
        "a.en",
        "I like cats.\n   \nWe like birds.\nDogs.\n".as_bytes(),
    );
    let tgt = write(
        d.path(),
        "a.zh",
        "我喜欢猫。\n你喜欢狗。\n我们喜欢鸟。\n\u{200B}\n".as_bytes(),
    );
    let vsrc = write(d.path(), "v.en", "\nI like birds.\n".as_bytes());
    let vtgt = write(d.path(), "v.zh", "猫。\n我喜欢鸟。\n".as_bytes());
    let mut cfg = config(&src, &tgt, &d.path().join("out"));
    cfg.valid = Some(CorpusSource::Parallel {
        src: vsrc,
        tgt: vtgt,
    });
    let rec = prepare(&cfg, &|_| {}).unwrap();
    let train = &rec.splits.train;
    assert_eq!(train.input_pairs, 4);
    assert_eq!(train.dropped_empty, 2);
    assert_eq!(train.kept, 2);
    assert_eq!(train.src_changed, 1); // "   " -> ""
    assert_eq!(train.tgt_changed, 1); // zero-width space -> ""
    let valid = rec.splits.valid.as_ref().unwrap();
    assert_eq!(
        (valid.input_pairs, valid.dropped_empty, valid.kept),
        (2, 1, 1)
    );
    let written = std::fs::read_to_string(d.path().join("out/train.src")).unwrap();
    assert_eq!(written, "I like cats.\nWe like birds.\n");
    let toml = std::fs::read_to_string(d.path().join("out/data.toml")).unwrap();
    assert!(toml.contains("dropped_empty = 2"), "{toml}");
}

#[test]
fn over_long_lines_are_dropped_from_train_only_and_counted() {
    let d = tempfile::tempdir().unwrap();
    let long = "cats ".repeat(30);
    let src = write(
        d.path(),
        "a.en",
        format!("I like cats.\n{long}\nWe like birds.\n").as_bytes(),
    );
    let tgt = write(d.path(), "a.zh", ZH.as_bytes());
    let tsrc = write(
        d.path(),
        "t.en",
        format!("{long}\nI like birds.\n").as_bytes(),
    );
    let ttgt = write(d.path(), "t.zh", "猫。\n我喜欢鸟。\n".as_bytes());
    let mut cfg = config(&src, &tgt, &d.path().join("out"));
    cfg.max_len = 10;
    cfg.test = Some(CorpusSource::Parallel {
        src: tsrc,
        tgt: ttgt,
    });
    let rec = prepare(&cfg, &|_| {}).unwrap();
    let train = &rec.splits.train;
    assert_eq!(
        (train.input_pairs, train.dropped_too_long, train.kept),
        (3, 1, 2)
    );
    assert!(train.length_filtered);
    let test = rec.splits.test.as_ref().unwrap();
    assert_eq!(
        (test.dropped_too_long, test.over_max_len_kept, test.kept),
        (0, 1, 2)
    );
    assert!(!test.length_filtered);
    let toml = std::fs::read_to_string(d.path().join("out/data.toml")).unwrap();
    assert!(toml.contains("dropped_too_long = 1"), "{toml}");
}

#[test]
fn crlf_is_tolerated() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.replace('\n', "\r\n").as_bytes());
    let tgt = write(d.path(), "a.zh", ZH.as_bytes());
    let rec = prepare(&config(&src, &tgt, &d.path().join("out")), &|_| {}).unwrap();
    assert_eq!(rec.splits.train.kept, 3);
    assert_eq!(rec.splits.train.src_changed, 0);
    let written = std::fs::read_to_string(d.path().join("out/train.src")).unwrap();
    assert_eq!(written, EN);
}

#[test]
fn refuses_a_non_empty_out_dir_without_force() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.as_bytes());
    let tgt = write(d.path(), "a.zh", ZH.as_bytes());
    let out = d.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("x"), "keep").unwrap();
    let mut cfg = config(&src, &tgt, &out);
    let err = prepare(&cfg, &|_| {}).unwrap_err();
    assert!(matches!(err, DataError::OutDirNotEmpty { .. }));
    assert!(err.to_string().contains("--force"), "{err}");
    cfg.force = true;
    prepare(&cfg, &|_| {}).unwrap();
    assert!(out.join("data.toml").exists());
}

#[test]
fn joint_needs_one_kind() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", EN.as_bytes());
    let tgt = write(d.path(), "a.zh", ZH.as_bytes());
    let mut cfg = config(&src, &tgt, &d.path().join("out"));
    cfg.joint = true;
    let err = prepare(&cfg, &|_| {}).unwrap_err().to_string();
    assert!(
        err.contains("joint") && err.contains("--tokenizer"),
        "{err}"
    );
}

#[test]
fn an_all_empty_training_split_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "a.en", b"\n\n");
    let tgt = write(d.path(), "a.zh", b"x\ny\n");
    let err = prepare(&config(&src, &tgt, &d.path().join("out")), &|_| {}).unwrap_err();
    assert!(matches!(err, DataError::EmptyCorpus { .. }), "{err}");
}

#[test]
fn zh_script_unifies_the_chinese_side_only() {
    let d = tempfile::tempdir().unwrap();
    let src = write(
        d.path(),
        "a.en",
        "We like cats.\nI like this country.\n".as_bytes(),
    );
    let tgt = write(
        d.path(),
        "a.zh",
        "我們喜歡貓。\n我喜欢这个国家。\n".as_bytes(),
    );
    let mut cfg = config(&src, &tgt, &d.path().join("out"));
    cfg.clean.zh_script = Some(s2s_data::ZhScript::Simplified);
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert!(rec.options.tgt_is_chinese && !rec.options.src_is_chinese);
    assert_eq!(rec.splits.train.tgt_changed, 1);
    assert_eq!(rec.splits.train.src_changed, 0);
    let written = std::fs::read_to_string(d.path().join("out/train.tgt")).unwrap();
    assert_eq!(written, "我们喜欢猫。\n我喜欢这个国家。\n");
    let toml = std::fs::read_to_string(d.path().join("out/data.toml")).unwrap();
    assert!(toml.contains("zh_script = \"simplified\""), "{toml}");
}
