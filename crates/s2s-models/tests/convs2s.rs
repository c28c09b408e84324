//! ConvS2S: masking, causality, cached convolution windows against the parallel pass, weights
//! and search, for the `convs2s-tiny` preset and variants.

mod common;

use common::*;
use s2s_models::convs2s::ConvS2SConfig;
use s2s_models::{ModelConfig, PaddedSource, Seq2SeqModel};

fn tiny() -> ConvS2SConfig {
    match s2s_models::preset("convs2s-tiny").unwrap() {
        ModelConfig::ConvS2S(c) => c,
        _ => unreachable!(),
    }
}

/// The preset, a wider kernel with unequal stacks and a chosen alignment layer, and dropout
/// (inert at inference).
fn variants() -> Vec<ModelConfig> {
    let c = tiny();
    vec![
        ModelConfig::ConvS2S(c.clone()),
        ModelConfig::ConvS2S(ConvS2SConfig {
            kernel: 5,
            enc_layers: 2,
            dec_layers: 4,
            out_dim: 32,
            dropout: 0.2,
            alignment_layer: Some(2),
            max_positions: 8, // shorter than some inputs: the last row is reused
            ..c
        }),
    ]
}

#[test]
fn padding_does_not_change_encoder_outputs() {
    for cfg in variants() {
        let model = build(&cfg);
        let Seq2SeqModel::ConvS2S(m) = &model else {
            unreachable!()
        };
        let (srcs, _) = sample_batch();
        let batch = PaddedSource::new(&srcs, PAD, &device());
        let all = m.encode(batch.ids, batch.pad);
        let e = all.keys.dims()[2];
        for (r, s) in srcs.iter().enumerate() {
            let alone = PaddedSource::new(std::slice::from_ref(s), PAD, &device());
            let one = m.encode(alone.ids, alone.pad);
            for (name, a, b) in [
                ("keys", one.keys, all.keys.clone()),
                ("values", one.values, all.values.clone()),
            ] {
                let a: Vec<f32> = a.into_data().try_into_vec::<f32>().unwrap();
                let b: Vec<f32> = b
                    .slice([r..r + 1, 0..s.len(), 0..e])
                    .into_data()
                    .try_into_vec::<f32>()
                    .unwrap();
                let diff = max_diff(&a, &b);
                assert!(diff < 1e-5, "{cfg:?} row {r}: {name} moved by {diff}");
            }
        }
    }
}

#[test]
fn padding_does_not_change_log_probs() {
    for cfg in variants() {
        check_padding_invariance_of_log_probs(&build(&cfg));
    }
}

#[test]
fn future_target_tokens_do_not_change_earlier_log_probs() {
    for cfg in variants() {
        check_causality(&build(&cfg));
    }
}

#[test]
fn cached_decoding_matches_the_parallel_pass() {
    for cfg in variants() {
        check_cached_matches_uncached(&build(&cfg));
    }
}

/// On an autodiff device every tensor is tracked, so the step's attention kernel declines and
/// the tensor ops run, reading each sentence's memory through the row map: they must agree too.
#[test]
fn cached_decoding_on_the_tensor_op_path_matches_the_parallel_pass() {
    let cfg = ModelConfig::ConvS2S(ConvS2SConfig {
        dropout: 0.0,
        ..tiny()
    });
    check_cached_matches_uncached(&seeded(&cfg, VOCAB, 7, &device().autodiff()));
}

#[test]
fn weights_round_trip_and_every_search_runs() {
    for cfg in variants() {
        check_weights_and_search(&cfg, &build(&cfg));
    }
}
