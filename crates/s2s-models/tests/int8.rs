//! int8 inference: every int8 kernel (VNNI, AVX2 and the portable fallback, those this CPU has)
//! against a plain reference on odd shapes, and a quantised Transformer against its f32 original:
//! close log-probs, cached decoding, padding invariance, and the int8 weights file; and the int8
//! keys and values of `s2s quantize --kv-cache int8`.

mod common;

use burn::tensor::Tensor;
use common::*;
use s2s_models::engine::CacheFormat;
use s2s_models::engine::int8::{Int8Matrix, Int8Vectors, Kernel};
use s2s_models::layers::Linear;
use s2s_models::transformer::{Activation, Positions, TransformerConfig};
use s2s_models::{ModelConfig, Seq2SeqModel};

/// The definition, written independently of the kernels: each row of `x` and of `w` quantised
/// to `v * 127 / max|row|` rounded half to even, integer dot products, scaled back.
fn reference(x: &[f32], m: usize, w: &[f32], n: usize, k: usize, bias: &[f32]) -> Vec<f32> {
    let quantize = |row: &[f32]| -> (Vec<i64>, f32) {
        let peak = row.iter().fold(0.0f32, |a, v| a.max(v.abs()));
        if peak == 0.0 {
            return (vec![0; row.len()], 0.0);
        }
        let q = row
            .iter()
            .map(|v| (v * (127.0 / peak)).round_ties_even() as i64)
            .collect();
        (q, peak / 127.0)
    };
    let xs: Vec<_> = (0..m).map(|r| quantize(&x[r * k..(r + 1) * k])).collect();
    let ws: Vec<_> = (0..n).map(|r| quantize(&w[r * k..(r + 1) * k])).collect();
    let mut out = vec![0.0; m * n];
    for (i, (xq, xs)) in xs.iter().enumerate() {
        for (j, (wq, ws)) in ws.iter().enumerate() {
            let dot: i64 = xq.iter().zip(wq).map(|(a, b)| a * b).sum();
            out[i * n + j] = dot as f32 * (xs * ws) + bias[j];
        }
    }
    out
}

/// Shapes around the kernels' block sizes (16 outputs per panel, 4 inputs per group, tiles of 4
/// rows x 1 panel, 6 rows x 2 panels and AMX's 16 or 32 rows x 1 or 2 panels x 64 inputs), including
/// 1s and sizes one off.
const SHAPES: [(usize, usize, usize); 19] = [
    (6, 32, 8),
    (12, 47, 20),
    (11, 65, 33),
    (1, 1, 1),
    (1, 16, 4),
    (1, 17, 5),
    (2, 15, 3),
    (3, 33, 7),
    (4, 16, 64),
    (5, 31, 63),
    (7, 48, 129),
    (9, 1, 256),
    (13, 100, 37),
    (64, 70, 255),
    (33, 257, 130),
    // AMX tiles (from 8 rows): whole and partial tiles of rows, panels and inner blocks.
    (8, 16, 64),
    (16, 32, 256),
    (17, 33, 1000),
    (160, 48, 64),
];

#[test]
fn every_kernel_matches_the_plain_reference_on_odd_shapes() {
    let kernels = Kernel::available();
    assert!(
        kernels.contains(&Kernel::Portable),
        "the fallback always runs"
    );
    for (s, &(m, n, k)) in SHAPES.iter().enumerate() {
        let x: Vec<f32> = hashed_values(m * k, s as u64)
            .iter()
            .map(|v| v * 3.0)
            .collect();
        let w = hashed_values(n * k, 100 + s as u64);
        let bias = hashed_values(n, 200 + s as u64);
        let expected = reference(&x, m, &w, n, k, &bias);
        let q = Int8Matrix::quantize(&w, n, k);
        let mut first: Option<Vec<f32>> = None;
        for &kernel in &kernels {
            let mut out = vec![f32::NAN; m * n];
            q.matmul_with(kernel, &x, m, Some(&bias), &mut out);
            assert_close(
                &out,
                &expected,
                &format!("{kernel:?} [{m}x{k}] x [{n}x{k}]^T"),
            );
            // Integer sums are exact: the kernels agree to the bit.
            match &first {
                None => first = Some(out),
                Some(f) => assert_eq!(f, &out, "{kernel:?} differs from {:?}", kernels[0]),
            }
        }
    }
}

