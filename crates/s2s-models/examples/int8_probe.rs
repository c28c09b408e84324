//! Times the int8 product (`Int8Matrix::matmul_with`, every kernel this CPU has) against the f32
//! product with packed weights, at the shapes of a Transformer-small decoding step (d 256, FFN
//! 1024, vocabulary 8000): 1 and 5 rows (one sentence, greedy and beam 5) and 32 and 160 rows (one
//! worker's half of a batch of 64, greedy and beam 5). Run with `RAYON_NUM_THREADS=1` to time one
//! core. `cargo run --release -p s2s-models --example int8_probe`; see docs/performance.md.

use burn::tensor::{Distribution, Tensor};
use s2s_models::engine::int8::{Int8Matrix, Kernel};
use std::time::Instant;

/// The mean seconds of one call over about 0.3 s of calls, after one warm-up call.
fn seconds<F: FnMut()>(mut f: F) -> f64 {
    f();
    let t = Instant::now();
    let mut reps = 0usize;
    while t.elapsed().as_secs_f64() < 0.3 {
        f();
        reps += 1;
    }
    t.elapsed().as_secs_f64() / reps as f64
}

fn main() {
    s2s_models::allocator::tune();
    let dev = burn::tensor::Device::default();
    let kernels = Kernel::available();
    print!("{:28} {:>14}", "product (m x k @ k x n)", "f32 GMAC/s");
    for k in &kernels {
        print!(" {:>14}", format!("{} GMAC/s", k.name()));
    }
    println!();
    for m in [1, 5, 8, 32, 160] {
        for (k, n) in [(256, 256), (256, 1024), (1024, 256), (256, 8000)] {
            let macs = (m * k * n) as f64 / 1e9;
            let a: Tensor<2> = Tensor::random([m, k], Distribution::Default, &dev);
            let b: Tensor<2> = Tensor::random([k, n], Distribution::Default, &dev);
            let f32_s = s2s_models::engine::packed::with_packed_weights(|| {
                seconds(|| {
                    let _ = a.clone().matmul(b.clone());
                })
            });
            print!(
                "{:28} {:14.2}",
                format!("{m} x {k} @ {k} x {n}"),
                macs / f32_s
            );
            let x: Vec<f32> = a.to_data().try_to_vec::<f32>().unwrap();
            let w_t: Vec<f32> = b.clone().transpose().to_data().try_to_vec::<f32>().unwrap();
            let q = Int8Matrix::quantize(&w_t, n, k);
            let mut out = vec![0.0f32; m * n];
            for &kernel in &kernels {
                let s = seconds(|| q.matmul_with(kernel, &x, m, None, &mut out));
                print!(" {:14.2}", macs / s);
            }
            println!();
        }
    }
}
