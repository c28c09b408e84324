//! Pieces shared by the driver and the strategies: limits and the stopping bound, token rules,
//! the block maximum of the scans, open and finished hypotheses, hashing.

use std::cmp::Ordering;

use crate::config::{Hypothesis, LengthPenalty, SearchConfig};

/// Per-sentence limits, fixed at the start of a search.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub min_len: usize,
    pub max_len: usize,
    pub src_len: usize,
    pub bound: Bound,
}

impl Limits {
    pub fn new(cfg: &SearchConfig, src_len: usize) -> Self {
        let max_len = cfg.max_len_for(src_len);
        Limits {
            min_len: cfg.min_len.min(max_len),
            max_len,
            src_len,
            bound: Bound::new(cfg.length_penalty, max_len),
        }
    }
}

/// The stopping bound of a sentence: [`LengthPenalty::bound`] with `max_total = max_len + 1`,
/// from tables of `lp(L)` computed once with the same function that scores hypotheses.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    none: bool,
    /// `max_from[n]` / `min_from[n]`: the largest / smallest `lp(L)` for `L` in `n+1..=max_len+1`.
    max_from: Vec<f32>,
    min_from: Vec<f32>,
}

impl Bound {
    pub fn new(lp: LengthPenalty, max_len: usize) -> Self {
        if lp == LengthPenalty::None {
            return Bound {
                none: true,
                max_from: Vec::new(),
                min_from: Vec::new(),
            };
        }
        let mut max_from = vec![0.0f32; max_len + 1];
        let mut min_from = vec![0.0f32; max_len + 1];
        let (mut hi, mut lo) = (f32::NEG_INFINITY, f32::INFINITY);
        for n in (0..=max_len).rev() {
            let d = lp.divisor(n + 1);
            hi = hi.max(d);
            lo = lo.min(d);
            max_from[n] = hi;
            min_from[n] = lo;
        }
        Bound {
            none: false,
            max_from,
            min_from,
        }
    }

    /// The best score any completion of an open hypothesis (log-prob `s`, `n` tokens) can reach.
    pub fn of(&self, s: f32, n: usize) -> f32 {
        if self.none {
            return s;
        }
        let n = n.min(self.max_from.len() - 1);
        // Division by a positive number is monotone (also in floating point), so the largest
        // s / lp(L) is s over the largest lp when s <= 0, over the smallest otherwise.
        if s <= 0.0 {
            s / self.max_from[n]
        } else {
            s / self.min_from[n]
        }
    }
}

/// Which tokens a row may emit next.
pub(crate) struct Allowed {
    eos: u32,
    only_eos: bool,
    eos_ok: bool,
    /// Sorted, deduplicated banned non-eos tokens.
    banned: Vec<u32>,
}

impl Allowed {
    #[inline]
    pub fn permits(&self, v: u32) -> bool {
        if v == self.eos {
            self.eos_ok
        } else {
            !self.only_eos && self.banned.binary_search(&v).is_err()
        }
    }

    /// The allowed tokens in increasing order.
    pub fn iter(&self, vocab: usize) -> impl Iterator<Item = u32> + '_ {
        (0..vocab as u32).filter(move |&v| self.permits(v))
    }
}

/// The token rules of a configuration: specials never emitted, `ban_unk`, `min_len`, `max_len`
/// and `no_repeat_ngram`.
pub(crate) struct Rules {
    vocab: usize,
    eos: u32,
    static_banned: Vec<u32>,
    no_repeat: usize,
}

impl Rules {
    pub fn new(cfg: &SearchConfig, vocab: usize) -> Self {
        let s = cfg.special;
        let mut static_banned = vec![s.pad, s.bos];
        if cfg.ban_unk {
            static_banned.push(s.unk);
        }
        static_banned.retain(|&t| t != s.eos);
        static_banned.sort_unstable();
        static_banned.dedup();
        Rules {
            vocab,
            eos: s.eos,
            static_banned,
            no_repeat: cfg.no_repeat_ngram,
        }
    }

    pub fn eos(&self) -> u32 {
        self.eos
    }

    /// What may follow `prefix` (the generated tokens, without `<bos>`).
    pub fn allowed(&self, prefix: &[u32], lim: &Limits) -> Allowed {
        let t = prefix.len();
        if t >= lim.max_len {
            return Allowed {
                eos: self.eos,
                only_eos: true,
                eos_ok: true,
                banned: Vec::new(),
            };
        }
        let mut banned = self.static_banned.clone();
        let n = self.no_repeat;
        if n > 0 && t + 1 >= n {
            let suffix = &prefix[t + 1 - n..];
            // Every earlier n-gram prefix[i..i + n] whose first n - 1 tokens equal the suffix.
            for i in 0..(t + 1 - n) {
                if prefix[i..i + n - 1] == *suffix {
                    banned.push(prefix[i + n - 1]);
                }
            }
            banned.retain(|&x| x != self.eos);
            banned.sort_unstable();
            banned.dedup();
        }
        let mut eos_ok = t >= lim.min_len;
        if !eos_ok {
            // min_len yields when nothing but <eos> could be emitted.
            let others = self.vocab.saturating_sub(1 + banned.len());
            if others == 0 {
                eos_ok = true;
            }
        }
        Allowed {
            eos: self.eos,
            only_eos: false,
            eos_ok,
            banned,
        }
    }
}

/// Log-prob as read from the model; NaN counts as impossible.
#[inline]
pub(crate) fn clean(x: f32) -> f32 {
    if x.is_nan() { f32::NEG_INFINITY } else { x }
}

/// Tokens per block of the search scans' block skip ([`block_max`]).
pub(crate) const SCAN_BLOCK: usize = 16;

