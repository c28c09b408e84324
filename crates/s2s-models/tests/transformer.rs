//! The Transformer: masking, causality, KV-cached decoding against the parallel pass, weights and
//! search, for the `transformer-tiny` preset and variants covering every option.

mod common;

use burn::tensor::{Int, Tensor, TensorData};
use common::*;
use s2s_models::transformer::{Activation, Positions, TransformerConfig};
use s2s_models::{ModelConfig, PaddedSource, Seq2SeqModel};
use s2s_search::step::StepModel;

/// The preset and variants exercising Marian's options (SiLU, concatenated sinusoids, unscaled
/// embeddings, a logits bias, a zero start), pre-norm, learned positions, shared and untied embeddings,
/// a chosen alignment layer, and dropout settings (inert at inference).
fn variants() -> Vec<ModelConfig> {
    let t = tiny_transformer();
    vec![
        ModelConfig::Transformer(t.clone()),
        ModelConfig::Transformer(TransformerConfig {
            pre_norm: true,
            positions: Positions::Learned,
            max_positions: 16,
            share_embeddings: true,
            dropout: 0.3,
            attention_dropout: 0.1,
            activation_dropout: 0.1,
            ..t.clone()
        }),
        // Marian's options.
        ModelConfig::Transformer(TransformerConfig {
            positions: Positions::SinusoidalConcat,
            activation: Activation::Swish,
            scale_embeddings: false,
            logits_bias: true,
            zero_start: true,
            share_embeddings: true,
            ..t.clone()
        }),
        ModelConfig::Transformer(TransformerConfig {
            tie_output: false,
            heads: 4,
            enc_layers: 1,
            dec_layers: 3,
            alignment_layer: Some(1),
            ..t
        }),
    ]
}

