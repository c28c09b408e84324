//! The textbook example: greedy finds A B C <eos> (p = 0.048), beam k = 2 and exhaustive search
//! find A C B <eos> (p = 0.054).

use s2s_search::toy::TableModel;
use s2s_search::{
    Hypothesis, LengthPenalty, SearchConfig, SearchError, SpecialTokens, Strategy, search,
};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};
const EOS: u32 = 3;
const A: u32 = 4;
const B: u32 = 5;
const C: u32 = 6;

/// Vocabulary {pad, unk, bos, <eos>, A, B, C}. `<eos>` has probability 0.01 before step 4; every
/// prefix not listed is uniform over {unk, <eos>, A, B, C} (0.2 each).
fn textbook() -> TableModel {
    TableModel::uniform(7, SPECIAL)
        .with_probs(&[], &[(A, 0.5), (B, 0.3), (C, 0.19), (EOS, 0.01)])
        .with_probs(&[A], &[(B, 0.4), (C, 0.3), (A, 0.29), (EOS, 0.01)])
        .with_probs(&[B], &[(A, 0.4), (B, 0.3), (C, 0.29), (EOS, 0.01)])
        .with_probs(&[C], &[(A, 0.4), (B, 0.3), (C, 0.29), (EOS, 0.01)])
        .with_probs(&[A, B], &[(C, 0.4), (A, 0.3), (B, 0.29), (EOS, 0.01)])
        .with_probs(&[A, C], &[(B, 0.6), (A, 0.2), (C, 0.19), (EOS, 0.01)])
        .with_probs(&[A, B, C], &[(EOS, 0.6), (A, 0.2), (B, 0.1), (C, 0.1)])
        .with_probs(&[A, C, B], &[(EOS, 0.6), (A, 0.2), (B, 0.1), (C, 0.1)])
}

fn config(strategy: Strategy, lp: LengthPenalty) -> SearchConfig {
    SearchConfig {
        strategy,
        nbest: 1,
        length_penalty: lp,
        max_len: 6,
        special: SPECIAL,
        ..SearchConfig::default()
    }
}

fn best(strategy: Strategy, lp: LengthPenalty) -> Hypothesis {
    let out = search(&textbook(), &[vec![9, 9, 9]], &config(strategy, lp)).unwrap();
    assert_eq!(out.len(), 1);
    out[0][0].clone()
}

const PENALTIES: [LengthPenalty; 4] = [
    LengthPenalty::None,
    LengthPenalty::Alpha(0.75),
    LengthPenalty::Alpha(1.0),
    LengthPenalty::Gnmt(0.6),
];

fn check(h: &Hypothesis, tokens: &[u32], p: f64, lp: LengthPenalty) {
    assert_eq!(h.tokens, tokens, "{lp:?}");
    assert!(
        ((h.logprob as f64).exp() - p).abs() < 1e-6,
        "{lp:?}: p = {} != {p}",
        (h.logprob as f64).exp()
    );
    assert_eq!(h.token_logprobs.len(), tokens.len() + 1);
    let sum: f32 = h.token_logprobs.iter().sum();
    assert!((sum - h.logprob).abs() < 1e-6);
    assert_eq!(h.score, lp.score(h.logprob, tokens.len() + 1));
}

#[test]
fn greedy_finds_abc() {
    for lp in PENALTIES {
        check(&best(Strategy::Greedy, lp), &[A, B, C], 0.048, lp);
        check(&best(Strategy::Beam { k: 1 }, lp), &[A, B, C], 0.048, lp);
    }
}

#[test]
fn beam_2_finds_acb() {
    for lp in PENALTIES {
        check(&best(Strategy::Beam { k: 2 }, lp), &[A, C, B], 0.054, lp);
    }
}

#[test]
fn exhaustive_finds_acb() {
    for lp in PENALTIES {
        check(&best(Strategy::Exhaustive, lp), &[A, C, B], 0.054, lp);
    }
}

