//! The names of control tokens written in text (`<eos>`, `<pad>`, `<unk>`, `<bos>`, `<s>`,
//! `</s>`) are ordinary text in every kind of tokenizer, for training data and translation input
//! alike: they never give the pad, bos or eos id (nor the unknown one where the vocabulary covers
//! their characters), while text without them encodes exactly as the underlying tokenizer does.

mod common;

use std::path::Path;

use s2s_data::{
    BOS, CorpusSource, EOS, PAD, PrepareConfig, TextTokenizer, TokenizerKind, UNK, clean_line,
    load_data_dir, prepare,
};

const ALL: [TokenizerKind; 4] = [
    TokenizerKind::Bpe,
    TokenizerKind::Char,
    TokenizerKind::Word,
    TokenizerKind::Unigram,
];

/// Texts holding control-token names, as a user or a corpus could write them.
const CONTROL_TEXTS: [&str; 10] = [
    "<eos>",
    "<pad> <pad>",
    "<eos> a <eos>",
    "<unk>",
    "<bos> the cat",
    "<s> the cat </s>",
    "the<eos>cat",
    "<pad><eos><unk><bos></s>",
    "I said <eos> and left.",
    "</s>",
];

fn train(kind: TokenizerKind, lines: &[String], vocab_size: usize) -> TextTokenizer {
    common::trained(kind, lines, vocab_size, 1)
}

/// English lines plus lines that hold the control names as text, many times (so that `bpe`
/// learns merges that spell them, and every kind has the pieces `<`, `>`, `eos`, ...).
fn lines_with_control_names() -> Vec<String> {
    let mut lines = common::cleaned_lines("train.en", 1500);
    for _ in 0..50 {
        lines.extend(CONTROL_TEXTS.iter().map(|t| (*t).to_owned()));
        lines.push("pad eos unk bos s < > /".to_owned());
    }
    lines
}

fn assert_no_control_ids(tok: &TextTokenizer, text: &str, what: &str) -> Vec<u32> {
    let ids = tok.encode(text);
    let s = tok.specials();
    assert!(
        !ids.iter().any(|&i| i == s.pad || i == s.bos || i == s.eos),
        "{what}: {text:?} gave a control id: {ids:?} {:?}",
        tok.tokens(&ids)
    );
    ids
}

/// Trained on text that holds the names, every kind encodes them as ordinary pieces: no special
/// id at all, not even the unknown one, and the text decodes back to itself.
#[test]
fn control_names_in_text_are_ordinary_pieces_in_every_kind() {
    let lines = lines_with_control_names();
    for kind in ALL {
        let tok = train(kind, &lines, 3000);
        for text in CONTROL_TEXTS {
            let ids = assert_no_control_ids(&tok, text, kind.as_str());
            assert!(
                !ids.contains(&UNK),
                "{kind}: {text:?} gave <unk>: {:?}",
                tok.tokens(&ids)
            );
            assert_eq!(tok.decode(&ids), text, "{kind}: round trip");
        }
        // The same through a saved and reloaded tokenizer.
        let back = TextTokenizer::from_json(&tok.to_json().unwrap()).unwrap();
        for text in CONTROL_TEXTS {
            assert_eq!(back.encode(text), tok.encode(text), "{kind}: {text:?}");
        }
    }
}

/// A `bpe` model whose merges spell `<eos>` (the merge's result is the special's id, as the BPE
/// trainer makes it when the training text holds the name): the encoder does not use them, so
/// the text is still not the eos id, while the other merges work as before.
#[test]
fn bpe_merges_that_spell_a_special_are_not_used() {
    let tok = train(TokenizerKind::Bpe, &lines_with_control_names(), 3000);
    let mut json: serde_json::Value = serde_json::from_str(&tok.to_json().unwrap()).unwrap();
    let model = &mut json["model"];
    let mut next = tok.vocab_size() as u64;
    let mut spelling = Vec::new();
    let mut built = "<".to_owned();
    for c in ["e", "o", "s", ">"] {
        spelling.push(serde_json::json!([built.clone(), c]));
        built.push_str(c);
        if model["vocab"].get(&built).is_none() {
            model["vocab"][&built] = next.into();
            next += 1;
        }
    }
    assert_eq!(model["vocab"]["<eos>"], 3);
    let merges = model["merges"].as_array_mut().unwrap();
    merges.retain(|m| !spelling.contains(m));
    merges.splice(0..0, spelling);
    let spelled = TextTokenizer::from_json(&json.to_string()).unwrap();
    // The wrapped tokenizer, with special tokens left as text, does build the eos id.
    let mut raw = spelled.inner().clone();
    raw.set_encode_special_tokens(true);
    let raw_ids = raw.encode("zz<eos>zz", false).unwrap().get_ids().to_vec();
    assert!(raw_ids.contains(&EOS), "{raw_ids:?}");
    assert!(!spelled.encode("zz<eos>zz").contains(&EOS));
    for text in CONTROL_TEXTS {
        let ids = assert_no_control_ids(&spelled, text, "bpe with <eos> merges");
        assert_eq!(spelled.decode(&ids), text);
    }
    let ids = spelled.encode("the cat");
    assert_eq!(ids, raw.encode("the cat", false).unwrap().get_ids());
}

