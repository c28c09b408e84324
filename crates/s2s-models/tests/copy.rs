//! Copy models ([`s2s_models::copy`]): the Transformer and the attention RNNs with a copy gate
//! decode incrementally exactly as their teacher-forced pass scores, over an extended
//! vocabulary whose ids past the vocabulary are copied source pieces; the mixture is a
//! distribution that puts mass on exactly the ids its source holds; weights round-trip and
//! every search runs.

mod common;

use common::*;
use s2s_models::ModelConfig;

fn with_copy(name: &str) -> ModelConfig {
    let mut cfg = s2s_models::preset(name).unwrap();
    match &mut cfg {
        ModelConfig::Transformer(t) => t.copy = true,
        ModelConfig::Rnn(r) => r.copy = true,
        _ => unreachable!(),
    }
    cfg.validate().unwrap();
    cfg
}

const COPY_MODELS: [&str; 3] = ["transformer-tiny", "rnnsearch-tiny", "luong-tiny"];
const V: u32 = VOCAB as u32;

/// Four sources with copied pieces (ids `V`, `V + 1`, `V + 2`; one repeated) and targets that
/// feed them back, as a decoder does after copying.
fn extended_batch() -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let srcs = vec![
        vec![5, V, 7, V + 1, V, EOS],
        vec![9, 10, EOS],
        vec![V + 2, 6, EOS],
        vec![11, V + 1, 4, 8, EOS],
    ];
    let tgts = vec![
        [BOS, V, 5, V + 1]
            .into_iter()
            .chain(tokens(20, 1))
            .collect(),
        [BOS].into_iter().chain(tokens(23, 2)).collect(),
        [BOS, V + 2].into_iter().chain(tokens(22, 3)).collect(),
        [BOS, 8, V + 1, V + 1]
            .into_iter()
            .chain(tokens(20, 4))
            .collect(),
    ];
    (srcs, tgts)
}

#[test]
fn cached_decoding_matches_the_parallel_pass_over_the_extended_vocabulary() {
    for name in COPY_MODELS {
        let model = build(&with_copy(name));
        let (srcs, tgts) = extended_batch();
        check_cached_matches_uncached_on(&model, srcs, tgts);
    }
}

#[test]
fn the_mixture_puts_mass_on_the_ids_of_its_source() {
    for name in COPY_MODELS {
        let model = build(&with_copy(name));
        let (srcs, tgts) = extended_batch();
        let lp = teacher_log_probs(&model, &srcs, &tgts);
        for (r, rows) in lp.iter().enumerate() {
            for (t, row) in rows.iter().enumerate() {
                assert_eq!(
                    row.len(),
                    VOCAB + 3,
                    "{name}: as wide as the largest id needs"
                );
                let p: Vec<f64> = row.iter().map(|&l| f64::from(l).exp()).collect();
                let sum: f64 = p.iter().sum();
                assert!(
                    (sum - 1.0).abs() < 1e-4,
                    "{name} row {r} step {t}: sums to {sum}"
                );
                for k in 0..3 {
                    let held = srcs[r].contains(&(V + k));
                    let mass = p[VOCAB + k as usize];
                    assert_eq!(
                        mass > 1e-20,
                        held,
                        "{name} row {r} step {t}: slot {k} has {mass}"
                    );
                }
            }
        }
    }
}

#[test]
fn copy_models_round_trip_and_search() {
    for name in COPY_MODELS {
        let cfg = with_copy(name);
        let model = build(&cfg);
        check_weights_and_search(&cfg, &model);
        check_cached_matches_uncached(&model);
    }
}
