//! The `split` tokenizer: exactly one id per whitespace-separated item, whatever the item holds
//! (apostrophes, dots, slashes, CJK), decoding that joins with single spaces, a saved form
//! that loads back as the same tokenizer, and unknown-word signatures.

use proptest::prelude::*;
use s2s_data::{
    EOS, SPECIAL_TOKENS, TextTokenizer, TokenizerKind, TokenizerSpec, UNK, clean_line,
    train_tokenizer,
};

fn split(lines: &[&str], vocab_size: usize, min_freq: u64) -> TextTokenizer {
    let spec = TokenizerSpec {
        kind: TokenizerKind::Split,
        vocab_size,
        min_freq,
        signatures: false,
    };
    train_tokenizer(&spec, lines.iter()).unwrap()
}

const LINES: [&str; 4] = [
    "I don't live in the U.S. , e.g. 1/2 of it",
    "Mr. O'Neil paid $ 3.50 -- or 4,000 ?!",
    "我们 住在 中国 。 :-) <br/>",
    "PRON AUX PART VERB ADP PROPN PUNCT",
];

#[test]
fn one_id_per_item_and_exact_round_trips() {
    let tok = split(&LINES, 1000, 1);
    assert_eq!(tok.kind(), Some(TokenizerKind::Split));
    for (id, name) in SPECIAL_TOKENS.iter().enumerate() {
        assert_eq!(tok.token_to_id(name), Some(id as u32));
    }
    for line in LINES {
        let ids = tok.encode(line);
        let items: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(ids.len(), items.len(), "{line:?} -> {ids:?}");
        assert!(!ids.contains(&UNK), "{line:?} -> {ids:?}");
        for (id, item) in ids.iter().zip(&items) {
            assert_eq!(tok.id_to_token(*id).as_deref(), Some(*item));
        }
        assert_eq!(tok.decode(&ids), line);
        assert_eq!(tok.tokens(&ids), items);
    }
    // Extra whitespace (tabs, runs, no-break space) separates items and is not a token.
    let ids = tok.encode(" don't\t U.S.\u{a0}1/2  ");
    assert_eq!(ids.len(), 3);
    assert_eq!(tok.decode(&ids), "don't U.S. 1/2");
}

#[test]
fn unknown_items_and_special_names_are_one_unk_each() {
    let tok = split(&LINES, 1000, 1);
    let ids = tok.encode("don't wasn't <eos> U.S.A. U.S.");
    assert_eq!(ids.len(), 5);
    assert_eq!(ids[0], tok.token_to_id("don't").unwrap());
    assert_eq!(
        &ids[1..4],
        &[UNK, UNK, UNK],
        "unseen items and `<eos>` as text"
    );
    assert!(!ids.contains(&EOS));
    assert_eq!(ids[4], tok.token_to_id("U.S.").unwrap());
}

#[test]
fn vocab_size_and_min_freq_apply() {
    let lines = ["a a a b b c", "a b d"];
    // Counts: a 4, b 3, c 1, d 1.
    let tok = split(&lines, 100, 2);
    assert_eq!(tok.vocab_size(), SPECIAL_TOKENS.len() + 2);
    assert_eq!(tok.encode("a c b d"), {
        let (a, b) = (tok.token_to_id("a").unwrap(), tok.token_to_id("b").unwrap());
        vec![a, UNK, b, UNK]
    });
    let tok = split(&lines, SPECIAL_TOKENS.len() + 1, 1);
    assert_eq!(tok.vocab_size(), SPECIAL_TOKENS.len() + 1);
    assert!(tok.token_to_id("a").is_some() && tok.token_to_id("b").is_none());
}

