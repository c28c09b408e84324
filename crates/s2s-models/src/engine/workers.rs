//! Batch splitting over the CPU cores: a batch is split into sub-batches that are searched (or,
//! in training, forwarded and backpropagated by a replica of the model) at the same time, one
//! per core, each with single-threaded tensor ops.
//!
//! Why: a decoding step multiplies 64 to 320 rows by each weight matrix, products of a few
//! hundred microseconds. Split over the cores op by op, every product, softmax and search scan
//! ends in a thread barrier, and everything between the products (the search's host-side work,
//! small element-wise ops) runs on one core while the others wait. A recurrent training step is
//! no different: a few dozen timesteps in sequence, each a handful of 64-row products, forwards
//! and backwards. Sentences are independent and search is batch-invariant, so giving each core
//! its own sentences computes the same hypotheses with one barrier per batch; in training, the
//! replicas' gradients add up to the batch's. Marian does both on CPUs this way (one worker per
//! thread, `--cpu-threads`); training is s2s-train's `data_parallel::split_over_cores`.

use burn::tensor::Device;
use std::sync::OnceLock;

/// A sub-batch smaller than this is not worth a worker of its own: below it, the products of
/// one step are too small to keep a core busy, and splitting them op by op is the better use.
pub const MIN_SENTENCES_PER_WORKER: usize = 8;

/// One single-threaded rayon pool per core. Inside a pool, burn-flex's rayon loops and gemm's
/// `Parallelism::Rayon(0)` see one thread and run inline, on that pool's own thread.
fn pools() -> &'static [rayon::ThreadPool] {
    static POOLS: OnceLock<Vec<rayon::ThreadPool>> = OnceLock::new();
    POOLS.get_or_init(|| {
        (0..rayon::current_num_threads())
            .map(|i| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .thread_name(move |_| format!("s2s-worker-{i}"))
                    .build()
                    .expect("cannot start a worker thread")
            })
            .collect()
    })
}

/// How many workers a batch of `sentences` on `device` gets: one per core, while each has at
/// least [`MIN_SENTENCES_PER_WORKER`] sentences; 1 (no split) on accelerators, which run a
/// whole batch at once anyway.
pub fn worker_count(device: &Device, sentences: usize) -> usize {
    if *device != Device::flex() {
        return 1;
    }
    let wanted = rayon::current_num_threads().min(sentences / MIN_SENTENCES_PER_WORKER);
    if wanted < 2 {
        return 1;
    }
    // The pools are made once, for the threads of the first batch that is split; a caller
    // inside a larger rayon pool still gets no more workers than there are pools.
    wanted.min(pools().len())
}

/// Runs `f` on every part at once, part `i` on worker `i`'s single-threaded pool, and returns
/// the results in order. A panic in any part is re-raised here.
pub fn run_each<T: Send, R: Send>(parts: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let pools = pools();
    assert!(parts.len() <= pools.len(), "more parts than workers");
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .zip(pools)
            .map(|(part, pool)| scope.spawn(move || pool.install(|| f(part))))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}
