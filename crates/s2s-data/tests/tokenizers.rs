//! Tokenizer round trips on real lines of the embedded corpus, for every kind and both
//! languages, plus the fixed special ids and the saved format.

mod common;

use s2s_data::{BOS, EOS, PAD, TextTokenizer, TokenizerKind, UNK};

const N: usize = 3000;

fn cleaned(file: &str) -> Vec<String> {
    common::cleaned_lines(file, N)
}

fn train(kind: TokenizerKind, lines: &[String], vocab_size: usize) -> TextTokenizer {
    let min_freq = if kind == TokenizerKind::Bpe { 2 } else { 1 };
    common::trained(kind, lines, vocab_size, min_freq)
}

fn assert_round_trip(tok: &TextTokenizer, lines: &[String]) {
    for line in lines {
        let ids = tok.encode(line);
        assert!(!ids.contains(&UNK), "unexpected <unk> in {line:?}: {ids:?}");
        assert!(
            !ids.iter().any(|&i| i == PAD || i == BOS || i == EOS),
            "encode must not add specials"
        );
        let back = tok.decode(&ids);
        assert_eq!(&back, line, "round trip");
        assert!(!back.contains('▁') && !back.contains("@@"));
    }
}

const ALL: [TokenizerKind; 5] = [
    TokenizerKind::Bpe,
    TokenizerKind::Char,
    TokenizerKind::Word,
    TokenizerKind::Unigram,
    TokenizerKind::Split,
];

#[test]
fn round_trip_every_kind_on_english_and_chinese() {
    let en = cleaned("train.en");
    let zh = cleaned("train.zh");
    for kind in ALL {
        for lines in [&en, &zh] {
            let tok = train(kind, lines, 20_000);
            assert_round_trip(&tok, lines);
        }
    }
}

#[test]
fn joint_tokenizer_round_trips_both_sides() {
    let mut both = cleaned("train.en");
    both.extend(cleaned("train.zh"));
    let tok = train(TokenizerKind::Bpe, &both, 8000);
    assert_round_trip(&tok, &both);
}

#[test]
fn chinese_decodes_without_spaces_and_english_keeps_them() {
    let zh = cleaned("train.zh");
    let en = cleaned("train.en");
    // `split` keeps whole items, so an unseen Chinese sentence is one unknown token.
    for kind in ALL.into_iter().filter(|&k| k != TokenizerKind::Split) {
        let tz = train(kind, &zh, 20_000);
        let ids = tz.encode("我喜欢猫。");
        assert_eq!(tz.decode(&ids), "我喜欢猫。", "{kind}");
        let te = train(kind, &en, 20_000);
        let ids = te.encode("I like cats.");
        assert_eq!(te.decode(&ids), "I like cats.", "{kind}");
    }
}

#[test]
fn char_tokenizer_splits_every_character() {
    let zh = cleaned("train.zh");
    let tok = train(TokenizerKind::Char, &zh, 20_000);
    let ids = tok.encode("我喜欢猫。");
    assert_eq!(ids.len(), 5);
    assert_eq!(tok.tokens(&ids), vec!["我", "喜", "欢", "猫", "。"]);
    let en = cleaned("train.en");
    let tok = train(TokenizerKind::Char, &en, 20_000);
    let ids = tok.encode("I am.");
    assert_eq!(tok.tokens(&ids), vec!["I", " ", "a", "m", "."]);
}

#[test]
fn word_tokenizer_splits_punctuation_and_cjk_characters() {
    let zh = cleaned("train.zh");
    let tok = train(TokenizerKind::Word, &zh, 20_000);
    let ids = tok.encode("我喜欢猫。");
    assert_eq!(ids.len(), 5);
    assert_eq!(tok.tokens(&ids), vec!["我", "喜", "欢", "猫", "。"]);
    assert_eq!(tok.decode(&ids), "我喜欢猫。");
    let en = cleaned("train.en");
    let tok = train(TokenizerKind::Word, &en, 20_000);
    let ids = tok.encode("I like cats, too.");
    assert_eq!(tok.tokens(&ids), vec!["I", "like", "cats", ",", "too", "."]);
    assert_eq!(tok.decode(&ids), "I like cats, too.");
}

#[test]
fn specials_have_fixed_ids_and_survive_saving() {
    let en = cleaned("train.en");
    let dir = tempfile::tempdir().unwrap();
    for kind in ALL {
        let tok = train(kind, &en, 500);
        assert!(tok.vocab_size() <= 500, "{kind}: {}", tok.vocab_size());
        for (id, name) in ["<pad>", "<unk>", "<bos>", "<eos>"].iter().enumerate() {
            assert_eq!(tok.token_to_id(name), Some(id as u32));
        }
        let path = dir.path().join(format!("{kind}.json"));
        tok.save(&path).unwrap();
        // Loadable with the plain HF API too.
        let hf = tokenizers::Tokenizer::from_file(&path).unwrap();
        assert_eq!(hf.token_to_id("<eos>"), Some(EOS));
        let back = TextTokenizer::from_file(&path).unwrap();
        let line = &en[10];
        assert_eq!(back.encode(line), tok.encode(line));
        // decode skips specials; tokens shows them.
        let mut ids = vec![BOS];
        ids.extend(tok.encode(line));
        ids.push(EOS);
        ids.push(PAD);
        assert_eq!(back.decode(&ids), tok.decode(&tok.encode(line)));
        let shown = back.tokens(&ids);
        assert_eq!(shown.len(), ids.len());
        assert_eq!(shown[0], "<bos>");
        assert!(shown.iter().all(|t| !t.contains('▁')));
    }
}

