//! Beam search with a patience factor against a plain reference of CTranslate2's rule, and the
//! interrupt.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use s2s_search::toy::{Fallback, TableModel};
use s2s_search::{
    Hypothesis, Interrupt, LengthPenalty, SearchConfig, SearchError, SpecialTokens, StepModel,
    Strategy as Search, search,
};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

/// Beam search as CTranslate2 and fairseq write it, one sentence, every candidate materialised:
/// rank all extensions by raw log-prob (ties: token, then beam); an `<eos>` among the first `k`
/// finishes a hypothesis, the first `k` others stay open; stop once `target` hypotheses have
/// finished or none is open. Returns `(score, tokens)`, best first.
fn reference(
    model: &TableModel,
    source: &[u32],
    k: usize,
    target: usize,
    max_len: usize,
    lp: LengthPenalty,
) -> Vec<(f32, Vec<u32>)> {
    let vocab = model.vocab_size();
    let mut open: Vec<(Vec<u32>, f32)> = vec![(Vec::new(), 0.0)];
    let mut finished: Vec<(f32, Vec<u32>)> = Vec::new();
    loop {
        let mut cands: Vec<(f32, u32, usize)> = Vec::new();
        for (b, (tokens, sum)) in open.iter().enumerate() {
            let lps = model.log_probs(source, tokens);
            for v in 0..vocab as u32 {
                let allowed = if tokens.len() == max_len {
                    v == SPECIAL.eos
                } else {
                    v != SPECIAL.pad && v != SPECIAL.bos
                };
                if allowed {
                    cands.push((sum + lps[v as usize], v, b));
                }
            }
        }
        cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut next = Vec::new();
        for (pos, &(sum, v, b)) in cands.iter().enumerate() {
            let tokens = &open[b].0;
            if v == SPECIAL.eos {
                if pos < k {
                    finished.push((lp.score(sum, tokens.len() + 1), tokens.clone()));
                }
            } else if next.len() < k {
                let mut t = tokens.clone();
                t.push(v);
                next.push((t, sum));
            }
        }
        if next.is_empty() || finished.len() >= target {
            break;
        }
        open = next;
    }
    finished.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    finished
}

fn model(vocab: usize, seed: u64, sharpness: f32, eos_growth: f32) -> TableModel {
    TableModel::random(vocab, SPECIAL, seed).with_fallback(Fallback::Hashed {
        seed,
        sharpness,
        eos_growth,
    })
}

fn penalty() -> impl Strategy<Value = LengthPenalty> {
    prop_oneof![
        Just(LengthPenalty::None),
        (0.0f32..2.0).prop_map(LengthPenalty::Alpha),
        (0.0f32..2.0).prop_map(LengthPenalty::Gnmt),
    ]
}

fn tokens(h: &[Hypothesis]) -> Vec<Vec<u32>> {
    h.iter().map(|h| h.tokens.clone()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// With a patience factor, beam search returns what the plain reference of CTranslate2's
    /// rule returns (the exact bound may end a sentence sooner, never with another result).
    #[test]
    fn patience_follows_ctranslate2s_rule(
        vocab in 5usize..11,
        seed: u64,
        sharpness in 0.0f32..8.0,
        eos_growth in 0.0f32..1.5,
        max_len in 1usize..10,
        lp in penalty(),
        k in 1usize..6,
        patience in prop_oneof![Just(0.5f32), Just(1.0), Just(1.5), Just(2.0), Just(3.0)],
        nbest in 1usize..6,
        sources in prop::collection::vec(prop::collection::vec(4u32..9, 0..4), 1..4),
    ) {
        let nbest = nbest.min(k);
        let model = model(vocab, seed, sharpness, eos_growth);
        let cfg = SearchConfig {
            strategy: Search::Beam { k },
            nbest,
            length_penalty: lp,
            max_len,
            special: SPECIAL,
            patience: Some(patience),
            ..SearchConfig::default()
        };
        // CTranslate2: max_candidates = round(beam_size * patience).
        let target = ((k as f32 * patience).round() as usize).max(1);
        let got = search(&model, &sources, &cfg).unwrap();
        for (src, hyps) in sources.iter().zip(&got) {
            let want = reference(&model, src, k, target, max_len, lp);
            let want_tokens: Vec<Vec<u32>> = want.iter().take(nbest).map(|w| w.1.clone()).collect();
            prop_assert_eq!(tokens(hyps), want_tokens);
            for (h, w) in hyps.iter().zip(&want) {
                prop_assert!((h.score - w.0).abs() <= 1e-5 * w.0.abs().max(1.0));
            }
        }
    }

    /// A patience no sentence can use up is the exact search.
    #[test]
    fn unbounded_patience_is_the_exact_search(
        vocab in 5usize..11,
        seed: u64,
        sharpness in 0.0f32..8.0,
        max_len in 1usize..10,
        lp in penalty(),
        k in 1usize..6,
        sources in prop::collection::vec(prop::collection::vec(4u32..9, 0..4), 1..4),
    ) {
        let model = model(vocab, seed, sharpness, 0.3);
        let exact = SearchConfig {
            strategy: Search::Beam { k },
            length_penalty: lp,
            max_len,
            special: SPECIAL,
            ..SearchConfig::default()
        };
        let patient = SearchConfig { patience: Some(1e6), ..exact.clone() };
        prop_assert_eq!(search(&model, &sources, &patient).unwrap(), search(&model, &sources, &exact).unwrap());
    }
}

#[test]
fn patience_is_refused_where_it_means_nothing() {
    let model = model(8, 1, 2.0, 0.2);
    for (strategy, patience) in [
        (Search::Beam { k: 2 }, 0.0),
        (Search::Beam { k: 2 }, f32::NAN),
        (Search::Exhaustive, 1.0),
    ] {
        let cfg = SearchConfig {
            strategy,
            max_len: 3,
            special: SPECIAL,
            patience: Some(patience),
            ..SearchConfig::default()
        };
        let err = search(&model, &[vec![4]], &cfg).unwrap_err();
        assert!(
            matches!(err, SearchError::InvalidConfig(ref m) if m.contains("patience")),
            "{strategy:?} {patience}: {err}"
        );
    }
}

/// The interrupt is polled once per step: firing after `n` polls stops the search there.
#[test]
fn an_interrupt_stops_the_search_between_steps() {
    let model = model(12, 7, 1.0, 0.0);
    let polls = Arc::new(AtomicUsize::new(0));
    let seen = polls.clone();
    let cfg = SearchConfig {
        strategy: Search::Beam { k: 3 },
        max_len: 50,
        special: SPECIAL,
        interrupt: Some(Interrupt::new(move || {
            seen.fetch_add(1, Ordering::Relaxed) >= 4
        })),
        ..SearchConfig::default()
    };
    let err = search(&model, &[vec![4, 5], vec![6]], &cfg).unwrap_err();
    assert_eq!(err, SearchError::Interrupted);
    assert_eq!(polls.load(Ordering::Relaxed), 5);
    assert_eq!(model.stats().steps, 4);

    let never = SearchConfig {
        interrupt: Some(Interrupt::new(|| false)),
        ..cfg.clone()
    };
    let plain = SearchConfig {
        interrupt: None,
        ..cfg
    };
    assert_eq!(
        search(&model, &[vec![4, 5]], &never).unwrap(),
        search(&model, &[vec![4, 5]], &plain).unwrap()
    );
}
