//! Property tests: perfect hypotheses score 100, scores stay in [0, 100], more references never
//! lower clipped matches, and nothing panics on arbitrary Unicode or empty input.

use proptest::prelude::*;
use s2s_eval::{
    BleuConfig, ChrfConfig, Smooth, Tokenize, corpus_bleu, corpus_chrf, sentence_bleu,
    sentence_chrf,
};

const TOL: f64 = 1e-9;

fn tokenizer() -> impl Strategy<Value = Tokenize> {
    prop::sample::select(Tokenize::ALL.to_vec())
}

fn smooth() -> impl Strategy<Value = Smooth> {
    prop_oneof![
        Just(Smooth::Exp),
        Just(Smooth::None),
        // sacreBLEU does not bound floor values either; above 1 precisions can exceed 100.
        (0.0..=1.0f64).prop_map(Smooth::Floor),
        (0.0..3.0f64).prop_map(Smooth::AddK),
    ]
}

/// Sentences made of words, numbers, punctuation, CJK and arbitrary characters.
fn sentence() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(vec!["the", "The", "dog", "bit", "man", "Σοφία", "naïve", "don't", "e-mail"]).prop_map(String::from),
        2 => prop::sample::select(vec![".", ",", "!", "?", "-", "(", ")", "\"", "&amp;", "«", "»", "。", "，", "…", "€"]).prop_map(String::from),
        1 => (0u32..100_000).prop_map(|n| format!("{n}")),
        1 => "[0-9]{1,3}[.,-][0-9]{1,3}",
        2 => "[\u{4e00}-\u{4e40}\u{3000}-\u{3003}]{1,4}",
        1 => any::<String>(),
    ];
    let sep = prop::sample::select(vec![" ", " ", " ", "", "  ", "\t", "\u{a0}", "\u{1c}"]);
    prop::collection::vec((piece, sep), 0..12).prop_map(|parts| {
        parts
            .into_iter()
            .flat_map(|(p, s)| [p, s.to_string()])
            .collect()
    })
}

fn bleu_cfg() -> impl Strategy<Value = BleuConfig> {
    (
        tokenizer(),
        any::<bool>(),
        smooth(),
        any::<bool>(),
        1usize..6,
    )
        .prop_map(
            |(tokenize, lowercase, smooth, effective_order, max_ngram_order)| BleuConfig {
                tokenize,
                lowercase,
                smooth,
                effective_order,
                max_ngram_order,
            },
        )
}

fn chrf_cfg() -> impl Strategy<Value = ChrfConfig> {
    (
        1usize..7,
        0usize..3,
        1u32..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(char_order, word_order, beta, lowercase, whitespace, eps_smoothing)| ChrfConfig {
                char_order,
                word_order,
                beta,
                lowercase,
                whitespace,
                eps_smoothing,
            },
        )
}

proptest! {
    #[test]
    fn identical_hypothesis_scores_100(s in sentence(), tokenize in tokenizer(), lowercase in any::<bool>()) {
        let cfg = BleuConfig { tokenize, lowercase, ..BleuConfig::sentence() };
        let bleu = sentence_bleu(&s, &[&s], &cfg).unwrap();
        if bleu.sys_len > 0 {
            prop_assert!((bleu.score - 100.0).abs() < TOL, "BLEU {} for {:?}", bleu.score, s);
        } else {
            prop_assert_eq!(bleu.score, 0.0);
        }
        for chrf_cfg in [ChrfConfig::default(), ChrfConfig::chrf_plus_plus()] {
            let chrf = sentence_chrf(&s, &[&s], &ChrfConfig { lowercase, ..chrf_cfg }).unwrap();
            if s.chars().any(|c| !c.is_whitespace() && !('\u{1c}'..='\u{1f}').contains(&c)) {
                prop_assert!((chrf.score - 100.0).abs() < TOL, "chrF {} for {:?}", chrf.score, s);
            }
        }
    }

    #[test]
    fn identical_corpus_scores_100(corpus in prop::collection::vec(sentence(), 1..8), tokenize in tokenizer()) {
        // Corpus BLEU without effective order needs at least 4 tokens in the whole corpus.
        let cfg = BleuConfig::with_tokenize(tokenize);
        let bleu = corpus_bleu(&corpus, &[&corpus], &cfg).unwrap();
        if bleu.totals.iter().all(|&t| t > 0) {
            prop_assert!((bleu.score - 100.0).abs() < TOL);
        }
        prop_assert_eq!(bleu.sys_len, bleu.ref_len);
    }

    #[test]
    fn bleu_within_bounds(hyp in sentence(), refs in prop::collection::vec(sentence(), 1..4), cfg in bleu_cfg()) {
        let score = sentence_bleu(&hyp, &refs, &cfg).unwrap();
        prop_assert!(score.score >= 0.0 && score.score <= 100.0 + TOL, "{}", score.score);
        prop_assert!(score.bp >= 0.0 && score.bp <= 1.0);
        for p in &score.precisions {
            prop_assert!(*p >= 0.0 && *p <= 100.0 + TOL);
        }
        for (c, t) in score.counts.iter().zip(&score.totals) {
            prop_assert!(c <= t);
        }
    }

    #[test]
    fn corpus_bleu_within_bounds(pairs in prop::collection::vec((sentence(), sentence()), 0..8), cfg in bleu_cfg()) {
        let (hyps, refs): (Vec<String>, Vec<String>) = pairs.into_iter().unzip();
        let score = corpus_bleu(&hyps, &[&refs], &cfg).unwrap();
        prop_assert!(score.score >= 0.0 && score.score <= 100.0 + TOL);
    }

    #[test]
    fn chrf_within_bounds(pairs in prop::collection::vec((sentence(), sentence(), sentence()), 0..6), cfg in chrf_cfg()) {
        let hyps: Vec<&str> = pairs.iter().map(|p| p.0.as_str()).collect();
        let refs1: Vec<&str> = pairs.iter().map(|p| p.1.as_str()).collect();
        let refs2: Vec<&str> = pairs.iter().map(|p| p.2.as_str()).collect();
        let score = corpus_chrf(&hyps, &[refs1, refs2], &cfg).unwrap();
        prop_assert!(score.score >= 0.0 && score.score <= 100.0 + TOL, "{}", score.score);
    }

    #[test]
    fn adding_a_reference_never_lowers_clipped_matches(hyp in sentence(), r1 in sentence(), r2 in sentence(), cfg in bleu_cfg()) {
        let one = sentence_bleu(&hyp, &[&r1], &cfg).unwrap();
        let two = sentence_bleu(&hyp, &[&r1, &r2], &cfg).unwrap();
        for (a, b) in one.counts.iter().zip(&two.counts) {
            prop_assert!(a <= b, "{:?} vs {:?}", one.counts, two.counts);
        }
        prop_assert_eq!(&one.totals, &two.totals);
    }

    #[test]
    fn no_panics_on_arbitrary_unicode(hyp in any::<String>(), r in any::<String>(), cfg in bleu_cfg(), ccfg in chrf_cfg()) {
        for t in Tokenize::ALL {
            let _ = t.tokenize(&hyp);
        }
        let _ = sentence_bleu(&hyp, &[&r], &cfg).unwrap();
        let _ = sentence_bleu("", &[""], &cfg).unwrap();
        let _ = sentence_chrf(&hyp, &[&r], &ccfg).unwrap();
        let _ = sentence_chrf("", &[""], &ccfg).unwrap();
        let empty: [&str; 0] = [];
        prop_assert_eq!(corpus_bleu(&empty, &[&empty], &cfg).unwrap().score, 0.0);
        // With eps smoothing the formula gives 100 * eps = 1e-14, as sacreBLEU's would.
        prop_assert!(corpus_chrf(&empty, &[&empty], &ccfg).unwrap().score < TOL);
    }
}

