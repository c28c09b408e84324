//! The vendored burn-flex's fused f32 log-softmax (`vendor/burn-flex/PATCHES.md`) against burn's
//! own decomposition (`x - max - ln(sum(exp(x - max)))` from separate tensor ops): results must be
//! bit-identical, for rows of every length, more rows than one parallel task takes, a tensor the
//! caller still holds (computed out of place, the held one unchanged) and other axes.

mod common;

use burn::tensor::activation::log_softmax;
use burn::tensor::{Tensor, TensorData};

fn decomposed<const D: usize>(x: Tensor<D>, dim: usize) -> Tensor<D> {
    let shifted = x.clone() - x.max_dim(dim);
    shifted.clone() - shifted.exp().sum_dim(dim).log()
}

fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
    let v = t.into_data().try_into_vec::<f32>().unwrap();
    v.into_iter().map(f32::to_bits).collect()
}

fn tensor<const D: usize>(dims: [usize; D], seed: u64) -> Tensor<D> {
    let n = dims.iter().product();
    // Logits of a realistic spread, some rows far from zero.
    let values: Vec<f32> = common::hashed_values(n, seed)
        .into_iter()
        .enumerate()
        .map(|(i, v)| v * 12.0 + (i / dims[D - 1] % 3) as f32 * 40.0)
        .collect();
    Tensor::from_data(TensorData::new(values, dims), &common::device())
}

#[test]
fn fused_log_softmax_is_bit_identical_to_the_decomposition() {
    for (rows, len) in [(1, 1), (3, 7), (5, 8000), (130, 37), (200, 1000)] {
        let x = tensor([rows, len], rows as u64 * 31 + len as u64);
        let want = bits(decomposed(x.clone(), 1));
        // `x` is still held here, so this one runs out of place...
        let shared = bits(log_softmax(x.clone(), 1));
        assert_eq!(shared, want, "[{rows}, {len}], input shared");
        // ...and must have left `x` as it was.
        let again = tensor([rows, len], rows as u64 * 31 + len as u64);
        assert_eq!(
            bits(x.clone()),
            bits(again),
            "[{rows}, {len}], input changed"
        );
        // The last handle: in place.
        assert_eq!(bits(log_softmax(x, 1)), want, "[{rows}, {len}], in place");
    }
}

#[test]
fn log_softmax_on_other_axes_and_views_matches_the_decomposition() {
    let x = tensor([4, 6, 9], 7);
    for dim in 0..3 {
        let want = bits(decomposed(x.clone(), dim));
        assert_eq!(bits(log_softmax(x.clone(), dim)), want, "dim {dim}");
    }
    // A transposed view: not contiguous along the last axis.
    let t = tensor([9, 5], 3).transpose();
    assert_eq!(
        bits(log_softmax(t.clone(), 1)),
        bits(decomposed(t, 1)),
        "transposed view"
    );
    // Rows sum to one after exp.
    let p = log_softmax(tensor([3, 500], 5), 1).exp().sum_dim(1);
    for s in p.into_data().try_into_vec::<f32>().unwrap() {
        assert!((s - 1.0).abs() < 1e-4, "row sums to {s}");
    }
}
