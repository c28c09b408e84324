//! Decoding for sequence-to-sequence models: greedy, beam, exhaustive and sampling search.
//!
//! Search sees a model only through [`StepModel`] and is batched: all live rows (sentences x
//! beams) of a batch go through one [`StepModel::step`] call per time step. Every row starts with
//! `special.bos` as its first `last_tokens` entry and stops at `special.eos`; sentences that
//! finish drop out of the batch through [`StepModel::reorder`], so the model only computes live
//! rows. The one entry point is [`search`]. Several models decode as one through [`Ensemble`],
//! itself a [`StepModel`].
//!
//! # Lengths and length normalisation
//!
//! A hypothesis is `y_1 .. y_n <eos>`; [`Hypothesis::tokens`] holds `y_1 .. y_n` (no `<bos>`, no
//! `<eos>`). Its **length** for normalisation is `L = n + 1`: the number of generated tokens
//! *including* `<eos>` (as in fairseq and the textbooks). Its log-probability `logprob` is the sum
//! of the `L` token log-probs, the `<eos>` step included, and what is ranked is
//!
//! ```text
//! score = logprob / lp(L),   lp(L) = 1                    (LengthPenalty::None)
//!                            lp(L) = L^alpha              (LengthPenalty::Alpha, default 0.75)
//!                            lp(L) = ((5 + L) / 6)^alpha  (LengthPenalty::Gnmt)
//! ```
//!
//! `min_len` / `max_len` count `n` (tokens without `<eos>`), like fairseq's `--min-len` and
//! `--max-len-b`. `<eos>` is banned while `n < min_len`; a hypothesis that reaches `n = max_len`
//! must emit `<eos>` next (the forced step's log-prob counts, as in fairseq), so every result ends
//! in `<eos>` and `L <= max_len + 1`. The effective maximum is
//! `min(max_len, floor(ratio * source_len) + offset)` with [`SearchConfig::max_len_ratio`].
//! `pad` and `bos` are never emitted (unless equal to `eos`), nor `unk` with `ban_unk`.
//!
//! # Beam search
//!
//! Each sentence keeps at most `k` open hypotheses. At each step the candidates (every open
//! hypothesis extended by every allowed token) are ranked by raw cumulative log-prob, ties broken
//! by token id and then by beam index. As in fairseq, a candidate ending in `<eos>` that ranks
//! among the first `k` is **finished**: it is collected (with its normalised score) whatever the
//! step, and the best `k` finished hypotheses are kept; the first `k` candidates not ending in
//! `<eos>` become the next open hypotheses.
//!
//! **Stopping rule.** A sentence stops when it has no open hypothesis left (in particular after
//! the forced `<eos>` step at `max_len`), or when it has `k` finished hypotheses and no open one
//! can still beat the `k`-th (worst kept) finished one. An open hypothesis with log-prob `s` after
//! `n` tokens can only be completed with further log-probs `<= 0`, so a completion of length
//! `L` in `n + 1 ..= max_len + 1` scores at most `s / lp(L)`. Because `lp` is monotone in `L`, the
//! bound is `max(s / lp(n + 1), s / lp(max_len + 1))`. For `alpha > 0` and `s <= 0` this is
//! `s / lp(max_len + 1)`: dividing by the *largest* possible penalty. It is not `s / lp(n + 1)`,
//! which would stop too early, since a longer completion divides by a larger `lp` and can score
//! higher. With `LengthPenalty::None` the bound is `s` itself. The sentence stops when every open
//! hypothesis's bound is strictly below the `k`-th finished score (a tie could still enter the
//! list through the token-order tie-break). The `lp` values are tabulated once per sentence with
//! the function that scores hypotheses, and floating-point division by a positive number is
//! monotone, so the bound also holds in `f32`: stopping early never changes the result compared
//! to running every open hypothesis to `max_len`. (With a large `max_len` and `alpha > 0`
//! the bound is loose, so search may run a few steps more than fairseq's "stop at k finished"
//! until open hypotheses fall far enough behind; a source-relative
//! [`SearchConfig::max_len_ratio`] tightens it.) The bound assumes the model's log-probs are
//! `<= 0`.
//!
//! **Patience.** With [`SearchConfig::patience`] `p`, a sentence also stops once `round(k * p)`
//! hypotheses have finished (every one counted, kept or not): CTranslate2's rule (`p = 1` by
//! default there, and fairseq's), which trades the guarantee above for fewer steps. A result
//! can then differ from the exact one; raising `p` moves it towards the exact search.
//!
//! Results are the best `nbest` finished hypotheses by score, ties broken by token sequence.
//! Search does not depend on `nbest`, so the first of `nbest = N` equals `nbest = 1`.
//!
//! **Greedy** is exactly beam search with `k = 1` under the rules above (and runs as such): it
//! follows the most likely token; when that token is `<eos>` it records the finished hypothesis
//! and, unless the stopping rule says otherwise, keeps exploring from the most likely other
//! token. With `LengthPenalty::None` this is plain argmax decoding up to the first `<eos>`.
//!
//! **Exhaustive** search enumerates every allowed sequence `y_1 .. y_n <eos>` with
//! `n <= max_len`, expanding all rows at each step, and ranks them by the same score. It refuses
//! ([`SearchError::ExhaustiveTooLarge`]) a sentence for which `|V|^max_len` exceeds
//! [`SearchConfig::exhaustive_limit`]. Beam search with `k >= |V|^max_len` keeps every candidate
//! and returns the same result.
//!
//! **Sampling** draws `nbest` independent samples per sentence from the model's distribution over
//! the allowed tokens, with temperature, then top-k, then top-p (nucleus) truncation. Sample `j`
//! of a sentence uses a ChaCha8 stream seeded from the user seed, a hash of the sentence's
//! *source* (its tokens, or frames) and `j` (see [`sample_seed`]), not from the sentence's position, so results
//! are reproducible and do not depend on the batch (identical sources get identical samples).
//! Samples are returned best score first.
//!
//! # Batch invariance
//!
//! No state is shared between sentences: limits come from the sentence's own source, ranking and
//! tie-breaking are per sentence and total, and all arithmetic on a row is done in the same order
//! whatever the batch. Given a model whose rows are computed independently (like [`toy`]), the
//! result for a sentence is bitwise the same alone or in any batch.
//!
//! # Layout
//!
//! A search polls [`SearchConfig::interrupt`] once per step and stops with
//! [`SearchError::Interrupted`] when it fires.
//!
//! One loop, `driver::run`, serves every strategy: it starts the model, steps the live rows,
//! checks each output, keeps every open hypothesis with its row and `last_tokens` entry, finishes
//! hypotheses at `<eos>`, applies the stopping rule, collects results and reorders rows, so the
//! rules above hold for all strategies alike. A strategy is a type implementing `driver::Expand`
//! that only chooses, per sentence and step, which one-token extensions of the open hypotheses to
//! take: `beam.rs` the first `k` candidates through the block-skip scan (`greedy.rs` is beam
//! search with `k = 1`), `sample.rs` one draw per sample, `exhaustive.rs` every allowed token.
//! `common.rs` holds the token rules, the stopping bound, the scans' block maximum and the lists
//! of hypotheses. A new strategy implements `Expand` (its extensions; how many finished
//! hypotheses a sentence keeps; whether the stopping rule applies; what a hypothesis carries
//! besides its tokens, such as a random stream) and gets a [`Strategy`] variant and an arm in
//! [`search`].

