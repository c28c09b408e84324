//! Tokenizers, built on the Hugging Face `tokenizers` crate and saved in its JSON format.
//!
//! Three kinds, all with `<pad>`=0, `<unk>`=1, `<bos>`=2, `<eos>`=3:
//! - `bpe`: byte-pair encoding over words marked with a `▁` prefix (Metaspace pre-tokenizer and
//!   decoder, as in SentencePiece), trained with `BpeTrainer`.
//! - `char`: every character is a token; a space becomes the `▁` token (no prefix is added), so
//!   Chinese decodes without spaces and English keeps its spaces.
//! - `word`: word level over `▁`-prefixed words, with punctuation and each CJK character split
//!   off (so Chinese is tokenised by character), trained with `WordLevelTrainer`.
//!
//! In every kind, decoding turns `▁` back into spaces and drops the leading one, so decoded text
//! never holds `▁` markers and never gains spaces between Chinese characters.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::ModelWrapper;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::models::wordlevel::{WordLevel, WordLevelTrainer};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::fixed_length::FixedLength;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::punctuation::Punctuation;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::UNK;
use crate::error::{DataError, Result};

/// The special tokens, in id order.
pub const SPECIAL_TOKENS: [&str; 4] = ["<pad>", "<unk>", "<bos>", "<eos>"];

/// The word-boundary marker used by all tokenizers.
pub const SPACE_MARKER: char = '▁';

/// The kind of tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenizerKind {
    Bpe,
    Char,
    Word,
}

impl TokenizerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerKind::Bpe => "bpe",
            TokenizerKind::Char => "char",
            TokenizerKind::Word => "word",
        }
    }
}

impl std::fmt::Display for TokenizerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TokenizerKind {
    type Err = DataError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bpe" => Ok(TokenizerKind::Bpe),
            "char" => Ok(TokenizerKind::Char),
            "word" => Ok(TokenizerKind::Word),
            other => Err(DataError::Config(format!(
                "unknown tokenizer `{other}`; fix: use bpe, char or word"
            ))),
        }
    }
}

/// How to train a tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenizerSpec {
    pub kind: TokenizerKind,
    /// Maximum vocabulary size, special tokens included. For `bpe` the initial alphabet is
    /// limited to it too, so the vocabulary never exceeds it.
    pub vocab_size: usize,
    /// Minimum count: of a pair to be merged (`bpe`), of a character or word to enter the
    /// vocabulary (`char`, `word`).
    pub min_freq: u64,
}

fn special_added_tokens() -> Vec<AddedToken> {
    SPECIAL_TOKENS
        .iter()
        .map(|t| AddedToken::from(*t, true))
        .collect()
}

fn tok_err(what: &str, e: impl std::fmt::Display) -> DataError {
    DataError::Tokenizer {
        what: what.to_owned(),
        message: e.to_string(),
    }
}

/// Regex matching one CJK character (Han, kana), used by the `word` pre-tokenizer.
const CJK_CHAR_RE: &str = r"[\p{Han}\p{Hiragana}\p{Katakana}]";

fn empty_tokenizer(kind: TokenizerKind) -> Result<Tokenizer> {
    let unk = SPECIAL_TOKENS[UNK as usize].to_owned();
    let (model, pre, decoder): (ModelWrapper, PreTokenizerWrapper, DecoderWrapper) = match kind {
        TokenizerKind::Bpe => {
            let bpe = BPE::builder()
                .unk_token(unk)
                .fuse_unk(true)
                .build()
                .map_err(|e| tok_err("building a bpe model", e))?;
            let ms = Metaspace::new(SPACE_MARKER, PrependScheme::First, true);
            (bpe.into(), ms.clone().into(), ms.into())
        }
        TokenizerKind::Char => {
            let wl = WordLevel::builder()
                .unk_token(unk)
                .build()
                .map_err(|e| tok_err("building a char model", e))?;
            let ms = Metaspace::new(SPACE_MARKER, PrependScheme::Never, false);
            let pre = Sequence::new(vec![ms.clone().into(), FixedLength::new(1).into()]);
            (wl.into(), pre.into(), ms.into())
        }
        TokenizerKind::Word => {
            let wl = WordLevel::builder()
                .unk_token(unk)
                .build()
                .map_err(|e| tok_err("building a word model", e))?;
            let ms = Metaspace::new(SPACE_MARKER, PrependScheme::First, true);
            let cjk = Split::new(
                SplitPattern::Regex(CJK_CHAR_RE.to_owned()),
                SplitDelimiterBehavior::Isolated,
                false,
            )
            .map_err(|e| tok_err("building the word pre-tokenizer", e))?;
            // Punctuation and CJK characters are split off first, so the `▁` prefix goes to the
            // first piece only, and a Chinese sentence gets no `▁` token of its own.
            let pre = Sequence::new(vec![
                Punctuation::new(SplitDelimiterBehavior::Isolated).into(),
                cjk.into(),
                ms.clone().into(),
            ]);
            (wl.into(), pre.into(), ms.into())
        }
    };
    let mut tok = Tokenizer::new(model);
    tok.with_pre_tokenizer(Some(pre));
    tok.with_decoder(Some(decoder));
    Ok(tok)
}