#[test]
fn the_int8_product_approximates_the_f32_product() {
    let (m, n, k) = (6, 40, 200);
    let x = hashed_values(m * k, 1);
    let w = hashed_values(n * k, 2);
    let q = Int8Matrix::quantize(&w, n, k);
    let mut out = vec![0.0; m * n];
    q.matmul(&x, m, None, &mut out);
    for i in 0..m {
        for j in 0..n {
            let exact: f32 = (0..k).map(|t| x[i * k + t] * w[j * k + t]).sum();
            // Each operand is off by at most half a step (max/254) per element.
            let bound: f32 = (0..k)
                .map(|t| x[i * k + t].abs() / 254.0 + w[j * k + t].abs() / 254.0)
                .sum::<f32>()
                + 1e-4;
            let got = out[i * n + j];
            assert!(
                (got - exact).abs() <= bound,
                "[{i},{j}]: {got} vs {exact} (bound {bound})"
            );
        }
    }
}

#[test]
fn zero_rows_and_empty_products() {
    let w = vec![0.0f32; 3 * 5];
    let q = Int8Matrix::quantize(&w, 3, 5);
    assert_eq!(q.scales(), &[0.0; 3]);
    let x = hashed_values(2 * 5, 3);
    let mut out = vec![f32::NAN; 6];
    q.matmul(&x, 2, Some(&[1.0, 2.0, 3.0]), &mut out);
    assert_eq!(out, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    let mut out = vec![f32::NAN; 6];
    q.matmul(&[0.0; 10], 2, None, &mut out);
    assert_eq!(out, [0.0; 6]);
    let mut none: Vec<f32> = Vec::new();
    q.matmul(&[], 0, None, &mut none);
}

#[test]
fn a_product_split_over_threads_equals_one_thread() {
    // Large enough to be split over a pool's threads.
    let (m, n, k) = (40, 300, 256);
    let x = hashed_values(m * k, 4);
    let q = Int8Matrix::quantize(&hashed_values(n * k, 5), n, k);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut out = vec![0.0; m * n];
        pool.install(|| q.matmul(&x, m, None, &mut out));
        out
    };
    assert_eq!(run(1), run(3));
}

/// The feed-forward network with its hidden layer quantised block by block gives the bits of
/// the two products one after the other, for row counts below, at and around the block size (and
/// below AMX's minimum), over one and several threads.
#[test]
fn the_blocked_feed_forward_equals_two_products() {
    use s2s_models::engine::int8::HIDDEN_BLOCK;
    let (k, hidden, n) = (37, 70, 19);
    let w1 = Int8Matrix::quantize(&hashed_values(hidden * k, 6), hidden, k);
    let w2 = Int8Matrix::quantize(&hashed_values(n * hidden, 7), n, hidden);
    let (b1, b2) = (hashed_values(hidden, 8), hashed_values(n, 9));
    let act = |v: &mut [f32]| v.iter_mut().for_each(|x| *x = x.max(0.0) + 0.1 * x.tanh());
    for m in [
        0,
        1,
        5,
        HIDDEN_BLOCK - 1,
        HIDDEN_BLOCK,
        HIDDEN_BLOCK + 1,
        3 * HIDDEN_BLOCK + 17,
    ] {
        let x: Vec<f32> = hashed_values(m * k, m as u64)
            .iter()
            .map(|v| 2.0 * v)
            .collect();
        let mut h = vec![0.0; m * hidden];
        w1.matmul(&x, m, Some(&b1), &mut h);
        act(&mut h);
        let mut want = vec![0.0; m * n];
        w2.matmul(&h, m, Some(&b2), &mut want);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut got = vec![f32::NAN; m * n];
            let mut blocks = 0;
            pool.install(|| {
                w1.matmul_act_matmul(
                    &x,
                    m,
                    Some(&b1),
                    |block, rows| {
                        assert!(rows <= HIDDEN_BLOCK && block.len() == rows * hidden);
                        blocks += 1;
                        act(block)
                    },
                    &w2,
                    Some(&b2),
                    &mut got,
                )
            });
            assert_eq!(got, want, "{m} rows, {threads} threads");
            assert_eq!(blocks, m.div_ceil(HIDDEN_BLOCK), "{m} rows");
        }
    }
}