#[test]
fn small_vocab_maps_rare_characters_to_unk() {
    let zh = cleaned("train.zh");
    let tok = train(TokenizerKind::Char, &zh, 50);
    assert_eq!(tok.vocab_size(), 50);
    let ids = tok.encode("饕餮");
    assert!(ids.iter().all(|&i| i == UNK));
    assert_eq!(tok.decode(&ids), "");
}

#[test]
fn training_is_deterministic() {
    let en = cleaned("train.en");
    let a = train(TokenizerKind::Bpe, &en, 1000).to_json().unwrap();
    let b = train(TokenizerKind::Bpe, &en, 1000).to_json().unwrap();
    assert_eq!(a, b);
}

#[test]
fn loading_rejects_bad_json_with_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.src.json");
    std::fs::write(&path, "{not json").unwrap();
    let err = TextTokenizer::from_file(&path).unwrap_err().to_string();
    assert!(err.contains("tokenizer.src.json"), "{err}");
    assert!(err.contains("s2s prepare"), "{err}");
    let missing = dir.path().join("nope.json");
    let err = TextTokenizer::from_file(&missing).unwrap_err().to_string();
    assert!(
        err.contains("nope.json") && err.contains("no such file"),
        "{err}"
    );
}

/// Identical source and target files (a joint vocabulary) load as one tokenizer shared by both
/// sides; different files load as two, each from its own file; a bad second file is named.
#[test]
fn pair_loading_shares_a_joint_vocabulary() {
    let (en, zh) = (cleaned("train.en"), cleaned("train.zh"));
    let dir = tempfile::tempdir().unwrap();
    let (src, tgt, other) = (
        dir.path().join("tokenizer.src.json"),
        dir.path().join("tokenizer.tgt.json"),
        dir.path().join("other.json"),
    );
    let joint = train(TokenizerKind::Unigram, &en, 400);
    joint.save(&src).unwrap();
    joint.save(&tgt).unwrap();
    let (s, t) = TextTokenizer::pair_from_files(&src, &tgt).unwrap();
    assert!(s.shares_memory_with(&t));
    assert_eq!(t.encode(&en[3]), joint.encode(&en[3]));
    assert_eq!(t.decode(&joint.encode(&en[3])), en[3]);

    train(TokenizerKind::Char, &zh, 300).save(&other).unwrap();
    let (s, t) = TextTokenizer::pair_from_files(&src, &other).unwrap();
    assert!(!s.shares_memory_with(&t));
    assert_eq!(s.encode(&en[3]), joint.encode(&en[3]));
    assert_eq!(t.kind(), Some(TokenizerKind::Char));
    assert_eq!(t.decode(&t.encode(&zh[5])), zh[5]);

    std::fs::write(&other, "{not json").unwrap();
    let Err(err) = TextTokenizer::pair_from_files(&src, &other) else {
        panic!("a bad target file is an error");
    };
    let err = err.to_string();
    assert!(err.contains("other.json"), "{err}");
}

/// A unigram tokenizer written as a SentencePiece model and read back the way an imported Marian
/// model's is segments every line identically (what `s2s export hf-marian` relies on).
#[test]
fn unigram_survives_sentencepiece_round_trip() {
    use s2s_data::sentencepiece::{SpmModel, marian_tokenizer, to_spm};
    let mut both = cleaned("train.en");
    both.extend(cleaned("train.zh"));
    let tok = train(TokenizerKind::Unigram, &both, 2000);
    let spm = SpmModel::parse(&to_spm(&tok, "test").unwrap(), "test").unwrap();
    // Marian's joint vocabulary over the same pieces: `</s>`, `<unk>`, the pieces, `<pad>`.
    let mut vocab = vec!["</s>".to_owned(), "<unk>".to_owned()];
    let pieces: Vec<u32> = (4..tok.vocab_size() as u32).collect();
    vocab.extend(pieces.iter().map(|&id| tok.id_to_token(id).unwrap()));
    vocab.push("<pad>".to_owned());
    let marian = marian_tokenizer(&spm, &vocab, "test").unwrap();
    assert!(marian.is_marian());
    for line in both.iter().take(2000) {
        let ours: Vec<String> = tok.tokens(&tok.encode(line));
        let theirs: Vec<String> = marian.tokens(&marian.encode(line));
        assert_eq!(ours, theirs, "{line}");
    }
    // A non-unigram tokenizer cannot be written as one.
    let bpe = train(TokenizerKind::Bpe, &both, 2000);
    let err = to_spm(&bpe, "bpe.json").unwrap_err().to_string();
    assert!(err.contains("--tokenizer unigram"), "{err}");
}
