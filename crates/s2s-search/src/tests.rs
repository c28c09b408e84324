//! Unit tests that need the crate's internals: the stopping rule never changes a result, and the
//! scans' block maximum.

use proptest::prelude::*;

use crate::common::{Bound, SCAN_BLOCK, block_max, clean};
use crate::toy::{Fallback, TableModel};
use crate::{LengthPenalty, SearchConfig, SpecialTokens, Strategy as Search, beam, greedy};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

fn penalty() -> impl Strategy<Value = LengthPenalty> {
    prop_oneof![
        Just(LengthPenalty::None),
        (-0.5f32..2.0).prop_map(LengthPenalty::Alpha),
        (-0.5f32..2.0).prop_map(LengthPenalty::Gnmt),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Stopping early (the bound) gives exactly what running every beam to max_len gives.
    #[test]
    fn early_stopping_is_exact(
        vocab in 5usize..10,
        seed: u64,
        sharpness in 0.0f32..10.0,
        eos_growth in 0.0f32..1.5,
        max_len in 1usize..14,
        lp in penalty(),
        k in 1usize..6,
        n in 1usize..6,
        sources in prop::collection::vec(prop::collection::vec(4u32..9, 0..5), 1..4),
    ) {
        let model = TableModel::random(vocab, SPECIAL, seed).with_fallback(Fallback::Hashed {
            seed,
            sharpness,
            eos_growth,
        });
        let cfg = SearchConfig {
            strategy: Search::Beam { k },
            nbest: n.min(k),
            length_penalty: lp,
            max_len,
            special: SPECIAL,
            ..SearchConfig::default()
        };
        let early = beam::beam(&model, &sources, &cfg, k, true).unwrap();
        let full = beam::beam(&model, &sources, &cfg, k, false).unwrap();
        prop_assert_eq!(early, full);
        let cfg = SearchConfig { strategy: Search::Greedy, nbest: 1, ..cfg };
        let early = greedy::greedy(&model, &sources, &cfg, true).unwrap();
        let full = greedy::greedy(&model, &sources, &cfg, false).unwrap();
        prop_assert_eq!(early, full);
    }

    /// The tabulated bound equals the documented one and dominates every reachable score.
    #[test]
    fn bound_dominates(lp in penalty(), s in -50.0f32..0.0, n in 0usize..30, extra in 0usize..30,
                       drop in 0.0f32..20.0) {
        let max_len = n + extra;
        let b = Bound::new(lp, max_len).of(s, n);
        prop_assert_eq!(b.to_bits(), lp.bound(s, n, max_len + 1).to_bits());
        for len in n + 1..=max_len + 1 {
            prop_assert!(lp.score(s - drop, len) <= b);
            prop_assert!(lp.score(s, len) <= b);
        }
    }
}

#[test]
fn alpha_bound_uses_the_largest_penalty() {
    let lp = LengthPenalty::Alpha(1.0);
    // After 2 tokens with log-prob -6, a completion of length 10 could score -0.6 > -6/3 = -2.
    assert_eq!(lp.bound(-6.0, 2, 10), -0.6);
    assert_eq!(LengthPenalty::None.bound(-6.0, 2, 10), -6.0);
    // Negative alpha favours short outputs: the bound is at the shortest length.
    assert_eq!(
        LengthPenalty::Alpha(-1.0).bound(-6.0, 2, 10),
        -6.0 / (1.0 / 3.0)
    );
}

proptest! {
    /// `block_max` is the largest `clean(x)`, NaN counting as -inf, for full and partial blocks.
    #[test]
    fn block_max_is_the_largest_clean_value(
        xs in proptest::collection::vec(
            prop_oneof![
                -1e4f32..1e4,
                Just(f32::NAN),
                Just(f32::NEG_INFINITY),
                Just(f32::INFINITY),
            ],
            0..=SCAN_BLOCK,
        )
    ) {
        let want = xs.iter().map(|&x| clean(x)).fold(f32::NEG_INFINITY, f32::max);
        prop_assert_eq!(block_max(&xs).to_bits(), want.to_bits());
    }
}

mod scan {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use crate::beam::best_tokens;
    use crate::common::{Limits, Rules, cand_order, clean};
    use crate::{SearchConfig, SpecialTokens};

    fn log_prob() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(-1.0f32),
            Just(-0.5),
            Just(0.0),
            Just(f32::NAN),
            Just(f32::NEG_INFINITY),
            -30.0f32..0.0,
        ]
    }

    proptest! {
        /// The block-skip scan returns exactly the first `k` allowed non-eos tokens of the row
        /// sorted by `cand_order`: ties, NaN and bans included.
        #[test]
        fn best_tokens_are_the_first_k_sorted(
            row in vec(log_prob(), 4..80),
            logprob in prop_oneof![Just(0.0f32), Just(f32::NEG_INFINITY), -20.0f32..0.0],
            k in 1usize..7,
            prefix in vec(0u32..1000, 0..8),
            eos in 3u32..8,
            ban_unk: bool,
            no_repeat_ngram in 0usize..3,
            min_len in 0usize..4,
        ) {
            let vocab = row.len();
            let special = SpecialTokens { pad: 0, unk: 1, bos: 2, eos: eos % vocab as u32 };
            let cfg = SearchConfig { special, ban_unk, no_repeat_ngram, min_len, max_len: 10,
                                     ..SearchConfig::default() };
            let prefix: Vec<u32> = prefix.iter().map(|t| 4 + t % (vocab as u32 - 4).max(1)).collect();
            let allowed = Rules::new(&cfg, vocab).allowed(&prefix, &Limits::new(&cfg, 0));
            let mut top = Vec::new();
            best_tokens(&row, logprob, &allowed, special.eos, k, &mut top);
            let mut want: Vec<(f32, u32)> = allowed
                .iter(vocab)
                .filter(|&v| v != special.eos)
                .map(|v| (logprob + clean(row[v as usize]), v))
                .collect();
            want.sort_by(|&a, &b| cand_order(a, b));
            want.truncate(k);
            let bits = |x: &[(f32, u32)]| x.iter().map(|&(s, v)| (s.to_bits(), v)).collect::<Vec<_>>();
            prop_assert_eq!(bits(&top), bits(&want));
        }
    }
}
