//! `prepare` for the tagging, classification and generation tasks: the labelled formats, the tokenizer
//! rules, the shape checks, unknown labels counted, and every refusal naming the file, the line
//! and the fix. The real UD English-EWT, SST-2 and TREC files are read when `../shared/data`
//! has them.

use std::path::{Path, PathBuf};

use s2s_data::{
    CleanConfig, CorpusSource, DataError, PrepareConfig, TagColumn, Task, TokenizerKind, UNK,
    load_data_dir, prepare, read_conllu, read_labelled, read_tagged,
};

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A CoNLL-U word line; XPOS is the UPOS lowercased.
fn word(id: usize, form: &str, upos: &str) -> String {
    format!(
        "{id}\t{form}\t_\t{upos}\t{}\t_\t0\tdep\t_\t_\n",
        upos.to_lowercase()
    )
}

/// A CoNLL-U file of `sentences`, each a list of `(form, upos)`, with a comment and a
/// multiword-token range in the first.
fn conllu(sentences: &[&[(&str, &str)]]) -> String {
    let mut s = String::new();
    for (k, sent) in sentences.iter().enumerate() {
        s += &format!("# sent_id = {k}\n");
        for (i, (form, upos)) in sent.iter().enumerate() {
            if k == 0 && i == 0 && sent.len() > 1 {
                s += &format!("1-2\t{form}{}\t_\t_\t_\t_\t_\t_\t_\t_\n", sent[1].0);
            }
            s += &word(i + 1, form, upos);
        }
        s += "\n";
    }
    s
}

const TRAIN: &[&[(&str, &str)]] = &[
    &[
        ("I", "PRON"),
        ("don't", "AUX"),
        ("know", "VERB"),
        (".", "PUNCT"),
    ],
    &[
        ("The", "DET"),
        ("U.S.", "PROPN"),
        ("won", "VERB"),
        ("!", "PUNCT"),
    ],
    &[("1 000", "NUM"), ("dogs", "NOUN"), ("bark", "VERB")],
];
const VALID: &[&[(&str, &str)]] = &[
    &[("Dogs", "NOUN"), ("bark", "VERB")],
    &[("Oh", "INTJ"), ("no", "INTJ"), ("!", "PUNCT")],
];

fn tagging_cfg(dir: &Path) -> PrepareConfig {
    let train = write(dir, "train.conllu", &conllu(TRAIN));
    let valid = write(dir, "dev.conllu", &conllu(VALID));
    let mut cfg = PrepareConfig::new(
        CorpusSource::Conllu {
            path: train,
            column: TagColumn::Upos,
        },
        dir.join("out"),
    );
    cfg.task = Task::Tagging;
    cfg.valid = Some(CorpusSource::Conllu {
        path: valid,
        column: TagColumn::Upos,
    });
    cfg
}