/// Trains a tokenizer on `texts` (already cleaned lines).
pub fn train_tokenizer<S: AsRef<str> + Send>(
    spec: &TokenizerSpec,
    texts: impl Iterator<Item = S> + Send,
) -> Result<TextTokenizer> {
    let min_vocab = SPECIAL_TOKENS.len() + 1;
    if spec.vocab_size < min_vocab {
        return Err(DataError::Config(format!(
            "vocabulary size {} is too small; fix: pass --vocab-size {min_vocab} or more",
            spec.vocab_size
        )));
    }
    let mut tok = empty_tokenizer(spec.kind)?;
    let mut trainer: TrainerWrapper = match spec.kind {
        TokenizerKind::Bpe => BpeTrainerBuilder::new()
            .vocab_size(spec.vocab_size)
            .min_frequency(spec.min_freq)
            .limit_alphabet(spec.vocab_size - SPECIAL_TOKENS.len())
            .special_tokens(special_added_tokens())
            .show_progress(false)
            .build()
            .into(),
        TokenizerKind::Char | TokenizerKind::Word => WordLevelTrainer::builder()
            .vocab_size(spec.vocab_size)
            .min_frequency(spec.min_freq)
            .special_tokens(special_added_tokens())
            .show_progress(false)
            .build()
            .map_err(|e| tok_err("building the trainer", e))?
            .into(),
    };
    tok.train(&mut trainer, texts)
        .map_err(|e| tok_err(&format!("training the {} tokenizer", spec.kind), e))?;
    TextTokenizer::from_tokenizer(tok, "the trained tokenizer")
}

/// A trained tokenizer with fixed special ids ([`crate::PAD`], [`UNK`], [`crate::BOS`],
/// [`crate::EOS`]).
#[derive(Clone)]
pub struct TextTokenizer {
    inner: Tokenizer,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

impl TextTokenizer {
    /// Loads a tokenizer saved in the HF JSON format and checks its special ids.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        Self::from_json(&json).map_err(|e| match e {
            DataError::Tokenizer { message, .. } => DataError::Tokenizer {
                what: path.display().to_string(),
                message,
            },
            other => other,
        })
    }

    /// Loads a tokenizer from its HF JSON text.
    pub fn from_json(json: &str) -> Result<Self> {
        let tok: Tokenizer = json.parse().map_err(|e| DataError::Tokenizer {
            what: "tokenizer JSON".to_owned(),
            message: format!("cannot parse it ({e}); fix: re-run `s2s prepare`"),
        })?;
        Self::from_tokenizer(tok, "tokenizer JSON")
    }

    /// Wraps an HF tokenizer after checking that the special tokens have their fixed ids.
    pub fn from_tokenizer(inner: Tokenizer, what: &str) -> Result<Self> {
        for (id, name) in SPECIAL_TOKENS.iter().enumerate() {
            if inner.token_to_id(name) != Some(id as u32) {
                return Err(DataError::Tokenizer {
                    what: what.to_owned(),
                    message: format!(
                        "special token {name} must have id {id}; fix: re-run `s2s prepare`"
                    ),
                });
            }
        }
        Ok(Self { inner })
    }

    /// The tokens ids of `text` (no `<bos>`/`<eos>` added), or an error from the tokenizer.
    pub fn try_encode(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| tok_err("encoding", e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The token ids of `text`, without `<bos>`/`<eos>`. Unknown pieces map to [`UNK`]. (The
    /// underlying tokenizer cannot fail with the models built here; should it, the result is
    /// a single [`UNK`].)
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.try_encode(text).unwrap_or_else(|_| vec![UNK])
    }

    /// The text of `ids`, skipping special tokens and ids out of range. Leading and trailing
    /// spaces are trimmed (cleaned text has none, so round trips are exact).
    pub fn decode(&self, ids: &[u32]) -> String {
        let text = self.inner.decode(ids, true).unwrap_or_default();
        text.trim_matches(' ').to_owned()
    }

    /// One display string per id (same length as `ids`), for attention plots and JSON output:
    /// `▁` markers are removed (a token that was only a space shows as `" "`), special tokens
    /// show as their names, and ids out of range as `<unk>`.
    pub fn tokens(&self, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&id| match self.inner.id_to_token(id) {
                Some(t) if t.chars().all(|c| c == SPACE_MARKER) => " ".to_owned(),
                Some(t) => t.replace(SPACE_MARKER, ""),
                None => SPECIAL_TOKENS[UNK as usize].to_owned(),
            })
            .collect()
    }

    /// The vocabulary size, special tokens included (ids are `0..vocab_size`).
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The raw token string of an id, if any.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// The id of a raw token string, if any.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The wrapped HF tokenizer.
    pub fn inner(&self) -> &Tokenizer {
        &self.inner
    }

    /// The HF JSON text of this tokenizer.
    pub fn to_json(&self) -> Result<String> {
        self.inner
            .to_string(true)
            .map_err(|e| tok_err("serialising the tokenizer", e))
    }

    /// Saves the tokenizer as HF JSON, atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let json = self.to_json()?;
        crate::io::atomic_write(path, json.as_bytes()).map_err(|e| DataError::io(path, e))
    }
}