#[test]
fn saved_and_loaded_it_is_the_same_tokenizer() {
    let tok = split(&LINES, 1000, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.tgt.json");
    tok.save(&path).unwrap();
    let back = TextTokenizer::from_file(&path).unwrap();
    assert_eq!(back.kind(), Some(TokenizerKind::Split));
    assert_eq!(back.vocab_size(), tok.vocab_size());
    for line in LINES.iter().chain(&["never seen words here"]) {
        let ids = back.encode(line);
        assert_eq!(ids, tok.encode(line));
        assert_eq!(back.decode(&ids), tok.decode(&ids));
    }
    assert!(back.to_json().unwrap().contains("WhitespaceSplit"));
}

#[test]
fn signatures_give_unknown_words_the_token_of_their_shape() {
    // Words seen once become signatures in training; `the` and `dogs` (twice) stay words.
    // Signatures obey min_freq too: `<unk-Cap>` (Zorbington) and `<unk-num-sep>` (12,5) occur
    // once and are left out.
    let lines = [
        "the dogs Glorped quickly",
        "the dogs Florped loudly 1987",
        "Zorbington walked 2001 12,5 barked",
    ];
    let spec = TokenizerSpec {
        kind: TokenizerKind::Split,
        vocab_size: 1000,
        min_freq: 2,
        signatures: true,
    };
    let tok = train_tokenizer(&spec, lines.iter()).unwrap();
    assert!(tok.has_signatures());
    let id = |t: &str| tok.token_to_id(t).unwrap_or_else(|| panic!("no `{t}`"));
    assert_eq!(tok.token_to_id("Glorped"), None);
    assert_eq!(tok.token_to_id("<unk-Cap>"), None);
    let ids = tok.encode("the dogs Snarfed happily 2001 Qwerty");
    assert_eq!(
        ids,
        vec![
            id("the"),
            id("dogs"),
            id("<unk-Cap-ed>"),
            id("<unk-lc-ly>"),
            id("<unk-num>"),
            // A shape training never saw is plain `<unk>`.
            UNK,
        ]
    );
    // Saved and loaded, it still signs.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.src.json");
    tok.save(&path).unwrap();
    let back = TextTokenizer::from_file(&path).unwrap();
    assert!(back.has_signatures());
    assert_eq!(back.encode("the dogs Snarfed happily 2001 Qwerty"), ids);
    // Without signatures the same words are one `<unk>` each.
    let plain = TokenizerSpec {
        signatures: false,
        ..spec
    };
    let plain = train_tokenizer(&plain, lines.iter()).unwrap();
    assert!(!plain.has_signatures());
    assert_eq!(plain.encode("Snarfed happily"), vec![UNK, UNK]);
    // Only `split` signs.
    let word = TokenizerSpec {
        kind: TokenizerKind::Word,
        ..spec
    };
    let msg = train_tokenizer(&word, lines.iter())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("split") && msg.contains("fix:"), "{msg}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Cleaned lines of punctuation-laden items: one id per item, seen or not, and the training
    /// lines decode back exactly.
    #[test]
    fn item_count_is_id_count(
        lines in prop::collection::vec("[a-z.,'/:;!?\u{e9}\u{4e00}-\u{4e03}\u{1F600}\\- \t]{1,30}", 1..8),
        probe in "[a-z.'/\u{4e00}-\u{4e03} ]{0,30}",
    ) {
        let lines: Vec<String> = lines
            .iter()
            .map(|l| clean_line(l, &Default::default(), false))
            .filter(|l| !l.is_empty())
            .collect();
        prop_assume!(!lines.is_empty());
        let spec = TokenizerSpec { kind: TokenizerKind::Split, vocab_size: 100_000, min_freq: 1, signatures: false };
        let tok = train_tokenizer(&spec, lines.iter()).unwrap();
        for l in &lines {
            let ids = tok.encode(l);
            prop_assert_eq!(ids.len(), l.split(' ').count(), "{:?} -> {:?}", l, ids);
            prop_assert!(!ids.contains(&UNK));
            prop_assert_eq!(&tok.decode(&ids), l);
        }
        prop_assert_eq!(tok.encode(&probe).len(), probe.split_whitespace().count());
    }
}