fn config_error(cfg: &PrepareConfig) -> String {
    match prepare(cfg, &|_| {}) {
        Err(e @ DataError::Config(_)) => e.to_string(),
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn tagging_from_conllu_gives_one_tag_per_token() {
    let d = tempfile::tempdir().unwrap();
    let cfg = tagging_cfg(d.path());
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.options.task, Task::Tagging);
    assert_eq!(
        (rec.options.src_tokenizer, rec.options.tgt_tokenizer),
        (TokenizerKind::Split, TokenizerKind::Split)
    );
    assert_eq!(rec.tokenizers.tgt.kind, TokenizerKind::Split);
    let src_file = &rec.sources[0];
    assert_eq!(
        (src_file.format.as_str(), src_file.src_col, src_file.tgt_col),
        ("conllu", Some(2), Some(4))
    );
    assert_eq!(src_file.side, "both");

    let train = &rec.splits.train;
    assert_eq!((train.input_pairs, train.kept), (3, 3));
    assert_eq!(train.forms_with_spaces, Some(1), "`1 000` became `1_000`");
    assert_eq!(train.unknown_labels, Some(0));
    assert_eq!((train.src_tokens, train.tgt_tokens), (11, 11));
    let valid = rec.splits.valid.as_ref().unwrap();
    // INTJ never occurs in training: two tags in one sentence are unknown.
    assert_eq!(valid.unknown_labels, Some(2));
    assert_eq!(valid.pairs_with_unknown_labels, Some(1));

    let out = d.path().join("out");
    assert_eq!(
        std::fs::read_to_string(out.join("train.src")).unwrap(),
        "I don't know .\nThe U.S. won !\n1_000 dogs bark\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("train.tgt")).unwrap(),
        "PRON AUX VERB PUNCT\nDET PROPN VERB PUNCT\nNUM NOUN VERB\n"
    );
    let toml = std::fs::read_to_string(out.join("data.toml")).unwrap();
    assert!(toml.contains("task = \"tagging\""), "{toml}");
    assert!(toml.contains("unknown_labels = 2"), "{toml}");

    let data = load_data_dir(&out).unwrap();
    let enc = data.encode(data.valid.as_ref().unwrap());
    for (s, t) in enc.src.iter().zip(&enc.tgt) {
        assert_eq!(s.len(), t.len());
    }
    assert_eq!(enc.tgt[1].iter().filter(|&&id| id == UNK).count(), 2);
    let enc = data.encode(&data.train);
    assert!(enc.tgt.iter().flatten().all(|&id| id != UNK));
    assert_eq!(enc.src[1].len(), 4, "`U.S.` and `!` stay one token each");

    // The XPOS column instead.
    let mut xpos = tagging_cfg(d.path());
    xpos.force = true;
    for s in [Some(&mut xpos.train), xpos.valid.as_mut()]
        .into_iter()
        .flatten()
    {
        if let CorpusSource::Conllu { column, .. } = s {
            *column = TagColumn::Xpos;
        }
    }
    let rec = prepare(&xpos, &|_| {}).unwrap();
    assert_eq!(rec.sources[0].tgt_col, Some(5));
    assert_eq!(
        std::fs::read_to_string(out.join("train.tgt")).unwrap(),
        "pron aux verb punct\ndet propn verb punct\nnum noun verb\n"
    );
}

#[test]
fn tagging_from_token_slash_tag_lines() {
    let d = tempfile::tempdir().unwrap();
    let train = write(
        d.path(),
        "train.txt",
        "The/DT dog/NN barks/VBZ ./.\n1/2/CD cup/NN\n\nAnd/CC so/RB on/RB\n",
    );
    let mut cfg = PrepareConfig::new(CorpusSource::Tagged { path: train }, d.path().join("out"));
    cfg.task = Task::Tagging;
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.sources[0].format, "tagged");
    assert_eq!(
        (rec.splits.train.input_pairs, rec.splits.train.kept),
        (4, 3)
    );
    assert_eq!(rec.splits.train.dropped_empty, 1, "the blank line");
    assert_eq!(
        std::fs::read_to_string(d.path().join("out/train.src")).unwrap(),
        "The dog barks .\n1/2 cup\nAnd so on\n"
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("out/train.tgt")).unwrap(),
        "DT NN VBZ .\nCD NN\nCC RB RB\n"
    );
}

