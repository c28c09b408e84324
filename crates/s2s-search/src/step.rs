//! The seam between search and models: search sees a model only through [`StepModel`].
//!
//! A model encodes a batch of sources once, then advances many *rows* (sentence x beam) one token
//! at a time. Rows are identified by position; [`StepModel::reorder`] selects, duplicates or drops
//! rows so that beam search can follow its survivors without recomputing anything.

/// Token ids used by every search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpecialTokens {
    pub pad: u32,
    pub unk: u32,
    pub bos: u32,
    pub eos: u32,
}

/// What one decoding step returns for `rows` rows.
#[derive(Clone, Debug, Default)]
pub struct StepOutput {
    /// Log-probabilities, row-major `[rows][vocab_size]`.
    pub log_probs: Vec<f32>,
    /// Optional attention over the source for each row, row-major `[rows][src_len]`, where
    /// `src_len` is the padded source length of the batch given to [`StepModel::start`]. Only the
    /// first `len(source of that row)` entries are meaningful.
    pub attention: Option<Vec<f32>>,
}

/// What a search needs of a source, whatever a model reads: token ids (`Vec<u32>`) or, for a
/// speech model, feature frames.
pub trait Source {
    /// Its length, which [`crate::SearchConfig::max_len_ratio`] scales.
    fn len(&self) -> usize;

    /// Whether it is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A hash of its content under `key`: identical sources get identical samples, whatever
    /// batch they are in.
    fn fingerprint(&self, key: u64) -> u64;
}

impl Source for Vec<u32> {
    fn len(&self) -> usize {
        <[u32]>::len(self)
    }

    fn fingerprint(&self, key: u64) -> u64 {
        crate::common::hash_tokens(key, self)
    }
}

/// An incremental decoder, as search needs it.
pub trait StepModel {
    /// Incremental decoder state for a set of rows: RNN hidden states, a KV cache, conv buffers.
    type State;

    /// What the model reads: token ids (`Vec<u32>`), or feature frames.
    type Source: Source;

    /// Size of the output vocabulary (the width of each log-prob row).
    fn vocab_size(&self) -> usize;

    /// Encodes a batch of sources (token ids without padding, each ending as the model expects;
    /// or feature frames) and returns the initial state with one row per sentence, in order.
    fn start(&self, sources: &[Self::Source]) -> Self::State;

    /// Feeds the previous token of every row and returns next-token log-probs; advances `state`.
    /// `last_tokens.len()` equals the current number of rows.
    fn step(&self, state: &mut Self::State, last_tokens: &[u32]) -> StepOutput;

    /// Keeps rows `indices` (in that order; an index may repeat, and rows may be dropped).
    /// Row `i` of the new state is row `indices[i]` of the old one.
    fn reorder(&self, state: &mut Self::State, indices: &[usize]);
}
