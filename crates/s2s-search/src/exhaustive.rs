//! Exact search: every open hypothesis is extended with every allowed token until `max_len`.

use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::driver::{self, Expand, Extension, Frontier};
use crate::step::{Source, StepModel};

/// `base^exp`, saturating at `u128::MAX`.
fn saturating_pow(base: usize, exp: usize) -> u128 {
    let mut acc: u128 = 1;
    for _ in 0..exp {
        acc = acc.saturating_mul(base as u128);
        if acc == u128::MAX || acc == 0 {
            break;
        }
    }
    acc
}

pub(crate) fn exhaustive<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let vocab = model.vocab_size();
    for source in sources {
        let max_len = cfg.max_len_for(source.len());
        let candidates = saturating_pow(vocab, max_len);
        if candidates > cfg.exhaustive_limit as u128 {
            return Err(SearchError::ExhaustiveTooLarge {
                vocab_size: vocab,
                max_len,
                candidates,
                limit: cfg.exhaustive_limit,
            });
        }
    }
    driver::run(model, sources, cfg, Exhaustive)
}

/// Takes every allowed extension.
struct Exhaustive;

impl Expand for Exhaustive {
    type Extra = ();

    fn start<Src: Source>(&self, _source: &Src) -> Vec<()> {
        vec![()]
    }

    fn expand(&mut self, mut frontier: Frontier<'_, ()>, chosen: &mut Vec<Extension>) {
        for h in frontier.hyps() {
            let parent = h.index;
            let tokens = h.allowed.iter(h.log_probs.len());
            chosen.extend(tokens.map(|token| Extension { parent, token }));
        }
    }
}