#[test]
fn classification_from_labelled_lines() {
    let d = tempfile::tempdir().unwrap();
    let train = write(
        d.path(),
        "train.txt",
        "1 a fine , moving film .\n0\tdull and long .\n1 fine fine fine\nneutral so-so .\n",
    );
    let test = write(d.path(), "test.txt", "0 long .\n2 what ?\n1 fine .\n");
    let mut cfg = PrepareConfig::new(CorpusSource::Labelled { path: train }, d.path().join("out"));
    cfg.task = Task::Classification;
    cfg.test = Some(CorpusSource::Labelled { path: test });
    // Rare words drop out of the text vocabulary, but `neutral` (seen once) stays a label.
    cfg.min_freq = Some(2);
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(
        (rec.options.src_tokenizer, rec.options.tgt_tokenizer),
        (TokenizerKind::Word, TokenizerKind::Split)
    );
    assert_eq!((rec.options.src_min_freq, rec.options.tgt_min_freq), (2, 1));
    let test = rec.splits.test.as_ref().unwrap();
    assert_eq!(
        test.unknown_labels,
        Some(1),
        "label 2 is not a training label"
    );
    assert_eq!(test.pairs_with_unknown_labels, Some(1));

    let data = load_data_dir(d.path().join("out")).unwrap();
    assert_eq!(data.train.tgt, vec!["1", "0", "1", "neutral"]);
    assert_eq!(data.train.src[1], "dull and long .");
    assert!(data.tgt_tokenizer.token_to_id("neutral").is_some());
    let src = &data.src_tokenizer;
    assert_eq!(src.encode("moving"), vec![UNK]);
    assert_ne!(src.encode("fine"), vec![UNK]);
    let enc = data.encode(data.test.as_ref().unwrap());
    assert!(enc.tgt.iter().all(|t| t.len() == 1));
    assert_eq!(enc.tgt[1], vec![UNK]);
}

#[test]
fn tagging_sources_sign_unknown_words_by_default() {
    let d = tempfile::tempdir().unwrap();
    let rec = prepare(&tagging_cfg(d.path()), &|_| {}).unwrap();
    assert!(rec.tokenizers.src.signatures && !rec.tokenizers.tgt.signatures);
    assert_eq!(
        rec.options.src_min_freq, 2,
        "signatures learn from the rare words"
    );
    let data = load_data_dir(d.path().join("out")).unwrap();
    let src = &data.src_tokenizer;
    // Every training word occurs once; `I` and `The` trained `<unk-Cap>`, `know`, `won`, ...
    // `<unk-lc>`.
    let id = |t: &str| src.token_to_id(t).unwrap();
    assert_eq!(
        src.encode("Zebras bark"),
        vec![UNK, id("<unk-lc>")],
        "`<unk-Cap-s>` was never trained"
    );
    assert_eq!(src.encode("Zebra"), vec![id("<unk-Cap>")]);

    let mut cfg = tagging_cfg(d.path());
    cfg.out = d.path().join("plain");
    cfg.unk_signatures = Some(false);
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert!(!rec.tokenizers.src.signatures);
    assert_eq!(rec.options.src_min_freq, 1);

    // A condition is not a sentence of words.
    let labelled = write(d.path(), "g.txt", "q what is it ?\n");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Labelled { path: labelled },
        d.path().join("g"),
    );
    cfg.task = Task::Generation;
    cfg.unk_signatures = Some(true);
    let msg = config_error(&cfg);
    assert!(
        msg.contains("--unk-signatures") && msg.contains("labels") && msg.contains("fix:"),
        "{msg}"
    );
}

