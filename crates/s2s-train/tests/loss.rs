//! The fused training criterion against its definition: `projected_label_smoothed_nll` must give
//! the value and the gradients of `label_smoothed_nll` on the projected logits, with padding,
//! with and without label smoothing, with a bias, and with a tied (transposed) weight.

use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use s2s_models::OutputLayer;
use s2s_train::loss::{LossOutput, label_smoothed_nll, projected_label_smoothed_nll};

const B: usize = 3;
const T: usize = 5;
const D: usize = 8;
const V: usize = 11;
const PAD: u32 = s2s_data::PAD;

fn values<const N: usize>(t: Tensor<N>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// The fixed inputs: hidden states, a weight (`[D, V]`, or `[V, D]` to be transposed when tied),
/// a bias and targets whose rows end in padding.
struct Inputs {
    hidden: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
    target: Vec<i64>,
    tokens: usize,
}

fn inputs(dev: &Device) -> Inputs {
    let draw = |n: usize| {
        values(Tensor::<1>::random(
            [n],
            Distribution::Normal(0.0, 1.5),
            dev,
        ))
    };
    // Row r has 5 - r real tokens; ids cycle through every non-pad type.
    let target: Vec<i64> = (0..B * T)
        .map(|i| {
            let (r, t) = (i / T, i % T);
            if t < T - r {
                1 + (i * 7 % (V - 1)) as i64
            } else {
                PAD as i64
            }
        })
        .collect();
    let tokens = target.iter().filter(|&&t| t != PAD as i64).count();
    Inputs {
        hidden: draw(B * T * D),
        weight: draw(D * V),
        bias: draw(V),
        target,
        tokens,
    }
}

/// A tensor that requires gradients, from row-major values.
fn leaf<const N: usize>(v: &[f32], shape: [usize; N], dev: &Device) -> Tensor<N> {
    Tensor::from_data(TensorData::new(v.to_vec(), shape), dev).require_grad()
}

/// Both criteria on fresh leaves; returns (loss, nll_sum, d hidden, d weight, d bias).
fn run(
    x: &Inputs,
    dev: &Device,
    eps: f64,
    with_bias: bool,
    tied: bool,
    fused: bool,
) -> (f32, f32, Vec<f32>, Vec<f32>, Option<Vec<f32>>) {
    let hidden: Tensor<3> = leaf(&x.hidden, [B, T, D], dev);
    let table: Tensor<2> = leaf(&x.weight, if tied { [V, D] } else { [D, V] }, dev);
    let bias: Option<Tensor<1>> = with_bias.then(|| leaf(&x.bias, [V], dev));
    let output = OutputLayer {
        weight: if tied {
            table.clone().transpose()
        } else {
            table.clone()
        },
        bias: bias.clone(),
    };
    let target: Tensor<2, Int> = Tensor::from_data(TensorData::new(x.target.clone(), [B, T]), dev);
    let LossOutput { loss, nll_sum } = if fused {
        projected_label_smoothed_nll(hidden.clone(), &output, target, PAD, eps, x.tokens)
    } else {
        label_smoothed_nll(output.logits(hidden.clone()), target, PAD, eps, x.tokens)
    };
    let grads = loss.backward();
    let mut d_weight = values(table.grad(&grads).unwrap());
    if tied {
        // Compare in the untied layout `[D, V]`.
        d_weight = (0..D * V).map(|i| d_weight[(i % V) * D + i / V]).collect();
    }
    (
        loss.into_scalar::<f32>(),
        nll_sum.into_scalar::<f32>(),
        values(hidden.grad(&grads).unwrap()),
        d_weight,
        bias.map(|b| values(b.grad(&grads).unwrap())),
    )
}

fn assert_close(what: &str, a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-3);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 2e-5 * scale,
            "{what}[{i}]: fused {x} vs reference {y} (scale {scale})"
        );
    }
}

#[test]
fn fused_criterion_has_the_value_and_gradients_of_the_plain_one() {
    let dev = Device::default().autodiff();
    dev.seed(7);
    let x = inputs(&dev);
    assert!(x.tokens < B * T, "the targets must contain padding");
    for eps in [0.0, 0.1] {
        for (with_bias, tied) in [(false, false), (true, false), (false, true)] {
            let case = format!("eps {eps}, bias {with_bias}, tied {tied}");
            let fused = run(&x, &dev, eps, with_bias, tied, true);
            let plain = run(&x, &dev, eps, with_bias, tied, false);
            assert!(plain.0 > 0.5, "{case}: a loss worth comparing");
            assert!(
                (fused.0 - plain.0).abs() <= 1e-5 * plain.0,
                "{case}: loss {} vs {}",
                fused.0,
                plain.0
            );
            assert!(
                (fused.1 - plain.1).abs() <= 1e-5 * plain.1,
                "{case}: nll_sum"
            );
            assert_close(&format!("{case}: d hidden"), &fused.2, &plain.2);
            assert_close(&format!("{case}: d weight"), &fused.3, &plain.3);
            match (fused.4, plain.4) {
                (Some(f), Some(p)) => assert_close(&format!("{case}: d bias"), &f, &p),
                (None, None) => {}
                _ => panic!("{case}: bias gradient on one side only"),
            }
            // Padding positions get no gradient at all.
            let pad_rows: Vec<usize> = (0..B * T).filter(|&i| x.target[i] == PAD as i64).collect();
            for &r in &pad_rows {
                assert!(fused.2[r * D..(r + 1) * D].iter().all(|&g| g == 0.0));
            }
        }
    }
}
