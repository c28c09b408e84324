//! Tokenizers on arbitrary text: training on any lines (empty, control characters, any Unicode,
//! very long) gives a tokenizer or a typed error, and encoding and decoding any string never
//! panics, yields ids inside the vocabulary, and for char and word tokenizers round-trips text
//! made of what they were trained on.

use proptest::prelude::*;
use s2s_data::{TokenizerKind, TokenizerSpec, clean_line, train_tokenizer};

fn kind() -> impl Strategy<Value = TokenizerKind> {
    prop_oneof![
        Just(TokenizerKind::Bpe),
        Just(TokenizerKind::Char),
        Just(TokenizerKind::Word),
        Just(TokenizerKind::Unigram),
        Just(TokenizerKind::Split)
    ]
}

/// Lines mixing controls, whitespace oddities, combining marks, CJK, emoji and the last code
/// point; sometimes empty, sometimes long.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[\u{0}-\u{1f}\u{7f} a-z\u{300}\u{200b}\u{2028}\u{feff}\u{4e00}-\u{4e08}\u{1F600}\u{10FFFF}.,'-]{0,30}",
        2 => any::<String>(),
        1 => Just(String::new()),
        1 => (1usize..3).prop_map(|n| "abc def ".repeat(3000 * n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn any_text_trains_encodes_and_decodes_without_panics(
        kind in kind(),
        lines in prop::collection::vec(line(), 0..12),
        probes in prop::collection::vec(line(), 1..6),
        vocab_size in 0usize..300,
        min_freq in 0u64..3,
    ) {
        let spec = TokenizerSpec { kind, vocab_size, min_freq, signatures: false };
        let tok = match train_tokenizer(&spec, lines.iter()) {
            Ok(t) => t,
            // A typed error (e.g. a vocabulary too small for the special tokens) is fine.
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        let n = tok.vocab_size();
        prop_assert!(n >= 4, "the four special tokens are always there");
        for p in probes.iter().chain(&lines) {
            let ids = tok.encode(p);
            prop_assert!(ids.iter().all(|&i| (i as usize) < n), "{:?}", ids);
            let _ = tok.try_encode(p);
            let _ = tok.decode(&ids);
            let _ = tok.tokens(&ids);
        }
        // Ids outside the vocabulary decode to something rather than panicking.
        let _ = tok.decode(&[0, 1, 2, 3, n as u32, u32::MAX]);
        // The saved form loads back to the same tokenizer.
        let json = tok.to_json().unwrap();
        let back = s2s_data::TextTokenizer::from_json(&json).unwrap();
        prop_assert_eq!(back.vocab_size(), n);
        if let Some(p) = probes.first() {
            prop_assert_eq!(back.encode(p), tok.encode(p));
        }
    }

    #[test]
    fn char_and_word_tokenizers_round_trip_cleaned_training_text(
        word in prop::bool::ANY,
        lines in prop::collection::vec("[a-z\u{e9}\u{4e00}-\u{4e08}\u{1F600} ]{1,25}", 1..10),
    ) {
        let kind = if word { TokenizerKind::Word } else { TokenizerKind::Char };
        let lines: Vec<String> = lines
            .iter()
            .map(|l| clean_line(l, &Default::default(), false))
            .filter(|l| !l.is_empty())
            .collect();
        let spec = TokenizerSpec { kind, vocab_size: 100_000, min_freq: 1, signatures: false };
        let tok = train_tokenizer(&spec, lines.iter()).unwrap();
        for l in &lines {
            let ids = tok.encode(l);
            prop_assert!(!ids.contains(&s2s_data::UNK), "{:?} -> {:?}", l, ids);
            // The word tokenizer splits CJK characters and symbols off as words of their own.
            let plain = l.chars().all(|c| c == ' ' || c.is_ascii_lowercase() || c == '\u{e9}');
            if kind == TokenizerKind::Char || plain {
                prop_assert_eq!(&tok.decode(&ids), l);
            }
        }
    }
}
