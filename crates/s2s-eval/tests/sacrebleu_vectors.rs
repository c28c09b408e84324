//! The published test vectors of sacreBLEU 2.6.0's own test suite (`test/test_bleu.py`,
//! `test/test_sentence_bleu.py`, `test/test_chrf.py`), with sacreBLEU's tolerances.

use s2s_eval::{
    BleuConfig, BleuStats, ChrfConfig, Smooth, Tokenize, compute_bleu, corpus_bleu, corpus_chrf,
    sentence_bleu, sentence_chrf,
};

const EPSILON: f64 = 1e-8;

fn readme_hyps() -> Vec<&'static str> {
    vec![
        "The dog bit the man.",
        "It wasn't surprising.",
        "The man had just bitten him.",
    ]
}

fn readme_refs() -> Vec<Vec<&'static str>> {
    vec![
        vec![
            "The dog bit the man.",
            "It was not unexpected.",
            "The man bit him first.",
        ],
        vec![
            "The dog had bit the man.",
            "No one was surprised.",
            "The man had bitten the dog.",
        ],
    ]
}

fn assert_close(actual: f64, expected: f64, eps: f64) {
    assert!(
        (actual - expected).abs() < eps,
        "got {actual}, expected {expected} (±{eps})"
    );
}

/// sacreBLEU's `raw_corpus_bleu`: floor smoothing, no tokenization, effective order.
fn raw_corpus_bleu(hyps: &[&str], refs: &[Vec<&str>], floor: f64) -> s2s_eval::BleuScore {
    let cfg = BleuConfig {
        tokenize: Tokenize::None,
        smooth: Smooth::Floor(floor),
        effective_order: true,
        ..BleuConfig::default()
    };
    corpus_bleu(hyps, refs, &cfg).unwrap()
}

#[test]
fn corpus_bleu_readme_example() {
    let (hyps, refs) = (readme_hyps(), readme_refs());
    let cases: [(BleuConfig, f64); 5] = [
        (BleuConfig::default(), 48.530827),
        (BleuConfig::with_tokenize(Tokenize::None), 49.1919566),
        (BleuConfig::with_tokenize(Tokenize::ThirteenA), 48.530827),
        (BleuConfig::with_tokenize(Tokenize::Intl), 43.91623493),
        (
            BleuConfig {
                smooth: Smooth::None,
                ..BleuConfig::default()
            },
            48.530827,
        ),
    ];
    for (cfg, expected) in cases {
        let score = corpus_bleu(&hyps, &refs, &cfg).unwrap();
        assert_close(score.score, expected, EPSILON);
    }
    // Empty hypotheses are kept, not removed.
    let empty = corpus_bleu(&["", "", ""], &refs, &BleuConfig::default()).unwrap();
    assert_eq!(empty.score, 0.0);
}

#[test]
fn corpus_bleu_readme_details_and_signature() {
    let score = corpus_bleu(&readme_hyps(), &readme_refs(), &BleuConfig::default()).unwrap();
    // sacreBLEU: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
    assert_eq!(
        score.format(2),
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
    );
    assert_eq!((score.sys_len, score.ref_len), (17, 18));
    assert_eq!(score.counts, [14, 7, 5, 3]);
    assert_eq!(score.totals, [17, 14, 11, 8]);
    let version = format!("version:s2s-{}", s2s_eval::VERSION);
    assert_eq!(
        score.signature,
        format!("nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|{version}")
    );
    let cfg = BleuConfig {
        lowercase: true,
        effective_order: true,
        smooth: Smooth::FLOOR_DEFAULT,
        tokenize: Tokenize::Zh,
        ..BleuConfig::default()
    };
    assert_eq!(
        cfg.signature(1),
        format!("nrefs:1|case:lc|eff:yes|tok:zh|smooth:floor[0.10]|{version}")
    );
    assert_eq!(
        ChrfConfig::chrf_plus_plus().signature(3),
        format!("nrefs:3|case:mixed|eff:yes|nc:6|nw:2|space:no|{version}")
    );
}

#[test]
fn max_ngram_order() {
    let expected = ["77.65", "60.50", "53.93", "48.53", "46.14", "43.28"];
    for (order, expected) in (1..=6).zip(expected) {
        let cfg = BleuConfig {
            max_ngram_order: order,
            ..BleuConfig::default()
        };
        let score = corpus_bleu(&readme_hyps(), &readme_refs(), &cfg).unwrap();
        assert_eq!(format!("{:.2}", score.score), expected, "order {order}");
    }
}

