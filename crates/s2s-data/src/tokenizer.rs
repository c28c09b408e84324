//! Tokenizers, built on the Hugging Face `tokenizers` crate and saved in its JSON format.
//!
//! Five kinds that s2s trains, all with `<pad>`=0, `<unk>`=1, `<bos>`=2, `<eos>`=3:
//! - `bpe`: byte-pair encoding over words marked with a `▁` prefix (Metaspace pre-tokenizer and
//!   decoder, as in SentencePiece), trained with `BpeTrainer`.
//! - `char`: every character is a token; a space becomes the `▁` token (no prefix is added), so
//!   Chinese decodes without spaces and English keeps its spaces.
//! - `word`: word level over `▁`-prefixed words, with punctuation and each CJK character split
//!   off (so Chinese is tokenised by character), trained with `WordLevelTrainer`.
//! - `split`: one token per whitespace-separated item, nothing split further (`WhitespaceSplit`
//!   pre-tokenizer, no decoder: decoding joins the tokens with single spaces), trained with
//!   `WordLevelTrainer`. For labels and for pre-tokenised text whose tokens must stay whole (a
//!   tagger needs one id per word and one per tag). Trained with `signatures`, it gives an
//!   unknown word the token of its shape ([`crate::signature`]) instead of `<unk>`.
//! - `unigram`: a SentencePiece-style unigram model, trained with `UnigramTrainer`, in the
//!   pipeline Hugging Face builds from a SentencePiece model ([`spm_pipeline`]), so that it can be
//!   written as one (`s2s export`).
//!
//! A tokenizer imported from a Marian model is a `unigram` one over Marian's joint vocabulary,
//! with Marian's specials (see [`crate::sentencepiece`]).
//!
//! In every kind but `split`, decoding turns `▁` back into spaces and drops the leading one, so
//! decoded text never holds `▁` markers and never gains spaces between Chinese characters.

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::ModelWrapper;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::models::unigram::{Unigram, UnigramTrainer};
use tokenizers::models::wordlevel::{WordLevel, WordLevelTrainer};
use tokenizers::normalizers::{
    NormalizerWrapper, Precompiled, Replace, Sequence as NormalizerSequence, Strip,
};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::fixed_length::FixedLength;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::punctuation::Punctuation;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::whitespace::WhitespaceSplit;
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::error::{DataError, Result};
use crate::{Specials, UNK};

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
    Unigram,
    /// One token per whitespace-separated item (labels, pre-tokenised words).
    Split,
}

