//! Times single backend ops at the shapes of `s2s bench` (batch 64, source length 21, GRU 512,
//! vocabulary 8000): the matrix products of a step and the element-wise functions around them,
//! then decoding's products (GRU, FFN, output layer) as one worker core sees them (32 rows greedy, 160
//! beam 5; run with `RAYON_NUM_THREADS=1` to time one core), and one sentence's step through
//! burn's and the engine's `linear`.
//! `cargo run --release -p s2s-models --example op_probe`; see docs/performance.md.

use burn::tensor::{Distribution, Tensor};
use std::time::Instant;

/// Prints the mean time of `reps` calls after one warm-up call, and GFLOP/s when `flops` > 0.
fn time<F: FnMut()>(name: &str, flops: f64, reps: usize, mut f: F) {
    f();
    let t = Instant::now();
    for _ in 0..reps {
        f();
    }
    let s = t.elapsed().as_secs_f64() / reps as f64;
    if flops > 0.0 {
        println!(
            "{name:40} {:9.3} ms  {:7.1} GFLOP/s",
            s * 1e3,
            flops / s / 1e9
        );
    } else {
        println!("{name:40} {:9.3} ms", s * 1e3);
    }
}

/// Times `[m, k] @ [k, n]` for each shape; `read_back` copies the product out each time.
fn products(shapes: &[(usize, usize, usize)], read_back: bool) {
    let dev = burn::tensor::Device::default();
    for &(m, k, n) in shapes {
        let a: Tensor<2> = Tensor::random([m, k], Distribution::Default, &dev);
        let b: Tensor<2> = Tensor::random([k, n], Distribution::Default, &dev);
        let flops = 2.0 * (m * k * n) as f64;
        let reps = (2e9 / flops).clamp(20.0, 2000.0) as usize;
        time(&format!("matmul {m}x{k} @ {k}x{n}"), flops, reps, || {
            let c = a.clone().matmul(b.clone());
            if read_back {
                let _ = c.into_data();
            }
        });
    }
}

fn main() {
    s2s_models::allocator::tune();
    let dev = burn::tensor::Device::default();
    products(
        &[
            (64, 1792, 1536),
            (64, 256, 8000),
            (64, 1792, 256),
            (1344, 256, 1536),
            (1280, 256, 8000),
            (320, 1792, 1536),
            (320, 256, 8000),
        ],
        true,
    );
    // As a decoding step runs them: each weight packed once for the whole search, the result
    // left in place.
    println!("-- weights packed once (with_packed_weights), no read-back");
    s2s_models::engine::packed::with_packed_weights(|| {
        products(
            &[
                (32, 1792, 1536),
                (32, 512, 1536),
                (32, 256, 8000),
                (32, 256, 1024),
                (32, 1024, 256),
                (160, 1792, 1536),
                (160, 256, 8000),
                (160, 256, 1024),
                (160, 1024, 256),
            ],
            false,
        )
    });
    // One sentence's greedy decoding step (one row) on the Transformer's shapes: burn's
    // `linear` (gemm's gemv) against the engine's (its own gemv), in the
    // global pool with the other threads awake, as a search of one sentence runs, so
    // `RAYON_NUM_THREADS` sets the threads.
    println!("-- a step of one sentence: burn linear | engine linear, weights packed once");
    let one_sentence = || {
        s2s_models::engine::packed::with_packed_weights(|| {
            for &(m, k, n) in &[
                (1, 256, 256),
                (1, 256, 1024),
                (1, 1024, 256),
                (1, 256, 8000),
            ] {
                let x: Tensor<2> = Tensor::random([m, k], Distribution::Default, &dev);
                let w: Tensor<2> = Tensor::random([k, n], Distribution::Default, &dev);
                let flops = 2.0 * (m * k * n) as f64;
                time(
                    &format!("burn linear {m}x{k} @ {k}x{n}"),
                    flops,
                    2000,
                    || {
                        let _ =
                            burn::tensor::module::linear(x.clone(), w.clone(), None).into_data();
                    },
                );
                time(
                    &format!("engine linear {m}x{k} @ {k}x{n}"),
                    flops,
                    2000,
                    || {
                        let _ = s2s_models::engine::linear(x.clone(), w.clone(), None).into_data();
                    },
                );
            }
        })
    };
    s2s_models::workers::run_with_helpers_awake(&dev, one_sentence);
    let x: Tensor<3> = Tensor::random([64, 21, 512], Distribution::Default, &dev);
    time("tanh 64x21x512", 0.0, 50, || {
        let _ = (x.clone() * 1.0).tanh().into_data();
    });
    time("mul only 64x21x512", 0.0, 50, || {
        let _ = (x.clone() * 1.0).into_data();
    });
    time("sigmoid 64x21x512", 0.0, 50, || {
        let _ = burn::tensor::activation::sigmoid(x.clone() * 1.0).into_data();
    });
    let l: Tensor<2> = Tensor::random([64, 8000], Distribution::Default, &dev);
    time("log_softmax 64x8000", 0.0, 50, || {
        let _ = burn::tensor::activation::log_softmax(l.clone(), 1).into_data();
    });
}