#[test]
fn raw_bleu() {
    let cases: [(&[&str], &[&str], f64); 3] = [
        (&["this is a test", "another test"], &["ref1", "ref2"], 0.0),
        (&["this is a test"], &["this is a test"], 1.0),
        (&["this is a fest"], &["this is a test"], 0.223606797749979),
    ];
    for (hyps, refs, expected) in cases {
        let score = raw_corpus_bleu(hyps, &[refs.to_vec()], 0.01).score / 100.0;
        assert_close(score, expected, EPSILON);
    }
}

#[test]
fn effective_order() {
    let cases = [
        ("test", "a test", 0.3678794411714425),
        ("a test", "a test", 1.0),
        ("a little test", "a test", 0.03218297948685433),
    ];
    for (hyp, reference, expected) in cases {
        let score = raw_corpus_bleu(&[hyp], &[vec![reference]], 0.01).score / 100.0;
        assert_close(score, expected, EPSILON);
    }
}

#[test]
fn statistics() {
    let score = raw_corpus_bleu(
        &["am I am a character sequence"],
        &[vec!["I am a symbol string sequence a a"]],
        0.01,
    );
    assert_eq!(score.counts, [4, 2, 1, 0]);
    assert_eq!(score.totals, [6, 5, 4, 3]);
}

#[test]
fn offset() {
    let hyps = ["am I am a character sequence"];
    let refs = [vec!["I am a symbol string sequence a a"]];
    assert_close(
        raw_corpus_bleu(&hyps, &refs, 0.0).score / 100.0,
        0.0,
        EPSILON,
    );
    assert_close(
        raw_corpus_bleu(&hyps, &refs, 0.1).score / 100.0,
        0.1555722182,
        EPSILON,
    );
}

#[test]
fn scoring_from_statistics() {
    let stats = BleuStats {
        sys_len: 11,
        ref_len: 11,
        correct: vec![9, 7, 5, 3],
        total: vec![10, 8, 6, 4],
    };
    // sacreBLEU's compute_bleu defaults to smooth_method='none'; with no zero counts every
    // smoothing method gives the same score.
    for smooth in [Smooth::None, Smooth::Exp, Smooth::FLOOR_DEFAULT] {
        assert_close(
            compute_bleu(&stats, smooth, false).score / 100.0,
            0.8375922397,
            EPSILON,
        );
    }
}

/// (correct, total, sys_len, ref_len, floor value)
type DegenerateCase = ([u64; 4], [u64; 4], u64, u64, f64);

#[test]
fn degenerate_statistics() {
    let cases: [DegenerateCase; 6] = [
        ([0, 0, 0, 0], [4, 4, 2, 1], 0, 1, 0.0),
        ([0, 0, 0, 0], [10, 11, 12, 0], 14, 10, 0.0),
        ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, 0.0),
        ([6, 5, 4, 0], [6, 5, 4, 3], 6, 6, 0.0),
        ([0, 0, 0, 0], [0, 0, 0, 0], 0, 0, 0.1),
        ([0, 0, 0, 0], [0, 0, 0, 0], 1, 5, 0.01),
    ];
    for (correct, total, sys_len, ref_len, offset) in cases {
        let stats = BleuStats {
            sys_len,
            ref_len,
            correct: correct.to_vec(),
            total: total.to_vec(),
        };
        assert_eq!(
            compute_bleu(&stats, Smooth::Floor(offset), false).score,
            0.0
        );
    }
}

