//! `prepare` on slices of the embedded corpus, then `load_data_dir`.

mod common;

use std::path::Path;

use s2s_data::{
    BatchConfig, CorpusSource, DataError, PrepareConfig, SplitName, TokenizerKind, epoch_batches,
    load_data_dir, prepare, sha256_hex,
};

fn slice_to(dir: &Path, name: &str, file: &str, start: usize, n: usize) -> std::path::PathBuf {
    let lines = common::corpus_slice(file, start, n);
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

#[test]
fn prepare_embedded_corpus_slice_and_load_it_back() {
    let d = tempfile::tempdir().unwrap();
    let tr_en = slice_to(d.path(), "train.en", "train.en", 0, 2000);
    let tr_zh = slice_to(d.path(), "train.zh", "train.zh", 0, 2000);
    let va_en = slice_to(d.path(), "valid.en", "valid.en", 0, 200);
    let va_zh = slice_to(d.path(), "valid.zh", "valid.zh", 0, 200);
    let te_en = slice_to(d.path(), "test.en", "test.en", 0, 200);
    let te_zh = slice_to(d.path(), "test.zh", "test.zh", 0, 200);
    let out = d.path().join("data");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Parallel {
            src: tr_en.clone(),
            tgt: tr_zh,
        },
        &out,
    );
    cfg.valid = Some(CorpusSource::Parallel {
        src: va_en,
        tgt: va_zh,
    });
    cfg.test = Some(CorpusSource::Parallel {
        src: te_en,
        tgt: te_zh,
    });
    cfg.vocab_size = 2000;
    cfg.src_lang = Some("en".into());
    let steps = std::cell::RefCell::new(Vec::new());
    let rec = prepare(&cfg, &|s| steps.borrow_mut().push(s.to_owned())).unwrap();
    assert!(!steps.borrow().is_empty());

    // Defaults: bpe for English, char for Chinese (detected).
    assert_eq!(rec.options.src_tokenizer, TokenizerKind::Bpe);
    assert_eq!(rec.options.tgt_tokenizer, TokenizerKind::Char);
    assert!(rec.options.tgt_is_chinese && !rec.options.src_is_chinese);
    assert_eq!(rec.options.src_lang.as_deref(), Some("en"));
    assert!(rec.tokenizers.src.vocab_size <= 2000);
    assert_eq!(rec.splits.train.input_pairs, 2000);
    assert_eq!(rec.splits.valid.as_ref().unwrap().kept, 200);
    assert_eq!(rec.splits.test.as_ref().unwrap().kept, 200);
    assert_eq!(rec.sources.len(), 6);
    let train_src = &rec.sources[0];
    assert_eq!(
        train_src.sha256,
        sha256_hex(&std::fs::read(&tr_en).unwrap())
    );
    assert_eq!(train_src.lines, 2000);

    for f in [
        "data.toml",
        "tokenizer.src.json",
        "tokenizer.tgt.json",
        "train.src",
        "train.tgt",
        "valid.src",
        "valid.tgt",
        "test.src",
        "test.tgt",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // No temporary files left behind.
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");

    let data = load_data_dir(&out).unwrap();
    assert_eq!(data.meta, rec);
    assert_eq!(data.train.len(), rec.splits.train.kept);
    assert_eq!(data.split(SplitName::Test).unwrap().len(), 200);
    // The cleaned text round-trips through the saved tokenizers.
    for (s, t) in data.train.src.iter().zip(&data.train.tgt).take(500) {
        assert_eq!(&data.src_tokenizer.decode(&data.src_tokenizer.encode(s)), s);
        assert_eq!(&data.tgt_tokenizer.decode(&data.tgt_tokenizer.encode(t)), t);
    }
    let enc = data.encode(&data.train);
    let lengths = enc.lengths();
    assert!(lengths.iter().all(|&(a, b)| a <= 100 && b <= 100));
    let cfg = BatchConfig {
        max_tokens: 512,
        max_sentences: 64,
    };
    let batches = epoch_batches(&lengths, &cfg, 1, 0);
    let batch = enc.batch(&batches[0]);
    assert!(batch.cost() <= 512);
    assert_eq!(data.clean_src("  Hello\u{200B}  world "), "Hello world");

    // A second run into the same directory needs --force.
    let again = PrepareConfig {
        joint: true,
        ..cfg_for(&tr_en, &out)
    };
    assert!(matches!(
        prepare(&again, &|_| {}),
        Err(DataError::OutDirNotEmpty { .. })
    ));
    let again = PrepareConfig {
        force: true,
        ..again
    };
    let rec2 = prepare(&again, &|_| {}).unwrap();
    assert!(rec2.options.joint);
    assert_eq!(
        std::fs::read(out.join("tokenizer.src.json")).unwrap(),
        std::fs::read(out.join("tokenizer.tgt.json")).unwrap()
    );
    // Stale splits of the first run are gone.
    assert!(!out.join("valid.src").exists());
    let data = load_data_dir(&out).unwrap();
    assert!(data.valid.is_none() && data.test.is_none());
}

fn cfg_for(train_en: &Path, out: &Path) -> PrepareConfig {
    let tr_zh = train_en.with_file_name("train.zh");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Parallel {
            src: train_en.to_path_buf(),
            tgt: tr_zh,
        },
        out,
    );
    cfg.vocab_size = 3000;
    cfg
}