#[test]
fn generation_reads_labelled_lines_the_other_way_round() {
    let d = tempfile::tempdir().unwrap();
    let train = write(
        d.path(),
        "train.txt",
        "q what is it ?\nq who is it ?\nstatement it is .\nq what is it ?\n",
    );
    let test = write(d.path(), "test.txt", "q what ?\nexclaim wow !\n");
    let mut cfg = PrepareConfig::new(CorpusSource::Labelled { path: train }, d.path().join("out"));
    cfg.task = Task::Generation;
    cfg.test = Some(CorpusSource::Labelled { path: test });
    cfg.min_freq = Some(2);
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.options.task, Task::Generation);
    assert_eq!(
        (rec.options.src_tokenizer, rec.options.tgt_tokenizer),
        (TokenizerKind::Split, TokenizerKind::Bpe)
    );
    // `statement`, seen once, stays a condition; min_freq applies to the text.
    assert_eq!((rec.options.src_min_freq, rec.options.tgt_min_freq), (1, 2));
    let test = rec.splits.test.as_ref().unwrap();
    assert_eq!(
        test.unknown_labels,
        Some(1),
        "`exclaim` is not a training label"
    );
    assert_eq!(test.pairs_with_unknown_labels, Some(1));

    let data = load_data_dir(d.path().join("out")).unwrap();
    assert_eq!(data.train.src, vec!["q", "q", "statement", "q"]);
    assert_eq!(data.train.tgt[2], "it is .");
    assert!(data.src_tokenizer.token_to_id("statement").is_some());
    let enc = data.encode(data.test.as_ref().unwrap());
    assert!(enc.src.iter().all(|s| s.len() == 1));
    assert_eq!(enc.src[1], vec![UNK]);

    // The condition must be split; the text may use any tokenizer.
    let mut bad = cfg.clone();
    bad.out = d.path().join("bad");
    bad.src_tokenizer = Some(TokenizerKind::Word);
    let msg = config_error(&bad);
    assert!(
        msg.contains("source tokenizer is word") && msg.contains("--tgt-tokenizer"),
        "{msg}"
    );
    bad.src_tokenizer = None;
    bad.tgt_tokenizer = Some(TokenizerKind::Char);
    assert_eq!(
        prepare(&bad, &|_| {}).unwrap().tokenizers.tgt.kind,
        TokenizerKind::Char
    );
    // A tagging format is not generation data.
    let tagged = write(d.path(), "t.txt", "a/X b/Y\n");
    let mut cfg = PrepareConfig::new(CorpusSource::Tagged { path: tagged }, d.path().join("o3"));
    cfg.task = Task::Generation;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("t.txt") && msg.contains("--task tagging"),
        "{msg}"
    );
}

#[test]
fn tokenizer_choices_a_task_cannot_use_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = tagging_cfg(d.path());
    cfg.src_tokenizer = Some(TokenizerKind::Word);
    let msg = config_error(&cfg);
    assert!(
        msg.contains("source tokenizer is word") && msg.contains("split") && msg.contains("fix:"),
        "{msg}"
    );
    let mut cfg = tagging_cfg(d.path());
    cfg.tgt_tokenizer = Some(TokenizerKind::Bpe);
    assert!(config_error(&cfg).contains("target tokenizer is bpe"));
    let mut cfg = tagging_cfg(d.path());
    cfg.joint = true;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("--joint") && msg.contains("fix: drop --joint"),
        "{msg}"
    );

    let labelled = write(d.path(), "l.txt", "a x y\nb z\n");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Labelled {
            path: labelled.clone(),
        },
        d.path().join("cls"),
    );
    cfg.task = Task::Classification;
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    let msg = config_error(&cfg);
    assert!(
        msg.contains("target tokenizer is word") && msg.contains("--src-tokenizer"),
        "{msg}"
    );
    // Any text tokenizer is fine for classification.
    cfg.tgt_tokenizer = None;
    cfg.src_tokenizer = Some(TokenizerKind::Char);
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.tokenizers.src.kind, TokenizerKind::Char);

    // A format of another task.
    let mut cfg = PrepareConfig::new(
        CorpusSource::Labelled { path: labelled },
        d.path().join("out2"),
    );
    cfg.task = Task::Tagging;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("l.txt")
            && msg.contains("classification or generation data")
            && msg.contains("--task classification"),
        "{msg}"
    );
    let mut cfg = tagging_cfg(d.path());
    cfg.task = Task::Translation;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("train.conllu") && msg.contains("--task tagging"),
        "{msg}"
    );
    assert!(!d.path().join("out2").exists());
}

