//! The one search loop: every strategy runs through [`run`] and supplies only an [`Expand`].
//!
//! Greedy, beam, sampling and exhaustive search differ only in which one-token extensions of a
//! sentence's open hypotheses they take at each step. Everything else (starting the model,
//! stepping the live rows, checking the output, the rows and `last_tokens` of every open
//! hypothesis, finishing hypotheses at `<eos>`, the stopping rule, collecting results, reordering
//! the model's rows) is done here once, so every strategy keeps rows and sentences apart in the
//! same way, which is what the crate's batch invariance rests on.

use crate::common::{Allowed, Finished, Limits, Open, Rules, clean};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::step::{Source, StepModel, StepOutput};

/// One extension chosen by a strategy: open hypothesis `parent` of the sentence followed by
/// `token`. It finishes the hypothesis when `token` is `<eos>` and stays open otherwise.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extension {
    pub parent: usize,
    pub token: u32,
}

/// A search strategy: its choice of extensions, and the few settings the driver asks of it.
pub(crate) trait Expand {
    /// What an open hypothesis carries besides its tokens, handed on to its extensions
    /// (sampling: its random stream; `()` for the others).
    type Extra: Clone;

    /// The extras of the open hypotheses a sentence starts with, one per hypothesis; they all
    /// read the sentence's first row.
    fn start<Src: Source>(&self, source: &Src) -> Vec<Self::Extra>;

    /// How many finished hypotheses a sentence keeps (the best by score), given how many are
    /// returned.
    fn keep(&self, nbest: usize) -> usize {
        nbest
    }

    /// Whether a sentence stops as soon as it keeps [`Expand::keep`] finished hypotheses and no
    /// open one can beat the worst of them (the crate docs' stopping rule). Otherwise it runs
    /// until no hypothesis is open.
    fn bounded(&self) -> bool {
        false
    }

    /// Appends to `chosen` the extensions to take for one sentence. The open ones become the
    /// sentence's next hypotheses in the order given (the beam index of the tie-break).
    fn expand(&mut self, frontier: Frontier<'_, Self::Extra>, chosen: &mut Vec<Extension>);
}

/// An open hypothesis, the row of the step output it reads, and its strategy's extra.
struct Branch<X> {
    open: Open,
    row: usize,
    extra: X,
}

/// One sentence's open hypotheses at one step, as its strategy sees them.
pub(crate) struct Frontier<'a, X> {
    branches: &'a mut [Branch<X>],
    log_probs: &'a [f32],
    vocab: usize,
    rules: &'a Rules,
    limits: &'a Limits,
}

/// One open hypothesis, as its strategy sees it.
pub(crate) struct OpenHyp<'a, X> {
    /// Its position in the sentence: the `parent` of its extensions.
    pub index: usize,
    /// Its log-prob so far.
    pub logprob: f32,
    /// The model's next-token log-probs after it, one per vocabulary entry.
    pub log_probs: &'a [f32],
    /// The tokens it may emit next.
    pub allowed: Allowed,
    pub extra: &'a mut X,
}

impl<X> Frontier<'_, X> {
    pub fn eos(&self) -> u32 {
        self.rules.eos()
    }

    /// The open hypotheses, in order.
    pub fn hyps(&mut self) -> impl Iterator<Item = OpenHyp<'_, X>> {
        let (log_probs, vocab, rules, limits) =
            (self.log_probs, self.vocab, self.rules, self.limits);
        self.branches
            .iter_mut()
            .enumerate()
            .map(move |(index, b)| OpenHyp {
                index,
                logprob: b.open.logprob,
                log_probs: &log_probs[b.row * vocab..(b.row + 1) * vocab],
                allowed: rules.allowed(&b.open.tokens, limits),
                extra: &mut b.extra,
            })
    }
}

/// A sentence still being searched; its open hypotheses are `first..first + len` of the step's
/// branches.
struct Live {
    sent: usize,
    first: usize,
    len: usize,
    finished: Finished,
}

