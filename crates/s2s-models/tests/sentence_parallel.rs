//! Sentence-parallel decoding (`s2s_models::workers`): a batch split over the cores decodes to
//! exactly what one search over the whole batch gives, for every model family, greedy and beam,
//! scores and attention included.

mod common;

use common::*;
use s2s_models::decoder::{Decoder, translate_all};
use s2s_models::workers::{MIN_SENTENCES_PER_WORKER, worker_count};
use s2s_search::{SearchConfig, SpecialTokens, Strategy};

/// This test binary's rayon pool: two threads, so that there are two workers even on a
/// one-core machine.
fn two_threads() {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build_global();
    assert_eq!(rayon::current_num_threads(), 2);
}

#[test]
fn batches_split_only_on_the_cpu_and_only_when_large() {
    two_threads();
    let cpu = device();
    assert_eq!(worker_count(&cpu, 2 * MIN_SENTENCES_PER_WORKER), 2);
    assert_eq!(worker_count(&cpu, 2 * MIN_SENTENCES_PER_WORKER - 1), 1);
    assert_eq!(
        worker_count(&cpu, 1000),
        2,
        "never more workers than threads"
    );
}

#[test]
fn split_batch_decodes_as_one_search() {
    two_threads();
    // 40 sentences of 1 to 12 tokens: two workers of 20, each with its own padded length.
    let sources: Vec<Vec<u32>> = (0..40u64)
        .map(|i| tokens(1 + (i as usize * 7) % 12, i))
        .collect();
    assert_eq!(worker_count(&device(), sources.len()), 2);
    for name in [
        "rnnsearch-tiny",
        "rnn-lstm-tiny",
        "transformer-tiny",
        "convs2s-tiny",
    ] {
        let cfg = s2s_models::config::preset(name).unwrap();
        let model = build(&cfg);
        for (strategy, nbest) in [(Strategy::Greedy, 1), (Strategy::Beam { k: 3 }, 2)] {
            let search = SearchConfig {
                strategy,
                nbest,
                max_len: 15,
                return_attention: true,
                special: SpecialTokens {
                    pad: PAD,
                    bos: BOS,
                    eos: EOS,
                    unk: s2s_data::UNK,
                },
                ..Default::default()
            };
            let split = translate_all(&model, &device(), VOCAB, &sources, &search, 64).unwrap();
            let decoder: Decoder = Decoder::new(&model, device(), search.special, VOCAB);
            let whole = s2s_search::search(&decoder, &sources, &search).unwrap();
            assert_eq!(split.len(), whole.len());
            for (i, (a, b)) in split.iter().zip(&whole).enumerate() {
                assert_eq!(a.len(), b.len(), "{name} {strategy:?} sentence {i}");
                for (x, y) in a.iter().zip(b) {
                    assert_eq!(x.tokens, y.tokens, "{name} {strategy:?} sentence {i}");
                    assert_eq!(x.score.to_bits(), y.score.to_bits(), "{name} {i}");
                    assert_eq!(x.logprob.to_bits(), y.logprob.to_bits(), "{name} {i}");
                    assert_eq!(x.attention, y.attention, "{name} {strategy:?} sentence {i}");
                }
            }
        }
    }
}

/// A search too small to split runs inside the global pool with the other thread spinning
/// (`run_with_helpers_awake`): it runs on a pool thread, its parallel ops finish, a panic
/// reaches the caller and leaves the next scope working, callers on several threads at once
/// (only one gets the spinning scope) all finish, and no caller waits for another's work.
#[test]
fn small_searches_run_in_the_pool_with_helpers_awake() {
    use rayon::prelude::*;
    use s2s_models::workers::run_with_helpers_awake;
    two_threads();
    let cpu = device();
    let work = || {
        let sum: u64 = (0..100_000u64).into_par_iter().map(|v| v % 7).sum();
        (rayon::current_thread_index(), sum)
    };
    let want: u64 = (0..100_000u64).map(|v| v % 7).sum();
    let (thread, sum) = run_with_helpers_awake(&cpu, work);
    assert!(thread.is_some(), "runs on a thread of the pool");
    assert_eq!(sum, want);

    let panicked = std::panic::catch_unwind(|| {
        run_with_helpers_awake(&cpu, || -> () { panic!("inside the search") })
    });
    assert!(panicked.is_err(), "the panic reaches the caller");
    let (thread, sum) = run_with_helpers_awake(&cpu, work);
    assert!(thread.is_some(), "the scope opens again after a panic");
    assert_eq!(sum, want);

    let sums: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| run_with_helpers_awake(&cpu, work).1))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(sums, vec![want; 4]);

    // Another caller's job, taken by a spinning helper, does not hold this caller: `f` returns
    // once the job has started, and the call returns while the job still waits for the caller.
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let started = std::sync::Arc::new(AtomicBool::new(false));
    let released = std::sync::Arc::new(AtomicBool::new(false));
    let (job_started, job_released) = (started.clone(), released.clone());
    let foreign = move || {
        job_started.store(true, Ordering::Release);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !job_released.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::yield_now();
        }
        job_released.load(Ordering::Acquire)
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    run_with_helpers_awake(&cpu, || {
        std::thread::spawn(move || rayon::spawn(move || done_tx.send(foreign()).unwrap()));
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    });
    released.store(true, Ordering::Release);
    assert!(
        done_rx.recv().unwrap(),
        "the call waited for the other caller's job"
    );
}
