//! Ancestral sampling with temperature, top-k and top-p, one random stream per sample.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use crate::common::{Allowed, clean, mix64};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::driver::{self, Expand, Extension, Frontier};
use crate::step::{Source, StepModel};

/// Sampling parameters, as in [`crate::Strategy::Sample`].
#[derive(Clone, Copy)]
pub(crate) struct Params {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub seed: u64,
}

/// The seed of sample `j` of a sentence: a function of the user seed, the sentence's source
/// and `j` only (never of the batch).
pub fn sample_seed<S: Source>(seed: u64, source: &S, j: usize) -> u64 {
    mix64(source.fingerprint(mix64(seed)) ^ mix64(j as u64 ^ 0x5EED))
}

/// Draws one token from the row's tempered, truncated distribution over the allowed tokens.
fn draw(lps: &[f32], allowed: &Allowed, vocab: usize, p: &Params, rng: &mut ChaCha8Rng) -> u32 {
    let t = p.temperature as f64;
    let mut c: Vec<(f64, u32)> = allowed
        .iter(vocab)
        .map(|v| (clean(lps[v as usize]) as f64 / t, v))
        .collect();
    if c.is_empty() {
        // Cannot happen: <eos> is always allowed when nothing else is.
        return 0;
    }
    let top_k = p.top_k > 0 && p.top_k < c.len();
    if top_k || p.top_p < 1.0 {
        c.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    }
    if top_k {
        c.truncate(p.top_k);
    }
    let max = c.iter().map(|x| x.0).fold(f64::NEG_INFINITY, f64::max);
    let mut w: Vec<f64> = if max == f64::NEG_INFINITY || max.is_nan() {
        vec![1.0; c.len()]
    } else {
        c.iter().map(|x| (x.0 - max).exp()).collect()
    };
    if p.top_p < 1.0 {
        let total: f64 = w.iter().sum();
        let target = p.top_p as f64 * total;
        let mut cum = 0.0;
        let mut keep = w.len();
        for (i, x) in w.iter().enumerate() {
            cum += x;
            if cum >= target {
                keep = i + 1;
                break;
            }
        }
        w.truncate(keep);
        c.truncate(keep);
    }
    let total: f64 = w.iter().sum();
    let u = (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) * total;
    let mut acc = 0.0;
    for (i, x) in w.iter().enumerate() {
        acc += x;
        if u < acc {
            return c[i].1;
        }
    }
    // Rounding: the last token with any weight.
    let last = w.iter().rposition(|&x| x > 0.0).unwrap_or(w.len() - 1);
    c[last].1
}

pub(crate) fn sample<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
    params: Params,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let sampler = Sampler {
        params,
        samples: cfg.nbest,
    };
    driver::run(model, sources, cfg, sampler)
}

/// Draws `samples` hypotheses per sentence, each one token at a time from its own stream; they
/// start on the sentence's one first row.
struct Sampler {
    params: Params,
    samples: usize,
}

impl Expand for Sampler {
    type Extra = ChaCha8Rng;

    fn start<Src: Source>(&self, source: &Src) -> Vec<ChaCha8Rng> {
        (0..self.samples)
            .map(|j| ChaCha8Rng::seed_from_u64(sample_seed(self.params.seed, source, j)))
            .collect()
    }

    fn expand(&mut self, mut frontier: Frontier<'_, ChaCha8Rng>, chosen: &mut Vec<Extension>) {
        for h in frontier.hyps() {
            let vocab = h.log_probs.len();
            let token = draw(h.log_probs, &h.allowed, vocab, &self.params, h.extra);
            chosen.push(Extension {
                parent: h.index,
                token,
            });
        }
    }
}
