//! Greedy decoding: beam search with `k = 1`, as the crate docs define it. Beam search's
//! candidate scan with `k = 1` is an argmax scan, so greedy needs no strategy of its own.
//!
//! `early_stop = false` (tests only) disables the bound-based stopping rule.

use crate::beam::beam;
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::step::StepModel;

pub(crate) fn greedy<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
    early_stop: bool,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    beam(model, sources, cfg, 1, early_stop)
}
