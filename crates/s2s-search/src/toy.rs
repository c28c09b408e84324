//! A table-driven toy [`StepModel`] for tests, examples and benchmarks.
//!
//! [`TableModel`] gives every prefix (the tokens generated so far, without `<bos>`) a fixed
//! next-token distribution: either one set explicitly with [`TableModel::with_probs`], or a
//! fallback ([`Fallback`]) that is uniform or derived from a seeded hash of the prefix (and, if
//! [`TableModel::source_dependent`], of the source). Each row is computed independently of the
//! others, so the model is batch-invariant, and its state is real: one prefix per row, moved by
//! [`StepModel::reorder`]. An optional [`StepCost`] makes each call spin for a fixed overhead plus
//! a per-row cost, to mimic a neural network in benchmarks.

use std::cell::Cell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::{hash_tokens, mix64};
use crate::step::{SpecialTokens, StepModel, StepOutput};

/// Distribution of prefixes that have no explicit entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fallback {
    /// Uniform over every token except `pad` and `bos`.
    Uniform,
    /// `log_softmax(sharpness * u_v + [v == eos] * eos_growth * len(prefix))` where `u_v` in
    /// `[0, 1)` is a hash of `(seed, source if source-dependent, prefix, v)`. Every token,
    /// specials included, gets some probability.
    Hashed {
        seed: u64,
        sharpness: f32,
        eos_growth: f32,
    },
}

/// Simulated compute cost of one [`StepModel::step`] call (busy-waiting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepCost {
    pub per_call: Duration,
    pub per_row: Duration,
}

/// Counters of what the model was asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToyStats {
    pub starts: usize,
    pub steps: usize,
    /// Rows computed, summed over steps.
    pub rows: usize,
    pub reorders: usize,
}

/// See the [module docs](self).
#[derive(Clone, Debug)]
pub struct TableModel {
    vocab_size: usize,
    special: SpecialTokens,
    table: HashMap<Vec<u32>, Vec<f32>>,
    fallback: Fallback,
    source_dependent: bool,
    attention: bool,
    cost: StepCost,
    stats: Cell<ToyStats>,
}

#[derive(Clone, Debug)]
struct ToyRow {
    sent: usize,
    started: bool,
    prefix: Vec<u32>,
}

/// The state of a [`TableModel`]: the sources and one prefix per row.
#[derive(Clone, Debug)]
pub struct TableState {
    sources: Vec<Vec<u32>>,
    width: usize,
    rows: Vec<ToyRow>,
}

impl TableState {
    /// The generated prefix (without `<bos>`) of each row.
    pub fn prefixes(&self) -> Vec<&[u32]> {
        self.rows.iter().map(|r| r.prefix.as_slice()).collect()
    }
}

impl TableModel {
    /// A model with a [`Fallback::Uniform`] fallback and no explicit entries.
    pub fn uniform(vocab_size: usize, special: SpecialTokens) -> Self {
        TableModel {
            vocab_size,
            special,
            table: HashMap::new(),
            fallback: Fallback::Uniform,
            source_dependent: false,
            attention: false,
            cost: StepCost::default(),
            stats: Cell::new(ToyStats::default()),
        }
    }

