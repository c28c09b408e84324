//! Checks every sequence model must pass, written once against [`Seq2SeqModel`] and the search
//! adapter so that the Transformer and ConvS2S tests (and their config variants) share them.
#![allow(dead_code)]

use burn::module::Param;
use burn::tensor::{Device, Int, Tensor, TensorData};
use s2s_models::decoder::Decoder;
use s2s_models::rnn::RnnAttention;
use s2s_models::{ModelConfig, PaddedSource, Seq2SeqModel};
use s2s_search::step::StepModel;

pub const VOCAB: usize = 23;
pub const PAD: u32 = s2s_data::PAD;
pub const BOS: u32 = s2s_data::BOS;
pub const EOS: u32 = s2s_data::EOS;
pub const SPECIAL: s2s_search::SpecialTokens = s2s_search::SpecialTokens {
    pad: PAD,
    unk: s2s_data::UNK,
    bos: BOS,
    eos: EOS,
};

/// Deterministic values in [-1, 1) without an RNG: a multiplicative hash of the index.
pub fn hashed_values(len: usize, seed: u64) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let h = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0xBF58_476D);
            ((h >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Element-wise agreement within 1e-5, relative to `b` (plus 1e-5 absolute): for results of one
/// function computed in another summation order.
pub fn assert_close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

pub fn device() -> Device {
    Device::flex()
}

/// burn's RNG is process-wide: a test that seeds it and then builds a model holds this, or a
/// test running beside it may draw in between and change the weights it gets.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Draws every parameter now: burn initialises a parameter lazily, on its first use, which
/// would otherwise happen after the lock is released.
fn materialize(m: &Seq2SeqModel) {
    struct Touch;
    impl burn::module::ModuleVisitor for Touch {
        fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
            let _ = p.val();
        }
    }
    burn::module::Module::visit(m, &mut Touch);
}

/// A model whose weights depend only on `seed`.
pub fn seeded(cfg: &ModelConfig, vocab: usize, seed: u64, device: &Device) -> Seq2SeqModel {
    let _rng = RNG.lock().unwrap_or_else(|e| e.into_inner());
    device.seed(seed);
    let m = Seq2SeqModel::new(cfg, vocab, vocab, device);
    materialize(&m);
    m
}

/// The `transformer-tiny` preset.
pub fn tiny_transformer() -> s2s_models::transformer::TransformerConfig {
    match s2s_models::preset("transformer-tiny").unwrap() {
        ModelConfig::Transformer(c) => c,
        _ => unreachable!(),
    }
}

/// A randomly initialised model (inference device: dropout is off).
pub fn build(cfg: &ModelConfig) -> Seq2SeqModel {
    cfg.validate().unwrap();
    seeded(cfg, VOCAB, 7, &device())
}

/// Pseudo-random ordinary tokens (not special ids).
pub fn tokens(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            4 + (s % (VOCAB as u64 - 4)) as u32
        })
        .collect()
}

/// The device `model`'s weights live on.
pub fn device_of(model: &Seq2SeqModel) -> Device {
    burn::module::Module::devices(model)
        .into_iter()
        .next()
        .expect("a model has weights")
}

fn int2(rows: &[Vec<u32>], pad: u32, device: &Device) -> Tensor<2, Int> {
    let len = rows.iter().map(Vec::len).max().unwrap();
    let flat: Vec<i64> = s2s_models::pad_rows(rows, len, pad)
        .into_iter()
        .map(|t| t as i64)
        .collect();
    Tensor::from_data(TensorData::new(flat, [rows.len(), len]), device)
}

/// Teacher-forced log-probs: `out[row][t]` is the distribution after reading `tgt_in[row][..=t]`
/// (only the row's real positions).
pub fn teacher_log_probs(
    model: &Seq2SeqModel,
    srcs: &[Vec<u32>],
    tgt_in: &[Vec<u32>],
) -> Vec<Vec<Vec<f32>>> {
    let device = device_of(model);
    let src = PaddedSource::new(srcs, PAD, &device);
    let log_probs = model.teacher_log_probs(&src, int2(tgt_in, PAD, &device), None);
    let [b, t, v] = log_probs.dims();
    let lp: Vec<f32> = log_probs.into_data().try_into_vec::<f32>().unwrap();
    (0..b)
        .map(|r| {
            (0..tgt_in[r].len())
                .map(|i| lp[(r * t + i) * v..(r * t + i + 1) * v].to_vec())
                .collect()
        })
        .collect()
}

pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Source rows `[tokens.., EOS]` and target inputs `[BOS, tokens..]` of assorted lengths.
pub fn sample_batch() -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let src_lens = [3, 9, 5, 1];
    let tgt_lens = [4, 2, 8, 6];
    let srcs = src_lens
        .iter()
        .enumerate()
        .map(|(i, &n)| tokens(n, 10 + i as u64).into_iter().chain([EOS]).collect())
        .collect();
    let tgts = tgt_lens
        .iter()
        .enumerate()
        .map(|(i, &n)| [BOS].into_iter().chain(tokens(n, 20 + i as u64)).collect())
        .collect();
    (srcs, tgts)
}

/// A sentence's decoder log-probs do not depend on the padding its batch needs.
pub fn check_padding_invariance_of_log_probs(model: &Seq2SeqModel) {
    let (srcs, tgts) = sample_batch();
    let batched = teacher_log_probs(model, &srcs, &tgts);
    for r in 0..srcs.len() {
        let alone = teacher_log_probs(model, &srcs[r..r + 1], &tgts[r..r + 1]);
        for (t, (a, b)) in alone[0].iter().zip(&batched[r]).enumerate() {
            let d = max_diff(a, b);
            assert!(d < 1e-5, "row {r} position {t}: batched differs by {d}");
        }
    }
}

/// Changing target tokens at positions `>= k` leaves the log-probs at positions `< k` alone.
pub fn check_causality(model: &Seq2SeqModel) {
    let src = vec![[5, 6, 7, 8, EOS].to_vec()];
    let base: Vec<u32> = [BOS].into_iter().chain(tokens(7, 3)).collect();
    let reference = teacher_log_probs(model, &src, std::slice::from_ref(&base));
    for k in 1..base.len() {
        let mut changed = base.clone();
        for (i, t) in changed.iter_mut().enumerate().skip(k) {
            *t = 4 + (*t + 3 + i as u32) % (VOCAB as u32 - 4);
        }
        assert_ne!(changed, base);
        let out = teacher_log_probs(model, &src, std::slice::from_ref(&changed));
        for t in 0..k {
            let d = max_diff(&out[0][t], &reference[0][t]);
            assert!(
                d < 1e-6,
                "changing positions >= {k} moved position {t} by {d}"
            );
        }
        // The check can fail: position k itself must see the change.
        let d = max_diff(&out[0][k], &reference[0][k]);
        assert!(d > 1e-6, "position {k} ignores its own input token");
    }
}

/// Incremental decoding through the search adapter (with a reorder halfway, as beam search does)
/// gives the teacher-forced log-probs, and its attention rows are distributions over the real
/// source positions.
pub fn check_cached_matches_uncached(model: &Seq2SeqModel) {
    let (srcs, tgts) = sample_batch();
    check_cached_matches_uncached_on(model, srcs, tgts);
}

/// [`check_cached_matches_uncached`] on given sources (`[tokens.., EOS]`) and target inputs;
/// the log-probs are as wide as the teacher-forced ones (a copy model's extended vocabulary).
pub fn check_cached_matches_uncached_on(
    model: &Seq2SeqModel,
    srcs: Vec<Vec<u32>>,
    tgts: Vec<Vec<u32>>,
) {
    check_cached_against_uncached(model, srcs, tgts, 1e-4);
}

/// [`check_cached_matches_uncached`] with the cached log-probs within `tolerance` of the
/// teacher-forced ones rather than equal up to rounding: an int8 prefix cache.
pub fn check_cached_close_to_uncached(model: &Seq2SeqModel, tolerance: f32) {
    let (srcs, tgts) = sample_batch();
    check_cached_against_uncached(model, srcs, tgts, tolerance);
}

