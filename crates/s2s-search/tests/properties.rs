//! Property tests on random toy models.

use proptest::prelude::*;
use s2s_search::toy::{Fallback, TableModel};
use s2s_search::{
    Hypothesis, LengthPenalty, SearchConfig, SpecialTokens, Strategy as Search, search,
};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

/// A random toy model and the settings shared by the searches compared.
#[derive(Clone, Debug)]
struct Case {
    vocab: usize,
    seed: u64,
    sharpness: f32,
    eos_growth: f32,
    max_len: usize,
    lp: LengthPenalty,
    sources: Vec<Vec<u32>>,
}

impl Case {
    fn model(&self) -> TableModel {
        TableModel::random(self.vocab, SPECIAL, self.seed).with_fallback(Fallback::Hashed {
            seed: self.seed,
            sharpness: self.sharpness,
            eos_growth: self.eos_growth,
        })
    }

    fn cfg(&self, strategy: Search, nbest: usize) -> SearchConfig {
        SearchConfig {
            strategy,
            nbest,
            length_penalty: self.lp,
            max_len: self.max_len,
            special: SPECIAL,
            ..SearchConfig::default()
        }
    }

    fn run(&self, cfg: &SearchConfig) -> Vec<Vec<Hypothesis>> {
        search(&self.model(), &self.sources, cfg).unwrap()
    }

    /// `|V|^T`.
    fn space(&self) -> usize {
        self.vocab.pow(self.max_len as u32)
    }
}

fn penalty() -> impl Strategy<Value = LengthPenalty> {
    prop_oneof![
        Just(LengthPenalty::None),
        (0.0f32..1.5).prop_map(LengthPenalty::Alpha),
        (0.0f32..1.5).prop_map(LengthPenalty::Gnmt),
    ]
}

fn case(max_vocab: usize, max_len: usize) -> impl Strategy<Value = Case> {
    (
        5..=max_vocab,
        any::<u64>(),
        0.0f32..8.0,
        0.0f32..2.0,
        1..=max_len,
        penalty(),
        prop::collection::vec(prop::collection::vec(4u32..9, 0..5), 1..4),
    )
        .prop_map(
            |(vocab, seed, sharpness, eos_growth, max_len, lp, sources)| Case {
                vocab,
                seed,
                sharpness,
                eos_growth,
                max_len,
                lp,
                sources,
            },
        )
}

/// Every sequence the rules allow (no pad, no bos, <eos> forced at max_len), scored
/// independently of search.
fn enumerate(c: &Case, source: &[u32]) -> Vec<(f32, Vec<u32>)> {
    let model = c.model();
    let mut out = Vec::new();
    let mut stack = vec![Vec::<u32>::new()];
    while let Some(prefix) = stack.pop() {
        let lp = model.sequence_logprob(source, &prefix);
        out.push((c.lp.score(lp, prefix.len() + 1), prefix.clone()));
        if prefix.len() < c.max_len {
            for v in [1u32].into_iter().chain(4..c.vocab as u32) {
                let mut p = prefix.clone();
                p.push(v);
                stack.push(p);
            }
        }
    }
    out
}

fn same(a: &Hypothesis, b: &Hypothesis) -> bool {
    a.tokens == b.tokens
        && a.score.to_bits() == b.score.to_bits()
        && a.logprob.to_bits() == b.logprob.to_bits()
        && a.token_logprobs == b.token_logprobs
}