#[test]
fn prepare_from_the_tsv_source_file() {
    let d = tempfile::tempdir().unwrap();
    let tsv = slice_to(d.path(), "cmn.txt", "cmn.txt", 0, 1000);
    let out = d.path().join("data");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Tsv {
            path: tsv,
            src_col: 1,
            tgt_col: 2,
        },
        &out,
    );
    cfg.clean = true_nfkc();
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.splits.train.input_pairs, 1000);
    assert_eq!(rec.sources[0].format, "tsv");
    assert_eq!(rec.sources[0].src_col, Some(1));
    let data = load_data_dir(&out).unwrap();
    assert_eq!(data.train.src[0], "Hi.");
    assert_eq!(data.train.tgt[0], "嗨。");
}

#[test]
fn max_src_tokens_cuts_every_split_and_is_recorded() {
    let d = tempfile::tempdir().unwrap();
    let tr_en = slice_to(d.path(), "train.en", "train.en", 0, 800);
    slice_to(d.path(), "train.zh", "train.zh", 0, 800);
    let va_en = slice_to(d.path(), "valid.en", "valid.en", 0, 100);
    let va_zh = slice_to(d.path(), "valid.zh", "valid.zh", 0, 100);
    let whole_dir = d.path().join("whole");
    let cut_dir = d.path().join("cut");
    let mut cfg = cfg_for(&tr_en, &whole_dir);
    cfg.valid = Some(CorpusSource::Parallel {
        src: va_en,
        tgt: va_zh,
    });
    // A limit that only the longer sentences pass, and that --max-len must not see past.
    cfg.max_len = 6;
    let whole = prepare(&cfg, &|_| {}).unwrap();
    cfg.max_src_tokens = 6;
    cfg.out = cut_dir.clone();
    let cut = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(cut.options.max_src_tokens, 6);
    assert_eq!(whole.options.max_src_tokens, 0);

    let whole = load_data_dir(&whole_dir).unwrap();
    let data = load_data_dir(&cut_dir).unwrap();
    assert_eq!(
        data.meta.options.max_src_tokens, 6,
        "read back from data.toml"
    );
    // Same tokenizer (same training text); the files keep the whole text.
    let valid = data.valid.as_ref().unwrap();
    assert_eq!(valid.src, whole.valid.as_ref().unwrap().src);
    let full: Vec<Vec<u32>> = valid
        .src
        .iter()
        .map(|s| data.src_tokenizer.encode(s))
        .collect();
    let enc = data.encode(valid);
    let mut truncated = 0;
    for (ids, full) in enc.src.iter().zip(&full) {
        assert_eq!(ids[..], full[..full.len().min(6)]);
        truncated += usize::from(full.len() > 6);
    }
    assert!(truncated > 10, "the limit cuts some sources ({truncated})");
    let stats = data.meta.splits.valid.as_ref().unwrap();
    assert_eq!(stats.src_truncated, truncated);
    assert_eq!(
        stats.src_tokens,
        enc.src.iter().map(Vec::len).sum::<usize>()
    );
    // The length filter measures the cut source: only long targets drop pairs now.
    let train = &data.meta.splits.train;
    assert!(train.src_truncated > 0);
    assert!(train.dropped_too_long < whole.meta.splits.train.dropped_too_long);

    // Tagging keeps one tag per token: no cutting.
    let mut tagging = cfg_for(&tr_en, &d.path().join("tagging"));
    tagging.task = s2s_data::Task::Tagging;
    tagging.max_src_tokens = 6;
    let err = prepare(&tagging, &|_| {}).unwrap_err().to_string();
    assert!(
        err.contains("--max-src-tokens") && err.contains("fix:"),
        "{err}"
    );
}

fn true_nfkc() -> s2s_data::CleanConfig {
    s2s_data::CleanConfig {
        nfkc: true,
        zh_script: None,
    }
}

#[test]
fn load_data_dir_errors_are_clear() {
    let d = tempfile::tempdir().unwrap();
    let err = load_data_dir(d.path()).unwrap_err().to_string();
    assert!(
        err.contains("has no data.toml") && err.contains("s2s prepare"),
        "{err}"
    );
    std::fs::write(d.path().join("data.toml"), "format_version = [").unwrap();
    let err = load_data_dir(d.path()).unwrap_err().to_string();
    assert!(err.contains("data.toml") && err.contains("re-run"), "{err}");
}