#[test]
fn errors_instead_of_panics() {
    let refs: [&str; 0] = [];
    assert!(sentence_bleu("a", &refs, &BleuConfig::default()).is_err());
    assert!(sentence_chrf("a", &refs, &ChrfConfig::default()).is_err());
    let no_streams: [Vec<&str>; 0] = [];
    assert!(corpus_bleu(&["a"], &no_streams, &BleuConfig::default()).is_err());
    assert!(corpus_bleu(&["a", "b"], &[["a"]], &BleuConfig::default()).is_err());
    assert!(corpus_chrf(&["a"], &[["a", "b"]], &ChrfConfig::default()).is_err());
    let bad = BleuConfig {
        max_ngram_order: 0,
        ..BleuConfig::default()
    };
    assert!(corpus_bleu(&["a"], &[["a"]], &bad).is_err());
    let bad = ChrfConfig {
        char_order: 0,
        word_order: 0,
        ..ChrfConfig::default()
    };
    assert!(corpus_chrf(&["a"], &[["a"]], &bad).is_err());
}

#[test]
fn empty_hypotheses_score_zero() {
    let refs = ["The dog bit the man.", "It was not unexpected."];
    let bleu = corpus_bleu(&["", ""], &[refs], &BleuConfig::default()).unwrap();
    assert_eq!(
        (bleu.score, bleu.sys_len, bleu.bp, bleu.ratio),
        (0.0, 0, 0.0, 0.0)
    );
    assert_eq!(
        corpus_chrf(&["", ""], &[refs], &ChrfConfig::default())
            .unwrap()
            .score,
        0.0
    );
}

/// Text with control characters, combining marks, surrogate-free astral characters, odd
/// whitespace and very long runs.
fn nasty_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[\u{0}-\u{1f}\u{7f}-\u{9f} a\u{300}\u{200b}\u{2028}\u{feff}\u{1F600}\u{10FFFF}\u{4e00}.,!?-]{0,40}",
        Just(String::new()),
        (1usize..4).prop_map(|n| "word ".repeat(4000 * n)),
        (1usize..3).prop_map(|n| "长".repeat(20_000 * n)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    #[test]
    fn control_characters_and_very_long_lines_score_within_bounds(
        hyp in nasty_text(), r in nasty_text(), cfg in bleu_cfg(), ccfg in chrf_cfg()
    ) {
        for t in Tokenize::ALL {
            let _ = t.tokenize(&hyp);
        }
        let b = sentence_bleu(&hyp, &[&r], &cfg).unwrap();
        prop_assert!((0.0..=100.0 + TOL).contains(&b.score), "{}", b.score);
        let c = sentence_chrf(&hyp, &[&r], &ccfg).unwrap();
        prop_assert!((0.0..=100.0 + TOL).contains(&c.score), "{}", c.score);
    }
}