#[test]
fn misshapen_pairs_name_the_split_file_and_line() {
    let d = tempfile::tempdir().unwrap();
    // Parallel files: line 2 has three tokens but two tags.
    let src = write(d.path(), "s.txt", "a b\nc d e\n");
    let tgt = write(d.path(), "t.txt", "X Y\nX Y\n");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Parallel {
            src: src.clone(),
            tgt: tgt.clone(),
        },
        d.path().join("out"),
    );
    cfg.task = Task::Tagging;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("the train split")
            && msg.contains("s.txt:2")
            && msg.contains("t.txt:2")
            && msg.contains("3 token(s) but 2 tag(s)")
            && msg.contains("fix:"),
        "{msg}"
    );
    cfg.task = Task::Classification;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("s.txt:1") && msg.contains("label `X Y`") && msg.contains("fix:"),
        "{msg}"
    );

    // CoNLL-U: a form made only of a zero-width space vanishes in cleaning (the sentence
    // starts on line 5 of the validation file), and NFKC turns `¨` into a space and a
    // combining mark.
    let d = tempfile::tempdir().unwrap();
    let mut cfg = tagging_cfg(d.path());
    let dev = write(
        d.path(),
        "dev.conllu",
        &conllu(&[&[("ok", "X")], &[("a", "X"), ("\u{200B}", "X")]]),
    );
    cfg.valid = Some(CorpusSource::Conllu {
        path: dev,
        column: TagColumn::Upos,
    });
    let msg = config_error(&cfg);
    assert!(
        msg.contains("the valid split")
            && msg.contains("dev.conllu:5:")
            && msg.contains("1 token(s) but 2 tag(s)"),
        "{msg}"
    );
    let mut cfg = tagging_cfg(d.path());
    cfg.valid = None;
    cfg.clean = CleanConfig {
        nfkc: true,
        ..CleanConfig::default()
    };
    let train = write(
        d.path(),
        "n.conllu",
        &conllu(&[&[("a", "X"), ("x\u{A8}", "Y")]]),
    );
    cfg.train = CorpusSource::Conllu {
        path: train,
        column: TagColumn::Upos,
    };
    let msg = config_error(&cfg);
    assert!(
        msg.contains("n.conllu:3:") && msg.contains("--nfkc"),
        "{msg}"
    );
    assert!(!d.path().join("out").exists(), "nothing written on failure");
}

#[test]
fn training_labels_must_fit_the_vocabulary() {
    let d = tempfile::tempdir().unwrap();
    let train = write(d.path(), "l.txt", "a x\nb y\nc z\n");
    let mut cfg = PrepareConfig::new(CorpusSource::Labelled { path: train }, d.path().join("out"));
    cfg.task = Task::Classification;
    cfg.vocab_size = 6;
    let msg = config_error(&cfg);
    assert!(
        msg.contains("1 label(s) of the training split")
            && msg.contains("l.txt:3")
            && msg.contains("raise --vocab-size (now 6)"),
        "{msg}"
    );
    cfg.vocab_size = 7;
    prepare(&cfg, &|_| {}).unwrap();
}

#[test]
fn given_tokenizers_must_be_split_for_labels() {
    let d = tempfile::tempdir().unwrap();
    // A translation directory's bpe tokenizers.
    let src = write(d.path(), "s.txt", "a b c\nb c d\n");
    let tgt = write(d.path(), "t.txt", "x y\ny z\n");
    let mut tr = PrepareConfig::new(CorpusSource::Parallel { src, tgt }, d.path().join("tr"));
    tr.src_tokenizer = Some(TokenizerKind::Word);
    tr.tgt_tokenizer = Some(TokenizerKind::Word);
    prepare(&tr, &|_| {}).unwrap();
    let mut cfg = tagging_cfg(d.path());
    cfg.tokenizers_from = Some((
        d.path().join("tr/tokenizer.src.json"),
        d.path().join("tr/tokenizer.tgt.json"),
    ));
    let msg = config_error(&cfg);
    assert!(
        msg.contains("tokenizer.src.json: a word tokenizer") && msg.contains("fix:"),
        "{msg}"
    );
    // A tagging directory's own tokenizers are fine, and its tags carry over.
    let mut first = tagging_cfg(d.path());
    first.valid = None;
    prepare(&first, &|_| {}).unwrap();
    let mut again = tagging_cfg(d.path());
    again.out = d.path().join("again");
    again.tokenizers_from = Some((
        d.path().join("out/tokenizer.src.json"),
        d.path().join("out/tokenizer.tgt.json"),
    ));
    let rec = prepare(&again, &|_| {}).unwrap();
    assert_eq!(rec.splits.valid.unwrap().unknown_labels, Some(2));
}

