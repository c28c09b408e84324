//! Beam 5 over a whole batch versus 5 greedy runs one sentence at a time.
//!
//! The toy model's step costs a fixed per-call overhead plus a per-row cost (busy-waited), like a
//! neural network on an accelerator, so batching rows amortises the overhead. Run with
//! `cargo bench -p s2s-search`; nothing here asserts on time.

use std::time::{Duration, Instant};

use s2s_search::toy::{Fallback, StepCost, TableModel};
use s2s_search::{LengthPenalty, SearchConfig, SpecialTokens, Strategy, search};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

fn main() {
    let vocab = 512;
    let sentences = 32;
    let cost = StepCost {
        per_call: Duration::from_micros(500),
        per_row: Duration::from_micros(5),
    };
    let model = TableModel::random(vocab, SPECIAL, 11)
        .with_fallback(Fallback::Hashed {
            seed: 11,
            sharpness: 20.0,
            eos_growth: 1.5,
        })
        .with_cost(cost);
    let sources: Vec<Vec<u32>> = (0..sentences)
        .map(|i| {
            (0..5 + i % 17)
                .map(|j| 4 + ((i * 31 + j * 7) % 500) as u32)
                .collect()
        })
        .collect();
    let cfg = |strategy| SearchConfig {
        strategy,
        nbest: 1,
        length_penalty: LengthPenalty::Alpha(0.75),
        min_len: 12,
        max_len: 60,
        special: SPECIAL,
        ..SearchConfig::default()
    };

    model.reset_stats();
    let t = Instant::now();
    let beam = search(&model, &sources, &cfg(Strategy::Beam { k: 5 })).unwrap();
    let beam_time = t.elapsed();
    let beam_stats = model.stats();

    model.reset_stats();
    let t = Instant::now();
    let mut greedy = Vec::new();
    for _ in 0..5 {
        greedy.clear();
        for src in &sources {
            greedy
                .extend(search(&model, std::slice::from_ref(src), &cfg(Strategy::Greedy)).unwrap());
        }
    }
    let greedy_time = t.elapsed();
    let greedy_stats = model.stats();

    let mean_len = |out: &[Vec<s2s_search::Hypothesis>]| {
        out.iter().map(|h| h[0].tokens.len()).sum::<usize>() as f64 / out.len() as f64
    };
    println!(
        "toy model: |V| = {vocab}, step cost = {:?} per call + {:?} per row, {sentences} sentences",
        cost.per_call, cost.per_row
    );
    println!(
        "beam k=5, one batch:               {:>9.1} ms  ({} step calls, {} rows, mean output length {:.1})",
        beam_time.as_secs_f64() * 1e3,
        beam_stats.steps,
        beam_stats.rows,
        mean_len(&beam)
    );
    println!(
        "greedy x5, one sentence at a time: {:>9.1} ms  ({} step calls, {} rows, mean output length {:.1})",
        greedy_time.as_secs_f64() * 1e3,
        greedy_stats.steps,
        greedy_stats.rows,
        mean_len(&greedy)
    );
    println!(
        "ratio (beam-5 batch / 5 x unbatched greedy): {:.3}  (beam is {:.1}x cheaper)",
        beam_time.as_secs_f64() / greedy_time.as_secs_f64(),
        greedy_time.as_secs_f64() / beam_time.as_secs_f64()
    );
}
