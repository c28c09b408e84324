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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

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

/// Whether a [`run_with_helpers_awake`] scope is open somewhere in the process.
static AWAKE_SCOPE: AtomicBool = AtomicBool::new(false);

/// Runs `f`, a search too small to split over [`run_each`]'s workers, on a thread of the global
/// rayon pool while the pool's other threads wait for its op-level work spinning instead of
/// sleeping (OpenMP's active wait policy, which CTranslate2's threads use); just `f()` off the
/// CPU backend, with one thread, inside a rayon pool already, or while another such scope runs.
///
/// Why: decoding one sentence splits each large enough product over the threads, a few dozen
/// short parallel ops per step. From a thread outside the pool, each of them queued its work,
/// woke a sleeping thread and slept on a lock until the pool was done: two thread wake-ups per
/// product, each a trip through the kernel scheduler that on a 2-core VM cost more than the
/// product gained (`RAYON_NUM_THREADS=2` decoded one sentence at a time more slowly than 1).
/// Run inside the pool, the search's thread shares a product by pushing half of it onto its
/// own queue, which a spinning thread takes within a microsecond. The spinning threads run only
/// while `f` does, and take any other work queued in the pool meanwhile; `f`'s caller never
/// waits for them.
pub fn run_with_helpers_awake<R: Send>(device: &Device, f: impl FnOnce() -> R + Send) -> R {
    let threads = rayon::current_num_threads();
    if *device != Device::flex()
        || threads < 2
        || rayon::current_thread_index().is_some()
        || AWAKE_SCOPE.swap(true, Ordering::Acquire)
    {
        return f();
    }
    /// Closes the process's one scope, also when `f` unwinds.
    struct Close;
    impl Drop for Close {
        fn drop(&mut self) {
            AWAKE_SCOPE.store(false, Ordering::Release);
        }
    }
    let _close = Close;
    /// Ends the helpers' spinning when `f` returns or unwinds.
    struct Stop(Arc<AtomicBool>);
    impl Drop for Stop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    // The helpers are detached (`rayon::spawn`, not the scope's): one that took a long job of
    // another caller while spinning finishes it on its own, and `f`'s caller does not wait for
    // it (with a scope's helpers it did: a server's search waited on another's batch).
    rayon::scope(|_| {
        let runner = rayon::current_thread_index();
        for _ in 1..threads {
            let stop = Arc::clone(&stop);
            rayon::spawn(move || {
                // The runner itself may pick a helper up while it waits inside `f`, or after:
                // spinning there would wait for the `f` it is part of.
                if rayon::current_thread_index() == runner {
                    return;
                }
                while !stop.load(Ordering::Acquire) {
                    if rayon::yield_now() != Some(rayon::Yield::Executed) {
                        for _ in 0..4 {
                            std::hint::spin_loop();
                        }
                    }
                }
            });
        }
        let _stop = Stop(Arc::clone(&stop));
        f()
    })
}