#[test]
fn translation_records_stay_as_they_were() {
    let d = tempfile::tempdir().unwrap();
    let src = write(d.path(), "s.txt", "a b c\nb c d\n");
    let tgt = write(d.path(), "t.txt", "x y\ny z\n");
    let cfg = PrepareConfig::new(CorpusSource::Parallel { src, tgt }, d.path().join("out"));
    assert_eq!(cfg.task, Task::Translation);
    prepare(&cfg, &|_| {}).unwrap();
    let path = d.path().join("out/data.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    assert!(toml.contains("task = \"translation\""), "{toml}");
    for key in [
        "unknown_labels",
        "pairs_with_unknown_labels",
        "forms_with_spaces",
    ] {
        assert!(
            !toml.contains(key),
            "{key} in a translation record:\n{toml}"
        );
    }
    // A record written before tasks existed loads as translation.
    std::fs::write(&path, toml.replace("task = \"translation\"\n", "")).unwrap();
    let data = load_data_dir(d.path().join("out")).unwrap();
    assert_eq!(data.meta.options.task, Task::Translation);
}

#[test]
fn reader_errors_name_file_line_and_fix() {
    let d = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, usize, &str); 6] = [
        (
            "t1.txt",
            "a/DT b/NN\nthe dog/NN\n",
            2,
            "item 1 `the` has no `/TAG`",
        ),
        ("t2.txt", "/DT b/NN\n", 1, "empty token"),
        ("t3.txt", "a/DT b/\n", 1, "empty tag"),
        ("l1.txt", "1 good\n\n\tbad\n", 3, "label is empty"),
        ("l2.txt", "1 good\n0\n", 2, "label `0` has no text"),
        ("l3.txt", "1 good\n0   \n", 2, "label `0` has no text"),
    ];
    for (name, text, line, what) in cases {
        let path = write(d.path(), name, text);
        let err = if name.starts_with('t') {
            read_tagged(&path).unwrap_err()
        } else {
            read_labelled(&path).unwrap_err()
        };
        assert!(
            matches!(err, DataError::BadLine { line: l, .. } if l == line),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("{}:{line}: ", path.display()))
                && msg.contains(what)
                && msg.contains("fix:"),
            "{msg}"
        );
    }
    let empty = write(d.path(), "e.conllu", "# nothing\n");
    let msg = read_conllu(&empty, TagColumn::Upos)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("e.conllu") && msg.contains("no sentence"),
        "{msg}"
    );
    let missing = read_conllu(d.path().join("nope.conllu"), TagColumn::Upos).unwrap_err();
    assert!(matches!(missing, DataError::MissingFile { .. }));
}

/// `../shared/data/NAME` next to the workspace, when it holds `file`.
fn shared(name: &str, file: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name);
    if dir.join(file).is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no {} (the shared data folder)",
            dir.join(file).display()
        );
        None
    }
}

#[test]
fn real_ud_english_ewt() {
    let Some(dir) = shared("ud-english-ewt", "en_ewt-ud-train.conllu") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let split = |name: &str| CorpusSource::Conllu {
        path: dir.join(format!("en_ewt-ud-{name}.conllu")),
        column: TagColumn::Upos,
    };
    let mut cfg = PrepareConfig::new(split("train"), d.path().join("out"));
    cfg.task = Task::Tagging;
    cfg.valid = Some(split("dev"));
    cfg.test = Some(split("test"));
    cfg.max_len = 0;
    let rec = prepare(&cfg, &|_| {}).unwrap();
    let s = &rec.splits;
    let (valid, test) = (s.valid.as_ref().unwrap(), s.test.as_ref().unwrap());
    assert_eq!(
        (s.train.input_pairs, valid.input_pairs, test.input_pairs),
        (12544, 2001, 2077)
    );
    assert_eq!((s.train.kept, valid.kept, test.kept), (12544, 2001, 2077));
    assert_eq!(s.train.src_tokens, 204_577);
    for st in [&s.train, valid, test] {
        assert_eq!(st.src_tokens, st.tgt_tokens);
        assert_eq!(
            st.unknown_labels,
            Some(0),
            "every UPOS tag occurs in training"
        );
    }
    // 17 UPOS tags and the 4 specials.
    assert_eq!(rec.tokenizers.tgt.vocab_size, 21);
}