pub mod step;
pub mod toy;

mod beam;
mod common;
mod config;
mod driver;
mod ensemble;
mod exhaustive;
mod greedy;
mod sample;
#[cfg(test)]
mod tests;

pub use config::{
    Hypothesis, Interrupt, LenRatio, LengthPenalty, SearchConfig, SearchError, Strategy,
};
pub use ensemble::{Ensemble, log_mean_exp};
pub use sample::sample_seed;
pub use step::{Source, SpecialTokens, StepModel, StepOutput};

/// Decodes every source sentence; returns, per sentence, its n-best hypotheses, best first.
///
/// At most `cfg.nbest` hypotheses are returned per sentence (fewer only if the search space is
/// smaller). See the [crate docs](crate) for the rules.
///
/// ```
/// use s2s_search::toy::TableModel;
/// use s2s_search::{SearchConfig, SpecialTokens, Strategy, search};
///
/// let special = SpecialTokens { pad: 0, unk: 1, bos: 2, eos: 3 };
/// let model = TableModel::random(16, special, 7);
/// let cfg = SearchConfig {
///     strategy: Strategy::Beam { k: 4 },
///     nbest: 2,
///     max_len: 10,
///     special,
///     ..SearchConfig::default()
/// };
/// let out = search(&model, &[vec![5, 6, 7], vec![8]], &cfg).unwrap();
/// assert_eq!(out.len(), 2);
/// assert!(out[0][0].score >= out[0][1].score);
/// assert_eq!(out[0][0].token_logprobs.len(), out[0][0].tokens.len() + 1);
/// ```
pub fn search<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &SearchConfig,
) -> Result<Vec<Vec<Hypothesis>>, SearchError> {
    cfg.validate(model.vocab_size())?;
    if sources.is_empty() {
        return Ok(Vec::new());
    }
    match cfg.strategy {
        Strategy::Greedy => greedy::greedy(model, sources, cfg, true),
        Strategy::Beam { k } => beam::beam(model, sources, cfg, k, true),
        Strategy::Exhaustive => exhaustive::exhaustive(model, sources, cfg),
        Strategy::Ctc => Err(SearchError::InvalidConfig(
            "CTC decoding reads a speech model's CTC head, not decoder steps: the model runs it"
                .into(),
        )),
        Strategy::Sample {
            temperature,
            top_k,
            top_p,
            seed,
        } => sample::sample(
            model,
            sources,
            cfg,
            sample::Params {
                temperature,
                top_k,
                top_p,
                seed,
            },
        ),
    }
}
