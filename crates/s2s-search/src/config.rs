//! Search configuration, results and errors.

use std::sync::Arc;

use crate::step::SpecialTokens;

/// Which decoding algorithm [`crate::search`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy {
    /// Greedy decoding: exactly [`Strategy::Beam`] with `k = 1` (see the crate docs), which is
    /// how it runs. Requires `nbest <= 1`.
    Greedy,
    /// Beam search with `k` open hypotheses per sentence. Requires `1 <= nbest <= k`.
    Beam { k: usize },
    /// Exact search over every sequence of at most `max_len` tokens followed by `<eos>`.
    /// Refused with [`SearchError::ExhaustiveTooLarge`] when `|V|^max_len` exceeds
    /// [`SearchConfig::exhaustive_limit`].
    Exhaustive,
    /// Not a search over decoder steps: a speech model's CTC head (joint CTC training) read
    /// position by position, the most likely token or blank at each, repeats merged and blanks
    /// dropped (the best path). The model adapter computes it and [`crate::search`] refuses it.
    /// One hypothesis; its `logprob` is the path's, and it has no attention.
    Ctc,
    /// Ancestral sampling; `nbest` independent samples per sentence, returned best first.
    Sample {
        /// Softmax temperature (> 0); log-probs are divided by it before sampling.
        temperature: f32,
        /// Keep only the `top_k` most likely tokens (0 = off).
        top_k: usize,
        /// Nucleus sampling: keep the smallest set of most likely tokens whose probability
        /// reaches `top_p` (in `(0, 1]`; 1 = off). Applied after `top_k`.
        top_p: f32,
        /// Seed. The random stream of sample `j` of a sentence is derived from `seed`, a hash of
        /// the sentence's source tokens and `j` only, so results do not depend on the batch.
        seed: u64,
    },
}

/// Length normalisation: the ranked score of a finished hypothesis is `logprob / lp(L)`, where
/// `L` is the number of generated tokens **including** `<eos>` (and excluding `<bos>`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LengthPenalty {
    /// `lp(L) = 1`: rank by the raw log-probability.
    None,
    /// `lp(L) = L^alpha` (fairseq's `--lenpen`).
    Alpha(f32),
    /// `lp(L) = ((5 + L) / 6)^alpha` (Wu et al. 2016, GNMT).
    Gnmt(f32),
}

impl Default for LengthPenalty {
    fn default() -> Self {
        LengthPenalty::Alpha(0.75)
    }
}

impl LengthPenalty {
    /// The divisor `lp(L)` for a hypothesis of `len` tokens including `<eos>`.
    pub fn divisor(&self, len: usize) -> f32 {
        let l = len as f32;
        match *self {
            LengthPenalty::None => 1.0,
            LengthPenalty::Alpha(a) => l.powf(a),
            LengthPenalty::Gnmt(a) => ((5.0 + l) / 6.0).powf(a),
        }
    }

    /// The ranked score of a hypothesis with raw log-probability `logprob` and `len` tokens
    /// including `<eos>`.
    pub fn score(&self, logprob: f32, len: usize) -> f32 {
        match self {
            LengthPenalty::None => logprob,
            _ => logprob / self.divisor(len),
        }
    }

    /// An upper bound on the score of any completion of an open hypothesis whose log-probability
    /// is `logprob` after `generated` tokens, when completions end (with `<eos>`) at a length `L`
    /// in `generated + 1 ..= max_total` (lengths including `<eos>`).
    ///
    /// Completions can only lower the log-probability (every step adds a log-prob `<= 0`), so a
    /// completion scores at most `logprob / lp(L)` for some admissible `L`; the bound is the
    /// largest of those: `logprob / max lp(L)` when `logprob <= 0` (for `alpha > 0`,
    /// `logprob / lp(max_total)`), `logprob / min lp(L)` otherwise.
    pub fn bound(&self, logprob: f32, generated: usize, max_total: usize) -> f32 {
        if *self == LengthPenalty::None {
            return logprob;
        }
        let lps = (generated + 1..=max_total.max(generated + 1)).map(|l| self.divisor(l));
        if logprob <= 0.0 {
            logprob / lps.fold(f32::NEG_INFINITY, f32::max)
        } else {
            logprob / lps.fold(f32::INFINITY, f32::min)
        }
    }
}