impl TokenizerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerKind::Bpe => "bpe",
            TokenizerKind::Char => "char",
            TokenizerKind::Word => "word",
            TokenizerKind::Unigram => "unigram",
            TokenizerKind::Split => "split",
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
            "unigram" => Ok(TokenizerKind::Unigram),
            "split" => Ok(TokenizerKind::Split),
            other => Err(DataError::Config(format!(
                "unknown tokenizer `{other}`; fix: use bpe, char, word, unigram or split"
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
    /// Minimum count: of a pair to be merged (`bpe`), of a character, word or item to enter the
    /// vocabulary (`char`, `word`, `split`).
    pub min_freq: u64,
    /// `split` only: train unknown-word signatures from the items rarer than `min_freq`
    /// ([`crate::signature`]).
    pub signatures: bool,
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
        TokenizerKind::Unigram => {
            let mut tok = Tokenizer::new(Unigram::default());
            spm_pipeline(&mut tok, &[], true)?;
            return Ok(tok);
        }
        TokenizerKind::Split => {
            let wl = WordLevel::builder()
                .unk_token(unk)
                .build()
                .map_err(|e| tok_err("building a split model", e))?;
            // No decoder: decoding joins the tokens with single spaces (Hugging Face's
            // `Tokenizer.decode` does the same without one).
            let mut tok = Tokenizer::new(wl);
            tok.with_pre_tokenizer(Some(WhitespaceSplit));
            return Ok(tok);
        }
    };
    let mut tok = Tokenizer::new(model);
    tok.with_pre_tokenizer(Some(pre));
    tok.with_decoder(Some(decoder));
    Ok(tok)
}

/// Gives `tok` the normaliser, pre-tokenizer and decoder that Hugging Face's converter builds for
/// a SentencePiece model (`transformers.convert_slow_tokenizer.SpmConverter`): the model's
/// precompiled normalisation map (`charsmap`, none if empty), right strip, runs of spaces to one
/// `▁`, and `▁` marking every word's start (the first one too, with `dummy_prefix`).
pub fn spm_pipeline(tok: &mut Tokenizer, charsmap: &[u8], dummy_prefix: bool) -> Result<()> {
    let mut norms: Vec<NormalizerWrapper> = Vec::new();
    if !charsmap.is_empty() {
        let precompiled = Precompiled::from(charsmap)
            .map_err(|e| tok_err("reading the SentencePiece normalisation map", e))?;
        norms.push(precompiled.into());
    }
    norms.push(Strip::new(false, true).into());
    let spaces = Replace::new(
        tokenizers::normalizers::replace::ReplacePattern::Regex(" {2,}".into()),
        SPACE_MARKER.to_string(),
    )
    .map_err(|e| tok_err("building the space normaliser", e))?;
    norms.push(spaces.into());
    tok.with_normalizer(Some(NormalizerSequence::new(norms)));
    let prepend = if dummy_prefix {
        PrependScheme::Always
    } else {
        PrependScheme::Never
    };
    let ms = Metaspace::new(SPACE_MARKER, prepend, true);
    tok.with_pre_tokenizer(Some(ms.clone()));
    tok.with_decoder(Some(ms));
    Ok(())
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
    if spec.signatures {
        if spec.kind != TokenizerKind::Split {
            return Err(DataError::Config(format!(
                "unknown-word signatures need a split tokenizer, not {}; fix: drop \
                 --unk-signatures, or use --src-tokenizer split",
                spec.kind
            )));
        }
        let texts = crate::signature::rare_items_as_signatures(texts, spec.min_freq);
        let plain = TokenizerSpec {
            signatures: false,
            ..*spec
        };
        return train_tokenizer(&plain, texts.into_iter());
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
        TokenizerKind::Unigram => UnigramTrainer::builder()
            .vocab_size(spec.vocab_size as u32)
            .special_tokens(special_added_tokens())
            .unk_token(Some(SPECIAL_TOKENS[UNK as usize].to_owned()))
            .show_progress(false)
            .build()
            .map_err(|e| tok_err("building the trainer", e))?
            .into(),
        TokenizerKind::Char | TokenizerKind::Word | TokenizerKind::Split => {
            WordLevelTrainer::builder()
                .vocab_size(spec.vocab_size)
                .min_frequency(spec.min_freq)
                .special_tokens(special_added_tokens())
                .show_progress(false)
                .build()
                .map_err(|e| tok_err("building the trainer", e))?
                .into()
        }
    };
    let what = format!("training the {} tokenizer", spec.kind);
    if spec.kind == TokenizerKind::Unigram {
        // The unigram trainer's suffix array panics on text without a single character.
        let texts: Vec<S> = texts.collect();
        if texts.iter().all(|t| t.as_ref().trim().is_empty()) {
            return Err(tok_err(
                &what,
                "the text is empty; fix: give it non-empty lines",
            ));
        }
        let trained = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tok.train(&mut trainer, texts.into_iter())
                .map(|_| ())
                .map_err(|e| e.to_string())
        }));
        match trained {
            Ok(r) => r.map_err(|e| tok_err(&what, e))?,
            Err(_) => return Err(tok_err(&what, "the unigram trainer failed on this text")),
        }
        tok = without_learned_specials(tok)?;
    } else {
        tok.train(&mut trainer, texts)
            .map_err(|e| tok_err(&what, e))?;
    }
    TextTokenizer::from_tokenizer(tok, "the trained tokenizer")
}