/// The largest products there are: activations that quantise to +-127 and weights of +-127 and
/// -128 (a weights file may hold -128), in a pattern of `t / 2` (column `t`) for both, so that
/// the two products of every pair have the same sign and add up to +-32258 or 32512: where
/// 16-bit pair sums (AVX2's `vpmaddubsw`) would saturate if a kernel offset the activations.
#[test]
fn the_largest_products_do_not_saturate() {
    let (m, n, k) = (20, 35, 64);
    let x: Vec<f32> = (0..m * k)
        .map(|i| if (i % k / 2) % 3 == 0 { -2.5 } else { 2.5 })
        .collect();
    let q: Vec<i8> = (0..n * k)
        .map(|i| match (i % k / 2) % 3 {
            0 => -128,
            1 => 127,
            _ => -127,
        })
        .collect();
    let w = Int8Matrix::from_quantized(&q, vec![0.5; n], n, k);
    let mut expected = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let dot: i64 = (0..k)
                .map(|t| (x[i * k + t] / 2.5 * 127.0) as i64 * q[j * k + t] as i64)
                .sum();
            expected[i * n + j] = dot as f32 * (2.5 / 127.0 * 0.5);
        }
    }
    for kernel in Kernel::available() {
        let mut out = vec![f32::NAN; m * n];
        w.matmul_with(kernel, &x, m, None, &mut out);
        assert_eq!(out, expected, "{kernel:?}");
    }
}

#[test]
fn int8_values_round_trip() {
    let (n, k) = (19, 23);
    let w = hashed_values(n * k, 6);
    let q = Int8Matrix::quantize(&w, n, k);
    let again = Int8Matrix::from_quantized(&q.values(), q.scales().to_vec(), n, k);
    assert!(
        again == q,
        "values and scales rebuild the same packed matrix"
    );
    for (r, (a, b)) in q.dequantize().chunks(k).zip(w.chunks(k)).enumerate() {
        let half_step = q.scales()[r] / 2.0 + 1e-7;
        assert!(max_diff(a, b) <= half_step, "row {r}");
    }
}

/// The preset (tied output), an untied output layer with separate embeddings, and Marian's
/// options (shared embeddings, logits bias, zero start).
fn variants() -> Vec<ModelConfig> {
    let t = tiny_transformer();
    vec![
        ModelConfig::Transformer(t.clone()),
        ModelConfig::Transformer(TransformerConfig {
            tie_output: false,
            share_embeddings: false,
            ..t.clone()
        }),
        ModelConfig::Transformer(TransformerConfig {
            positions: Positions::SinusoidalConcat,
            activation: Activation::Swish,
            logits_bias: true,
            zero_start: true,
            share_embeddings: true,
            ..t
        }),
    ]
}

fn quantized(model: &Seq2SeqModel) -> Seq2SeqModel {
    let mut q = model.clone();
    let Seq2SeqModel::Transformer(m) = &mut q else {
        unreachable!()
    };
    m.quantize();
    assert!(q.is_int8());
    q
}

/// Stated tolerance: a quantised model's log-probs stay within 0.1 of its f32 model's.
const LOG_PROB_TOLERANCE: f32 = 0.1;

#[test]
fn a_quantised_transformer_stays_close_to_its_f32_model() {
    let (srcs, tgts) = sample_batch();
    for cfg in variants() {
        let model = build(&cfg);
        let q = quantized(&model);
        let (a, b) = (
            teacher_log_probs(&model, &srcs, &tgts),
            teacher_log_probs(&q, &srcs, &tgts),
        );
        let mut worst = 0.0f32;
        let mut changed = false;
        for (ra, rb) in a.iter().zip(&b) {
            for (pa, pb) in ra.iter().zip(rb) {
                let d = max_diff(pa, pb);
                worst = worst.max(d);
                changed |= d > 0.0;
            }
        }
        eprintln!("int8 vs f32 log-probs: max diff {worst}");
        assert!(
            worst <= LOG_PROB_TOLERANCE,
            "{cfg:?}: int8 differs by {worst}"
        );
        assert!(changed, "the int8 model computed nothing in int8");
    }
}

/// The engine's int8 feed-forward op against the two int8 products and the activation as
/// tensor ops, for each activation (Marian's swish included) and a batch larger than a block.
#[test]
fn the_int8_feed_forward_op_equals_its_tensor_ops() {
    use burn::tensor::activation::{gelu, relu, silu};
    use s2s_models::engine;
    let device = s2s_models::backend::default_device();
    let (k, hidden, n) = (24, 96, 24);
    let w1 = Int8Matrix::quantize(&hashed_values(hidden * k, 10), hidden, k);
    let w2 = Int8Matrix::quantize(&hashed_values(n * hidden, 11), n, hidden);
    let bias = |len: usize, seed| {
        Tensor::<1>::from_data(
            burn::tensor::TensorData::new(hashed_values(len, seed), [len]),
            &device,
        )
    };
    let (b1, b2) = (bias(hidden, 12), bias(n, 13));
    let x = Tensor::<3>::from_data(
        burn::tensor::TensorData::new(hashed_values(3 * 50 * k, 14), [3, 50, k]),
        &device,
    );
    let acts: [fn(Tensor<2>) -> Tensor<2>; 3] = [relu, silu, gelu];
    for act in acts {
        let want = engine::int8_linear(
            act(engine::int8_linear(x.clone(), &w1, Some(&b1)).reshape([150, hidden])),
            &w2,
            Some(&b2),
        )
        .reshape([3, 50, n]);
        let got = engine::int8_feed_forward(x.clone(), (&w1, Some(&b1)), act, (&w2, Some(&b2)));
        assert_eq!(got.dims(), [3, 50, n]);
        assert_eq!(
            got.into_data().try_into_vec::<f32>().unwrap(),
            want.into_data().try_into_vec::<f32>().unwrap()
        );
    }
}