fn check_cached_against_uncached(
    model: &Seq2SeqModel,
    srcs: Vec<Vec<u32>>,
    tgts: Vec<Vec<u32>>,
    tolerance: f32,
) {
    // Same target length for all rows: the adapter steps every row together. 20 steps, with
    // two reorders, the second after a dozen positions of incremental state.
    let len = 20;
    let tgts: Vec<Vec<u32>> = tgts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.iter()
                .copied()
                .chain(tokens(len, 40 + i as u64))
                .take(len)
                .collect()
        })
        .collect();
    let teacher = teacher_log_probs(model, &srcs, &tgts);
    let width = teacher[0][0].len();
    let decoder: Decoder = Decoder::new(model, device_of(model), SPECIAL, width);
    // `start` appends <eos> itself.
    let sources: Vec<Vec<u32>> = srcs.iter().map(|s| s[..s.len() - 1].to_vec()).collect();
    let src_len = srcs.iter().map(Vec::len).max().unwrap();
    let mut state = decoder.start(&sources);
    // Only recurrent models without attention have none to return.
    let attends = !matches!(model, Seq2SeqModel::Rnn(m) if m.cfg.attention == RnnAttention::None);
    let mut rows: Vec<usize> = (0..srcs.len()).collect();
    for t in 0..len {
        if t == 3 {
            // Drop a row, duplicate another and permute.
            rows = vec![rows[2], rows[0], rows[2], rows[3]];
            decoder.reorder(&mut state, &[2, 0, 2, 3]);
        }
        if t == 12 {
            rows = vec![rows[3], rows[1], rows[1]];
            decoder.reorder(&mut state, &[3, 1, 1]);
        }
        let last: Vec<u32> = rows.iter().map(|&r| tgts[r][t]).collect();
        let out = decoder.step(&mut state, &last);
        assert_eq!(out.attention.is_some(), attends, "attention returned");
        for (i, &r) in rows.iter().enumerate() {
            // A copy model's empty slots are log 0 here and floored (at log 1e-30) in training.
            let floor = |v: &[f32]| v.iter().map(|x| x.max(-60.0)).collect::<Vec<f32>>();
            let lp = &out.log_probs[i * width..(i + 1) * width];
            let d = max_diff(&floor(lp), &floor(&teacher[r][t]));
            assert!(d < tolerance, "row {r} step {t}: cached differs by {d}");
            let Some(attn) = &out.attention else {
                continue;
            };
            assert_eq!(attn.len(), rows.len() * src_len);
            let a = &attn[i * src_len..(i + 1) * src_len];
            let real = srcs[r].len();
            let sum: f32 = a[..real].iter().sum();
            assert!((sum - 1.0).abs() < 1e-4, "attention sums to {sum}");
            assert!(a[real..].iter().all(|&w| w == 0.0), "attention on padding");
        }
    }
}

/// Weights survive a save/load round trip, and every search runs on the model.
pub fn check_weights_and_search(cfg: &ModelConfig, model: &Seq2SeqModel) {
    let bytes = s2s_models::io::weights_to_bytes(model).unwrap();
    let dev = device();
    dev.seed(99); // different initial weights, all overwritten by the load
    let fresh = Seq2SeqModel::new(cfg, VOCAB, VOCAB, &dev);
    let loaded = s2s_models::io::load_weights_bytes(fresh, bytes, "test").unwrap();
    let (srcs, tgts) = sample_batch();
    let a = teacher_log_probs(model, &srcs, &tgts);
    let b = teacher_log_probs(&loaded, &srcs, &tgts);
    for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
        assert_eq!(x, y);
    }
    let sources: Vec<Vec<u32>> = srcs.iter().map(|s| s[..s.len() - 1].to_vec()).collect();
    for strategy in [
        s2s_search::Strategy::Greedy,
        s2s_search::Strategy::Beam { k: 3 },
    ] {
        let cfg = s2s_search::SearchConfig {
            strategy,
            nbest: 1,
            max_len: 8,
            return_attention: true,
            special: SPECIAL,
            ..Default::default()
        };
        let hyps =
            s2s_models::decoder::translate_all(model, &dev, VOCAB, &sources, &cfg, 3).unwrap();
        assert_eq!(hyps.len(), sources.len());
        for (h, src) in hyps.iter().zip(&sources) {
            assert!(h[0].tokens.len() <= 8);
            let attn = h[0].attention.as_ref().expect("attention requested");
            assert_eq!(attn.len(), h[0].tokens.len() + 1);
            assert!(attn.iter().all(|row| row.len() == src.len()));
        }
    }
}
