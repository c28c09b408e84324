#![cfg(feature = "fast-path")]
//! Weights packed once per search (`burn_flex::ops::matmul::with_packed_weights`, on
//! gemm-common's `packed_lhs` slots; `vendor/*/PATCHES.md`). Inside the scope a product reads a
//! weight's panels from a cache instead of packing them per call: the results must be those of
//! the same product outside the scope, bit for bit, on the first use (which packs) and later
//! ones, and a weight that changes must never be read from a stale packing.

use burn::tensor::{Device, Tensor, TensorData};
use burn_flex::ops::matmul::{packed_weights_bytes, with_packed_weights};
use std::sync::Mutex;

mod common;
use common::hashed_values as values;

/// The cache is process-wide: tests that look at its size must not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn matrix(rows: usize, cols: usize, seed: u64) -> Tensor<2> {
    Tensor::from_data(
        TensorData::new(values(rows * cols, seed), [rows, cols]),
        &Device::default(),
    )
}

fn bits(t: Tensor<2>) -> Vec<u32> {
    t.into_data()
        .try_to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

#[test]
fn products_in_the_scope_equal_those_outside_bit_for_bit() {
    let _serial = serial();
    // rows: a greedy step, a beam step, tails of gemm's 6-column blocks; k: one and several of
    // gemm's depth blocks; out: whole and partial 64-row panels (gemm's left-hand side is w^T).
    for &rows in &[2usize, 5, 32, 160] {
        for &k in &[256usize, 1100] {
            for &out in &[70usize, 1000] {
                let x = matrix(rows, k, 1);
                let w = matrix(k, out, 2);
                let expected = bits(x.clone().matmul(w.clone()));
                let (first, again) = with_packed_weights(|| {
                    let first = bits(x.clone().matmul(w.clone()));
                    assert!(
                        packed_weights_bytes() >= k * out * 4,
                        "rows {rows}, k {k}, out {out}: the weight was not packed"
                    );
                    (first, bits(x.clone().matmul(w.clone())))
                });
                assert_eq!(first, expected, "rows {rows}, k {k}, out {out}: first use");
                assert_eq!(again, expected, "rows {rows}, k {k}, out {out}: cached");
                assert_eq!(packed_weights_bytes(), 0, "the closed scope keeps nothing");
            }
        }
    }
}

#[test]
fn a_changed_or_reshaped_weight_is_never_read_from_a_stale_packing() {
    let _serial = serial();
    let x = matrix(40, 256, 3);
    let w = matrix(256, 300, 4);
    let plus_one = bits(x.clone().matmul(w.clone().add_scalar(1.0)));
    let via_view = bits(x.clone().matmul(matrix(300, 256, 5).transpose()));
    let square = matrix(256, 256, 6);
    let square_t = bits(x.clone().matmul(square.clone().transpose()));
    let square_plain = bits(x.clone().matmul(square.clone()));
    with_packed_weights(|| {
        let _ = x.clone().matmul(w.clone());
        // `w` is shared with the cache now, so this writes a copy, never the packed matrix.
        let changed = w.add_scalar(1.0);
        assert_eq!(bits(x.clone().matmul(changed)), plus_one);
        // A transposed view of a fresh weight, then the same storage in two layouts.
        assert_eq!(
            bits(x.clone().matmul(matrix(300, 256, 5).transpose())),
            via_view
        );
        assert_eq!(bits(x.clone().matmul(square.clone())), square_plain);
        assert_eq!(bits(x.clone().matmul(square.clone().transpose())), square_t);
        assert_eq!(bits(x.clone().matmul(square.clone())), square_plain);
    });
}

#[test]
fn threads_searching_side_by_side_share_one_packing() {
    let _serial = serial();
    let w = matrix(512, 2000, 7);
    let inputs: Vec<Tensor<2>> = (0..2).map(|t| matrix(96, 512, 10 + t)).collect();
    let expected: Vec<Vec<u32>> = inputs
        .iter()
        .map(|x| bits(x.clone().matmul(w.clone())))
        .collect();
    let packed = std::thread::scope(|s| {
        let handles: Vec<_> = inputs
            .iter()
            .map(|x| {
                let w = w.clone();
                s.spawn(move || {
                    with_packed_weights(|| {
                        let results: Vec<Vec<u32>> =
                            (0..10).map(|_| bits(x.clone().matmul(w.clone()))).collect();
                        (results, packed_weights_bytes())
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    for (t, (results, bytes)) in packed.into_iter().enumerate() {
        for r in results {
            assert_eq!(r, expected[t], "thread {t}");
        }
        // One packed copy of the weight in the shared cache, not one per thread.
        assert!(
            (512 * 2000 * 4..2 * 512 * 2000 * 4).contains(&bytes),
            "thread {t}: {bytes} bytes packed"
        );
    }
    assert_eq!(packed_weights_bytes(), 0);
}