/// A length limit relative to the source: `floor(ratio * source_len) + offset` output tokens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LenRatio {
    pub ratio: f32,
    pub offset: usize,
}

/// Everything [`crate::search`] needs besides the model and the sources.
///
/// Lengths (`min_len`, `max_len`, [`LenRatio`]) count output tokens **excluding** `<eos>`, as
/// fairseq's `--min-len`/`--max-len-b` do: every hypothesis has between `min_len` and the
/// effective maximum ([`SearchConfig::max_len_for`]) tokens, then `<eos>`. Its length for the
/// length penalty is `L = tokens + 1`.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchConfig {
    pub strategy: Strategy,
    /// Hypotheses returned per sentence (beam: `<= k`; greedy: 1; sampling: number of samples).
    pub nbest: usize,
    pub length_penalty: LengthPenalty,
    /// `<eos>` is banned until this many tokens have been generated (unless nothing else is
    /// allowed, e.g. every other token is banned). Clamped to the effective maximum.
    pub min_len: usize,
    /// Absolute maximum number of output tokens (excluding `<eos>`). A hypothesis that reaches it
    /// is forced to emit `<eos>` next (fairseq's behaviour), and that step's log-prob counts.
    pub max_len: usize,
    /// Optional source-relative maximum; the effective maximum is the smaller of the two.
    pub max_len_ratio: Option<LenRatio>,
    /// Ban any token that would repeat an n-gram of this order already in the output (0 = off).
    pub no_repeat_ngram: usize,
    /// Never emit `special.unk`.
    pub ban_unk: bool,
    /// Special token ids. `bos` is fed first and never emitted; `pad` is never emitted (unless
    /// equal to `eos`).
    pub special: SpecialTokens,
    /// Collect the model's attention for each output token (if the model provides it).
    pub return_attention: bool,
    /// [`Strategy::Exhaustive`] refuses sentences with more than this many candidates
    /// `|V|^max_len`.
    pub exhaustive_limit: u64,
    /// Beam and greedy search: a sentence also stops once `round(k * patience)` hypotheses have
    /// finished (CTranslate2's `patience`, Kasai et al. 2022; `1` is fairseq's and
    /// CTranslate2's default rule). `None`: only the exact stopping rule of the crate docs,
    /// which never changes the result against running every hypothesis to its end.
    pub patience: Option<f32>,
    /// Asked once per step; when it answers true the search stops with
    /// [`SearchError::Interrupted`] (a server's client gave up or ran past its deadline).
    pub interrupt: Option<Interrupt>,
}

/// A caller's "stop now", polled by the search loop once per step.
#[derive(Clone)]
pub struct Interrupt(Arc<dyn Fn() -> bool + Send + Sync>);

impl Interrupt {
    pub fn new(fired: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Interrupt(Arc::new(fired))
    }

    pub fn fired(&self) -> bool {
        (self.0)()
    }
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

/// Two interrupts are equal when they are the same one.
impl PartialEq for Interrupt {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            strategy: Strategy::Beam { k: 5 },
            nbest: 1,
            length_penalty: LengthPenalty::default(),
            min_len: 0,
            max_len: 200,
            max_len_ratio: None,
            no_repeat_ngram: 0,
            ban_unk: false,
            special: SpecialTokens {
                pad: 0,
                unk: 1,
                bos: 2,
                eos: 3,
            },
            return_attention: false,
            exhaustive_limit: 1_000_000,
            patience: None,
            interrupt: None,
        }
    }
}

impl SearchConfig {
    /// The effective maximum number of output tokens (excluding `<eos>`) for a source of
    /// `source_len` tokens: `min(max_len, floor(ratio * source_len) + offset)`.
    pub fn max_len_for(&self, source_len: usize) -> usize {
        match self.max_len_ratio {
            None => self.max_len,
            Some(r) => {
                let rel = (r.ratio as f64 * source_len as f64).floor();
                let rel = if rel.is_finite() && rel > 0.0 {
                    rel as usize
                } else {
                    0
                };
                self.max_len.min(rel.saturating_add(r.offset))
            }
        }
    }

    /// How many finished hypotheses end a sentence under [`SearchConfig::patience`], for a search
    /// keeping `k` open hypotheses.
    pub fn finish_after(&self, k: usize) -> Option<usize> {
        self.patience
            .map(|p| ((k as f32 * p).round() as usize).max(1))
    }

