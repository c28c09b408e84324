//! Every strategy drives the model the same way: `start` once, then steps over exactly the live
//! rows, each row fed `<bos>` first; `reorder` only between steps, only to keep live rows, never
//! as the identity, and never after the last step.

use std::cell::RefCell;

use s2s_search::toy::{Fallback, TableModel, TableState};
use s2s_search::{LengthPenalty, SearchConfig, StepModel, StepOutput, Strategy, search};

#[derive(Debug)]
enum Call {
    Start(usize),
    Step(Vec<u32>),
    Reorder(Vec<usize>),
}

/// A [`TableModel`] that records what it was asked to do.
struct Recorder {
    model: TableModel,
    calls: RefCell<Vec<Call>>,
}

impl StepModel for Recorder {
    type State = TableState;

    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
    }

    type Source = Vec<u32>;

    fn start(&self, sources: &[Vec<u32>]) -> TableState {
        self.calls.borrow_mut().push(Call::Start(sources.len()));
        self.model.start(sources)
    }

    fn step(&self, state: &mut TableState, last_tokens: &[u32]) -> StepOutput {
        self.calls
            .borrow_mut()
            .push(Call::Step(last_tokens.to_vec()));
        self.model.step(state, last_tokens)
    }

    fn reorder(&self, state: &mut TableState, indices: &[usize]) {
        self.calls
            .borrow_mut()
            .push(Call::Reorder(indices.to_vec()));
        self.model.reorder(state, indices)
    }
}

/// Checks the call sequence of one search over `sentences` sources.
fn check_calls(calls: &[Call], sentences: usize, bos: u32) {
    let Some((Call::Start(n), rest)) = calls.split_first() else {
        panic!("search must start with start: {calls:?}");
    };
    assert_eq!(*n, sentences);
    let mut rows = sentences;
    let mut stepped = false;
    for (i, call) in rest.iter().enumerate() {
        match call {
            Call::Start(_) => panic!("start called twice"),
            Call::Step(last) => {
                assert!(rows > 0, "a step over no rows");
                assert_eq!(last.len(), rows, "step {i}: one token per live row");
                if i == 0 {
                    assert!(last.iter().all(|&t| t == bos));
                } else {
                    assert!(last.iter().all(|&t| t != bos));
                }
                stepped = true;
            }
            Call::Reorder(indices) => {
                assert!(stepped, "reorder before any step, or twice in a row");
                assert!(
                    !indices.is_empty(),
                    "reorder to no rows: search should have ended"
                );
                assert!(
                    indices.iter().all(|&j| j < rows),
                    "reorder {indices:?} of {rows} rows"
                );
                let identity =
                    indices.len() == rows && indices.iter().enumerate().all(|(a, &b)| a == b);
                assert!(!identity, "identity reorder");
                assert!(
                    matches!(rest.get(i + 1), Some(Call::Step(_))),
                    "reorder after the last step"
                );
                rows = indices.len();
                stepped = false;
            }
        }
    }
    assert!(
        matches!(rest.last(), Some(Call::Step(_))),
        "search must end with a step"
    );
}

#[test]
fn every_strategy_steps_only_live_rows_and_reorders_between_steps() {
    let sources: Vec<Vec<u32>> = (0..9u32)
        .map(|i| (0..i % 5).map(|j| 4 + (i * 3 + j) % 6).collect())
        .collect();
    let strategies = [
        (Strategy::Greedy, 1),
        (Strategy::Beam { k: 1 }, 1),
        (Strategy::Beam { k: 4 }, 3),
        (Strategy::Exhaustive, 2),
        (
            Strategy::Sample {
                temperature: 1.0,
                top_k: 0,
                top_p: 1.0,
                seed: 5,
            },
            3,
        ),
    ];
    let special = SearchConfig::default().special;
    for seed in 0..8 {
        for (strategy, nbest) in strategies {
            let recorder = Recorder {
                model: TableModel::random(10, special, seed).with_fallback(Fallback::Hashed {
                    seed,
                    sharpness: 3.0,
                    eos_growth: 0.5,
                }),
                calls: RefCell::new(Vec::new()),
            };
            let cfg = SearchConfig {
                strategy,
                nbest,
                length_penalty: LengthPenalty::Alpha(0.75),
                min_len: 1,
                max_len: if strategy == Strategy::Exhaustive {
                    3
                } else {
                    12
                },
                special,
                ..SearchConfig::default()
            };
            let out = search(&recorder, &sources, &cfg).unwrap();
            assert_eq!(out.len(), sources.len());
            check_calls(&recorder.calls.borrow(), sources.len(), special.bos);
        }
    }
}