/// A trained `unigram` tokenizer without the pieces it learned that are spelled like a special
/// token (text holding `<pad>` makes the trainer add a second `<pad>` after the special one, whose
/// id then is the name's). Unchanged when it learned none, as on text without those names.
fn without_learned_specials(tok: Tokenizer) -> Result<Tokenizer> {
    let ModelWrapper::Unigram(unigram) = tok.get_model() else {
        return Ok(tok);
    };
    let n = SPECIAL_TOKENS.len();
    let is_learned_special = |i: usize, piece: &str| i >= n && SPECIAL_TOKENS.contains(&piece);
    if !unigram
        .iter()
        .enumerate()
        .any(|(i, (piece, _))| is_learned_special(i, piece))
    {
        return Ok(tok);
    }
    let vocab: Vec<(String, f64)> = unigram
        .iter()
        .enumerate()
        .filter(|(i, (piece, _))| !is_learned_special(*i, piece))
        .map(|(_, entry)| entry.clone())
        .collect();
    let model = Unigram::from(vocab, Some(UNK as usize), unigram.byte_fallback())
        .map_err(|e| tok_err("rebuilding the unigram model", e))?;
    let mut fresh = Tokenizer::new(model);
    spm_pipeline(&mut fresh, &[], true)?;
    fresh.add_special_tokens(&special_added_tokens());
    Ok(fresh)
}

/// The prefix of a vocabulary entry that this side's segmentation model does not have (a
/// target-only piece of a joint Marian vocabulary, seen from the source side). Pre-tokenised text
/// holds no plain space, so such entries are never matched; they keep their ids, and a piece the
/// model left unknown is looked up among them, as `MarianTokenizer` looks it up in `vocab.json`.
pub const FOREIGN_PREFIX: char = ' ';

/// A trained or imported tokenizer and the special ids its vocabulary reserves.
///
/// Text is always ordinary text: the names of the reserved tokens (`<pad>`, `<unk>`, `<bos>`,
/// `<eos>`, Marian's `</s>`, a Marian target-language tag past the start of the text) written in
/// the text never become their ids. They are segmented like any other characters (`<`, `eos`,
/// `>` where the vocabulary has such pieces, `<unk>` for what it cannot cover), so such text can
/// neither end nor pad a sequence. Encoding goes through [`TextTokenizer::encoder`], a copy of the
/// tokenizer whose segmentation model has the reserved entries renamed out of reach of any text
/// (same ids, same scores: text without those names segments exactly as before), with the
/// extraction of special tokens from the text turned off.
///
/// Only the encoder is kept in memory (a unigram model's lookup trie alone takes megabytes):
/// the ids and names of the entries it renamed give back the vocabulary as written, and the JSON
/// text the tokenizer as saved. Clones share all of it.
#[derive(Clone)]
pub struct TextTokenizer {
    /// The tokenizer as it encodes text: see the type's docs.
    encoder: Arc<Tokenizer>,
    /// The entries the encoder's model renamed: `(id, name as written)`, sorted by id.
    renamed: Arc<[(u32, String)]>,
    /// The HF JSON text of the tokenizer as written (what [`TextTokenizer::save`] writes).
    json: Arc<str>,
    /// The tokenizer as written, parsed from `json` on first use by [`TextTokenizer::inner`].
    inner: Arc<std::sync::OnceLock<Tokenizer>>,
    /// The ids that text never produces (sorted): the specials, the special added tokens and,
    /// in a Marian vocabulary, the target-language tags. A language tag at the start of the text
    /// is the exception (see [`TextTokenizer::try_encode`]).
    reserved: Vec<u32>,
    specials: Specials,
    /// Whether the vocabulary has [`FOREIGN_PREFIX`] entries.
    has_foreign: bool,
    /// Whether this `split` vocabulary has unknown-word signatures ([`crate::signature`]).
    signatures: bool,
    /// `inner`'s size with its added tokens, kept because the `tokenizers` crate counts it by
    /// building a copy of the whole vocabulary (a hash map of every piece) on every call.
    vocab_size: usize,
}

