//! Batched beam search (see the crate docs for the rules).
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
    beams: Vec<Open>,
    finished: Finished,
}

#[derive(Clone, Copy)]
struct Cand {
    sum: f32,
    token: u32,
    beam: usize,
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

pub(crate) fn beam<M: StepModel>(
    model: &M,
    sources: &[Vec<u32>],
    cfg: &SearchConfig,
    k: usize,
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
            beams: vec![Open::empty(cfg.return_attention)],
            finished: Finished::new(k),
        })
        .collect();
    let mut last_tokens = vec![cfg.special.bos; sources.len()];
    // Each beam has at most one <eos> candidate, so its best k + 1 candidates contain every one
    // of its candidates that can be among the sentence's first k non-eos candidates or among its
    // first k candidates overall.
    let per_beam = k.saturating_add(1).min(vocab);
    let mut top: Vec<(f32, u32)> = Vec::with_capacity(per_beam + 1);
    let mut cands: Vec<Cand> = Vec::new();

    while !live.is_empty() {
        let rows = last_tokens.len();
        let out = model.step(&mut state, &last_tokens);
        check_output(&out, rows, vocab)?;
        let mut indices = Vec::with_capacity(rows);
        last_tokens.clear();
        let mut next_live = Vec::with_capacity(live.len());
        let mut row0 = 0;
        for mut s in live.into_iter() {
            let lim = &limits[s.sent];
            let beams = std::mem::take(&mut s.beams);
            cands.clear();
            for (b, open) in beams.iter().enumerate() {
                let lps = &out.log_probs[(row0 + b) * vocab..(row0 + b + 1) * vocab];
                let allowed = rules.allowed(&open.tokens, lim);
                top.clear();
                for (block, lps) in lps.chunks(SCAN_BLOCK).enumerate() {
                    // Most tokens lose to the current k + 1: reject them before the rule check,
                    // a whole block at once where possible (`block_max`). `<` is false for NaN,
                    // which then takes the full path as before.
                    if top.len() == per_beam && open.logprob + block_max(lps) < top[per_beam - 1].0
                    {
                        continue;
                    }
                    for (i, &lp) in lps.iter().enumerate() {
                        let sum = open.logprob + clean(lp);
                        if top.len() == per_beam && sum < top[per_beam - 1].0 {
                            continue;
                        }
                        let v = (block * SCAN_BLOCK + i) as u32;
                        if allowed.permits(v) {
                            push_top(&mut top, per_beam, (sum, v));
                        }
                    }
                }
                cands.extend(top.iter().map(|&(sum, token)| Cand {
                    sum,
                    token,
                    beam: b,
                }));
            }
            // Ties: token id, then beam index.
            cands.sort_by(|a, b| {
                cand_order((a.sum, a.token), (b.sum, b.token)).then(a.beam.cmp(&b.beam))
            });
            let attn = |row: usize| {
                if cfg.return_attention {
                    attention_row(&out, rows, row, lim.src_len)
                } else {
                    None
                }
            };
            let mut next: Vec<(Open, usize)> = Vec::with_capacity(k);
            for (pos, c) in cands.iter().enumerate() {
                if next.len() == k && pos >= k {
                    break;
                }
                let row = row0 + c.beam;
                let lp = clean(out.log_probs[row * vocab + c.token as usize]);
                if c.token == eos {
                    if pos < k {
                        s.finished
                            .insert(beams[c.beam].finish(lp, c.sum, attn(row), cfg));
                    }
                } else if next.len() < k {
                    let mut open = beams[c.beam].clone();
                    open.push(c.token, lp, c.sum, attn(row));
                    next.push((open, row));
                }
            }
            row0 += beams.len();
            let done = next.is_empty()
                || (early_stop
                    && s.finished.is_full()
                    && s.finished.worst_score().is_some_and(|worst| {
                        next.iter()
                            .all(|(open, _)| lim.bound.of(open.logprob, open.tokens.len()) < worst)
                    }));
            if done {
                results[s.sent] = s.finished.into_best(cfg.nbest);
            } else {
                for (open, row) in next {
                    indices.push(row);
                    last_tokens.push(*open.tokens.last().unwrap());
                    s.beams.push(open);
                }
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
