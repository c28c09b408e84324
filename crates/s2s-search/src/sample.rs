//! Ancestral sampling with temperature, top-k and top-p, one random stream per sample.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use crate::common::{
    Allowed, Limits, Open, Rules, attention_row, check_output, clean, hash_tokens, hyp_order,
    mix64, reorder,
};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::step::StepModel;

/// Sampling parameters, as in [`crate::Strategy::Sample`].
#[derive(Clone, Copy)]
pub(crate) struct Params {
    pub temperature: f32,
    pub top_k: usize,
    pub top_p: f32,
    pub seed: u64,
}

/// The seed of sample `j` of a sentence: a function of the user seed, the sentence's source
/// tokens and `j` only (never of the batch).
pub fn sample_seed(seed: u64, source: &[u32], j: usize) -> u64 {
    mix64(hash_tokens(mix64(seed), source) ^ mix64(j as u64 ^ 0x5EED))
}

struct Row {
    sent: usize,
    open: Open,
    rng: ChaCha8Rng,
    /// Position of this sample's row in the current step output.
    row: usize,
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
    sources: &[Vec<u32>],
    cfg: &SearchConfig,
    params: Params,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let vocab = model.vocab_size();
    let rules = Rules::new(cfg, vocab);
    let eos = rules.eos();
    let limits: Vec<Limits> = sources.iter().map(|s| Limits::new(cfg, s)).collect();
    let mut results: Vec<Vec<Hypothesis>> = vec![Vec::with_capacity(cfg.nbest); sources.len()];

    let mut state = model.start(sources);
    // The first step runs one row per sentence; every sample of a sentence reads that row.
    let mut live: Vec<Row> = Vec::with_capacity(sources.len() * cfg.nbest);
    for (sent, src) in sources.iter().enumerate() {
        for j in 0..cfg.nbest {
            live.push(Row {
                sent,
                open: Open::empty(cfg.return_attention),
                rng: ChaCha8Rng::seed_from_u64(sample_seed(params.seed, src, j)),
                row: sent,
            });
        }
    }
    let mut last_tokens = vec![cfg.special.bos; sources.len()];

    while !live.is_empty() {
        let rows = last_tokens.len();
        let out = model.step(&mut state, &last_tokens);
        check_output(&out, rows, vocab)?;
        let mut indices = Vec::with_capacity(live.len());
        last_tokens.clear();
        let mut next_live = Vec::with_capacity(live.len());
        for mut r in live.into_iter() {
            let lim = &limits[r.sent];
            let lps = &out.log_probs[r.row * vocab..(r.row + 1) * vocab];
            let allowed = rules.allowed(&r.open.tokens, lim);
            let v = draw(lps, &allowed, vocab, &params, &mut r.rng);
            let lp = clean(lps[v as usize]);
            let sum = r.open.logprob + lp;
            let attn = if cfg.return_attention {
                attention_row(&out, rows, r.row, lim.src_len)
            } else {
                None
            };
            if v == eos {
                results[r.sent].push(r.open.finish(lp, sum, attn, cfg));
            } else {
                r.open.push(v, lp, sum, attn);
                indices.push(r.row);
                r.row = last_tokens.len();
                last_tokens.push(v);
                next_live.push(r);
            }
        }
        live = next_live;
        if !live.is_empty() {
            reorder(model, &mut state, rows, &indices);
        }
    }
    for r in &mut results {
        r.sort_by(hyp_order);
    }
    Ok(results)
}
