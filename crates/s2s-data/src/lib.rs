//! `s2s-data`: corpus reading and cleaning, tokenizers, batching and the data directory.
//!
//! - [`prepare`] reads a parallel corpus (two aligned files, or a TSV) or, for the tagging and
//!   classification [`Task`]s, a labelled one ([`labelled`]: CoNLL-U, `token/TAG`, `LABEL
//!   text`), cleans it, trains the tokenizers and writes a DATA_DIR; [`load_data_dir`] reads it
//!   back.
//! - [`TextTokenizer`] wraps a Hugging Face tokenizer and knows its [`Specials`]: [`PAD`],
//!   [`UNK`], [`BOS`], [`EOS`] for s2s's own, Marian's layout for imported ones
//!   ([`sentencepiece`] converts and writes SentencePiece models).
//! - [`epoch_batches`] and [`Batch`] turn a split into padded batches under a token budget,
//!   deterministically for a given seed and epoch.
//! - [`g2p`] splits a CMUdict-format pronouncing dictionary into such files by word lists, and
//!   [`pairs`] writes them from the summarisation and dialogue corpora (AESLC, SciTLDR,
//!   CamRest676), with several references per test example.
//! - [`atomic_write`] writes a file atomically (temp file, fsync, rename, fsync of the
//!   directory).
//!
//! Every error is a [`DataError`] whose message names the file, the line where there is one,
//! and the fix.

pub mod audio;
pub mod batch;
pub mod chars;
pub mod clean;
pub mod copy;
pub mod datadir;
pub mod error;
pub mod g2p;
pub mod io;
pub mod labelled;
pub mod pairs;
pub mod prepare;
pub mod sentencepiece;
pub mod signature;
pub mod task;
pub mod tokenizer;
pub mod vectors;
pub mod zh;

/// Padding token id.
pub const PAD: u32 = 0;
/// Unknown token id.
pub const UNK: u32 = 1;
/// Beginning-of-sentence token id (first decoder input).
pub const BOS: u32 = 2;
/// End-of-sentence token id (ends source rows and decoder outputs).
pub const EOS: u32 = 3;

/// The ids a vocabulary reserves. s2s's own tokenizers use [`PAD`], [`UNK`], [`BOS`], [`EOS`]; a
/// Marian vocabulary has `</s>` (usually 0) and `<unk>`, and starts decoding from `<pad>`, so
/// there `bos == pad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Specials {
    /// Pads rows; never a real token.
    pub pad: u32,
    pub unk: u32,
    /// The first decoder input.
    pub bos: u32,
    /// Ends every source row and every output.
    pub eos: u32,
}

impl Specials {
    /// s2s's own layout.
    pub const S2S: Specials = Specials {
        pad: PAD,
        unk: UNK,
        bos: BOS,
        eos: EOS,
    };
}

impl Default for Specials {
    fn default() -> Self {
        Specials::S2S
    }
}

pub use batch::{
    Batch, BatchConfig, BatchFrames, batch_cost, epoch_batches, pair_cost, sequential_batches,
    sorted_batches,
};
pub use clean::{CleanConfig, clean_line};
pub use copy::SourceWords;
pub use datadir::{
    DATA_TOML, DataDir, DataOptions, DataToml, EncodedSplit, ParallelText, SRC_TOKENIZER_FILE,
    SourceFile, SplitName, SplitStats, SplitsInfo, TGT_TOKENIZER_FILE, TokenizerInfo,
    TokenizersInfo, load_data_dir, read_data_toml,
};
pub use error::{DataError, Result};
pub use io::{TextFile, atomic_write, read_text_file, sha256_hex};
pub use labelled::{LabelledFile, TagColumn, read_conllu, read_labelled, read_tagged};
pub use prepare::{CorpusSource, DEFAULT_MAX_LEN, DEFAULT_VOCAB_SIZE, PrepareConfig, prepare};
pub use task::{LabelSide, Task};
pub use tokenizer::{SPECIAL_TOKENS, TextTokenizer, TokenizerKind, TokenizerSpec, train_tokenizer};
pub use zh::ZhScript;