#[test]
fn padding_does_not_change_encoder_outputs() {
    for cfg in variants() {
        let model = build(&cfg);
        let Seq2SeqModel::Transformer(m) = &model else {
            unreachable!()
        };
        let (srcs, _) = sample_batch();
        let batch = PaddedSource::new(&srcs, PAD, &device());
        let all = m.encode(batch.ids, &batch.pad);
        let d = all.dims()[2];
        for (r, s) in srcs.iter().enumerate() {
            let alone = PaddedSource::new(std::slice::from_ref(s), PAD, &device());
            let one: Vec<f32> = m
                .encode(alone.ids, &alone.pad)
                .into_data()
                .try_into_vec::<f32>()
                .unwrap();
            let row: Vec<f32> = all
                .clone()
                .slice([r..r + 1, 0..s.len(), 0..d])
                .into_data()
                .try_into_vec::<f32>()
                .unwrap();
            let diff = max_diff(&one, &row);
            assert!(
                diff < 1e-5,
                "{cfg:?} row {r}: encoder output moved by {diff}"
            );
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
fn kv_cached_decoding_matches_the_parallel_pass() {
    for cfg in variants() {
        check_cached_matches_uncached(&build(&cfg));
    }
}

/// On an autodiff device every tensor is tracked, so the step kernels decline and the tensor ops
/// run, reading each sentence's encoder side through the row map: they must agree too.
#[test]
fn kv_cached_decoding_on_the_tensor_op_path_matches_the_parallel_pass() {
    let cfg = ModelConfig::Transformer(TransformerConfig {
        dropout: 0.0,
        attention_dropout: 0.0,
        activation_dropout: 0.0,
        ..tiny_transformer()
    });
    check_cached_matches_uncached(&seeded(&cfg, VOCAB, 7, &device().autodiff()));
}

#[test]
fn weights_round_trip_and_every_search_runs() {
    for cfg in variants() {
        check_weights_and_search(&cfg, &build(&cfg));
    }
}

#[test]
fn shared_embeddings_need_one_vocabulary() {
    let cfg = ModelConfig::Transformer(TransformerConfig {
        share_embeddings: true,
        ..tiny_transformer()
    });
    let err = Seq2SeqModel::try_new(&cfg, 10, 12, &device()).unwrap_err();
    assert!(
        err.contains("share_embeddings") && err.contains("--joint"),
        "{err}"
    );
    let Seq2SeqModel::Transformer(m) = Seq2SeqModel::try_new(&cfg, 12, 12, &device()).unwrap()
    else {
        unreachable!()
    };
    assert!(m.src_emb.is_none() && m.output.is_none());
}

#[test]
fn teacher_forced_attention_is_a_distribution_over_real_source_positions() {
    let model = build(&variants()[0]);
    let Seq2SeqModel::Transformer(m) = &model else {
        unreachable!()
    };
    let (srcs, tgts) = sample_batch();
    let src = PaddedSource::new(&srcs, PAD, &device());
    let len = tgts.iter().map(Vec::len).max().unwrap();
    let flat: Vec<i64> = s2s_models::pad_rows(&tgts, len, PAD)
        .into_iter()
        .map(i64::from)
        .collect();
    let tgt: Tensor<2, Int> =
        Tensor::from_data(TensorData::new(flat, [tgts.len(), len]), &device());
    let (_, attn) = m.teacher_hidden(&src, tgt);
    let [b, t, s] = attn.dims();
    let a: Vec<f32> = attn.into_data().try_into_vec::<f32>().unwrap();
    for (r, src) in srcs.iter().enumerate() {
        for i in 0..t {
            let row = &a[(r * t + i) * s..(r * t + i + 1) * s];
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(row[src.len()..].iter().all(|&w| w == 0.0));
        }
    }
    assert_eq!(b, srcs.len());
}

#[test]
fn preset_sizes() {
    // d 256, 4 heads, 3+3 layers, FFN 1024 with an 8000-type joint vocabulary, shared and tied
    // embeddings: the anchor recipe's 7.58M parameters.
    let ModelConfig::Transformer(small) = s2s_models::preset("transformer-small").unwrap() else {
        unreachable!()
    };
    let cfg = ModelConfig::Transformer(TransformerConfig {
        share_embeddings: true,
        ..small
    });
    let n = burn::module::Module::num_params(&Seq2SeqModel::new(&cfg, 8000, 8000, &device()));
    assert_eq!(n, 7_577_600);
}

/// With `zero_start` the first decoder input is a zero vector: whatever token stands at
/// position 0 (and whatever its embedding), every output is the same; without it, it matters.
#[test]
fn zero_start_ignores_the_first_decoder_token() {
    let src = PaddedSource::new(&[vec![4, 5, 6, EOS]], PAD, &device());
    let logits = |model: &Seq2SeqModel, first: i64| {
        let tgt: Tensor<2, Int> =
            Tensor::from_data(TensorData::new(vec![first, 7, 8], [1, 3]), &device());
        model
            .forward_teacher(&src, tgt, None)
            .into_data()
            .try_into_vec::<f32>()
            .unwrap()
    };
    for zero_start in [true, false] {
        let cfg = ModelConfig::Transformer(TransformerConfig {
            zero_start,
            ..tiny_transformer()
        });
        let model = build(&cfg);
        let same = logits(&model, BOS as i64) == logits(&model, 9);
        assert_eq!(same, zero_start, "zero_start = {zero_start}");
    }
}

/// A vector condition reads as one source position embedded as `v E`: a one-hot vector gives
/// exactly its token's logits, a mixture of two tokens neither's, and the incremental decoder
/// the search drives reads the vector as the teacher-forced pass reads the token. A Transformer whose source table is its
/// target's does not read vectors (the table has the target's rows).
#[test]
fn a_one_hot_vector_reads_as_its_token() {
    let tgt: Tensor<2, Int> = Tensor::from_data(
        TensorData::new(vec![BOS as i64, 7, 8, 9], [1, 4]),
        &device(),
    );
    let one_hot = |entries: &[(usize, f32)]| {
        let mut v = vec![0.0f32; VOCAB];
        for &(i, x) in entries {
            v[i] = x;
        }
        v
    };
    let mut read = 0;
    for cfg in variants() {
        let ModelConfig::Transformer(t) = &cfg else {
            unreachable!()
        };
        assert_eq!(cfg.reads_vectors(), !t.share_embeddings);
        if !cfg.reads_vectors() {
            continue;
        }
        read += 1;
        let model = build(&cfg);
        let logits = |src: &PaddedSource| {
            model
                .forward_teacher(src, tgt.clone(), None)
                .into_data()
                .try_into_vec::<f32>()
                .unwrap()
        };
        let vector = |v: Vec<f32>| PaddedSource::from_vectors(v, VOCAB, &device());
        let token = logits(&PaddedSource::new(&[vec![5]], PAD, &device()));
        let other = logits(&PaddedSource::new(&[vec![6]], PAD, &device()));
        assert!(max_diff(&token, &logits(&vector(one_hot(&[(5, 1.0)])))) < 1e-5);
        let mixed = logits(&vector(one_hot(&[(5, 0.5), (6, 0.5)])));
        assert!(max_diff(&token, &mixed) > 1e-4 && max_diff(&other, &mixed) > 1e-4);

        // The search's view (the incremental decoder over a `Vector` source) reads it alike:
        // its first step's log-probabilities are the token's first teacher-forced position's.
        let decoder = s2s_models::decoder::Decoder::<s2s_models::decoder::Vector>::new(
            &model,
            device(),
            SPECIAL,
            VOCAB,
        );
        let source = s2s_models::decoder::Vector(one_hot(&[(5, 1.0)]).into());
        let mut state = decoder.start(&[source]);
        let step = decoder.step(&mut state, &[BOS]);
        let first = &token[..VOCAB];
        let norm = first.iter().map(|x| x.exp()).sum::<f32>().ln();
        let want: Vec<f32> = first.iter().map(|x| x - norm).collect();
        assert!(max_diff(&step.log_probs, &want) < 1e-4);
        assert_eq!(
            step.attention.map(|a| a.len()),
            Some(1),
            "one source position"
        );
    }
    assert!(read >= 2, "the variants cover reading vectors");
}