#[test]
fn beam_2_nbest_2_ranks_both() {
    let mut cfg = config(Strategy::Beam { k: 2 }, LengthPenalty::Alpha(0.75));
    cfg.nbest = 2;
    let out = search(&textbook(), &[vec![9]], &cfg).unwrap();
    check(&out[0][0], &[A, C, B], 0.054, cfg.length_penalty);
    check(&out[0][1], &[A, B, C], 0.048, cfg.length_penalty);
}

#[test]
fn exhaustive_refuses_large_spaces() {
    let mut cfg = config(Strategy::Exhaustive, LengthPenalty::None);
    cfg.max_len = 8;
    cfg.exhaustive_limit = 1000;
    let err = search(&textbook(), &[vec![9]], &cfg).unwrap_err();
    assert_eq!(
        err,
        SearchError::ExhaustiveTooLarge {
            vocab_size: 7,
            max_len: 8,
            candidates: 5_764_801,
            limit: 1000
        }
    );
    let msg = err.to_string();
    assert!(msg.contains("5764801") && msg.contains("1000"), "{msg}");
    assert!(msg.contains("--max-len") && msg.contains("beam"), "{msg}");
}

#[test]
fn invalid_configs_are_refused() {
    let mut cfg = config(Strategy::Beam { k: 2 }, LengthPenalty::None);
    cfg.nbest = 3;
    assert_eq!(
        search(&textbook(), &[vec![9]], &cfg).unwrap_err(),
        SearchError::NbestExceedsBeam { nbest: 3, k: 2 }
    );
    cfg.strategy = Strategy::Greedy;
    assert!(search(&textbook(), &[vec![9]], &cfg).is_err());
    cfg.nbest = 1;
    cfg.strategy = Strategy::Sample {
        temperature: 0.0,
        top_k: 0,
        top_p: 1.0,
        seed: 1,
    };
    assert!(matches!(
        search(&textbook(), &[vec![9]], &cfg),
        Err(SearchError::InvalidConfig(_))
    ));
    cfg.strategy = Strategy::Greedy;
    cfg.special.eos = 7;
    assert!(matches!(
        search(&textbook(), &[vec![9]], &cfg),
        Err(SearchError::SpecialOutOfVocab { .. })
    ));
}

#[test]
fn max_len_forces_eos_and_min_len_bans_it() {
    // max_len 2: A B is forced to end, and the forced <eos> step counts.
    let mut cfg = config(Strategy::Greedy, LengthPenalty::None);
    cfg.max_len = 2;
    let h = &search(&textbook(), &[vec![9]], &cfg).unwrap()[0][0];
    assert_eq!(h.tokens, [A, B]);
    assert!(((h.logprob as f64).exp() - 0.5 * 0.4 * 0.01).abs() < 1e-7);
    // min_len 4: <eos> (0.6 after A B C) is banned, so greedy goes on with A.
    let mut cfg = config(Strategy::Greedy, LengthPenalty::None);
    cfg.min_len = 4;
    let h = &search(&textbook(), &[vec![9]], &cfg).unwrap()[0][0];
    assert_eq!(&h.tokens[..4], [A, B, C, A]);
    // The ratio limit: floor(0.5 * 4) + 1 = 3 < 6.
    let mut cfg = config(Strategy::Greedy, LengthPenalty::None);
    cfg.min_len = 10;
    cfg.max_len_ratio = Some(s2s_search::LenRatio {
        ratio: 0.5,
        offset: 1,
    });
    assert_eq!(cfg.max_len_for(4), 3);
    let h = &search(&textbook(), &[vec![9, 9, 9, 9]], &cfg).unwrap()[0][0];
    assert_eq!(h.tokens, [A, B, C]);
}

#[test]
fn empty_batch() {
    let cfg = config(Strategy::Greedy, LengthPenalty::None);
    assert!(search(&textbook(), &[], &cfg).unwrap().is_empty());
}