#[test]
fn sentence_bleu_smoothing_matrix() {
    // test_sentence_bleu.py, example from sacreBLEU issue #98 (tolerance 1e-3 there).
    let reference = "producţia de zahăr brut se exprimă în zahăr alb;";
    let hyp = "Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;";
    let cases: [(Smooth, bool, Tokenize, f64); 12] = [
        (Smooth::Exp, false, Tokenize::ThirteenA, 8.493),
        (Smooth::None, false, Tokenize::ThirteenA, 0.0),
        (Smooth::FLOOR_DEFAULT, false, Tokenize::ThirteenA, 4.51688),
        (Smooth::Floor(0.1), false, Tokenize::ThirteenA, 4.51688),
        (Smooth::Floor(0.5), false, Tokenize::ThirteenA, 10.10),
        (Smooth::ADD_K_DEFAULT, false, Tokenize::ThirteenA, 14.882),
        (Smooth::AddK(1.0), false, Tokenize::ThirteenA, 14.882),
        (Smooth::AddK(2.0), false, Tokenize::ThirteenA, 21.389),
        (Smooth::Exp, false, Tokenize::None, 7.347),
        (Smooth::Exp, false, Tokenize::Intl, 8.493),
        (Smooth::Exp, false, Tokenize::Char, 40.8759),
        (Smooth::Exp, true, Tokenize::Char, 42.0267),
    ];
    for (smooth, lowercase, tokenize, expected) in cases {
        let cfg = BleuConfig {
            smooth,
            lowercase,
            tokenize,
            ..BleuConfig::sentence()
        };
        let score = sentence_bleu(hyp, &[reference], &cfg).unwrap();
        assert_close(score.score, expected, 1e-3);
    }
    // Example from sacreBLEU issue #141: no matches at all is 0 whatever the smoothing.
    for smooth in [
        Smooth::Exp,
        Smooth::None,
        Smooth::FLOOR_DEFAULT,
        Smooth::Floor(0.1),
        Smooth::ADD_K_DEFAULT,
        Smooth::AddK(1.0),
    ] {
        let cfg = BleuConfig {
            smooth,
            ..BleuConfig::sentence()
        };
        assert_eq!(
            sentence_bleu("this is a cat", &["okay thanks"], &cfg)
                .unwrap()
                .score,
            0.0
        );
    }
}

fn chrf_beta3(eps_smoothing: bool, whitespace: bool) -> ChrfConfig {
    ChrfConfig {
        char_order: 6,
        word_order: 0,
        beta: 3,
        eps_smoothing,
        whitespace,
        ..ChrfConfig::default()
    }
}

#[test]
fn chrf_eps_smoothing() {
    let cases: [(&[&str], &[&str], f64); 13] = [
        (&["abcdefg"], &["hijklmnop"], 0.0),
        (&["a"], &["b"], 0.0),
        (&[""], &["b"], 0.0),
        (&[""], &["ref"], 0.0),
        (&[""], &["reference"], 0.0),
        (&["aa"], &["ab"], 8.3333),
        (&["a", "b"], &["a", "c"], 8.3333),
        (&["a"], &["a"], 16.6667),
        (&["a b c"], &["a b c"], 50.0),
        (&["a b c"], &["abc"], 50.0),
        (
            &[
                " risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
            ],
            &[
                "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
            ],
            63.361730,
        ),
        (
            &[" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "],
            &["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
            64.1302698,
        ),
        (
            &["Niemand hat die Absicht, eine Mauer zu errichten"],
            &["Niemand hat die Absicht, eine Mauer zu errichten"],
            100.0,
        ),
    ];
    for (hyps, refs, expected) in cases {
        let score = corpus_chrf(hyps, &[refs], &chrf_beta3(true, false)).unwrap();
        assert_close(score.score, expected, 1e-4);
    }
}

#[test]
fn chrf_effective_order() {
    let cases: [(&[&str], &[&str], f64); 7] = [
        (&["a"], &["a"], 100.0),
        (&[""], &["reference"], 0.0),
        (&["a b c"], &["a b c"], 100.0),
        (&["a b c"], &["abc"], 100.0),
        (&[""], &["c"], 0.0),
        (&["a", "b"], &["a", "c"], 50.0),
        (&["aa"], &["ab"], 25.0),
    ];
    for (hyps, refs, expected) in cases {
        let score = corpus_chrf(hyps, &[refs], &chrf_beta3(false, false)).unwrap();
        assert_close(score.score, expected, 1e-4);
    }
}

#[test]
fn chrf_keep_whitespace() {
    let cases: [(&str, &str, f64); 2] = [
        (
            "Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich.",
            "Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich.",
            67.3481606,
        ),
        (
            "risk assessment must be made of those who are qualified and expertise in the sector - these are the scientists .",
            "risk assessment has to be undertaken by those who are qualified and expert in that area - that is the scientists .",
            65.2414427,
        ),
    ];
    for (hyp, reference, expected) in cases {
        let score = corpus_chrf(&[hyp], &[[reference]], &chrf_beta3(false, true)).unwrap();
        assert_close(score.score, expected, 1e-4);
    }
}

#[test]
fn chrf_sentence_level() {
    let cases = [
        (
            "Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
            "Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře.",
            39.14078509,
        ),
        (
            "Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
            "A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři.",
            31.22557079,
        ),
        (
            "Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
            "Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli.",
            57.15704367,
        ),
    ];
    let cfg = ChrfConfig {
        eps_smoothing: true,
        ..ChrfConfig::default()
    };
    for (hyp, reference, expected) in cases {
        assert_close(
            sentence_chrf(hyp, &[reference], &cfg).unwrap().score,
            expected,
            1e-4,
        );
    }
}
