//! Batches respect the token budget, cover every pair exactly once per epoch, and are
//! deterministic for a seed and epoch.

use proptest::prelude::*;
use s2s_data::{
    Batch, BatchConfig, PAD, batch_cost, epoch_batches, pair_cost, sequential_batches,
    sorted_batches,
};

fn covers_once(batches: &[Vec<usize>], n: usize) -> bool {
    let mut seen = vec![0u32; n];
    for &i in batches.iter().flatten() {
        if i >= n {
            return false;
        }
        seen[i] += 1;
    }
    seen.iter().all(|&c| c == 1)
}

fn within_limits(lengths: &[(usize, usize)], batches: &[Vec<usize>], cfg: &BatchConfig) -> bool {
    batches.iter().all(|b| {
        !b.is_empty()
            && (cfg.max_sentences == 0 || b.len() <= cfg.max_sentences)
            && (batch_cost(lengths, b) <= cfg.max_tokens
                // the only exception: a lone pair that exceeds the budget by itself
                || (b.len() == 1 && pair_cost(lengths[b[0]]) > cfg.max_tokens))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn epoch_batches_are_within_budget_and_cover_each_pair_once(
        lengths in prop::collection::vec((0usize..120, 0usize..120), 0..400),
        max_tokens in 1usize..2000,
        max_sentences in 0usize..50,
        seed in any::<u64>(),
        epoch in 0u64..5,
    ) {
        let cfg = BatchConfig { max_tokens, max_sentences };
        let batches = epoch_batches(&lengths, &cfg, seed, epoch);
        prop_assert!(covers_once(&batches, lengths.len()));
        prop_assert!(within_limits(&lengths, &batches, &cfg));
        prop_assert_eq!(&batches, &epoch_batches(&lengths, &cfg, seed, epoch));
        for f in [sorted_batches, sequential_batches] {
            let b = f(&lengths, &cfg);
            prop_assert!(covers_once(&b, lengths.len()));
            prop_assert!(within_limits(&lengths, &b, &cfg));
        }
        // Padded batches have the cost the budget counts.
        for b in batches.iter().take(3) {
            let pairs: Vec<(Vec<u32>, Vec<u32>)> = b
                .iter()
                .map(|&i| (vec![7; lengths[i].0], vec![9; lengths[i].1]))
                .collect();
            let batch = Batch::from_pairs(&pairs, s2s_data::Specials::S2S);
            prop_assert_eq!(batch.cost(), batch_cost(&lengths, b));
        }
    }
}

#[test]
fn budget_is_never_exceeded_when_every_pair_fits() {
    let lengths: Vec<(usize, usize)> = (0..5000)
        .map(|i| (1 + i * 7 % 60, 1 + i * 13 % 70))
        .collect();
    let cfg = BatchConfig {
        max_tokens: 1000,
        max_sentences: 100,
    };
    let batches = epoch_batches(&lengths, &cfg, 42, 3);
    assert!(covers_once(&batches, lengths.len()));
    for b in &batches {
        assert!(batch_cost(&lengths, b) <= 1000);
        assert!(b.len() <= 100);
    }
    // Length bucketing keeps padding low.
    let real: usize = lengths.iter().map(|&l| pair_cost(l)).sum();
    let padded: usize = batches.iter().map(|b| batch_cost(&lengths, b)).sum();
    assert!((padded as f64) < 1.1 * real as f64, "{padded} vs {real}");
}

#[test]
fn same_seed_same_batches_other_seed_or_epoch_different() {
    let lengths: Vec<(usize, usize)> = (0..2000).map(|i| (1 + i % 30, 1 + (i * 7) % 30)).collect();
    let cfg = BatchConfig {
        max_tokens: 400,
        max_sentences: 0,
    };
    let a = epoch_batches(&lengths, &cfg, 7, 0);
    assert_eq!(a, epoch_batches(&lengths, &cfg, 7, 0));
    assert_ne!(a, epoch_batches(&lengths, &cfg, 8, 0));
    assert_ne!(a, epoch_batches(&lengths, &cfg, 7, 1));
}

#[test]
fn resume_is_skipping_done_batches() {
    let lengths: Vec<(usize, usize)> = (0..300).map(|i| (1 + i % 17, 2 + i % 11)).collect();
    let cfg = BatchConfig {
        max_tokens: 200,
        max_sentences: 16,
    };
    let full = epoch_batches(&lengths, &cfg, 3, 2);
    let resumed: Vec<Vec<usize>> = epoch_batches(&lengths, &cfg, 3, 2)
        .into_iter()
        .skip(5)
        .collect();
    assert_eq!(&full[5..], &resumed[..]);
}

#[test]
fn sequential_batches_keep_order() {
    let lengths = vec![(3, 3); 10];
    let cfg = BatchConfig {
        max_tokens: 12,
        max_sentences: 0,
    };
    let b = sequential_batches(&lengths, &cfg);
    assert_eq!(
        b,
        vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8], vec![9]]
    );
    let batch = Batch::from_pairs(&[(vec![5u32], vec![6u32, 7])], s2s_data::Specials::S2S);
    assert_eq!(batch.src, vec![5, s2s_data::EOS]);
    assert_eq!(batch.tgt_out, vec![6, 7, s2s_data::EOS]);
    assert_eq!(batch.tgt_in, vec![s2s_data::BOS, 6, 7]);
    assert!(!batch.src.contains(&PAD));
}
