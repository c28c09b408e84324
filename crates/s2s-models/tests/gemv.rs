//! The one-row f32 product (`engine::gemv`): every kernel this CPU has against a plain
//! reference on odd shapes and both weight layouts, splits over threads giving the same bits,
//! and `engine::linear` on one row agreeing to the bit with that row inside a larger product
//! (what keeps a search batch-invariant).

use burn::tensor::{Device, Distribution, Tensor, TensorData};
use rand::{Rng, SeedableRng, rngs::StdRng};
use s2s_models::engine::gemv::{Isa, Layout, Weight, gemv_on};

fn values(rng: &mut StdRng, len: usize) -> Vec<f32> {
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// Shapes around the block sizes (8 or 16 lanes, blocks of 4 or 8 vectors or columns), with 1s,
/// sizes one off, and the decoder's own.
const SHAPES: [(usize, usize); 10] = [
    (1, 1),
    (7, 5),
    (16, 16),
    (17, 33),
    (31, 129),
    (64, 130),
    (256, 256),
    (33, 300),
    (256, 1031),
    (1024, 256),
];

/// `w[i][j]` for a layout over `data`.
fn at(data: &[f32], layout: Layout, i: usize, j: usize) -> f32 {
    match layout {
        Layout::Rows { stride } => data[i * stride + j],
        Layout::Columns { stride } => data[j * stride + i],
    }
}

#[test]
fn every_kernel_matches_the_definition() {
    let mut rng = StdRng::seed_from_u64(7);
    let isas: Vec<Isa> = Isa::all().into_iter().filter(|i| i.available()).collect();
    if isas.is_empty() {
        eprintln!("no gemv kernel on this CPU: nothing to check");
        return;
    }
    for &(k, n) in &SHAPES {
        for columns in [false, true] {
            // 3 unused elements after each stored row: strides other than the row length.
            let (data, layout) = if columns {
                (
                    values(&mut rng, n * (k + 3)),
                    Layout::Columns { stride: k + 3 },
                )
            } else {
                (
                    values(&mut rng, k * (n + 3)),
                    Layout::Rows { stride: n + 3 },
                )
            };
            let w = Weight {
                data: &data,
                k,
                n,
                layout,
            };
            let x = values(&mut rng, k);
            // In f64, written independently of the kernels.
            let exact: Vec<f64> = (0..n)
                .map(|j| {
                    (0..k)
                        .map(|i| x[i] as f64 * at(&data, layout, i, j) as f64)
                        .sum()
                })
                .collect();
            // In order from zero, one fused multiply-add per term.
            let in_order: Vec<f32> = (0..n)
                .map(|j| (0..k).fold(0.0f32, |acc, i| x[i].mul_add(at(&data, layout, i, j), acc)))
                .collect();
            for &isa in &isas {
                let run = |parts| {
                    let mut out = vec![f32::NAN; n];
                    assert!(gemv_on(isa, &x, w, &mut out, parts));
                    out
                };
                let (whole, split) = (run(1), run(3));
                let what = format!("{isa:?} k={k} n={n} {layout:?}");
                // Every column is computed alone: a split over threads changes no bit.
                assert_eq!(whole, split, "{what}: split over threads");
                let tol = 1e-5 * (k as f64).sqrt().max(1.0);
                for (j, (&got, &want)) in whole.iter().zip(&exact).enumerate() {
                    assert!(
                        (got as f64 - want).abs() <= tol,
                        "{what}: [{j}] {got} vs {want}"
                    );
                }
                if !columns {
                    assert_eq!(whole, in_order, "{what}: a row-major weight sums in order");
                }
            }
        }
    }
}

/// `engine::linear` on one row gives exactly what that row gets inside a 16-row product (which
/// burn runs through gemm), for a linear layer's weight with a bias, as long as gemm sums the
/// depth in one block (up to 512); and stays close for deeper weights and for a tied output
/// layer's transposed table.
#[test]
fn one_row_agrees_with_its_row_in_a_larger_product() {
    let dev = Device::default();
    for (k, n) in [(256, 256), (256, 1024), (1024, 256), (37, 19)] {
        let weight: Tensor<2> = Tensor::random([k, n], Distribution::Default, &dev);
        let table: Tensor<2> = Tensor::random([n, k], Distribution::Default, &dev);
        let bias: Tensor<1> = Tensor::random([n], Distribution::Default, &dev);
        let x: Tensor<2> = Tensor::random([16, k], Distribution::Default, &dev);
        let all = s2s_models::engine::linear(x.clone(), weight.clone(), Some(bias.clone()));
        let all_tied = s2s_models::engine::linear(x.clone(), table.clone().transpose(), None);
        let tol = 1e-4 * (k as f32).sqrt();
        for row in [0, 7, 15] {
            let one = x.clone().narrow(0, row, 1);
            let got = data(s2s_models::engine::linear(
                one.clone(),
                weight.clone(),
                Some(bias.clone()),
            ));
            let want = data(all.clone().narrow(0, row, 1));
            if k <= 512 {
                assert_eq!(got, want, "k={k} n={n} row {row}: row-major weight");
            }
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= tol, "k={k} n={n} row {row}: {g} vs {w}");
            }
            let got = data(s2s_models::engine::linear(
                one.reshape([1, 1, k]),
                table.clone().transpose(),
                None,
            ));
            let want = data(all_tied.clone().narrow(0, row, 1));
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() <= tol,
                    "k={k} n={n} row {row}: tied {g} vs {w}"
                );
            }
        }
    }
}

fn data<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    let d: TensorData = t.into_data();
    d.convert::<f32>().try_into_vec::<f32>().unwrap()
}