#[test]
fn real_sst2_and_trec() {
    let Some(dir) = shared("sentence-classification", "stsa.binary.train") else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let file = |name: &str| CorpusSource::Labelled {
        path: dir.join(name),
    };
    let mut cfg = PrepareConfig::new(file("stsa.binary.train"), d.path().join("sst"));
    cfg.task = Task::Classification;
    cfg.valid = Some(file("stsa.binary.dev"));
    cfg.test = Some(file("stsa.binary.test"));
    cfg.max_len = 0;
    let rec = prepare(&cfg, &|_| {}).unwrap();
    let s = &rec.splits;
    let kept = |x: &Option<s2s_data::SplitStats>| x.as_ref().unwrap().kept;
    assert_eq!(
        (s.train.kept, kept(&s.valid), kept(&s.test)),
        (6920, 872, 1821)
    );
    assert_eq!(rec.tokenizers.tgt.vocab_size, 4 + 2);
    assert_eq!(s.train.tgt_tokens, 6920);

    // Line 66 of TREC.train.all has a stray byte 0xF0 for the hyphen of "sister-city": not
    // UTF-8, so it is refused with the line, and read once repaired.
    let trec = dir.join("TREC.train.all");
    let bytes = std::fs::read(&trec).unwrap();
    if let Err(e) = read_labelled(&trec) {
        assert!(matches!(e, DataError::InvalidUtf8 { line: 66, .. }), "{e}");
    }
    let repaired = write(
        d.path(),
        "TREC.train.all",
        &String::from_utf8_lossy(&bytes).replace('\u{FFFD}', "-"),
    );
    let mut cfg = PrepareConfig::new(
        CorpusSource::Labelled { path: repaired },
        d.path().join("trec"),
    );
    cfg.task = Task::Classification;
    cfg.test = Some(file("TREC.test.all"));
    cfg.max_len = 0;
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!((rec.splits.train.kept, kept(&rec.splits.test)), (5452, 500));
    assert_eq!(rec.tokenizers.tgt.vocab_size, 4 + 6);
    assert_eq!(rec.splits.test.as_ref().unwrap().unknown_labels, Some(0));
}

#[test]
fn audio_and_text_splits_do_not_mix() {
    let d = tempfile::tempdir().unwrap();
    let manifest = s2s_data::audio::write_first_tone_labels(d.path(), "train", 4, 1).unwrap();
    let text = write(d.path(), "valid.txt", "low a\n");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Manifest { path: manifest },
        d.path().join("out"),
    );
    cfg.task = Task::Classification;
    cfg.fbank.sample_rate = 8_000;
    assert!(cfg.reads_audio());
    cfg.valid = Some(CorpusSource::Labelled { path: text });
    let e = prepare(&cfg, &|_: &str| {}).unwrap_err().to_string();
    assert!(
        e.contains("the training split is audio, but the valid split is text"),
        "{e}"
    );
    assert!(!d.path().join("out").exists());
    // Audio is no input of tagging or generation.
    for task in [Task::Tagging, Task::Generation] {
        cfg.task = task;
        cfg.valid = None;
        let e = prepare(&cfg, &|_: &str| {}).unwrap_err().to_string();
        assert!(
            e.contains("an audio manifest, which is asr or classification data"),
            "{e}"
        );
    }
}

