//! The CPU backend's `exp`, `tanh`, `sigmoid` and `softmax`, which s2s replaces with vectorised
//! versions (`vendor/burn-flex/PATCHES.md`): accuracy against f64, special values, and that the
//! in-place fast path never writes into a tensor that is still shared or into a view.

use burn::tensor::activation::{sigmoid, softmax};
use burn::tensor::{Device, Tensor, TensorData};

fn device() -> Device {
    Device::default()
}

/// Inputs over the whole interesting range, dense near zero, with the extremes.
fn inputs() -> Vec<f32> {
    let mut xs: Vec<f32> = (-200_000..=200_000).map(|i| i as f32 * 5e-4).collect();
    xs.extend([1e-7, -1e-7, 1e-30, 85.0, 88.0, -86.0, -120.0, 120.0]);
    xs
}

/// The elements of `t` in row-major order.
fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

fn max_error(xs: &[f32], got: &[f32], reference: impl Fn(f64) -> f64, relative: bool) -> f64 {
    xs.iter()
        .zip(got)
        .map(|(&x, &y)| {
            let r = reference(x as f64);
            let err = (y as f64 - r).abs();
            if relative {
                err / r.abs().max(1e-300)
            } else {
                err
            }
        })
        .fold(0.0, f64::max)
}

#[test]
fn exp_tanh_sigmoid_match_f64() {
    let xs = inputs();
    let t = Tensor::<1>::from_floats(xs.as_slice(), &device());
    // exp within 2e-7 relative wherever the result is a normal f32 above 2^-125.
    let in_range: Vec<f32> = xs
        .iter()
        .copied()
        .filter(|&x| (-86.0..=88.0).contains(&x))
        .collect();
    let e = values(Tensor::<1>::from_floats(in_range.as_slice(), &device()).exp());
    assert!(max_error(&in_range, &e, f64::exp, true) < 2e-7);
    let th = values(t.clone().tanh());
    assert!(max_error(&xs, &th, f64::tanh, false) < 5e-7);
    for (&x, &y) in xs
        .iter()
        .zip(&th)
        .filter(|(x, _)| x.abs() < 0.5 && **x != 0.0)
    {
        let r = (x as f64).tanh();
        assert!(
            ((y as f64 - r) / r).abs() < 5e-7,
            "tanh({x}) = {y}, expected {r}"
        );
    }
    let s = values(sigmoid(t));
    assert!(max_error(&xs, &s, |x| 1.0 / (1.0 + (-x).exp()), false) < 2e-7);
}

#[test]
fn special_values() {
    let xs = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    let t = Tensor::<1>::from_floats(xs, &device());
    let e = values(t.clone().exp());
    assert!(e[0].is_nan());
    assert_eq!(&e[1..], &[f32::INFINITY, 0.0, 1.0, 1.0]);
    let th = values(t.clone().tanh());
    assert!(th[0].is_nan());
    assert_eq!(&th[1..4], &[1.0, -1.0, 0.0]);
    assert!(th[4] == 0.0 && th[4].is_sign_negative());
    let s = values(sigmoid(t));
    assert!(s[0].is_nan());
    assert_eq!(&s[1..], &[1.0, 0.0, 0.5, 0.5]);
}

#[test]
fn softmax_rows_sum_to_one_and_masked_entries_are_zero() {
    let row = [1.0f32, -3.0, f32::NEG_INFINITY, 20.0, 0.5];
    let t = Tensor::<2>::from_data(TensorData::new([row, row].concat(), [2, 5]), &device());
    let p = values(softmax(t, 1));
    let max = 20.0f64;
    let denom: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum::<f64>();
    for (i, &x) in row.iter().enumerate() {
        let expected = (x as f64 - max).exp() / denom;
        assert!((p[i] as f64 - expected).abs() < 1e-7, "softmax[{i}]");
        assert_eq!(p[i], p[i + 5]);
    }
    assert_eq!(p[2], 0.0, "exp(-inf) must be exactly 0");
}

#[test]
fn shared_tensors_and_views_are_not_modified() {
    let data: Vec<f32> = (0..64).map(|i| i as f32 * 0.1 - 3.0).collect();
    let a = Tensor::<2>::from_data(TensorData::new(data.clone(), [8, 8]), &device());
    // `a` stays alive, so its buffer is shared with the argument of each op.
    let _ = a.clone().tanh();
    let _ = a.clone().exp();
    let _ = sigmoid(a.clone());
    assert_eq!(values(a.clone()), data);
    // A transposed view and a slice: results follow the view, the source stays intact.
    let tt = values(a.clone().transpose().tanh());
    for r in 0..8 {
        for c in 0..8 {
            assert!((tt[r * 8 + c] - data[c * 8 + r].tanh()).abs() < 5e-7);
        }
    }
    let sl = values(a.clone().slice([2..4, 1..5]).exp());
    for r in 0..2 {
        for c in 0..4 {
            let x = data[(r + 2) * 8 + c + 1];
            assert!(((sl[r * 4 + c] - x.exp()) / x.exp()).abs() < 2e-7);
        }
    }
    assert_eq!(values(a), data);
}