#[test]
fn a_quantised_transformer_decodes_incrementally_and_ignores_padding() {
    for cfg in variants() {
        let q = quantized(&build(&cfg));
        check_cached_matches_uncached(&q);
        check_padding_invariance_of_log_probs(&q);
    }
}

#[test]
fn int8_weights_round_trip_without_drawing_the_f32_weights() {
    let dir = tempfile::tempdir().unwrap();
    let (srcs, tgts) = sample_batch();
    for (i, cfg) in variants().into_iter().enumerate() {
        let mut q = quantized(&build(&cfg));
        let path = dir.path().join(format!("{i}.int8.safetensors"));
        s2s_models::io::save_int8_weights(&mut q, &path).unwrap();
        let fresh = Seq2SeqModel::for_loading(&cfg, VOCAB, VOCAB, &device()).unwrap();
        let mut loaded = s2s_models::io::load_int8_weights(fresh, &path).unwrap();
        assert_eq!(
            teacher_log_probs(&loaded, &srcs, &tgts),
            teacher_log_probs(&q, &srcs, &tgts),
            "{cfg:?}"
        );
        let Seq2SeqModel::Transformer(m) = &mut loaded else {
            unreachable!()
        };
        let layers = m.quantizable_mut();
        assert!(layers.len() > 10);
        for (name, layer) in layers {
            let drawn = match layer {
                s2s_models::transformer::Quantizable::Linear(Linear { weight, .. }) => {
                    weight.is_initialized()
                }
                s2s_models::transformer::Quantizable::Embedding(e) => e.weight.is_initialized(),
            };
            assert!(!drawn, "{name}: the f32 weight of an int8 layer was drawn");
        }
    }
    // An f32 weights file is not an int8 one, and says so.
    let cfg = &variants()[0];
    let f32_path = dir.path().join("f32.safetensors");
    s2s_models::io::save_weights(&build(cfg), &f32_path).unwrap();
    let fresh = Seq2SeqModel::for_loading(cfg, VOCAB, VOCAB, &device()).unwrap();
    let err = s2s_models::io::load_int8_weights(fresh, &f32_path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("s2s quantize"), "{err}");
}

/// An int8 key/value vector is quantised exactly as a weight row is: the same values and scale
/// (the AVX2 loop where the CPU has it, against `Int8Matrix`'s plain one), for widths with and
/// without a remainder of 8, a zero vector and large magnitudes.
#[test]
fn int8_vectors_quantise_as_matrix_rows() {
    for d in [1usize, 8, 13, 64] {
        let dims = [3, 2, 4, d];
        let vectors = 3 * 2 * 4;
        let mut values: Vec<f32> = common::hashed_values(vectors * d, d as u64)
            .into_iter()
            .enumerate()
            .map(|(i, v)| v * (1.0 + (i % 7) as f32 * 1e3))
            .collect();
        values[d..2 * d].fill(0.0);
        let q = Int8Vectors::quantize(&values, dims);
        assert_eq!(q.dims(), dims);
        let rows = Int8Matrix::quantize(&values, vectors, d);
        assert_eq!(q.dequantize(), rows.dequantize(), "d {d}");
        let (zero, scale) = q.at(0, 0, 1);
        assert!(zero.iter().all(|&v| v == 0) && scale == 0.0);
        let (v, scale) = q.at(2, 1, 3);
        assert_eq!(scale, rows.scales()[(2 * 2 + 1) * 4 + 3]);
        assert_eq!(v.len(), d);
        assert_eq!(q.size_bytes(), vectors * d + 4 * vectors);
    }
}

fn with_kv_cache(model: &Seq2SeqModel, format: CacheFormat) -> Seq2SeqModel {
    let mut q = model.clone();
    let Seq2SeqModel::Transformer(m) = &mut q else {
        unreachable!()
    };
    m.decoder.kv_cache = format;
    q
}

/// Stated tolerance: int8 keys and values move a quantised model's log-probs by at most this
/// (on top of its int8 weights).
const KV_CACHE_TOLERANCE: f32 = 0.1;