    /// A model with a [`Fallback::Hashed`] fallback (sharpness 4, no eos growth) that depends on
    /// the source.
    pub fn random(vocab_size: usize, special: SpecialTokens, seed: u64) -> Self {
        TableModel {
            fallback: Fallback::Hashed {
                seed,
                sharpness: 4.0,
                eos_growth: 0.0,
            },
            source_dependent: true,
            ..Self::uniform(vocab_size, special)
        }
    }

    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = fallback;
        self
    }

    /// Whether the hashed fallback also depends on the source sentence.
    pub fn source_dependent(mut self, yes: bool) -> Self {
        self.source_dependent = yes;
        self
    }

    /// Return a (deterministic, hashed) attention distribution over the source at every step.
    pub fn with_attention(mut self, yes: bool) -> Self {
        self.attention = yes;
        self
    }

    pub fn with_cost(mut self, cost: StepCost) -> Self {
        self.cost = cost;
        self
    }

    /// Sets the distribution after `prefix` (generated tokens, without `<bos>`; for every source).
    /// Listed tokens get the given probabilities; the remaining mass `1 - sum` is shared equally
    /// by the unlisted tokens other than `pad` and `bos` (they get probability 0 if nothing
    /// remains).
    pub fn with_probs(mut self, prefix: &[u32], probs: &[(u32, f32)]) -> Self {
        let v = self.vocab_size;
        let mut p = vec![f64::NAN; v];
        let mut listed = 0.0f64;
        for &(t, q) in probs {
            assert!((t as usize) < v, "token {t} outside vocabulary of size {v}");
            p[t as usize] = q as f64;
            listed += q as f64;
        }
        let free: Vec<usize> = (0..v)
            .filter(|&t| {
                p[t].is_nan() && t as u32 != self.special.pad && t as u32 != self.special.bos
            })
            .collect();
        let rest = (1.0 - listed).max(0.0);
        for x in p.iter_mut() {
            if x.is_nan() {
                *x = 0.0;
            }
        }
        if rest > 1e-12 && !free.is_empty() {
            for &t in &free {
                p[t] = rest / free.len() as f64;
            }
        }
        let lp = p.iter().map(|&q| q.ln() as f32).collect();
        self.table.insert(prefix.to_vec(), lp);
        self
    }

    /// Counters since creation (or the last [`TableModel::reset_stats`]).
    pub fn stats(&self) -> ToyStats {
        self.stats.get()
    }

    pub fn reset_stats(&self) {
        self.stats.set(ToyStats::default());
    }

    pub fn special(&self) -> SpecialTokens {
        self.special
    }

    /// The next-token log-probs after `prefix` (without `<bos>`) for `source`.
    pub fn log_probs(&self, source: &[u32], prefix: &[u32]) -> Vec<f32> {
        if let Some(lp) = self.table.get(prefix) {
            return lp.clone();
        }
        let v = self.vocab_size;
        match self.fallback {
            Fallback::Uniform => {
                let s = self.special;
                let n = (0..v as u32).filter(|&t| t != s.pad && t != s.bos).count();
                let lp = -(n as f32).ln();
                (0..v as u32)
                    .map(|t| {
                        if t == s.pad || t == s.bos {
                            f32::NEG_INFINITY
                        } else {
                            lp
                        }
                    })
                    .collect()
            }
            Fallback::Hashed {
                seed,
                sharpness,
                eos_growth,
            } => {
                let key = if self.source_dependent {
                    hash_tokens(seed, source)
                } else {
                    mix64(seed)
                };
                let h = hash_tokens(key, prefix);
                let logits: Vec<f64> = (0..v as u64)
                    .map(|t| {
                        let u = (mix64(h ^ t.wrapping_mul(0xD6E8_FEB8_6659_FD93)) >> 11) as f64
                            / (1u64 << 53) as f64;
                        let mut x = sharpness as f64 * u;
                        if t == self.special.eos as u64 {
                            x += eos_growth as f64 * prefix.len() as f64;
                        }
                        x
                    })
                    .collect();
                let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let lse = max + logits.iter().map(|x| (x - max).exp()).sum::<f64>().ln();
                logits.iter().map(|x| (x - lse) as f32).collect()
            }
        }
    }

    /// The log-prob of `tokens` followed by `<eos>`, summed left to right in `f32` exactly as
    /// search sums it (so the two are bitwise comparable).
    pub fn sequence_logprob(&self, source: &[u32], tokens: &[u32]) -> f32 {
        let mut sum = 0.0f32;
        for i in 0..=tokens.len() {
            let next = tokens.get(i).copied().unwrap_or(self.special.eos);
            sum += self.log_probs(source, &tokens[..i])[next as usize];
        }
        sum
    }

    fn attention_row(&self, source: &[u32], prefix: &[u32], width: usize) -> Vec<f32> {
        let mut row = vec![0.0f32; width];
        let n = source.len().min(width);
        if n == 0 {
            return row;
        }
        let h = hash_tokens(hash_tokens(0xA77E, source), prefix);
        let w: Vec<f64> = (0..n as u64)
            .map(|i| (2.0 * (mix64(h ^ i) >> 11) as f64 / (1u64 << 53) as f64).exp())
            .collect();
        let total: f64 = w.iter().sum();
        for (r, x) in row.iter_mut().zip(&w) {
            *r = (x / total) as f32;
        }
        row
    }

    fn bump(&self, f: impl FnOnce(&mut ToyStats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }
}

fn spin(d: Duration) {
    if d.is_zero() {
        return;
    }
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

impl StepModel for TableModel {
    type State = TableState;

    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    type Source = Vec<u32>;

    fn start(&self, sources: &[Vec<u32>]) -> TableState {
        self.bump(|s| s.starts += 1);
        TableState {
            sources: sources.to_vec(),
            width: sources.iter().map(Vec::len).max().unwrap_or(0),
            rows: (0..sources.len())
                .map(|sent| ToyRow {
                    sent,
                    started: false,
                    prefix: Vec::new(),
                })
                .collect(),
        }
    }

    fn step(&self, state: &mut TableState, last_tokens: &[u32]) -> StepOutput {
        assert_eq!(last_tokens.len(), state.rows.len(), "one token per row");
        let rows = state.rows.len();
        spin(self.cost.per_call + self.cost.per_row * rows as u32);
        self.bump(|s| {
            s.steps += 1;
            s.rows += rows;
        });
        let mut log_probs = Vec::with_capacity(rows * self.vocab_size);
        let mut attention = self
            .attention
            .then(|| Vec::with_capacity(rows * state.width));
        for (row, &tok) in state.rows.iter_mut().zip(last_tokens) {
            if row.started {
                row.prefix.push(tok);
            } else {
                assert_eq!(
                    tok, self.special.bos,
                    "the first token of a row must be bos"
                );
                row.started = true;
            }
            let src = &state.sources[row.sent];
            log_probs.extend(self.log_probs(src, &row.prefix));
            if let Some(a) = attention.as_mut() {
                a.extend(self.attention_row(src, &row.prefix, state.width));
            }
        }
        StepOutput {
            log_probs,
            attention,
        }
    }

    fn reorder(&self, state: &mut TableState, indices: &[usize]) {
        self.bump(|s| s.reorders += 1);
        state.rows = indices.iter().map(|&i| state.rows[i].clone()).collect();
    }
}