/// Trained on text without `<` or `>`, the names become whatever pieces cover them (`<unk>` for
/// the brackets), never pad, bos or eos; `<unk>` in the text is not one `<unk>` for the whole.
#[test]
fn control_names_never_give_control_ids_where_the_vocabulary_lacks_brackets() {
    let lines: Vec<String> = common::cleaned_lines("train.en", 1500)
        .into_iter()
        .filter(|l| !l.contains(['<', '>']))
        .collect();
    for kind in ALL {
        let tok = train(kind, &lines, 2000);
        for text in CONTROL_TEXTS {
            let ids = assert_no_control_ids(&tok, text, kind.as_str());
            assert!(!ids.is_empty(), "{kind}: {text:?}");
        }
        // `<unk>` is not one unknown token: the brackets and `unk` are pieces of their own.
        let ids = tok.encode("<unk>");
        assert!(ids.len() > 1, "{kind}: {:?}", ids);
        // `<pad>` is not the padding id, in any position.
        assert!(!tok.encode("<pad> <pad>").contains(&PAD), "{kind}");
        assert!(!tok.encode("<bos> x").contains(&BOS), "{kind}");
    }
}

/// Text without control names encodes exactly as the wrapped tokenizer does (existing models
/// behave as before), and whitespace has no tokens.
#[test]
fn ordinary_text_encodes_as_before() {
    let en = common::cleaned_lines("train.en", 2000);
    let zh: Vec<String> = common::corpus_lines("train.zh", 2000)
        .iter()
        .map(|l| clean_line(l, &Default::default(), true))
        .filter(|l| !l.is_empty())
        .collect();
    for kind in ALL {
        for lines in [&en, &zh] {
            // Trained on half the lines, so that unknown pieces occur too.
            let tok = train(kind, &lines[..1000], 4000);
            for line in lines.iter() {
                let theirs = tok.inner().encode(line.as_str(), false).unwrap();
                assert_eq!(tok.encode(line), theirs.get_ids(), "{kind}: {line}");
            }
            assert_eq!(tok.encode(""), Vec::<u32>::new(), "{kind}");
            assert_eq!(tok.encode("   "), Vec::<u32>::new(), "{kind}");
        }
    }
}

/// An imported Marian tokenizer: `</s>`, `<pad>` and `<unk>` in the text are not its specials,
/// a leading target-language tag still is its token, and a tag later in the text is not.
#[test]
fn marian_specials_are_text_and_the_leading_tag_is_kept() {
    use s2s_data::sentencepiece::{SpmModel, marian_tokenizer, to_spm};
    let lines = lines_with_control_names();
    let tok = train(TokenizerKind::Unigram, &lines, 2000);
    let spm = SpmModel::parse(&to_spm(&tok, "test").unwrap(), "test").unwrap();
    let mut vocab = vec!["</s>".to_owned(), "<unk>".to_owned(), ">>fra<<".to_owned()];
    vocab.extend((4..tok.vocab_size() as u32).map(|id| tok.id_to_token(id).unwrap()));
    vocab.push("<pad>".to_owned());
    let marian = marian_tokenizer(&spm, &vocab, "test").unwrap();
    let s = marian.specials();
    assert!(marian.is_marian());
    let tag = marian.token_to_id(" >>fra<<").unwrap();
    for text in CONTROL_TEXTS {
        let ids = assert_no_control_ids(&marian, text, "marian");
        assert!(!ids.contains(&s.unk), "{text:?}: {:?}", marian.tokens(&ids));
        assert_eq!(marian.decode(&ids), text);
        assert!(!ids.contains(&tag));
    }
    assert_eq!(marian.encode(">>fra<< the cat")[0], tag);
    assert_eq!(
        &marian.encode(">>fra<< the cat")[1..],
        &marian.encode("the cat")[..]
    );
    assert!(!marian.encode("the >>fra<< cat").contains(&tag));
    assert_eq!(marian.encode(">>fra<<"), vec![tag]);
    assert_eq!(marian.encode(""), Vec::<u32>::new());
}