#[test]
fn an_int8_kv_cache_stays_close_and_ignores_padding() {
    let (srcs, tgts) = sample_batch();
    for cfg in variants() {
        let f32_cache = quantized(&build(&cfg));
        let int8_cache = with_kv_cache(&f32_cache, CacheFormat::Int8);
        // Teacher forcing reads the encoder side in int8 too.
        let (a, b) = (
            teacher_log_probs(&f32_cache, &srcs, &tgts),
            teacher_log_probs(&int8_cache, &srcs, &tgts),
        );
        let worst = a
            .iter()
            .flatten()
            .zip(b.iter().flatten())
            .map(|(x, y)| max_diff(x, y))
            .fold(0.0f32, f32::max);
        eprintln!("int8 vs f32 kv cache, teacher-forced: max diff {worst}");
        assert!(worst > 0.0, "{cfg:?}: the encoder side stayed f32");
        assert!(worst <= KV_CACHE_TOLERANCE, "{cfg:?}: {worst}");
        // Cached decoding with reorders reads the prefix in int8.
        check_cached_close_to_uncached(&int8_cache, KV_CACHE_TOLERANCE);
        check_padding_invariance_of_log_probs(&int8_cache);
    }
}

/// Each vector is quantised on its own, so a sentence decodes to the same bits alone as in any
/// batch.
#[test]
fn an_int8_kv_cache_keeps_searches_batch_invariant() {
    let model = with_kv_cache(&quantized(&build(&variants()[2])), CacheFormat::Int8);
    let sources: Vec<Vec<u32>> = (0..6u64)
        .map(|i| tokens(2 + (i as usize * 5) % 9, 70 + i))
        .collect();
    let search = s2s_search::SearchConfig {
        strategy: s2s_search::Strategy::Beam { k: 3 },
        nbest: 2,
        max_len: 12,
        special: SPECIAL,
        ..Default::default()
    };
    let decoder: s2s_models::decoder::Decoder =
        s2s_models::decoder::Decoder::new(&model, device(), SPECIAL, VOCAB);
    let together = s2s_search::search(&decoder, &sources, &search).unwrap();
    for (i, src) in sources.iter().enumerate() {
        let alone = s2s_search::search(&decoder, std::slice::from_ref(src), &search).unwrap();
        for (x, y) in alone[0].iter().zip(&together[i]) {
            assert_eq!(x.tokens, y.tokens, "sentence {i}");
            assert_eq!(x.score.to_bits(), y.score.to_bits(), "sentence {i}");
        }
    }
}

/// The int8 weights file records the kv cache format; a file without the record (written before
/// it existed) decodes with f32, as it did.
#[test]
fn the_kv_cache_format_round_trips_through_the_int8_file() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = &variants()[0];
    let q = quantized(&build(cfg));
    let kv_cache = |m: &Seq2SeqModel| match m {
        Seq2SeqModel::Transformer(t) => t.decoder.kv_cache,
        _ => unreachable!(),
    };
    for format in [CacheFormat::Int8, CacheFormat::F32] {
        let mut model = with_kv_cache(&q, format);
        let path = dir.path().join(format!("{}.safetensors", format.name()));
        s2s_models::io::save_int8_weights(&mut model, &path).unwrap();
        let fresh = Seq2SeqModel::for_loading(cfg, VOCAB, VOCAB, &device()).unwrap();
        let loaded = s2s_models::io::load_int8_weights(fresh, &path).unwrap();
        assert_eq!(kv_cache(&loaded), format);
    }
    // The same file without its metadata.
    let bytes = std::fs::read(dir.path().join("int8.safetensors")).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let bare = safetensors::serialize(file.tensors(), None).unwrap();
    let path = dir.path().join("bare.safetensors");
    std::fs::write(&path, bare).unwrap();
    let fresh = Seq2SeqModel::for_loading(cfg, VOCAB, VOCAB, &device()).unwrap();
    let loaded = s2s_models::io::load_int8_weights(fresh, &path).unwrap();
    assert_eq!(kv_cache(&loaded), CacheFormat::F32);
    // A format it does not know is refused with the fix.
    let mut meta = std::collections::HashMap::new();
    meta.insert("kv_cache".to_string(), "int4".to_string());
    let odd = safetensors::serialize(file.tensors(), Some(meta)).unwrap();
    std::fs::write(&path, odd).unwrap();
    let fresh = Seq2SeqModel::for_loading(cfg, VOCAB, VOCAB, &device()).unwrap();
    let err = s2s_models::io::load_int8_weights(fresh, &path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("int4") && err.contains("s2s quantize"),
        "{err}"
    );
}