fn has_repeat(tokens: &[u32], n: usize) -> bool {
    let grams: Vec<&[u32]> = tokens.windows(n).collect();
    (0..grams.len()).any(|i| grams[i + 1..].contains(&grams[i]))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn exhaustive_finds_the_best_score(c in case(7, 3)) {
        let out = c.run(&c.cfg(Search::Exhaustive, 3));
        for (src, hyps) in c.sources.iter().zip(&out) {
            let mut all = enumerate(&c, src);
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            prop_assert!(!hyps.is_empty());
            for (h, (score, tokens)) in hyps.iter().zip(&all) {
                prop_assert!(*score <= hyps[0].score);
                prop_assert_eq!(&h.tokens, tokens);
                prop_assert_eq!(h.score.to_bits(), score.to_bits());
            }
            prop_assert_eq!(hyps.len(), all.len().min(3));
        }
    }

    #[test]
    fn wide_beam_equals_exhaustive(c in case(6, 3), nbest in 1usize..5) {
        let ex = c.run(&c.cfg(Search::Exhaustive, nbest));
        let beam = c.run(&c.cfg(Search::Beam { k: c.space().max(nbest) }, nbest));
        for (e, b) in ex.iter().zip(&beam) {
            prop_assert_eq!(e.len(), b.len());
            for (x, y) in e.iter().zip(b) {
                prop_assert!(same(x, y), "{:?} != {:?}", x, y);
            }
        }
    }

    #[test]
    fn beam_1_equals_greedy(c in case(12, 12), min_len in 0usize..4, ban_unk: bool,
                            no_repeat in 0usize..3) {
        let mut g = c.cfg(Search::Greedy, 1);
        g.min_len = min_len;
        g.ban_unk = ban_unk;
        g.no_repeat_ngram = no_repeat;
        g.return_attention = true;
        let mut b = g.clone();
        b.strategy = Search::Beam { k: 1 };
        let model = c.model().with_attention(true);
        let greedy = search(&model, &c.sources, &g).unwrap();
        let beam = search(&model, &c.sources, &b).unwrap();
        prop_assert_eq!(&greedy, &beam);
        for hyps in &greedy {
            prop_assert_eq!(hyps.len(), 1);
        }
    }

    /// Vocabularies of several scan blocks (`SCAN_BLOCK` = 16 tokens), where greedy and beam
    /// search skip whole blocks once their best candidates are known.
    #[test]
    fn beam_1_equals_greedy_over_wide_vocabularies(c in case(70, 6), min_len in 0usize..3,
                                                   ban_unk: bool, no_repeat in 0usize..3) {
        let mut g = c.cfg(Search::Greedy, 1);
        g.min_len = min_len;
        g.ban_unk = ban_unk;
        g.no_repeat_ngram = no_repeat;
        let mut b = g.clone();
        b.strategy = Search::Beam { k: 1 };
        let model = c.model();
        let greedy = search(&model, &c.sources, &g).unwrap();
        prop_assert_eq!(&greedy, &search(&model, &c.sources, &b).unwrap());
    }

    #[test]
    fn first_of_nbest_equals_nbest_1(c in case(12, 10), k in 1usize..7, n in 1usize..7) {
        let n = n.min(k);
        let one = c.run(&c.cfg(Search::Beam { k }, 1));
        let many = c.run(&c.cfg(Search::Beam { k }, n));
        for (a, b) in one.iter().zip(&many) {
            prop_assert!(same(&a[0], &b[0]));
            prop_assert!(b.len() <= n);
            for w in b.windows(2) {
                prop_assert!(w[0].score >= w[1].score);
            }
        }
    }

    #[test]
    fn no_repeat_ngram_never_repeats(c in case(9, 15), n in 1usize..4, k in 1usize..5,
                                     seed: u64) {
        for strategy in [
            Search::Greedy,
            Search::Beam { k },
            Search::Sample { temperature: 1.0, top_k: 0, top_p: 1.0, seed },
        ] {
            let nbest = if matches!(strategy, Search::Greedy) { 1 } else { k };
            let mut cfg = c.cfg(strategy, nbest);
            cfg.no_repeat_ngram = n;
            for hyps in c.run(&cfg) {
                for h in hyps {
                    prop_assert!(!has_repeat(&h.tokens, n), "{:?} repeats a {}-gram", h.tokens, n);
                }
            }
        }
    }

    #[test]
    fn min_len_and_bans_respected(c in case(8, 10), min_len in 0usize..12, ban_unk: bool,
                                  k in 1usize..5, seed: u64) {
        let min_len = min_len.min(c.max_len);
        for strategy in [
            Search::Greedy,
            Search::Beam { k },
            Search::Sample { temperature: 1.5, top_k: 3, top_p: 0.9, seed },
        ] {
            let nbest = if matches!(strategy, Search::Greedy) { 1 } else { k };
            let mut cfg = c.cfg(strategy, nbest);
            cfg.min_len = min_len;
            cfg.ban_unk = ban_unk;
            for hyps in c.run(&cfg) {
                prop_assert!(!hyps.is_empty());
                for h in hyps {
                    prop_assert!(h.tokens.len() >= min_len && h.tokens.len() <= c.max_len);
                    prop_assert!(!h.tokens.contains(&SPECIAL.pad));
                    prop_assert!(!h.tokens.contains(&SPECIAL.bos));
                    prop_assert!(!h.tokens.contains(&SPECIAL.eos));
                    if ban_unk {
                        prop_assert!(!h.tokens.contains(&SPECIAL.unk));
                    }
                }
            }
        }
    }

    #[test]
    fn sampling_is_reproducible(c in case(12, 12), seed: u64, nbest in 1usize..6,
                                temperature in 0.3f32..2.0, top_k in 0usize..5,
                                top_p in 0.2f32..=1.0) {
        let cfg = c.cfg(Search::Sample { temperature, top_k, top_p, seed }, nbest);
        let a = c.run(&cfg);
        let b = c.run(&cfg);
        prop_assert_eq!(&a, &b);
        for (src, hyps) in c.sources.iter().zip(&a) {
            prop_assert_eq!(hyps.len(), nbest);
            for h in hyps {
                let lp = c.model().sequence_logprob(src, &h.tokens);
                prop_assert_eq!(lp.to_bits(), h.logprob.to_bits());
            }
        }
    }
}

