//! The decoding-step attention kernel (`s2s_models::engine::kernels::single_query_attention`)
//! against the general path of the Transformer's attention (two batched matmuls and a softmax), on keys and
//! values as decoding holds them: contiguous caches and head-split views, with and without
//! padding, and rows that share the keys and values of one sentence.

mod common;

use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Tensor, TensorData};
use s2s_models::engine::RowMap;
use s2s_models::engine::kernels::{Segment, Vectors, single_query_attention};
use s2s_models::transformer::attention::{CacheFormat, CachedKeyValue, KeyValue, PrefixCache};

fn tensor(dims: [usize; 4], seed: u64) -> Tensor<4> {
    let n = dims.iter().product();
    let v: Vec<f32> = common::hashed_values(n, seed)
        .into_iter()
        .map(|x| x * 3.0)
        .collect();
    Tensor::from_data(TensorData::new(v, dims), &common::device())
}

fn segment<'a>(
    key: &'a Tensor<4>,
    value: &'a Tensor<4>,
    pad: Option<&'a Tensor<2, Bool>>,
    rows: &'a RowMap,
) -> Segment<'a> {
    Segment {
        key: Vectors::F32(key),
        value: Vectors::F32(value),
        pad,
        rows,
    }
}

fn general(
    q: &Tensor<4>,
    k: &Tensor<4>,
    v: &Tensor<4>,
    pad: Option<&Tensor<2, Bool>>,
    divisor: f32,
) -> (Vec<f32>, Vec<f32>) {
    let [b, h, _, len] = [q.dims()[0], q.dims()[1], 1, k.dims()[2]];
    let d_k = q.dims()[3];
    let mut scores = q
        .clone()
        .matmul(k.clone().swap_dims(2, 3))
        .div_scalar(divisor);
    if let Some(pad) = pad {
        let mask = pad.clone().reshape([b, 1, 1, len]).expand([b, h, 1, len]);
        scores = scores.mask_fill(mask, -1.0e9);
    }
    let w = softmax(scores, 3);
    let ctx = w
        .clone()
        .matmul(v.clone())
        .swap_dims(1, 2)
        .reshape([b, 1, h * d_k]);
    (
        ctx.into_data().try_into_vec::<f32>().unwrap(),
        w.into_data().try_into_vec::<f32>().unwrap(),
    )
}

