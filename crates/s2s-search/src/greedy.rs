//! Greedy decoding: beam search with `k = 1`, without the candidate lists.
//!
//! `early_stop = false` (tests only) disables the bound-based stopping rule.

use std::cmp::Ordering;

use crate::common::{
    Finished, Limits, Open, Rules, SCAN_BLOCK, attention_row, block_max, cand_order, check_output,
    clean, reorder,
};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::step::StepModel;

struct Live {
    sent: usize,
    open: Open,
    finished: Finished,
}

pub(crate) fn greedy<M: StepModel>(
    model: &M,
    sources: &[Vec<u32>],
    cfg: &SearchConfig,
    early_stop: bool,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let vocab = model.vocab_size();
    let rules = Rules::new(cfg, vocab);
    let eos = rules.eos();
    let limits: Vec<Limits> = sources.iter().map(|s| Limits::new(cfg, s)).collect();
    let mut results = vec![Vec::new(); sources.len()];

    let mut state = model.start(sources);
    let mut live: Vec<Live> = (0..sources.len())
        .map(|sent| Live {
            sent,
            open: Open::empty(cfg.return_attention),
            finished: Finished::new(1),
        })
        .collect();
    let mut last_tokens = vec![cfg.special.bos; sources.len()];

    while !live.is_empty() {
        let rows = live.len();
        let out = model.step(&mut state, &last_tokens);
        check_output(&out, rows, vocab)?;
        let mut indices = Vec::with_capacity(rows);
        last_tokens.clear();
        let mut next_live = Vec::with_capacity(rows);
        for (row, mut s) in live.into_iter().enumerate() {
            let lim = &limits[s.sent];
            let lps = &out.log_probs[row * vocab..(row + 1) * vocab];
            let allowed = rules.allowed(&s.open.tokens, lim);
            let mut best: Option<(f32, u32)> = None;
            let mut best_open: Option<(f32, u32)> = None;
            for (block, lps) in lps.chunks(SCAN_BLOCK).enumerate() {
                // `best` is never worse than `best_open`, so a token below `best_open` changes
                // neither: skip it before the rule check, a whole block at once where possible
                // (`block_max`; NaN compares false and goes on).
                if best_open.is_some_and(|(b, _)| s.open.logprob + block_max(lps) < b) {
                    continue;
                }
                for (i, &lp) in lps.iter().enumerate() {
                    let sum = s.open.logprob + clean(lp);
                    if best_open.is_some_and(|(b, _)| sum < b) {
                        continue;
                    }
                    let v = (block * SCAN_BLOCK + i) as u32;
                    if !allowed.permits(v) {
                        continue;
                    }
                    let better = |b: Option<(f32, u32)>| {
                        b.is_none_or(|b| cand_order((sum, v), b) == Ordering::Less)
                    };
                    if better(best) {
                        best = Some((sum, v));
                    }
                    if v != eos && better(best_open) {
                        best_open = Some((sum, v));
                    }
                }
            }
            let attn = |cfg: &SearchConfig| {
                if cfg.return_attention {
                    attention_row(&out, rows, row, lim.src_len)
                } else {
                    None
                }
            };
            if let Some((sum, v)) = best
                && v == eos
            {
                let h = s.open.finish(clean(lps[v as usize]), sum, attn(cfg), cfg);
                s.finished.insert(h);
            }
            let done = match best_open {
                None => true,
                Some((sum, v)) => {
                    s.open.push(v, clean(lps[v as usize]), sum, attn(cfg));
                    early_stop
                        && s.finished.worst_score().is_some_and(|worst| {
                            lim.bound.of(s.open.logprob, s.open.tokens.len()) < worst
                        })
                }
            };
            if done {
                results[s.sent] = s.finished.into_best(cfg.nbest);
            } else {
                indices.push(row);
                last_tokens.push(*s.open.tokens.last().unwrap());
                next_live.push(s);
            }
        }
        live = next_live;
        if !live.is_empty() {
            reorder(model, &mut state, rows, &indices);
        }
    }
    Ok(results)
}