impl std::fmt::Debug for TextTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextTokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("specials", &self.specials)
            .finish()
    }
}

/// A byte range `(start, end)` of a text.
pub(crate) type Span = (usize, usize);

/// Marian's names of its specials.
pub const MARIAN_EOS: &str = "</s>";
pub const MARIAN_UNK: &str = "<unk>";
pub const MARIAN_PAD: &str = "<pad>";

/// The special ids of `tok`'s vocabulary: s2s's layout, or Marian's.
fn specials_of(tok: &Tokenizer) -> std::result::Result<Specials, String> {
    if tok.token_to_id("<bos>").is_some() || tok.token_to_id("<eos>").is_some() {
        for (id, name) in SPECIAL_TOKENS.iter().enumerate() {
            if tok.token_to_id(name) != Some(id as u32) {
                return Err(format!(
                    "special token {name} must have id {id}; fix: re-run `s2s prepare`"
                ));
            }
        }
        return Ok(Specials::S2S);
    }
    match (
        tok.token_to_id(MARIAN_EOS),
        tok.token_to_id(MARIAN_UNK),
        tok.token_to_id(MARIAN_PAD),
    ) {
        (Some(eos), Some(unk), Some(pad)) => Ok(Specials {
            pad,
            unk,
            bos: pad,
            eos,
        }),
        _ => Err(format!(
            "the vocabulary has neither s2s's specials ({}) nor Marian's ({MARIAN_EOS}, \
             {MARIAN_UNK}, {MARIAN_PAD}); fix: re-run `s2s prepare` or `s2s import`",
            SPECIAL_TOKENS.join(", ")
        )),
    }
}

