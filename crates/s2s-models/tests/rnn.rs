//! Model-level checks of the recurrent family: padding invariance, gradients against finite
//! differences, the two teacher-forcing code paths, and incremental decoding against the
//! parallel pass.

use burn::module::Param;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use s2s_models::attention::Score;
use s2s_models::config::preset;
use s2s_models::rnn::RnnSeq2Seq;
use s2s_models::{Decoder, ModelConfig, PaddedSource, Seq2SeqModel};
use s2s_search::step::StepModel;

mod common;

const VOCAB: usize = 11;

fn model(name: &str, device: &Device) -> Seq2SeqModel {
    common::seeded(&preset(name).unwrap(), VOCAB, 7, device)
}

#[test]
fn one_seed_gives_one_set_of_weights() {
    let device = Device::flex();
    let weights = |m: &Seq2SeqModel| -> Vec<f32> {
        let Seq2SeqModel::Rnn(r) = m else {
            unreachable!()
        };
        let mut w = floats(r.output.weight.val());
        w.extend(floats(r.src_emb.weight.val()));
        w
    };
    // Both built before either is read, with a draw in between: neither may matter.
    let first = model("rnn-lstm-tiny", &device);
    let _ = Tensor::<2>::random([50, 50], burn::tensor::Distribution::Default, &device);
    let second = model("rnn-lstm-tiny", &device);
    let a = weights(&first);
    assert_eq!(a, weights(&second));
    let c = weights(&common::seeded(
        &preset("rnn-lstm-tiny").unwrap(),
        VOCAB,
        8,
        &device,
    ));
    assert_ne!(a, c);
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A sentence's decoder log-probs and attention must not change when it shares a batch with
/// longer sentences (its padding must be invisible).
#[test]
fn padding_does_not_change_a_sentence() {
    let device = Device::flex();
    for name in [
        "rnnsearch-tiny",
        "luong-tiny",
        "rnn-lstm-tiny",
        "rnn-gru-cho-tiny",
    ] {
        let m = model(name, &device);
        let dec: Decoder = Decoder::new(
            &m,
            device.clone(),
            s2s_search::SearchConfig::default().special,
            VOCAB,
        );
        let short = vec![5, 6, 7];
        let alone = [short.clone()];
        let batch = [
            vec![4, 5, 6, 7, 8, 9, 10, 4],
            short.clone(),
            vec![9, 9, 9, 9, 9],
        ];
        let mut s1 = dec.start(&alone);
        let mut s3 = dec.start(&batch);
        let mut tokens = vec![2u32]; // <bos>
        for step in 0..4 {
            let o1 = dec.step(&mut s1, &tokens);
            let o3 = dec.step(&mut s3, &[tokens[0]; 3]);
            let row = &o3.log_probs[VOCAB..2 * VOCAB];
            let d = max_abs_diff(&o1.log_probs, row);
            assert!(d < 1e-5, "{name} step {step}: log-probs differ by {d}");
            if let (Some(a1), Some(a3)) = (&o1.attention, &o3.attention) {
                let src_len3 = a3.len() / 3;
                let row = &a3[src_len3..src_len3 + a1.len()];
                assert!(max_abs_diff(a1, row) < 1e-5, "{name}: attention differs");
                let leaked: f32 = a3[src_len3 + a1.len()..2 * src_len3].iter().sum();
                assert!(leaked < 1e-6, "{name}: attention on padding {leaked}");
            }
            tokens = vec![(4 + step) as u32];
        }
    }
}

fn batch(device: &Device) -> (PaddedSource, Tensor<2, Int>, Tensor<2, Int>) {
    let src = PaddedSource::new(&[vec![4, 5, 6, 3], vec![7, 8, 3]], 0, device);
    let tgt_in: Tensor<2, Int> = Tensor::from_data(
        TensorData::new(vec![2i64, 6, 5, 4, 2, 8, 7, 0], [2, 4]),
        device,
    );
    let tgt_out: Tensor<2, Int> = Tensor::from_data(
        TensorData::new(vec![6i64, 5, 4, 3, 8, 7, 3, 0], [2, 4]),
        device,
    );
    (src, tgt_in, tgt_out)
}

/// Summed target log-likelihood, the quantity the gradient check differentiates.
fn loss(m: &Seq2SeqModel, device: &Device) -> Tensor<1> {
    let (src, tgt_in, tgt_out) = batch(device);
    let logits = m.forward_teacher(&src, tgt_in, None);
    let lp = burn::tensor::activation::log_softmax(logits.reshape([8, VOCAB]), 1);
    let mask = tgt_out.clone().not_equal_elem(0).float().reshape([8, 1]);
    (lp.gather(1, tgt_out.reshape([8, 1])) * mask).sum().neg()
}

/// Picks one weight matrix out of a recurrent model.
type WeightOf = fn(&mut RnnSeq2Seq) -> &mut Param<Tensor<2>>;

fn rnnsearch(m: &mut Seq2SeqModel) -> &mut RnnSeq2Seq {
    match m {
        Seq2SeqModel::Rnn(r) => r,
        _ => unreachable!("built from an RNN preset"),
    }
}

/// Backpropagation through the attention decoder agrees with central finite differences.
#[test]
fn attention_decoder_gradients_match_finite_differences() {
    let device = Device::flex().autodiff();
    let mut cfg = match preset("rnnsearch-tiny").unwrap() {
        ModelConfig::Rnn(c) => c,
        _ => unreachable!("an RNN preset"),
    };
    cfg.emb_dim = 6;
    cfg.hidden = 5;
    cfg.attn_dim = 4;
    cfg.readout_dim = 6;
    let mut m = common::seeded(&ModelConfig::Rnn(cfg), VOCAB, 3, &device);
    let grads = loss(&m, &device).backward();
    // The attention energy vector v and the decoder's recurrent weights.
    let params: Vec<(&str, WeightOf)> = vec![
        ("attention.v", |r| {
            &mut r.attention.as_mut().unwrap().v.as_mut().unwrap().weight
        }),
        ("attention.key_proj", |r| {
            &mut r
                .attention
                .as_mut()
                .unwrap()
                .key_proj
                .as_mut()
                .unwrap()
                .weight
        }),
        ("dec_cells[0].hh", |r| &mut r.dec_cells[0].hh.weight),
        // Input projections computed for all timesteps at once and read one timestep at a time:
        // their gradients come through the backward of many slices.
        ("encoder.forward[0].ih", |r| {
            &mut r.encoder.forward[0].ih.weight
        }),
        ("encoder.backward[0].ih", |r| {
            &mut r.encoder.backward[0].ih.weight
        }),
        ("dec_emb_proj", |r| &mut r.dec_emb_proj.weight),
    ];
    for (name, get) in params {
        let value = get(rnnsearch(&mut m)).val();
        let analytic: Vec<f32> = value
            .grad(&grads)
            .unwrap()
            .into_data()
            .try_into_vec()
            .unwrap();
        let base: Vec<f32> = value.clone().into_data().try_into_vec().unwrap();
        let shape = value.dims();
        for i in (0..base.len()).step_by((base.len() / 6).max(1)) {
            let eps = 1e-2f32;
            let mut eval = |delta: f32| -> f64 {
                let mut v = base.clone();
                v[i] += delta;
                let t = Tensor::<2>::from_data(TensorData::new(v, shape), &device);
                *get(rnnsearch(&mut m)) = Param::from_tensor(t);
                loss(&m, &device).into_scalar::<f32>() as f64
            };
            let numeric = ((eval(eps) - eval(-eps)) / (2.0 * eps as f64)) as f32;
            let a = analytic[i];
            let err = (a - numeric).abs() / (a.abs().max(numeric.abs()).max(1e-2));
            assert!(err < 2e-2, "{name}[{i}]: analytic {a} vs numeric {numeric}");
        }
        *get(rnnsearch(&mut m)) =
            Param::from_tensor(Tensor::from_data(TensorData::new(base, shape), &device));
    }
}

/// Ratio 1 runs all steps from precomputed gold embeddings; ratio < 1 embeds each step's chosen
/// token. Feeding gold through the step-wise path must reproduce the parallel path, and feeding
/// the model's own predictions must change the result.
#[test]
fn teacher_forcing_ratio_zero_and_one_take_different_paths() {
    let device = Device::flex();
    let m = model("rnnsearch-tiny", &device);
    let (src, tgt_in, _) = batch(&device);
    let parallel: Vec<f32> = m
        .forward_teacher(&src, tgt_in.clone(), None)
        .into_data()
        .try_into_vec()
        .unwrap();
    let mut calls = 0;
    let mut all_gold = |_t: usize| -> Tensor<1, Bool> {
        calls += 1;
        Tensor::from_data(TensorData::new(vec![true, true], [2]), &device)
    };
    let stepwise_gold: Vec<f32> = m
        .forward_teacher(&src, tgt_in.clone(), Some(&mut all_gold))
        .into_data()
        .try_into_vec()
        .unwrap();
    assert_eq!(
        calls, 3,
        "the step-wise path asks for every step after the first"
    );
    assert!(max_abs_diff(&parallel, &stepwise_gold) < 1e-5);
    let mut never_gold = |_t: usize| -> Tensor<1, Bool> {
        Tensor::from_data(TensorData::new(vec![false, false], [2]), &device)
    };
    let own: Vec<f32> = m
        .forward_teacher(&src, tgt_in, Some(&mut never_gold))
        .into_data()
        .try_into_vec()
        .unwrap();
    // Step 0 reads <bos> either way; later steps read the model's predictions, not the gold.
    assert!(max_abs_diff(&parallel[..VOCAB], &own[..VOCAB]) < 1e-6);
    assert!(
        max_abs_diff(&parallel, &own) > 1e-3,
        "ratio 0 must feed the model's own predictions"
    );
}

/// `reverse_source` reads each sentence from its last token to its first: with the same weights,
/// a sentence in a padded batch gets exactly the encoder states of its reversal read without the
/// option (so padding is skipped, not read first), and its outputs stay at their tokens'
/// positions (what attention sees).
#[test]
fn reverse_source_reads_each_sentence_backwards() {
    let device = Device::flex();
    for name in ["rnn-lstm-tiny", "luong-tiny"] {
        let ModelConfig::Rnn(plain_cfg) = preset(name).unwrap() else {
            unreachable!()
        };
        let plain = match Seq2SeqModel::new(&ModelConfig::Rnn(plain_cfg), VOCAB, VOCAB, &device) {
            Seq2SeqModel::Rnn(m) => m,
            _ => unreachable!(),
        };
        // The same weights, read backwards.
        let mut reversed = plain.clone();
        reversed.cfg.reverse_source = true;
        ModelConfig::Rnn(reversed.cfg.clone()).validate().unwrap();
        let encode = |m: &RnnSeq2Seq, rows: &[Vec<u32>]| {
            let src = PaddedSource::new(rows, 0, &device);
            m.encode(src.ids, src.pad)
        };
        let (ctx_want, want) = encode(&plain, &[vec![3, 7, 6, 5]]);
        let (_, forwards) = encode(&plain, &[vec![5, 6, 7, 3]]);
        let (ctx_got, got) = encode(&reversed, &[vec![4, 5, 6, 7, 8, 9, 3], vec![5, 6, 7, 3]]);
        let mut differs = 0.0f32;
        for (l, (w, g)) in want.layers.iter().zip(&got.layers).enumerate() {
            let row = floats(g.h.clone().narrow(0, 1, 1));
            let d = max_abs_diff(&floats(w.h.clone()), &row);
            assert!(d < 1e-5, "{name} layer {l}: final states differ by {d}");
            let c_row = floats(g.c.clone().unwrap().narrow(0, 1, 1));
            assert!(max_abs_diff(&floats(w.c.clone().unwrap()), &c_row) < 1e-5);
            differs = differs.max(max_abs_diff(&floats(forwards.layers[l].h.clone()), &row));
        }
        assert!(differs > 1e-4, "{name}: reversal changed nothing");
        if let (Some(w), Some(g)) = (ctx_want.memory, ctx_got.memory) {
            // Position j of the reversed read holds the state after token j, which the plain
            // read of the reversed sentence reaches at position 3 - j.
            for j in 0..4 {
                let at = |v: &Tensor<3>, b: usize, t: usize| {
                    let h = v.dims()[2];
                    floats(v.clone().slice([b..b + 1, t..t + 1, 0..h]).reshape([1, h]))
                };
                let d = max_abs_diff(&at(&w.values, 0, 3 - j), &at(&g.values, 1, j));
                assert!(d < 1e-5, "{name}: output {j} differs by {d}");
            }
        }
    }
    let bi = s2s_models::rnn::RnnConfig {
        reverse_source: true,
        ..match preset("rnnsearch").unwrap() {
            ModelConfig::Rnn(c) => c,
            _ => unreachable!(),
        }
    };
    assert!(bi.validate().unwrap_err().contains("unidirectional"));
}

/// Incremental decoding through the search adapter, with beam-style reorders that drop,
/// duplicate and permute rows, gives the teacher-forced log-probs: for every RNN family and
/// every attention score (the beams of a sentence share its attention memory through a row map).
#[test]
fn cached_decoding_matches_the_parallel_pass() {
    let mut configs: Vec<ModelConfig> = ["rnn-lstm-tiny", "rnn-gru-cho-tiny", "rnnsearch-tiny"]
        .into_iter()
        .map(|name| preset(name).unwrap())
        .collect();
    for score in [Score::Additive, Score::Dot, Score::General] {
        let Some(ModelConfig::Rnn(mut c)) = preset("luong-tiny") else {
            unreachable!("an RNN preset")
        };
        c.score = score;
        configs.push(ModelConfig::Rnn(c));
    }
    // Bahdanau attention without a readout: decoding keeps the context in the projected memory
    // (`Projected::Input`); with one (the preset) it keeps only its projections.
    let Some(ModelConfig::Rnn(mut c)) = preset("rnnsearch-tiny") else {
        unreachable!("an RNN preset")
    };
    c.readout_dim = 0;
    configs.push(ModelConfig::Rnn(c));
    for cfg in configs {
        common::check_cached_matches_uncached(&common::build(&cfg));
    }
}

/// A vector condition is embedded as `v E`: a one-hot vector reads exactly as its token would,
/// in every recurrent family, and a mixture of two rows as neither.
#[test]
fn a_one_hot_vector_reads_as_its_token() {
    let device = Device::flex();
    let tgt_in: Tensor<2, Int> =
        Tensor::from_data(TensorData::new(vec![2i64, 6, 5, 4], [1, 4]), &device);
    let one_hot = |ids: &[(usize, f32)]| {
        let mut v = vec![0.0f32; VOCAB];
        for &(i, x) in ids {
            v[i] = x;
        }
        PaddedSource::from_vectors(v, VOCAB, &device)
    };
    for name in [
        "rnn-lstm-tiny",
        "rnn-gru-cho-tiny",
        "rnnsearch-tiny",
        "luong-tiny",
    ] {
        let m = model(name, &device);
        let logits = |src: &PaddedSource| floats(m.forward_teacher(src, tgt_in.clone(), None));
        let token = logits(&PaddedSource::new(&[vec![5]], 0, &device));
        let vector = logits(&one_hot(&[(5, 1.0)]));
        assert!(
            max_abs_diff(&token, &vector) < 1e-5,
            "{name}: the one-hot vector of token 5 reads otherwise"
        );
        let mixed = logits(&one_hot(&[(5, 0.5), (7, 0.5)]));
        let other = logits(&PaddedSource::new(&[vec![7]], 0, &device));
        assert!(max_abs_diff(&token, &mixed) > 1e-4, "{name}");
        assert!(max_abs_diff(&other, &mixed) > 1e-4, "{name}");
    }
}