/// Decodes `sources` with `strategy`; returns, per sentence, its best `cfg.nbest` hypotheses.
pub(crate) fn run<M: StepModel, S: Expand>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
    mut strategy: S,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let vocab = model.vocab_size();
    let rules = Rules::new(cfg, vocab);
    let eos = rules.eos();
    let limits: Vec<Limits> = sources.iter().map(|s| Limits::new(cfg, s.len())).collect();
    let mut results = vec![Vec::new(); sources.len()];

    let mut state = model.start(sources);
    let mut branches = Vec::new();
    let mut live = Vec::with_capacity(sources.len());
    for (sent, source) in sources.iter().enumerate() {
        let extras = strategy.start(source);
        live.push(Live {
            sent,
            first: branches.len(),
            len: extras.len(),
            finished: Finished::new(strategy.keep(cfg.nbest)),
        });
        branches.extend(extras.into_iter().map(|extra| Branch {
            open: Open::empty(cfg.return_attention),
            row: sent,
            extra,
        }));
    }
    let mut next = NextRows::starting(sources.len(), cfg.special.bos);
    let mut chosen = Vec::new();
    let finish_after = if strategy.bounded() {
        cfg.finish_after(strategy.keep(cfg.nbest))
    } else {
        None
    };

    while !live.is_empty() {
        if cfg.interrupt.as_ref().is_some_and(|i| i.fired()) {
            return Err(SearchError::Interrupted);
        }
        let rows = next.tokens.len();
        let out = model.step(&mut state, &next.tokens);
        check_output(&out, rows, vocab)?;
        let step = Step {
            out: &out,
            rows,
            vocab,
            cfg,
        };
        next.clear();
        live.retain_mut(|s| {
            let lim = &limits[s.sent];
            let mine = &mut branches[s.first..s.first + s.len];
            chosen.clear();
            let frontier = Frontier {
                branches: &mut *mine,
                log_probs: &out.log_probs,
                vocab,
                rules: &rules,
                limits: lim,
            };
            strategy.expand(frontier, &mut chosen);
            for e in chosen.iter().filter(|e| e.token == eos) {
                let b = &mine[e.parent];
                let (lp, sum) = step.logprobs(b, e.token);
                let attn = step.attention(b, lim);
                s.finished.insert(b.open.finish(lp, sum, attn, cfg));
            }
            let open = || chosen.iter().filter(|e| e.token != eos);
            let stop = open().next().is_none()
                || finish_after.is_some_and(|n| s.finished.seen() >= n)
                || (strategy.bounded() && cannot_improve(&s.finished, &step, lim, mine, open()));
            if stop {
                let finished = std::mem::replace(&mut s.finished, Finished::new(0));
                results[s.sent] = finished.into_best(cfg.nbest);
                return false;
            }
            s.first = next.branches.len();
            s.len = next.extend(&step, lim, mine, open());
            true
        });
        std::mem::swap(&mut branches, &mut next.branches);
        if !live.is_empty() {
            reorder(model, &mut state, rows, &next.indices);
        }
    }
    Ok(results)
}

/// The stopping rule: the sentence keeps all the finished hypotheses it can, and none of its
/// `open` extensions can reach the worst of them.
fn cannot_improve<'e, X>(
    finished: &Finished,
    step: &Step<'_>,
    lim: &Limits,
    branches: &[Branch<X>],
    mut open: impl Iterator<Item = &'e Extension>,
) -> bool {
    finished.is_full()
        && finished.worst_score().is_some_and(|worst| {
            open.all(|e| {
                let b = &branches[e.parent];
                let sum = step.logprobs(b, e.token).1;
                lim.bound.of(sum, b.open.tokens.len() + 1) < worst
            })
        })
}

/// The current step's output.
struct Step<'a> {
    out: &'a StepOutput,
    rows: usize,
    vocab: usize,
    cfg: &'a SearchConfig,
}

