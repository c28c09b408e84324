//! The backward of slicing, which s2s's patched burn-autodiff accumulates in place
//! (vendor/burn-autodiff/PATCHES.md): gradients of a tensor read through many slices, some
//! overlapping, some repeated, mixed with whole-tensor uses, equal the hand-derived ones exactly.

use burn::tensor::{Device, Tensor, TensorData};

fn values(t: Tensor<3>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

#[test]
fn gradients_through_many_slices_accumulate_exactly() {
    let device = Device::flex().autodiff();
    let (b, len, g) = (3, 5, 4);
    let n = b * len * g;
    let data: Vec<f32> = (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0).collect();
    let x =
        Tensor::<3>::from_data(TensorData::new(data.clone(), [b, len, g]), &device).require_grad();
    // Weights for each use, so that every contribution to the gradient is distinguishable.
    let mut want = vec![0.0f32; n];
    let at = |bi: usize, t: usize, k: usize| (bi * len + t) * g + k;
    let mut loss: Option<Tensor<1>> = None;
    let mut add = |term: Tensor<1>| {
        loss = Some(match loss.take() {
            Some(l) => l + term,
            None => term,
        })
    };
    // Every timestep, as a recurrent layer reads its precomputed input projections, weighted
    // by t + 1 ...
    for t in 0..len {
        let s = x.clone().slice([0..b, t..t + 1, 0..g]);
        add(s.sum().mul_scalar((t + 1) as f64));
        for bi in 0..b {
            for k in 0..g {
                want[at(bi, t, k)] += (t + 1) as f32;
            }
        }
    }
    // ... a block overlapping them, read twice, squared (gradient 2x per read) ...
    for _ in 0..2 {
        let s = x.clone().slice([1..3, 1..4, 1..3]);
        add((s.clone() * s).sum());
        for bi in 1..3 {
            for t in 1..4 {
                for k in 1..3 {
                    want[at(bi, t, k)] += 2.0 * data[at(bi, t, k)];
                }
            }
        }
    }
    // ... and the whole tensor, times 0.5.
    add(x.clone().sum().mul_scalar(0.5));
    for w in want.iter_mut() {
        *w += 0.5;
    }
    let grads = loss.unwrap().backward();
    let got = values(x.grad(&grads).unwrap());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() < 1e-5,
            "element {i}: gradient {g}, expected {w}"
        );
    }
}

/// The input of a slice that is a view of a shared gradient (the same tensor registered for two
/// nodes by an addition's backward) must not be written through.
#[test]
fn slicing_a_sum_leaves_the_other_operand_gradient_intact() {
    let device = Device::flex().autodiff();
    let a = Tensor::<3>::ones([2, 3, 2], &device).require_grad();
    let b = Tensor::<3>::ones([2, 3, 2], &device)
        .mul_scalar(2.0)
        .require_grad();
    let s = a.clone() + b.clone();
    // s's gradient: 1 everywhere from the sum, plus 3 on one slice.
    let loss = s.clone().sum() + s.slice([0..1, 1..2, 0..2]).sum().mul_scalar(3.0);
    let grads = loss.backward();
    let ga = values(a.grad(&grads).unwrap());
    let gb = values(b.grad(&grads).unwrap());
    assert_eq!(ga, gb);
    let expected: Vec<f32> = (0..12)
        .map(|i| if (2..4).contains(&i) { 4.0 } else { 1.0 })
        .collect();
    assert_eq!(ga, expected);
}
