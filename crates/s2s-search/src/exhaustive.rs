//! Exact search: every row is expanded with every allowed token until `max_len`.

use crate::common::{Finished, Limits, Open, Rules, attention_row, check_output, clean, reorder};
use crate::config::{Hypothesis, SearchConfig, SearchError};
use crate::step::StepModel;

struct Row {
    sent: usize,
    open: Open,
}

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
    sources: &[Vec<u32>],
    cfg: &SearchConfig,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    let vocab = model.vocab_size();
    let limits: Vec<Limits> = sources.iter().map(|s| Limits::new(cfg, s)).collect();
    for lim in &limits {
        let candidates = saturating_pow(vocab, lim.max_len);
        if candidates > cfg.exhaustive_limit as u128 {
            return Err(SearchError::ExhaustiveTooLarge {
                vocab_size: vocab,
                max_len: lim.max_len,
                candidates,
                limit: cfg.exhaustive_limit,
            });
        }
    }
    let rules = Rules::new(cfg, vocab);
    let eos = rules.eos();
    let mut finished: Vec<Finished> = (0..sources.len())
        .map(|_| Finished::new(cfg.nbest))
        .collect();

    let mut state = model.start(sources);
    let mut live: Vec<Row> = (0..sources.len())
        .map(|sent| Row {
            sent,
            open: Open::empty(cfg.return_attention),
        })
        .collect();
    let mut last_tokens = vec![cfg.special.bos; sources.len()];

    while !live.is_empty() {
        let rows = live.len();
        let out = model.step(&mut state, &last_tokens);
        check_output(&out, rows, vocab)?;
        let mut indices = Vec::new();
        last_tokens.clear();
        let mut next_live = Vec::new();
        for (row, r) in live.iter().enumerate() {
            let lim = &limits[r.sent];
            let lps = &out.log_probs[row * vocab..(row + 1) * vocab];
            let attn = || {
                if cfg.return_attention {
                    attention_row(&out, rows, row, lim.src_len)
                } else {
                    None
                }
            };
            for v in rules.allowed(&r.open.tokens, lim).iter(vocab) {
                let lp = clean(lps[v as usize]);
                let sum = r.open.logprob + lp;
                if v == eos {
                    finished[r.sent].insert(r.open.finish(lp, sum, attn(), cfg));
                } else {
                    let mut open = r.open.clone();
                    open.push(v, lp, sum, attn());
                    indices.push(row);
                    last_tokens.push(v);
                    next_live.push(Row { sent: r.sent, open });
                }
            }
        }
        live = next_live;
        if !live.is_empty() {
            reorder(model, &mut state, rows, &indices);
        }
    }
    Ok(finished
        .into_iter()
        .map(|f| f.into_best(cfg.nbest))
        .collect())
}
