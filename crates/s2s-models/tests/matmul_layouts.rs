//! Matrix products whose right-hand side is a transposed view (`x @ W^T` in every linear layer's
//! backward pass, `q @ k^T` in attention). gemm packs such an operand with s2s's AVX transposing
//! copy (`vendor/gemm-common/PATCHES.md`); the products must equal those of the same values laid
//! out row-major, bit for bit, and a float64 reference, at shapes that leave every kind of tail.

use burn::tensor::{Device, Tensor, TensorData};

mod common;
use common::hashed_values as values;

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// `a [m, k] @ b [k, n]` in f64, both row-major.
fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0f64; m * n];
    for i in 0..m {
        for p in 0..k {
            let x = a[i * k + p] as f64;
            for j in 0..n {
                c[i * n + j] += x * b[p * n + j] as f64;
            }
        }
    }
    c
}

#[test]
fn transposed_right_operand_matches_row_major_and_f64() {
    let dev = Device::default();
    // n is the width gemm packs (tails of 8, of 16 and of its 64-row panels); k crosses 8-blocks
    // and gemm's 512-deep blocks; m includes the single-row and small cases.
    for &m in &[1usize, 5, 64, 130] {
        for &k in &[3usize, 8, 17, 520] {
            for &n in &[1usize, 7, 8, 13, 64, 70, 131] {
                let a = values(m * k, 1);
                // The weight as stored by a layer: `w [n, k]`, used as `w^T [k, n]`.
                let w = values(n * k, 2);
                let mut w_t = vec![0.0f32; k * n];
                for j in 0..n {
                    for p in 0..k {
                        w_t[p * n + j] = w[j * k + p];
                    }
                }
                let ta = Tensor::<2>::from_data(TensorData::new(a.clone(), [m, k]), &dev);
                let tw = Tensor::<2>::from_data(TensorData::new(w, [n, k]), &dev);
                let tw_t = Tensor::<2>::from_data(TensorData::new(w_t.clone(), [k, n]), &dev);
                let by_view = floats(ta.clone().matmul(tw.transpose()));
                let by_copy = floats(ta.matmul(tw_t));
                // Single rows and products of at most 16 x 16 take gemm's vector and dot-product
                // kernels when the operands are row-major, which sum in another order.
                if m > 1 && m * n > 256 {
                    assert_eq!(by_view, by_copy, "m {m} k {k} n {n}");
                }
                let exact = reference(&a, &w_t, m, k, n);
                for (got, want) in by_view.iter().zip(&exact) {
                    assert!(
                        (*got as f64 - want).abs() <= 1e-5 * (k as f64).sqrt() * 4.0,
                        "m {m} k {k} n {n}: {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn batched_attention_scores_match_row_major() {
    // `q @ k^T` over [batch, heads, len, d_head], the attention case.
    let dev = Device::default();
    let (b, h, lq, lk, d) = (3usize, 4usize, 21usize, 19usize, 64usize);
    let q = Tensor::<4>::from_data(
        TensorData::new(values(b * h * lq * d, 3), [b, h, lq, d]),
        &dev,
    );
    let kv = values(b * h * lk * d, 4);
    let key = Tensor::<4>::from_data(TensorData::new(kv.clone(), [b, h, lk, d]), &dev);
    let mut kv_t = vec![0.0f32; kv.len()];
    for s in 0..b * h {
        for j in 0..lk {
            for p in 0..d {
                kv_t[s * lk * d + p * lk + j] = kv[s * lk * d + j * d + p];
            }
        }
    }
    let key_t = Tensor::<4>::from_data(TensorData::new(kv_t, [b, h, d, lk]), &dev);
    let by_view = floats(q.clone().matmul(key.swap_dims(2, 3)));
    let by_copy = floats(q.matmul(key_t));
    assert_eq!(by_view, by_copy);
}

#[test]
fn few_rows_by_large_weights_match_one_thread_and_the_batched_form() {
    // A decoding step of one sentence multiplies 1 to 5 rows by each weight: burn-flex splits
    // such products over the threads when the weight is large (its columns, for one row), and
    // takes `[1, m, k] @ [1, k, n]` as the 2-D product (vendor/burn-flex/PATCHES.md). The
    // results must be those of one thread and (from two rows) of a batch of two, bit for bit,
    // and near f64.
    let dev = Device::default();
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let two_threads = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for &m in &[1usize, 2, 5] {
        // 256 x 256 is the smallest weight that is split; 1031 columns leave ragged tails.
        for &(k, n) in &[(256usize, 256usize), (256, 1031), (1024, 257)] {
            let a = values(m * k, 5);
            let w = values(k * n, 6);
            let ta = Tensor::<2>::from_data(TensorData::new(a.clone(), [m, k]), &dev);
            let tw = Tensor::<2>::from_data(TensorData::new(w.clone(), [k, n]), &dev);
            let split = two_threads.install(|| floats(ta.clone().matmul(tw.clone())));
            let single = one_thread.install(|| floats(ta.clone().matmul(tw.clone())));
            assert_eq!(split, single, "m {m} k {k} n {n}: two threads vs one");
            let unit_batch = two_threads.install(|| {
                floats(
                    ta.clone()
                        .reshape([1, m, k])
                        .matmul(tw.clone().reshape([1, k, n])),
                )
            });
            assert_eq!(unit_batch, split, "m {m} k {k} n {n}: [1, m, k] vs [m, k]");
            // Two sentences. One row is a gemv, which sums in another order than the matrix
            // kernels (see above), so only products of several rows must match to the bit.
            if m > 1 {
                let pair = Tensor::cat(vec![ta.clone(), ta.clone()], 0).reshape([2, m, k]);
                let batched = floats(pair.matmul(tw.clone().reshape([1, k, n])));
                assert_eq!(
                    &batched[..m * n],
                    &split[..],
                    "m {m} k {k} n {n}: batch of 2"
                );
            }
            let exact = reference(&a, &w, m, k, n);
            for (got, want) in split.iter().zip(&exact) {
                assert!(
                    (*got as f64 - want).abs() <= 1e-5 * (k as f64).sqrt() * 4.0,
                    "m {m} k {k} n {n}: {got} vs {want}"
                );
            }
        }
    }
}
