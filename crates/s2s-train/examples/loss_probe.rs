//! Times one forward and backward pass of the training criterion at `s2s bench`'s shapes (64 x 20
//! target tokens, hidden 256, vocabulary 8000): the plain `label_smoothed_nll` on logits against
//! the fused `projected_label_smoothed_nll`, for a tied projection, one with a bias, and one
//! without. `cargo run --release -p s2s-train --example loss_probe`; see docs/performance.md.

use burn::tensor::{Device, Distribution, Int, Tensor};
use s2s_models::OutputLayer;
use s2s_train::loss::{label_smoothed_nll, projected_label_smoothed_nll};
use std::time::Instant;

fn main() {
    s2s_models::allocator::tune();
    let dev = Device::default().autodiff();
    let (b, t, d, v) = (64usize, 20usize, 256usize, 8000usize);
    for (bias, tied) in [(false, true), (true, false), (false, false)] {
        for fused in [false, true] {
            let mut times = Vec::new();
            for _ in 0..7 {
                let hidden: Tensor<3> =
                    Tensor::random([b, t, d], Distribution::Normal(0.0, 1.0), &dev).require_grad();
                let shape = if tied { [v, d] } else { [d, v] };
                let table: Tensor<2> =
                    Tensor::random(shape, Distribution::Normal(0.0, 0.06), &dev).require_grad();
                let output = OutputLayer {
                    weight: if tied { table.transpose() } else { table },
                    bias: bias.then(|| Tensor::<1>::zeros([v], &dev).require_grad()),
                };
                let target: Tensor<2, Int> =
                    Tensor::<2>::random([b, t], Distribution::Uniform(1.0, v as f64 - 1.0), &dev)
                        .int();
                let start = Instant::now();
                let out = if fused {
                    projected_label_smoothed_nll(hidden.clone(), &output, target, 0, 0.1, b * t)
                } else {
                    label_smoothed_nll(output.logits(hidden.clone()), target, 0, 0.1, b * t)
                };
                let grads = out.loss.backward();
                let _ = hidden.grad(&grads).expect("hidden gradient").into_data();
                times.push(start.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(f64::total_cmp);
            let name = if fused { "fused" } else { "plain" };
            println!(
                "{name} criterion, tied {tied:5}, bias {bias:5}: {:7.1} ms (median of 7)",
                times[3]
            );
        }
    }
}