#[test]
fn generation_conditioned_on_vectors() {
    let d = tempfile::tempdir().unwrap();
    let vecs = write(
        d.path(),
        "train.vec",
        "1 0 0\n0 1e0 0\n\n0\t0 1\n0.5 0.5 0\n",
    );
    let text = write(
        d.path(),
        "train.txt",
        "the red one\nthe green one\nlost\nthe blue one\nhalf red half green\n",
    );
    let tvec = write(d.path(), "test.vec", "0 0 1\n");
    let ttxt = write(d.path(), "test.txt", "the blue one\n");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Vectors {
            src: vecs.clone(),
            tgt: text.clone(),
        },
        d.path().join("out"),
    );
    cfg.task = Task::Generation;
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    cfg.test = Some(CorpusSource::Vectors {
        src: tvec,
        tgt: ttxt,
    });
    assert!(cfg.reads_vectors());
    let rec = prepare(&cfg, &|_| {}).unwrap();
    assert_eq!(rec.vectors.map(|v| v.dim), Some(3));
    // The blank vector's pair is dropped and counted; no labels to count.
    let train = &rec.splits.train;
    assert_eq!((train.kept, train.dropped_empty), (4, 1));
    assert_eq!(train.src_tokens, 4, "one source position per vector");
    assert_eq!(train.unknown_labels, None);
    assert_eq!(rec.sources[0].format, "vectors");
    // Both tokenizers are the text's.
    assert_eq!(rec.tokenizers.src.kind, TokenizerKind::Word);
    let data = load_data_dir(d.path().join("out")).unwrap();
    assert_eq!(data.source_width(), 3);
    assert_eq!(data.train.src[1], "0 1 0", "rewritten in one spelling");
    let vectors = data.train.vectors.as_ref().unwrap();
    assert_eq!(vectors[3], vec![0.5, 0.5, 0.0]);
    let enc = data.encode(&data.train);
    assert!(enc.src.iter().all(Vec::is_empty));
    let batch = enc.batch(&[2, 0]);
    let bv = batch.vectors.as_ref().unwrap();
    assert_eq!(
        (bv.dim, &bv.data[..]),
        (3, &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0][..])
    );
    assert_eq!(batch.src_len, 1, "an <eos> row beside each vector");

    // A bad number and a wrong dimension name the split, file and line; nothing is written.
    let bad_vecs = write(d.path(), "bad.vec", "1 0 0\n0 x 0\n");
    let two = write(d.path(), "two.txt", "a\nb\n");
    let mut bad = PrepareConfig::new(
        CorpusSource::Vectors {
            src: bad_vecs,
            tgt: two.clone(),
        },
        d.path().join("bad"),
    );
    bad.task = Task::Generation;
    let msg = config_error(&bad);
    assert!(
        msg.contains("bad.vec:2")
            && msg.contains("item 2 (`x`) is not a number")
            && msg.contains("fix:"),
        "{msg}"
    );
    assert!(!d.path().join("bad").exists());
    let short = write(d.path(), "short.vec", "1 0 0\n1 0\n");
    bad.train = CorpusSource::Vectors {
        src: short,
        tgt: two,
    };
    let msg = config_error(&bad);
    assert!(
        msg.contains("short.vec:2")
            && msg.contains("a vector of 2 numbers")
            && msg.contains("has 3"),
        "{msg}"
    );
    // Vectors are generation's only, have no tokenizer, and do not mix with text splits.
    let mut wrong = cfg.clone();
    wrong.out = d.path().join("w1");
    wrong.task = Task::Translation;
    assert!(config_error(&wrong).contains("a vectors file, which is generation data"));
    let mut wrong = cfg.clone();
    wrong.out = d.path().join("w2");
    wrong.src_tokenizer = Some(TokenizerKind::Word);
    assert!(config_error(&wrong).contains("drop --src-tokenizer"));
    let mut wrong = cfg.clone();
    wrong.out = d.path().join("w3");
    wrong.test = Some(CorpusSource::Parallel {
        src: vecs,
        tgt: text,
    });
    let msg = config_error(&wrong);
    assert!(
        msg.contains("the training split is vectors, but the test split is text"),
        "{msg}"
    );
}