/// Independent maxima kept while scanning a block: one SSE register's worth, four times over.
const LANES: usize = 16;

/// The largest `clean(x)` of a block of at most [`SCAN_BLOCK`] log-probs.
///
/// The scans add a hypothesis's log-prob to every token's and skip tokens whose sum is below a
/// threshold; almost all are. Since `a <= b` implies `s + a <= s + b` in floating point too,
/// `s + block_max(block) < threshold` means every token of the block would be skipped, so the
/// block can be skipped whole, with one vectorised pass instead of a branch per token.
#[inline]
pub(crate) fn block_max(block: &[f32]) -> f32 {
    // `x > m` is false for NaN, so NaN never wins: the maximum of `clean(x)` without cleaning.
    let max = |m: f32, x: f32| if x > m { x } else { m };
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = block.chunks_exact(LANES);
    let tail = chunks.remainder();
    // Fixed-size chunks, so that LLVM unrolls them and keeps the lanes in registers.
    for chunk in chunks {
        let chunk: &[f32; LANES] = chunk.try_into().expect("chunks_exact");
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            *lane = max(*lane, x);
        }
    }
    let lanes = lanes.iter().copied().fold(f32::NEG_INFINITY, max);
    tail.iter().copied().fold(lanes, max)
}

/// An unfinished hypothesis.
#[derive(Clone, Debug, Default)]
pub(crate) struct Open {
    pub tokens: Vec<u32>,
    pub token_logprobs: Vec<f32>,
    pub logprob: f32,
    /// `None` when attention is not collected (or the model stopped providing it).
    pub attention: Option<Vec<Vec<f32>>>,
}

impl Open {
    pub fn empty(collect_attention: bool) -> Self {
        Open {
            tokens: Vec::new(),
            token_logprobs: Vec::new(),
            logprob: 0.0,
            attention: collect_attention.then(Vec::new),
        }
    }

    /// Appends `token` in place. `sum` must be `self.logprob + lp`.
    pub fn push(&mut self, token: u32, lp: f32, sum: f32, attn: Option<Vec<f32>>) {
        self.tokens.push(token);
        self.token_logprobs.push(lp);
        self.logprob = sum;
        match (&mut self.attention, attn) {
            (Some(rows), Some(a)) => rows.push(a),
            (Some(_), None) => self.attention = None,
            _ => {}
        }
    }

    /// The hypothesis finished by `<eos>` with log-prob `lp`; `sum` must be `self.logprob + lp`.
    pub fn finish(
        &self,
        lp: f32,
        sum: f32,
        attn: Option<Vec<f32>>,
        cfg: &SearchConfig,
    ) -> Hypothesis {
        let mut token_logprobs = Vec::with_capacity(self.token_logprobs.len() + 1);
        token_logprobs.extend_from_slice(&self.token_logprobs);
        token_logprobs.push(lp);
        let attention = match (&self.attention, attn) {
            (Some(rows), Some(a)) => {
                let mut rows = rows.clone();
                rows.push(a);
                Some(rows)
            }
            _ => None,
        };
        Hypothesis {
            tokens: self.tokens.clone(),
            score: cfg.length_penalty.score(sum, self.tokens.len() + 1),
            logprob: sum,
            token_logprobs,
            attention,
        }
    }
}

/// The order of results: score descending, then tokens ascending (a total order, so the ranking
/// never depends on the order hypotheses were found in).
pub(crate) fn hyp_order(a: &Hypothesis, b: &Hypothesis) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.tokens.cmp(&b.tokens))
}

/// The best `cap` finished hypotheses, kept sorted by [`hyp_order`].
pub(crate) struct Finished {
    cap: usize,
    hyps: Vec<Hypothesis>,
    /// Hypotheses inserted so far, kept or not.
    seen: usize,
}

impl Finished {
    pub fn new(cap: usize) -> Self {
        Finished {
            cap,
            hyps: Vec::new(),
            seen: 0,
        }
    }

    /// How many hypotheses have finished, kept or not.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Whether the list holds `cap` hypotheses.
    pub fn is_full(&self) -> bool {
        self.hyps.len() >= self.cap
    }

    /// The score of the worst kept hypothesis.
    pub fn worst_score(&self) -> Option<f32> {
        self.hyps.last().map(|h| h.score)
    }

    pub fn insert(&mut self, h: Hypothesis) {
        self.seen += 1;
        if self.cap == 0 {
            return;
        }
        if self.is_full() && hyp_order(&h, self.hyps.last().unwrap()) != Ordering::Less {
            return;
        }
        // After any equal one: the list is the stable sort of what was inserted (sampling can
        // find the same hypothesis twice).
        let pos = self
            .hyps
            .partition_point(|x| hyp_order(x, &h) != Ordering::Greater);
        self.hyps.insert(pos, h);
        self.hyps.truncate(self.cap);
    }

    pub fn into_best(mut self, n: usize) -> Vec<Hypothesis> {
        self.hyps.truncate(n);
        self.hyps
    }
}

/// Orders `(score, token)` candidates best first: score descending, token ascending.
#[inline]
pub(crate) fn cand_order(a: (f32, u32), b: (f32, u32)) -> Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
}

/// SplitMix64 finaliser: a fixed, platform-independent 64-bit mixer.
#[inline]
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stable hash of a token sequence (length included), keyed by `key`.
pub(crate) fn hash_tokens(key: u64, tokens: &[u32]) -> u64 {
    let mut h = mix64(key ^ tokens.len() as u64);
    for &t in tokens {
        h = mix64(h ^ t as u64);
    }
    h
}