    /// Checks the configuration against a vocabulary size.
    pub fn validate(&self, vocab_size: usize) -> Result<(), SearchError> {
        let invalid = |m: String| Err(SearchError::InvalidConfig(m));
        if self.nbest == 0 {
            return invalid("nbest must be at least 1".into());
        }
        match self.strategy {
            Strategy::Greedy | Strategy::Ctc if self.nbest > 1 => {
                return Err(SearchError::NbestExceedsBeam {
                    nbest: self.nbest,
                    k: 1,
                });
            }
            Strategy::Beam { k: 0 } => return invalid("beam size k must be at least 1".into()),
            Strategy::Beam { k } if self.nbest > k => {
                return Err(SearchError::NbestExceedsBeam {
                    nbest: self.nbest,
                    k,
                });
            }
            Strategy::Sample {
                temperature, top_p, ..
            } => {
                if !(temperature.is_finite() && temperature > 0.0) {
                    return invalid(format!(
                        "sampling temperature must be finite and > 0, got {temperature}"
                    ));
                }
                if !(top_p > 0.0 && top_p <= 1.0) {
                    return invalid(format!("top_p must be in (0, 1], got {top_p}"));
                }
            }
            _ => {}
        }
        if let Some(p) = self.patience {
            if !(p.is_finite() && p > 0.0) {
                return invalid(format!("patience must be finite and > 0, got {p}"));
            }
            if !matches!(self.strategy, Strategy::Beam { .. } | Strategy::Greedy) {
                return invalid("patience applies to beam and greedy search only".into());
            }
        }
        match self.length_penalty {
            LengthPenalty::Alpha(a) | LengthPenalty::Gnmt(a) if !a.is_finite() => {
                return invalid(format!("length penalty alpha must be finite, got {a}"));
            }
            _ => {}
        }
        if let Some(r) = self.max_len_ratio
            && !(r.ratio.is_finite() && r.ratio >= 0.0)
        {
            return invalid(format!(
                "max_len_ratio must be finite and >= 0, got {}",
                r.ratio
            ));
        }
        let s = self.special;
        for (name, id) in [
            ("pad", s.pad),
            ("unk", s.unk),
            ("bos", s.bos),
            ("eos", s.eos),
        ] {
            if id as usize >= vocab_size {
                return Err(SearchError::SpecialOutOfVocab {
                    name,
                    id,
                    vocab_size,
                });
            }
        }
        Ok(())
    }
}

/// One finished output sequence.
#[derive(Clone, Debug, PartialEq)]
pub struct Hypothesis {
    /// Output tokens, without `<bos>` and `<eos>`.
    pub tokens: Vec<u32>,
    /// What was ranked: `logprob / lp(L)` with `L = tokens.len() + 1` (see [`LengthPenalty`]).
    pub score: f32,
    /// Raw sum of the token log-probs, including the `<eos>` step.
    pub logprob: f32,
    /// The log-prob of each output token, `<eos>` included (`tokens.len() + 1` entries).
    pub token_logprobs: Vec<f32>,
    /// With [`SearchConfig::return_attention`] and a model that returns attention: one row per
    /// output token including `<eos>`, each as long as this sentence's (unpadded) source.
    pub attention: Option<Vec<Vec<f32>>>,
}

/// Why a search was refused or failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SearchError {
    #[error("invalid search configuration: {0}")]
    InvalidConfig(String),
    #[error("nbest ({nbest}) must not exceed the beam size ({k})")]
    NbestExceedsBeam { nbest: usize, k: usize },
    #[error("special token {name} = {id} is outside the vocabulary of size {vocab_size}")]
    SpecialOutOfVocab {
        name: &'static str,
        id: u32,
        vocab_size: usize,
    },
    #[error(
        "exhaustive search would enumerate {vocab_size}^{max_len} = {candidates} candidate \
         sequences, more than the limit of {limit}; lower --max-len or use beam search"
    )]
    ExhaustiveTooLarge {
        vocab_size: usize,
        max_len: usize,
        /// `vocab_size^max_len`, saturated at `u128::MAX`.
        candidates: u128,
        limit: u64,
    },
    #[error("model output has the wrong shape: {0}")]
    BadModelOutput(String),
    #[error("the search was interrupted")]
    Interrupted,
}