#[test]
fn top_k_1_sampling_is_greedy_argmax() {
    let c = Case {
        vocab: 9,
        seed: 7,
        sharpness: 6.0,
        eos_growth: 0.5,
        max_len: 12,
        lp: LengthPenalty::None,
        sources: vec![vec![4, 5], vec![6]],
    };
    let greedy = c.run(&c.cfg(Search::Greedy, 1));
    let sampled = c.run(&c.cfg(
        Search::Sample {
            temperature: 1.0,
            top_k: 1,
            top_p: 1.0,
            seed: 3,
        },
        2,
    ));
    for (g, s) in greedy.iter().zip(&sampled) {
        assert!(same(&g[0], &s[0]) && same(&g[0], &s[1]));
    }
}

/// Any float, the awkward ones included.
fn wild_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(0.0f32),
        Just(-1.0f32),
        -2.0f32..2.0,
    ]
}

fn any_strategy() -> impl Strategy<Value = Search> {
    prop_oneof![
        Just(Search::Greedy),
        (0usize..6).prop_map(|k| Search::Beam { k }),
        Just(Search::Exhaustive),
        (wild_f32(), 0usize..8, wild_f32(), any::<u64>()).prop_map(
            |(temperature, top_k, top_p, seed)| Search::Sample {
                temperature,
                top_k,
                top_p,
                seed
            }
        ),
    ]
}

fn any_penalty() -> impl Strategy<Value = LengthPenalty> {
    prop_oneof![
        Just(LengthPenalty::None),
        wild_f32().prop_map(LengthPenalty::Alpha),
        wild_f32().prop_map(LengthPenalty::Gnmt),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the configuration (zero beams, nbest over the beam, NaN temperatures or
    /// penalties, special ids outside the vocabulary, empty sources, zero lengths), search
    /// returns hypotheses that obey the limits or a typed error; it never panics.
    #[test]
    fn any_configuration_gives_results_or_a_typed_error(
        c in case(9, 6),
        strategy in any_strategy(),
        nbest in 0usize..5,
        lp in any_penalty(),
        min_len in 0usize..8,
        no_repeat_ngram in 0usize..3,
        ban_unk: bool,
        special_shift in 0u32..3,
        ratio in prop::option::of((wild_f32(), 0usize..4)),
    ) {
        let special = SpecialTokens {
            eos: SPECIAL.eos + special_shift * c.vocab as u32 / 2,
            ..SPECIAL
        };
        let cfg = SearchConfig {
            strategy,
            nbest,
            length_penalty: lp,
            min_len,
            no_repeat_ngram,
            ban_unk,
            special,
            max_len_ratio: ratio.map(|(ratio, offset)| s2s_search::LenRatio { ratio, offset }),
            exhaustive_limit: 20_000,
            ..c.cfg(strategy, nbest)
        };
        match search(&c.model(), &c.sources, &cfg) {
            Ok(hyps) => {
                prop_assert_eq!(hyps.len(), c.sources.len());
                for (src, h) in c.sources.iter().zip(&hyps) {
                    prop_assert!(h.len() <= nbest.max(1));
                    for hyp in h {
                        prop_assert!(hyp.tokens.iter().all(|&t| (t as usize) < c.vocab));
                        prop_assert!(hyp.tokens.len() <= cfg.max_len_for(src.len()) + 1);
                    }
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