/// The ids that text must never produce: `specials`, the special added tokens and, in a Marian
/// vocabulary (`bos == pad`), the target-language tags; sorted.
fn reserved_ids(tok: &Tokenizer, specials: Specials) -> Vec<u32> {
    let mut ids = vec![specials.pad, specials.unk, specials.bos, specials.eos];
    ids.extend(
        tok.get_added_tokens_decoder()
            .into_iter()
            .filter(|(_, t)| t.special)
            .map(|(id, _)| id),
    );
    if specials.bos == specials.pad {
        ids.extend(
            tok.get_vocab(false)
                .into_iter()
                .filter(|(t, _)| {
                    crate::sentencepiece::is_language_tag(t.trim_start_matches(FOREIGN_PREFIX))
                })
                .map(|(_, id)| id),
        );
    }
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// `tok` as it encodes text: every entry of its segmentation model whose id is in `reserved`
/// renamed so that no text matches it (a space in front and behind: pre-tokenized text has no
/// plain space), a BPE merge that would build one of them dropped, and the special tokens in
/// the text not extracted. Ids and scores are kept, so text without those names segments as
/// with `tok`.
///
/// Returns the encoder and the entries it renamed, `(id, name)` sorted by id as `reserved` is
/// (none where the model is kept as it is).
fn text_encoder(
    tok: Tokenizer,
    reserved: &[u32],
) -> std::result::Result<(Tokenizer, Vec<(u32, String)>), String> {
    use tokenizers::Model;
    let entries: Vec<(u32, String)> = reserved
        .iter()
        .filter_map(|&id| tok.get_model().id_to_token(id).map(|name| (id, name)))
        .filter(|(_, name)| !name.starts_with(FOREIGN_PREFIX))
        .collect();
    let renamed: std::collections::HashMap<String, String> = entries
        .iter()
        .map(|(_, name)| (name.clone(), hidden_name(name)))
        .collect();
    let mut encoder = tok;
    encoder.set_encode_special_tokens(true);
    if renamed.is_empty() {
        return Ok((encoder, Vec::new()));
    }
    let cannot = |e: &dyn std::fmt::Display| format!("cannot build the text encoder: {e}");
    let mut json = serde_json::to_value(encoder.get_model()).map_err(|e| cannot(&e))?;
    let rename = |v: &mut serde_json::Value| {
        if let Some(new) = v.as_str().and_then(|t| renamed.get(t)) {
            *v = serde_json::Value::String(new.clone());
        }
    };
    match json["type"].as_str() {
        Some("WordLevel") | Some("BPE") => {
            if let Some(vocab) = json["vocab"].as_object_mut() {
                *vocab = std::mem::take(vocab)
                    .into_iter()
                    .map(|(t, id)| (renamed.get(&t).cloned().unwrap_or(t), id))
                    .collect();
            }
            rename(&mut json["unk_token"]);
            // A merge is `["a", "b"]` (or `"a b"` in older files); it builds `a` + `b` without the
            // continuing-subword prefix.
            let prefix = json["continuing_subword_prefix"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(merges) = json["merges"].as_array_mut() {
                merges.retain(|m| {
                    let (a, b) = match m {
                        serde_json::Value::Array(pair) => (
                            pair.first().and_then(|v| v.as_str()).unwrap_or_default(),
                            pair.get(1).and_then(|v| v.as_str()).unwrap_or_default(),
                        ),
                        serde_json::Value::String(s) => s.split_once(' ').unwrap_or((s, "")),
                        _ => ("", ""),
                    };
                    let built = format!("{a}{}", b.strip_prefix(prefix.as_str()).unwrap_or(b));
                    ![a, b, built.as_str()]
                        .iter()
                        .any(|t| renamed.contains_key(*t))
                });
            }
        }
        Some("Unigram") => {
            if let Some(vocab) = json["vocab"].as_array_mut() {
                for entry in vocab {
                    rename(&mut entry[0]);
                }
            }
        }
        // Other models are not built by s2s; `segment` still maps a reserved id to unknown.
        _ => return Ok((encoder, Vec::new())),
    }
    // The old model goes before the new one is built, so that the process never holds two
    // lookup tries (its peak memory would keep the second).
    encoder.with_model(ModelWrapper::WordLevel(WordLevel::default()));
    let model: ModelWrapper = serde_json::from_value(json).map_err(|e| cannot(&e))?;
    encoder.with_model(model);
    Ok((encoder, entries))
}

/// The name a reserved entry has in the text encoder's model: out of reach of any text.
fn hidden_name(name: &str) -> String {
    format!("{FOREIGN_PREFIX}{name}{FOREIGN_PREFIX}")
}

impl TextTokenizer {
    /// Loads a tokenizer saved in the HF JSON format and checks its special ids.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        Self::from_file_text(path, &json)
    }

    /// Loads a source and a target tokenizer; when the two files are the same (a joint
    /// vocabulary), the target shares the source's tokenizer instead of holding a second copy.
    pub fn pair_from_files(src: impl AsRef<Path>, tgt: impl AsRef<Path>) -> Result<(Self, Self)> {
        let (src, tgt) = (src.as_ref(), tgt.as_ref());
        let src_json = std::fs::read_to_string(src).map_err(|e| DataError::io(src, e))?;
        let tgt_json = std::fs::read_to_string(tgt).map_err(|e| DataError::io(tgt, e))?;
        let src_tok = Self::from_file_text(src, &src_json)?;
        let tgt_tok = if tgt_json == src_json {
            src_tok.clone()
        } else {
            Self::from_file_text(tgt, &tgt_json)?
        };
        Ok((src_tok, tgt_tok))
    }

    /// [`TextTokenizer::from_json`] with errors naming `path`.
    fn from_file_text(path: &Path, json: &str) -> Result<Self> {
        Self::from_json(json).map_err(|e| match e {
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
        Self::wrap(tok, json.into(), "tokenizer JSON")
    }

    /// Wraps an HF tokenizer after finding its special tokens (s2s's at their fixed ids, or
    /// Marian's).
    pub fn from_tokenizer(inner: Tokenizer, what: &str) -> Result<Self> {
        let json = inner
            .to_string(true)
            .map_err(|e| tok_err("serialising the tokenizer", e))?;
        Self::wrap(inner, json.into(), what)
    }

    /// [`TextTokenizer::from_tokenizer`] for `inner` parsed from `json`.
    fn wrap(inner: Tokenizer, json: Arc<str>, what: &str) -> Result<Self> {
        let specials = specials_of(&inner).map_err(|message| DataError::Tokenizer {
            what: what.to_owned(),
            message,
        })?;
        // `get_vocab` builds a map of every entry: one pass answers both questions.
        let entries = inner.get_vocab(false);
        let has_foreign = entries.keys().any(|t| t.starts_with(FOREIGN_PREFIX));
        let signatures = entries.keys().any(|t| crate::signature::is_signature(t));
        drop(entries);
        let reserved = reserved_ids(&inner, specials);
        let vocab_size = inner.get_vocab_size(true);
        let (encoder, renamed) =
            text_encoder(inner, &reserved).map_err(|message| DataError::Tokenizer {
                what: what.to_owned(),
                message,
            })?;
        let mut tok = Self {
            encoder: Arc::new(encoder),
            renamed: renamed.into(),
            json,
            inner: Default::default(),
            reserved,
            specials,
            has_foreign,
            signatures: false,
            vocab_size,
        };
        tok.signatures = signatures && tok.kind() == Some(TokenizerKind::Split);
        Ok(tok)
    }

    /// The tokenizer that encodes text: `inner` with every reserved entry of its segmentation
    /// model renamed so that no text matches it, and special tokens in the text left as text.
    pub fn encoder(&self) -> &Tokenizer {
        &self.encoder
    }

    /// Whether `id` is one that text never produces (see [`TextTokenizer`]): a special, a
    /// special added token, or a Marian target-language tag.
    pub fn is_reserved(&self, id: u32) -> bool {
        self.reserved.binary_search(&id).is_ok()
    }

    /// The kind of tokenizer this is, by its model and pre-tokenizer; `None` for models s2s does
    /// not build.
    pub fn kind(&self) -> Option<TokenizerKind> {
        match self.encoder.get_model() {
            ModelWrapper::BPE(_) => Some(TokenizerKind::Bpe),
            ModelWrapper::Unigram(_) => Some(TokenizerKind::Unigram),
            ModelWrapper::WordLevel(_) => {
                let pre =
                    serde_json::to_string(&self.encoder.get_pre_tokenizer()).unwrap_or_default();
                Some(if pre.contains("FixedLength") {
                    TokenizerKind::Char
                } else if pre.contains("WhitespaceSplit") {
                    TokenizerKind::Split
                } else {
                    TokenizerKind::Word
                })
            }
            _ => None,
        }
    }

    /// Whether an unknown word gets its signature's id ([`crate::signature`]).
    pub fn has_signatures(&self) -> bool {
        self.signatures
    }

    /// The special ids of this vocabulary.
    pub fn specials(&self) -> Specials {
        self.specials
    }

    /// Whether this is a Marian vocabulary (decoding starts from `<pad>`).
    pub fn is_marian(&self) -> bool {
        self.specials.bos == self.specials.pad
    }

    /// The id of a raw entry, foreign ones included.
    fn entry_id(&self, entry: &str) -> Option<u32> {
        self.token_to_id(entry).or_else(|| {
            self.has_foreign
                .then(|| self.token_to_id(&format!("{FOREIGN_PREFIX}{entry}")))
                .flatten()
        })
    }

    /// The tokens ids of `text` (no `<bos>`/`<eos>` added), or an error from the tokenizer. In a
    /// Marian vocabulary a leading target-language tag (`>>cmn_Hans<<`) becomes its own token,
    /// as `MarianTokenizer` does. Everything else is ordinary text: the names of special tokens
    /// in it never give their ids (see [`TextTokenizer`]).
    pub fn try_encode(&self, text: &str) -> Result<Vec<u32>> {
        if self.is_marian() {
            let (tag, rest) = crate::sentencepiece::split_language_tag(text);
            let mut ids: Vec<u32> = tag
                .map(|t| self.entry_id(t).unwrap_or(self.specials.unk))
                .into_iter()
                .collect();
            ids.extend(self.segment(rest)?);
            return Ok(ids);
        }
        self.segment(text)
    }

    /// The ids of `text` segmented by the model, as ordinary text; none for whitespace.
    fn segment(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.segment_spans(text)?.0)
    }

    /// [`TextTokenizer::segment`], with the byte span of `text` each id came from.
    pub(crate) fn segment_spans(&self, text: &str) -> Result<(Vec<u32>, Vec<Span>)> {
        if text.trim().is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let enc = self
            .encoder
            .encode(text, false)
            .map_err(|e| tok_err("encoding", e))?;
        let spans = enc.get_offsets().to_vec();
        Ok((self.map_ids(&enc, text), spans))
    }

    /// The ids of an encoding as ordinary text gives them (see [`TextTokenizer`]).
    fn map_ids(&self, enc: &tokenizers::Encoding, text: &str) -> Vec<u32> {
        let unk = self.specials.unk;
        if self.signatures {
            // `split` pieces are the whitespace-separated items, one id each.
            return enc
                .get_ids()
                .iter()
                .zip(text.split_whitespace())
                .map(|(&id, item)| match id {
                    id if id == unk => self
                        .token_to_id(&crate::signature::signature(item))
                        .unwrap_or(unk),
                    id if self.is_reserved(id) => unk,
                    id => id,
                })
                .collect();
        }
        enc.get_ids()
            .iter()
            .zip(enc.get_tokens())
            .map(|(&id, piece)| {
                if id == unk && self.has_foreign {
                    // A piece this side's model left unknown may be a foreign entry, never a
                    // reserved one (`</s>` typed as text).
                    return self
                        .entry_id(piece)
                        .filter(|&id| !self.is_reserved(id))
                        .unwrap_or(unk);
                }
                // The encoder cannot produce a reserved id but the unknown one; should it,
                // the piece is unknown rather than a control token.
                if id != unk && self.is_reserved(id) {
                    return unk;
                }
                id
            })
            .collect()
    }

    /// The token ids of `text`, without `<bos>`/`<eos>`. Unknown pieces map to the unknown id.
    /// (The underlying tokenizer cannot fail with the models built here; should it, the result
    /// is a single unknown id.)
    pub fn encode(&self, text: &str) -> Vec<u32> {
        self.try_encode(text)
            .unwrap_or_else(|_| vec![self.specials.unk])
    }

    /// [`TextTokenizer::encode`], and each id's spelling: the text it was cut from, trimmed, so
    /// that an unknown word keeps its letters ([`crate::chars`]). Where the text has no span for
    /// an id (a Marian language tag), its spelling is its piece.
    pub fn encode_spelled(&self, text: &str) -> (Vec<u32>, Vec<String>) {
        if !self.is_marian()
            && let Ok((ids, spans)) = self.segment_spans(text)
        {
            let spellings = ids
                .iter()
                .zip(&spans)
                .map(|(&id, &(start, end))| {
                    text.get(start..end)
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                        .or_else(|| self.piece(id))
                        .unwrap_or_default()
                })
                .collect();
            return (ids, spellings);
        }
        let ids = self.encode(text);
        let spellings = ids
            .iter()
            .map(|&id| self.piece(id).unwrap_or_default())
            .collect();
        (ids, spellings)
    }

    /// The raw piece of `id` (a foreign entry without its prefix), or `None` when out of range.
    pub fn piece(&self, id: u32) -> Option<String> {
        self.id_to_token(id)
            .map(|t| match t.strip_prefix(FOREIGN_PREFIX) {
                Some(piece) if self.has_foreign => piece.to_owned(),
                _ => t,
            })
    }

    /// The text of `ids`, skipping special tokens and ids out of range. Leading and trailing
    /// spaces are trimmed (cleaned text has none, so round trips are exact). Without a decoder
    /// (`split`) the tokens are joined with single spaces, as Hugging Face's `decode` joins them.
    pub fn decode(&self, ids: &[u32]) -> String {
        self.decode_pieces(ids.iter().filter_map(|&id| self.piece(id)))
    }

    /// The text of raw pieces (special tokens skipped), as [`TextTokenizer::decode`] gives it.
    pub(crate) fn decode_pieces(&self, pieces: impl Iterator<Item = String>) -> String {
        let added = self.encoder.get_added_vocabulary();
        let pieces: Vec<String> = pieces.filter(|p| !added.is_special_token(p)).collect();
        let text = match self.encoder.get_decoder() {
            Some(decoder) => {
                use tokenizers::Decoder;
                decoder.decode(pieces).unwrap_or_default()
            }
            None => pieces.join(" "),
        };
        text.trim_matches(' ').to_owned()
    }

    /// One display string per id (same length as `ids`), for attention plots and JSON output:
    /// `▁` markers are removed (a token that was only a space shows as `" "`), special tokens
    /// show as their names, and ids out of range as the unknown token's name.
    pub fn tokens(&self, ids: &[u32]) -> Vec<String> {
        ids.iter()
            .map(|&id| match self.piece(id) {
                Some(t) if t.chars().all(|c| c == SPACE_MARKER) => " ".to_owned(),
                Some(t) => t.replace(SPACE_MARKER, ""),
                None => self
                    .id_to_token(self.specials.unk)
                    .unwrap_or_else(|| SPECIAL_TOKENS[UNK as usize].to_owned()),
            })
            .collect()
    }

    /// The vocabulary size, special tokens included (ids are `0..vocab_size`).
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The raw token string of an id, if any.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        match self.renamed.binary_search_by_key(&id, |(i, _)| *i) {
            Ok(i) => Some(self.renamed[i].1.clone()),
            Err(_) => self.encoder.id_to_token(id),
        }
    }

    /// The id of a raw token string, if any.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        if let Some((id, _)) = self.renamed.iter().find(|(_, name)| name == token) {
            return Some(*id);
        }
        self.encoder
            .token_to_id(token)
            .filter(|&id| self.id_to_token(id).as_deref() == Some(token))
    }

    /// Every entry of the vocabulary, added tokens included: `(name as written, id)`.
    pub fn vocab(&self) -> Vec<(String, u32)> {
        (0..self.vocab_size as u32)
            .filter_map(|id| self.id_to_token(id).map(|t| (t, id)))
            .collect()
    }

    /// Whether `self` and `other` are one tokenizer in memory (clones, or a joint vocabulary
    /// loaded by [`TextTokenizer::pair_from_files`]).
    pub fn shares_memory_with(&self, other: &TextTokenizer) -> bool {
        Arc::ptr_eq(&self.encoder, &other.encoder)
    }

    /// The HF tokenizer as written (the special names in text become their ids, unlike
    /// [`TextTokenizer::encode`]'s). Built on first use: a second copy of the model.
    pub fn inner(&self) -> &Tokenizer {
        self.inner.get_or_init(|| {
            self.json
                .parse()
                .expect("a tokenizer parses the JSON it was built from")
        })
    }

    /// The HF JSON text of this tokenizer.
    pub fn to_json(&self) -> Result<String> {
        Ok(self.json.to_string())
    }

    /// Saves the tokenizer as HF JSON, atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let json = self.to_json()?;
        crate::io::atomic_write(path, json.as_bytes()).map_err(|e| DataError::io(path, e))
    }
}
