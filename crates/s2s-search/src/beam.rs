//! Beam search's choice of extensions (see the crate docs for the rules), and the block-skip scan
//! for a row's best tokens, which greedy search shares as beam search with `k = 1`.
//!
//! `early_stop = false` (tests only) disables the bound-based stopping rule.

use std::cmp::Ordering;

use crate::common::{Allowed, SCAN_BLOCK, block_max, cand_order, clean};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::driver::{self, Expand, Extension, Frontier};
use crate::step::{Source, StepModel};

pub(crate) fn beam<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
    k: usize,
    early_stop: bool,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    driver::run(model, sources, cfg, Beam::new(k, early_stop))
}

/// Keeps `k` open hypotheses per sentence: the first `k` candidates not ending in `<eos>`, and
/// finishes the candidates ending in `<eos>` that rank among the first `k`.
struct Beam {
    k: usize,
    early_stop: bool,
    /// Scratch: one hypothesis's best tokens, then the sentence's candidates.
    top: Vec<(f32, u32)>,
    cands: Vec<Cand>,
}

#[derive(Clone, Copy)]
struct Cand {
    sum: f32,
    token: u32,
    beam: usize,
}

impl Beam {
    pub fn new(k: usize, early_stop: bool) -> Self {
        Beam {
            k,
            early_stop,
            top: Vec::new(),
            cands: Vec::new(),
        }
    }
}

impl Expand for Beam {
    type Extra = ();

    fn start<Src: Source>(&self, _source: &Src) -> Vec<()> {
        vec![()]
    }

    fn keep(&self, _nbest: usize) -> usize {
        self.k
    }

    fn bounded(&self) -> bool {
        self.early_stop
    }

    fn expand(&mut self, mut frontier: Frontier<'_, ()>, chosen: &mut Vec<Extension>) {
        let (k, eos) = (self.k, frontier.eos());
        // Only each hypothesis's best k non-eos tokens and its <eos> are candidates. That
        // changes nothing: the sentence's first k non-eos candidates are among them, and an <eos>
        // candidate ranks below k among them exactly when it does among all (if one hypothesis
        // has k non-eos tokens ahead of it, those are kept; otherwise all ahead of it are).
        self.cands.clear();
        for h in frontier.hyps() {
            best_tokens(h.log_probs, h.logprob, &h.allowed, eos, k, &mut self.top);
            let cand = |(sum, token)| Cand {
                sum,
                token,
                beam: h.index,
            };
            self.cands.extend(self.top.iter().copied().map(cand));
            if h.allowed.permits(eos) {
                let sum = h.logprob + clean(h.log_probs[eos as usize]);
                self.cands.push(cand((sum, eos)));
            }
        }
        // Ties: token id, then beam index; (token, beam) is unique, so the order is total.
        self.cands.sort_unstable_by(|a, b| {
            cand_order((a.sum, a.token), (b.sum, b.token)).then(a.beam.cmp(&b.beam))
        });
        let mut open = 0;
        for (pos, c) in self.cands.iter().enumerate() {
            if open == k && pos >= k {
                break;
            }
            let ext = Extension {
                parent: c.beam,
                token: c.token,
            };
            if c.token == eos {
                if pos < k {
                    chosen.push(ext);
                }
            } else if open < k {
                chosen.push(ext);
                open += 1;
            }
        }
    }
}

/// Puts into `top` the best `k` allowed tokens of a row other than `eos`, as
/// `(logprob + clean(lp), token)`, best first by [`cand_order`].
///
/// Most tokens lose to the current `k`: they are rejected before the rule check, a whole block of
/// [`SCAN_BLOCK`] at once where possible ([`block_max`]). `<` is false for NaN, which then takes
/// the per-token path.
#[inline(never)] // On its own, the scan keeps its few values in registers (measured: fewer instructions).
pub(crate) fn best_tokens(
    lps: &[f32],
    logprob: f32,
    allowed: &Allowed,
    eos: u32,
    k: usize,
    top: &mut Vec<(f32, u32)>,
) {
    top.clear();
    // The k-th best sum once there are k (nothing is below -inf before), kept in a register.
    let mut threshold = f32::NEG_INFINITY;
    for (block, lps) in lps.chunks(SCAN_BLOCK).enumerate() {
        if logprob + block_max(lps) < threshold {
            continue;
        }
        for (i, &lp) in lps.iter().enumerate() {
            let sum = logprob + clean(lp);
            if sum < threshold {
                continue;
            }
            let v = (block * SCAN_BLOCK + i) as u32;
            if v != eos && allowed.permits(v) {
                push_top(top, k, (sum, v));
                if top.len() == k {
                    threshold = top[k - 1].0;
                }
            }
        }
    }
}

/// Keeps the best `cap` `(score, token)` pairs of a stream visited in increasing token order.
fn push_top(top: &mut Vec<(f32, u32)>, cap: usize, c: (f32, u32)) {
    if top.len() == cap {
        match top.last() {
            Some(&w) if cand_order(c, w) == Ordering::Less => {
                top.pop();
            }
            _ => return,
        }
    }
    let pos = top.partition_point(|&x| cand_order(x, c) != Ordering::Greater);
    top.insert(pos, c);
}