impl Step<'_> {
    /// The log-prob of `token` after branch `b`, and the log-prob of `b` extended by it.
    fn logprobs<X>(&self, b: &Branch<X>, token: u32) -> (f32, f32) {
        let lp = clean(self.out.log_probs[b.row * self.vocab + token as usize]);
        (lp, b.open.logprob + lp)
    }

    /// Branch `b`'s attention row, when collected.
    fn attention<X>(&self, b: &Branch<X>, lim: &Limits) -> Option<Vec<f32>> {
        if self.cfg.return_attention {
            attention_row(self.out, self.rows, b.row, lim.src_len)
        } else {
            None
        }
    }
}

/// The rows of the next step, built sentence by sentence (the buffers are reused across steps).
struct NextRows<X> {
    branches: Vec<Branch<X>>,
    /// The token each row is fed next (`last_tokens`).
    tokens: Vec<u32>,
    /// The row of the current step output each row continues (for `reorder`).
    indices: Vec<usize>,
    /// Per branch of the sentence being extended: how many of its extensions are left to build.
    uses: Vec<usize>,
}

impl<X: Clone> NextRows<X> {
    /// The rows of the first step: one per sentence, fed `bos`.
    fn starting(sentences: usize, bos: u32) -> Self {
        NextRows {
            branches: Vec::new(),
            tokens: vec![bos; sentences],
            indices: Vec::new(),
            uses: Vec::new(),
        }
    }

    fn clear(&mut self) {
        self.branches.clear();
        self.tokens.clear();
        self.indices.clear();
    }

    /// Appends a sentence's `open` extensions of `branches` as rows; returns how many.
    fn extend<'e>(
        &mut self,
        step: &Step<'_>,
        lim: &Limits,
        branches: &mut [Branch<X>],
        open: impl Iterator<Item = &'e Extension> + Clone,
    ) -> usize {
        self.uses.clear();
        self.uses.resize(branches.len(), 0);
        for e in open.clone() {
            self.uses[e.parent] += 1;
        }
        let first = self.branches.len();
        for e in open {
            let b = &mut branches[e.parent];
            let (lp, sum) = step.logprobs(b, e.token);
            let attn = step.attention(b, lim);
            self.uses[e.parent] -= 1;
            // The last extension of a branch takes its hypothesis instead of copying it.
            let mut hyp = if self.uses[e.parent] == 0 {
                std::mem::take(&mut b.open)
            } else {
                b.open.clone()
            };
            hyp.push(e.token, lp, sum, attn);
            self.indices.push(b.row);
            self.branches.push(Branch {
                open: hyp,
                row: self.tokens.len(),
                extra: b.extra.clone(),
            });
            self.tokens.push(e.token);
        }
        self.branches.len() - first
    }
}

/// Checks the shape of a step output for `rows` rows.
fn check_output(out: &StepOutput, rows: usize, vocab: usize) -> Result<(), SearchError> {
    if out.log_probs.len() != rows * vocab {
        return Err(SearchError::BadModelOutput(format!(
            "expected {rows} x {vocab} = {} log-probs, got {}",
            rows * vocab,
            out.log_probs.len()
        )));
    }
    if let Some(a) = &out.attention
        && rows > 0
        && a.len() % rows != 0
    {
        return Err(SearchError::BadModelOutput(format!(
            "attention has {} values, not a multiple of {rows} rows",
            a.len()
        )));
    }
    Ok(())
}

/// The attention row `row`, trimmed to `src_len` (or the model's width if smaller).
fn attention_row(out: &StepOutput, rows: usize, row: usize, src_len: usize) -> Option<Vec<f32>> {
    let a = out.attention.as_ref()?;
    let width = a.len() / rows.max(1);
    let take = src_len.min(width);
    Some(a[row * width..row * width + take].to_vec())
}

/// Calls `reorder` unless `indices` is the identity on `rows` rows.
fn reorder<M: StepModel>(model: &M, state: &mut M::State, rows: usize, indices: &[usize]) {
    let identity = indices.len() == rows && indices.iter().enumerate().all(|(i, &j)| i == j);
    if !identity {
        model.reorder(state, indices);
    }
}