fn write_lines(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    p
}

/// The training data path (`prepare`, then `DataDir::encode`) treats the names as text too: a
/// pair holding `<eos>` mid-sentence has no eos id in its source or target.
#[test]
fn training_data_holding_control_names_has_no_control_ids() {
    let d = tempfile::tempdir().unwrap();
    let mut src = common::corpus_slice("train.en", 0, 500);
    let mut tgt = common::corpus_slice("train.zh", 0, 500);
    src.push("I said <eos> and <pad> left.".to_owned());
    tgt.push("我说了<eos>然后<pad>走了。".to_owned());
    let out = d.path().join("data");
    let mut cfg = PrepareConfig::new(
        CorpusSource::Parallel {
            src: write_lines(d.path(), "train.en", &src),
            tgt: write_lines(d.path(), "train.zh", &tgt),
        },
        &out,
    );
    cfg.vocab_size = 1000;
    prepare(&cfg, &|_| {}).unwrap();
    let data = load_data_dir(&out).unwrap();
    let i = data
        .train
        .src
        .iter()
        .position(|s| s.contains("<eos>"))
        .expect("the line is kept");
    let enc = data.encode(&data.train);
    for ids in [&enc.src[i], &enc.tgt[i]] {
        assert!(
            !ids.iter().any(|&t| t == PAD || t == BOS || t == EOS),
            "{ids:?}"
        );
    }
}

/// Only the text encoder is kept in memory: the vocabulary it answers with (ids, names, the
/// whole list, the JSON it saves) is still the tokenizer's as written, renamed entries included,
/// in every kind and in a Marian vocabulary with a language tag.
#[test]
fn the_vocabulary_is_the_one_written_though_only_the_encoder_is_kept() {
    use s2s_data::sentencepiece::{SpmModel, marian_tokenizer, to_spm};
    let lines = lines_with_control_names();
    let mut toks: Vec<(String, TextTokenizer)> = ALL
        .iter()
        .map(|&kind| (kind.to_string(), train(kind, &lines, 2000)))
        .collect();
    let unigram = &toks[3].1;
    let spm = SpmModel::parse(&to_spm(unigram, "test").unwrap(), "test").unwrap();
    let mut vocab = vec!["</s>".to_owned(), "<unk>".to_owned(), ">>fra<<".to_owned()];
    vocab.extend((4..unigram.vocab_size() as u32).map(|id| unigram.id_to_token(id).unwrap()));
    vocab.push("<pad>".to_owned());
    toks.push((
        "marian".to_owned(),
        marian_tokenizer(&spm, &vocab, "test").unwrap(),
    ));
    for (what, tok) in &toks {
        let written = tok.inner();
        let mut renamed = 0;
        for id in 0..tok.vocab_size() as u32 {
            let name = tok.id_to_token(id);
            assert_eq!(name, written.id_to_token(id), "{what}: id {id}");
            let name = name.unwrap();
            assert_eq!(
                tok.token_to_id(&name),
                written.token_to_id(&name),
                "{what}: {name:?}"
            );
            let hidden = format!(" {name} ");
            if tok.encoder().token_to_id(&hidden) == Some(id) {
                renamed += 1;
                assert_eq!(tok.token_to_id(&hidden), None, "{what}: {hidden:?}");
            }
        }
        assert!(
            renamed > 0,
            "{what}: nothing was renamed, so nothing was tested"
        );
        let listed: std::collections::HashMap<String, u32> = tok.vocab().into_iter().collect();
        assert_eq!(listed, written.get_vocab(true), "{what}");
        let again = TextTokenizer::from_json(&tok.to_json().unwrap()).unwrap();
        assert!(
            again.to_json().unwrap() == tok.to_json().unwrap(),
            "{what}: the saved JSON changed on loading"
        );
        assert_eq!(again.vocab(), tok.vocab(), "{what}");
    }
}