#[test]
fn single_query_attention_matches_the_general_path() {
    let (b, h, d_k) = (3, 4, 20);
    for len in [1usize, 5, 17] {
        let q = tensor([b, h, 1, d_k], 1);
        // A contiguous cache, and head-split views `[b, len, h, d_k] -> [b, h, len, d_k]`.
        let cases = [
            (tensor([b, h, len, d_k], 2), tensor([b, h, len, d_k], 3)),
            (
                tensor([b, len, h, d_k], 4).swap_dims(1, 2),
                tensor([b, len, h, d_k], 5).swap_dims(1, 2),
            ),
        ];
        // Row r pads its last r keys (none for row 0), leaving at least one.
        let pad: Vec<bool> = (0..b * len)
            .map(|i| (i % len) + (i / len).min(len - 1) >= len)
            .collect();
        let pad = Tensor::<2, Bool>::from_data(TensorData::new(pad, [b, len]), &common::device());
        // The Transformer's scaling, and ConvS2S's (none).
        let cases = cases
            .iter()
            .flat_map(|kv| [(kv, (d_k as f32).sqrt()), (kv, 1.0)]);
        for ((k, v), divisor) in cases {
            for mask in [None, Some(&pad)] {
                let (ctx, w) = single_query_attention(
                    &q,
                    &[segment(k, v, mask, &RowMap::identity())],
                    divisor,
                )
                .expect("the CPU backend takes the kernel");
                let (want_ctx, want_w) = general(&q, k, v, mask, divisor);
                let what = format!("len {len}, mask {}, divisor {divisor}", mask.is_some());
                common::assert_close(
                    &ctx.into_data().try_into_vec::<f32>().unwrap(),
                    &want_ctx,
                    &what,
                );
                let w = w.into_data().try_into_vec::<f32>().unwrap();
                common::assert_close(&w, &want_w, &what);
                if mask.is_some() {
                    for r in 1..b {
                        let masked = r.min(len - 1);
                        for hh in 0..h {
                            let row = &w[(r * h + hh) * len..(r * h + hh + 1) * len];
                            assert!(
                                row[len - masked..].iter().all(|&x| x == 0.0),
                                "{what}: padding weighted"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn rows_can_share_keys_values_and_padding() {
    let (b, h, d_k, len) = (2, 2, 16, 6);
    let k = tensor([b, len, h, d_k], 7).swap_dims(1, 2);
    let v = tensor([b, len, h, d_k], 8).swap_dims(1, 2);
    let pad: Vec<bool> = (0..b * len).map(|i| i >= len && i % len >= 4).collect();
    let pad = Tensor::<2, Bool>::from_data(TensorData::new(pad, [b, len]), &common::device());
    // Beams: rows 0..3 read sentence 1, row 3 sentence 0.
    let kv_rows = [1usize, 1, 1, 0];
    let q = tensor([kv_rows.len(), h, 1, d_k], 9);
    let ids: Vec<i64> = kv_rows.iter().map(|&r| r as i64).collect();
    let idx = Tensor::<1, burn::tensor::Int>::from_data(
        TensorData::new(ids, [kv_rows.len()]),
        &common::device(),
    );
    // The per-row copies decoding used to make (a selected bool tensor, as burn-flex labels it).
    let (k_rows, v_rows) = (
        k.clone().select(0, idx.clone()),
        v.clone().select(0, idx.clone()),
    );
    let pad_rows = pad.clone().select(0, idx);
    let divisor = (d_k as f32).sqrt();
    let (want_ctx, want_w) = general(&q, &k_rows, &v_rows, Some(&pad_rows), divisor);
    let (shared, own) = (RowMap::from(&kv_rows[..]), RowMap::identity());
    for (mask, rows) in [(&pad, &shared), (&pad_rows, &own)] {
        let (kk, vv) = if !rows.is_identity() {
            (&k, &v)
        } else {
            (&k_rows, &v_rows)
        };
        let (ctx, w) = single_query_attention(&q, &[segment(kk, vv, Some(mask), rows)], divisor)
            .expect("the CPU backend takes the kernel");
        let what = format!("shared {}", !rows.is_identity());
        common::assert_close(
            &ctx.into_data().try_into_vec::<f32>().unwrap(),
            &want_ctx,
            &what,
        );
        common::assert_close(
            &w.into_data().try_into_vec::<f32>().unwrap(),
            &want_w,
            &what,
        );
    }
}

/// A prefix cache read in place: blocks of different lengths and row counts, each through its own
/// row map, against the general path over the same cache gathered into one tensor. In int8, the
/// blocks after the first are read as int8 and gathered dequantised, so the two paths see the
/// same values; and the int8 results stay near the f32 ones.
#[test]
fn segments_read_a_reordered_prefix_in_place() {
    let (h, d_k) = (2, 8);
    let block = |rows, len, seed| KeyValue {
        key: tensor([rows, len, h, d_k], seed).swap_dims(1, 2),
        value: tensor([rows, len, h, d_k], seed + 1).swap_dims(1, 2),
    };
    let q = tensor([4, h, 1, d_k], 40);
    let divisor = (d_k as f32).sqrt();
    let mut results = Vec::new();
    for format in [CacheFormat::F32, CacheFormat::Int8] {
        // Three rows at first (a prefix of 2 positions), then beams: 5 rows, then 4.
        let mut cache = PrefixCache::new(block(3, 2, 10), format).select_rows(&[0, 0, 1, 2, 2]);
        cache.append(block(5, 1, 20));
        let mut cache = cache.select_rows(&[4, 0, 1, 1]);
        cache.append(block(4, 1, 30));
        let (ctx, w) = {
            let segments = cache.segments();
            assert_eq!(segments.len(), 3);
            let int8 = segments
                .iter()
                .filter(|g| matches!(g.key, Vectors::Int8(_)))
                .count();
            assert_eq!(int8, if format == CacheFormat::Int8 { 2 } else { 0 });
            single_query_attention(&q, &segments, divisor)
                .expect("the CPU backend takes the kernel")
        };
        let whole = cache.collapse();
        assert_eq!(whole.key.dims(), [4, h, 4, d_k]);
        let (want_ctx, want_w) = general(&q, &whole.key, &whole.value, None, divisor);
        let got_ctx = ctx.into_data().try_into_vec::<f32>().unwrap();
        let got_w = w.into_data().try_into_vec::<f32>().unwrap();
        common::assert_close(&got_ctx, &want_ctx, &format!("{format:?} segments"));
        common::assert_close(&got_w, &want_w, &format!("{format:?} segments"));
        results.push((got_ctx, got_w));
    }
    let (f32, int8) = (&results[0], &results[1]);
    let max_diff = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    // Values up to 3 in magnitude: an int8 step is at most 3/127.
    let (d_ctx, d_w) = (max_diff(&f32.0, &int8.0), max_diff(&f32.1, &int8.1));
    assert!(d_ctx > 0.0, "the int8 blocks were read as f32");
    assert!(
        d_ctx < 0.05 && d_w < 0.02,
        "int8 context {d_ctx}, weights {d_w}"
    );
}

/// The encoder side kept in int8 ([`CachedKeyValue`]): with padding and rows shared by beams, the
/// kernel over the int8 keys and values equals the general path over them dequantised.
#[test]
fn int8_keys_and_values_with_padding_and_shared_rows() {
    let (n, h, len, d_k) = (2, 4, 5, 16);
    let kv = KeyValue {
        key: tensor([n, len, h, d_k], 50).swap_dims(1, 2),
        value: tensor([n, len, h, d_k], 51).swap_dims(1, 2),
    };
    let cached = CachedKeyValue::new(kv, CacheFormat::Int8);
    assert!(matches!(cached, CachedKeyValue::Int8(_)));
    let pad = Tensor::<2, Bool>::from_data(
        TensorData::new(
            vec![
                false, false, false, true, true, false, false, false, false, false,
            ],
            [n, len],
        ),
        &common::device(),
    );
    // Three beams of sentence 1, two of sentence 0.
    let rows = RowMap::identity().compose(&[1, 1, 0, 1, 0]);
    let q = tensor([5, h, 1, d_k], 52);
    let divisor = (d_k as f32).sqrt();
    let (ctx, w) = single_query_attention(&q, &[cached.segment(Some(&pad), &rows)], divisor)
        .expect("the CPU backend takes the kernel");
    let whole = cached.to_f32();
    let idx = rows.ids(&common::device()).expect("a reordering map");
    let whole = whole.select_rows(&idx);
    let pad = pad.select(0, idx);
    let (want_ctx, want_w) = general(&q, &whole.key, &whole.value, Some(&pad), divisor);
    common::assert_close(
        &ctx.into_data().try_into_vec::<f32>().unwrap(),
        &want_ctx,
        "int8 context",
    );
    common::assert_close(
        &w.into_data().try_into_vec::<f32>().unwrap(),
        &want_w,
        "int8 weights",
    );
}
