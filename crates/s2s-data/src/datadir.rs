//! The data directory (DATA_DIR): its `data.toml` record and loading.
//!
//! Layout:
//! - `data.toml`: see [`DataToml`]; written last, so its presence marks a complete directory;
//! - `tokenizer.src.json`, `tokenizer.tgt.json`: HF tokenizer JSON (identical when joint);
//! - `train.src`, `train.tgt`, and where given `valid.src`, `valid.tgt`, `test.src`,
//!   `test.tgt`: the cleaned splits, UTF-8, one sentence per line, `\n` line ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Specials;
use crate::audio::{FbankConfig, Features, GlobalCmvn};
use crate::batch::{Batch, BatchFrames};
use crate::chars::BatchChars;
use crate::clean::{CleanConfig, clean_line};
use crate::error::{DataError, Result};
use crate::io::read_text_file;
use crate::task::Task;
use crate::tokenizer::{TextTokenizer, TokenizerKind};
use crate::vectors::{BatchVectors, SplitVectors};

/// Name of the record file.
pub const DATA_TOML: &str = "data.toml";
/// Name of the source-side tokenizer file.
pub const SRC_TOKENIZER_FILE: &str = "tokenizer.src.json";
/// Name of the target-side tokenizer file.
pub const TGT_TOKENIZER_FILE: &str = "tokenizer.tgt.json";
/// Version of the `data.toml` format written by this crate.
pub const FORMAT_VERSION: u32 = 1;

/// The names of the splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SplitName {
    Train,
    Valid,
    Test,
}

impl SplitName {
    pub const ALL: [SplitName; 3] = [SplitName::Train, SplitName::Valid, SplitName::Test];

    pub fn as_str(self) -> &'static str {
        match self {
            SplitName::Train => "train",
            SplitName::Valid => "valid",
            SplitName::Test => "test",
        }
    }

    /// File name of a speech split's features in DATA_DIR, e.g. `train.feats`.
    pub fn feats_file(self) -> String {
        format!("{}.feats", self.as_str())
    }

    /// File names of the split's two sides in DATA_DIR, e.g. `("train.src", "train.tgt")`.
    pub fn file_names(self) -> (String, String) {
        (
            format!("{}.src", self.as_str()),
            format!("{}.tgt", self.as_str()),
        )
    }
}

impl std::fmt::Display for SplitName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The contents of `data.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataToml {
    pub format_version: u32,
    /// e.g. `s2s-data 0.1.0`.
    pub created_by: String,
    pub options: DataOptions,
    pub tokenizers: TokenizersInfo,
    pub splits: SplitsInfo,
    /// The input files, with their hashes.
    pub sources: Vec<SourceFile>,
    /// Speech: how the audio became features, and their normalisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio: Option<AudioOptions>,
    /// Generation conditioned on vectors ([`crate::vectors`]): their dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vectors: Option<VectorOptions>,
}

/// A vector-conditioned DATA_DIR's sources: every vector has `dim` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorOptions {
    pub dim: usize,
}

/// How a speech DATA_DIR's audio became features: the extractor, and the training split's
/// per-bin mean and deviation that every split (and inference) is normalised with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AudioOptions {
    pub fbank: FbankConfig,
    pub cmvn: GlobalCmvn,
}

/// The options `s2s prepare` ran with (after defaults and detection).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataOptions {
    /// What the data is for; directories written before tasks existed are translation data.
    #[serde(default)]
    pub task: Task,
    pub src_tokenizer: TokenizerKind,
    pub tgt_tokenizer: TokenizerKind,
    /// Requested maximum vocabulary size (per tokenizer; of the single one when joint).
    pub vocab_size: usize,
    /// Minimum frequencies used (see [`crate::TokenizerSpec::min_freq`]).
    pub src_min_freq: u64,
    pub tgt_min_freq: u64,
    /// One tokenizer trained on both sides, saved twice.
    pub joint: bool,
    /// Training pairs with more tokens than this on either side were dropped; 0: no limit.
    pub max_len: usize,
    /// Every source, in every split and at inference, keeps its first this many tokens; 0: all
    /// of them ([`DataOptions::truncate_source`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_src_tokens: usize,
    pub clean: CleanConfig,
    /// Whether the side was treated as Chinese (for `clean.zh_script`).
    pub src_is_chinese: bool,
    pub tgt_is_chinese: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_lang: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tgt_lang: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl DataOptions {
    /// Cuts encoded source `ids` to [`DataOptions::max_src_tokens`]. Returns whether anything
    /// was cut.
    pub fn truncate_source(&self, ids: &mut Vec<u32>) -> bool {
        let cut = self.max_src_tokens > 0 && ids.len() > self.max_src_tokens;
        if cut {
            ids.truncate(self.max_src_tokens);
        }
        cut
    }

    /// The ids a model reads for the (cleaned) source `text`, the one place where training and
    /// inference agree on them: its encoding, with a copy model's unknown pieces numbered past
    /// the vocabulary ([`crate::copy`]), cut to [`DataOptions::max_src_tokens`]; and the pieces
    /// those ids stand for (none without copying; only those the cut source still holds).
    pub fn encode_source(
        &self,
        tokenizer: &TextTokenizer,
        text: &str,
        copy: bool,
    ) -> (Vec<u32>, crate::SourceWords) {
        let (mut ids, mut words) = if copy {
            tokenizer.encode_source_copy(text)
        } else {
            (tokenizer.encode(text), Vec::new())
        };
        if self.truncate_source(&mut ids) {
            words.truncate(crate::copy::words_used(&ids, tokenizer.vocab_size()));
        }
        (ids, words)
    }

    /// [`DataOptions::encode_source`] for a model that reads characters: the ids (without
    /// copying) and each one's spelling ([`TextTokenizer::encode_spelled`]), cut alike.
    pub fn encode_source_spelled(
        &self,
        tokenizer: &TextTokenizer,
        text: &str,
    ) -> (Vec<u32>, Vec<String>) {
        let (mut ids, mut spellings) = tokenizer.encode_spelled(text);
        self.truncate_source(&mut ids);
        spellings.truncate(ids.len());
        (ids, spellings)
    }
}

/// Both tokenizers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizersInfo {
    pub src: TokenizerInfo,
    pub tgt: TokenizerInfo,
}

/// One tokenizer file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenizerInfo {
    pub file: String,
    pub kind: TokenizerKind,
    /// Actual vocabulary size, special tokens included.
    pub vocab_size: usize,
    /// Whether unknown words get the token of their shape ([`crate::signature`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub signatures: bool,
}

/// Counts for every split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitsInfo {
    pub train: SplitStats,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<SplitStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<SplitStats>,
}

impl SplitsInfo {
    pub fn get(&self, name: SplitName) -> Option<&SplitStats> {
        match name {
            SplitName::Train => Some(&self.train),
            SplitName::Valid => self.valid.as_ref(),
            SplitName::Test => self.test.as_ref(),
        }
    }
}

/// What cleaning did to one split. Counts of pairs unless said otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplitStats {
    pub src_file: String,
    pub tgt_file: String,
    /// Pairs read.
    pub input_pairs: usize,
    /// Pairs written.
    pub kept: usize,
    /// Pairs dropped because a side was empty after cleaning.
    pub dropped_empty: usize,
    /// Pairs dropped because a side had more than `max_len` tokens (training split only).
    pub dropped_too_long: usize,
    /// Whether the length filter applied (only to the training split).
    pub length_filtered: bool,
    /// Pairs over `max_len` that were kept because the split is not length-filtered.
    pub over_max_len_kept: usize,
    /// Kept pairs whose source was cut to `max_src_tokens` (counted before the cut; its
    /// tokens are counted after).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub src_truncated: usize,
    /// Source lines changed by cleaning (among all pairs read).
    pub src_changed: usize,
    /// Target lines changed by cleaning (among all pairs read).
    pub tgt_changed: usize,
    /// Tokens in the kept source lines (no specials).
    pub src_tokens: usize,
    /// Tokens in the kept target lines (no specials).
    pub tgt_tokens: usize,
    /// Tagging and classification: labels (tags, classes) of the kept pairs that the target
    /// vocabulary does not have, so that they are `<unk>`: labels the training split never had
    /// (0 there; `prepare` refuses a training label left out of the vocabulary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_labels: Option<usize>,
    /// Tagging and classification: kept pairs with at least one such label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs_with_unknown_labels: Option<usize>,
    /// CoNLL-U input: word forms whose inner whitespace was replaced by `_` so that each stays
    /// one token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forms_with_spaces: Option<usize>,
    /// Speech: the file of the split's features (`src_file` holds the audio paths, and
    /// `src_tokens` counts frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feats_file: Option<String>,
}

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceFile {
    /// `train`, `valid` or `test`.
    pub split: String,
    /// `src`, `tgt`, or `both` for a file that holds both sides (TSV, labelled formats).
    pub side: String,
    /// Absolute path where it could be resolved, else as given.
    pub path: String,
    pub sha256: String,
    pub lines: usize,
    /// `text` (one sentence per line), `tsv`, `conllu` (then `src_col` 2 and `tgt_col` the tag
    /// column), `tagged` (`token/TAG`), `labelled` (`LABEL text`), `manifest` or `kaldi` (audio),
    /// or `vectors` (one vector per line, [`crate::vectors`]).
    pub format: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_col: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tgt_col: Option<usize>,
}

/// The sentences of one split, aligned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParallelText {
    pub src: Vec<String>,
    pub tgt: Vec<String>,
    /// Speech: each source's normalised features (`src` holds the audio paths).
    pub frames: Option<Arc<[Features]>>,
    /// Vector conditions: each source's vector (`src` holds their text).
    pub vectors: Option<SplitVectors>,
}

impl ParallelText {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }
}

/// Token ids of one split, aligned, without specials.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EncodedSplit {
    pub src: Vec<Vec<u32>>,
    pub tgt: Vec<Vec<u32>>,
    /// The vocabulary's special ids, which batches add.
    pub specials: Specials,
    /// For a copy model ([`DataDir::encode_copy`]), each source's pieces behind its ids past the
    /// vocabulary; empty otherwise.
    pub src_words: Vec<crate::SourceWords>,
    /// Speech: each source's normalised feature frames (its `src` row is then empty).
    pub frames: Option<Arc<[Features]>>,
    /// Vector conditions: each source's vector (its `src` row is then empty).
    pub vectors: Option<SplitVectors>,
    /// For a model that reads characters ([`DataDir::encode_spelled`]), each source token's
    /// spelling (shared with the sources validation labels); empty otherwise.
    pub src_spellings: Vec<Arc<[String]>>,
}

impl EncodedSplit {
    pub fn len(&self) -> usize {
        self.src.len()
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// `(|x|, |y|)` for every pair: the input of [`crate::epoch_batches`]. A speech source's
    /// length is its number of frames.
    pub fn lengths(&self) -> Vec<(usize, usize)> {
        match &self.frames {
            Some(frames) => frames
                .iter()
                .zip(&self.tgt)
                .map(|(x, y)| (x.frames, y.len()))
                .collect(),
            None => self
                .src
                .iter()
                .zip(&self.tgt)
                .map(|(x, y)| (x.len(), y.len()))
                .collect(),
        }
    }

    /// The pieces behind source `i`'s ids past the vocabulary (none without copying).
    pub fn words(&self, i: usize) -> &[String] {
        self.src_words.get(i).map_or(&[], Vec::as_slice)
    }

    /// The padded batch of the pairs at `indices`.
    pub fn batch(&self, indices: &[usize]) -> Batch {
        let pairs: Vec<(&[u32], &[u32])> = indices
            .iter()
            .map(|&i| (self.src[i].as_slice(), self.tgt[i].as_slice()))
            .collect();
        let mut batch = Batch::from_pairs(&pairs, self.specials);
        if let Some(frames) = &self.frames {
            let rows: Vec<&Features> = indices.iter().map(|&i| &frames[i]).collect();
            batch.frames = Some(BatchFrames::new(&rows));
        }
        if let Some(vectors) = &self.vectors {
            let rows: Vec<&[f32]> = indices.iter().map(|&i| &vectors[i][..]).collect();
            let dim = rows.first().map_or(0, |v| v.len());
            batch.vectors = Some(BatchVectors::new(&rows, dim));
        }
        if !self.src_spellings.is_empty() {
            let rows: Vec<&[String]> = indices
                .iter()
                .map(|&i| &self.src_spellings[i][..])
                .collect();
            batch.chars = Some(BatchChars::new(&rows, batch.src_len));
        }
        batch
    }
}

/// A loaded data directory.
#[derive(Debug, Clone)]
pub struct DataDir {
    pub path: PathBuf,
    pub meta: DataToml,
    pub src_tokenizer: TextTokenizer,
    pub tgt_tokenizer: TextTokenizer,
    pub train: ParallelText,
    pub valid: Option<ParallelText>,
    pub test: Option<ParallelText>,
}

impl DataDir {
    /// A split, if present.
    pub fn split(&self, name: SplitName) -> Option<&ParallelText> {
        match name {
            SplitName::Train => Some(&self.train),
            SplitName::Valid => self.valid.as_ref(),
            SplitName::Test => self.test.as_ref(),
        }
    }

    /// The width of a model's source: the source vocabulary, for speech the feature bins, for
    /// vector conditions their dimension.
    pub fn source_width(&self) -> usize {
        match (&self.meta.audio, &self.meta.vectors) {
            (Some(audio), _) => audio.fbank.n_mels,
            (None, Some(v)) => v.dim,
            (None, None) => self.src_tokenizer.vocab_size(),
        }
    }

    /// Encodes a split with the two tokenizers (speech: the transcripts, and the frames as they
    /// are).
    pub fn encode(&self, text: &ParallelText) -> EncodedSplit {
        self.encode_sources(text, false)
    }

    /// Encodes a split for a model that reads characters: [`DataDir::encode`], with each
    /// source token's spelling ([`DataOptions::encode_source_spelled`]).
    pub fn encode_spelled(&self, text: &ParallelText) -> EncodedSplit {
        self.encode_sources(text, true)
    }

    fn encode_sources(&self, text: &ParallelText, spelled: bool) -> EncodedSplit {
        let options = &self.meta.options;
        let tokenizer = &self.src_tokenizer;
        // Audio and vectors are read as they are: no source ids.
        let (src, src_spellings) = if text.frames.is_some() || text.vectors.is_some() {
            (vec![Vec::new(); text.len()], Vec::new())
        } else if spelled {
            text.src
                .iter()
                .map(|s| {
                    let (ids, spellings) = options.encode_source_spelled(tokenizer, s);
                    (ids, spellings.into())
                })
                .unzip()
        } else {
            (
                text.src
                    .iter()
                    .map(|s| options.encode_source(tokenizer, s, false).0)
                    .collect(),
                Vec::new(),
            )
        };
        EncodedSplit {
            src,
            tgt: text
                .tgt
                .iter()
                .map(|s| self.tgt_tokenizer.encode(s))
                .collect(),
            specials: self.specials(),
            src_words: Vec::new(),
            frames: text.frames.clone(),
            vectors: text.vectors.clone(),
            src_spellings,
        }
    }

    /// Encodes a split for a copy model ([`crate::copy`]): unknown source pieces get ids past
    /// the vocabulary, and target pieces the same ids where their source has them. Needs one
    /// vocabulary for both sides.
    pub fn encode_copy(&self, text: &ParallelText) -> Result<EncodedSplit> {
        if !self.src_tokenizer.shares_memory_with(&self.tgt_tokenizer) {
            return Err(DataError::Config(format!(
                "{}: a copy model copies source tokens into the target, which needs one \
                 vocabulary for both; fix: prepare the data with `s2s prepare --joint`",
                self.path.display()
            )));
        }
        let mut split = EncodedSplit {
            src: Vec::with_capacity(text.src.len()),
            tgt: Vec::with_capacity(text.tgt.len()),
            specials: self.specials(),
            src_words: Vec::with_capacity(text.src.len()),
            frames: None,
            vectors: None,
            src_spellings: Vec::new(),
        };
        for (s, t) in text.src.iter().zip(&text.tgt) {
            let (ids, words) = self
                .meta
                .options
                .encode_source(&self.src_tokenizer, s, true);
            split
                .tgt
                .push(self.tgt_tokenizer.encode_target_copy(t, &words));
            split.src.push(ids);
            split.src_words.push(words);
        }
        Ok(split)
    }

    /// The special ids of the target vocabulary, which [`load_data_dir`] checks the source
    /// vocabulary agrees with.
    pub fn specials(&self) -> Specials {
        self.tgt_tokenizer.specials()
    }

    /// Cleans a source sentence the way the corpus was cleaned (for translation input).
    pub fn clean_src(&self, text: &str) -> String {
        clean_line(
            text,
            &self.meta.options.clean,
            self.meta.options.src_is_chinese,
        )
    }

    /// Cleans a target sentence the way the corpus was cleaned (e.g. references).
    pub fn clean_tgt(&self, text: &str) -> String {
        clean_line(
            text,
            &self.meta.options.clean,
            self.meta.options.tgt_is_chinese,
        )
    }
}

/// Writes `data.toml` into `dir`, atomically.
pub fn write_data_toml(dir: &Path, record: &DataToml) -> Result<()> {
    let path = dir.join(DATA_TOML);
    let text = toml::to_string(record).map_err(|e| DataError::BadDataDir {
        path: path.clone(),
        message: format!("cannot serialise the record: {e}"),
    })?;
    crate::io::atomic_write(&path, text.as_bytes()).map_err(|e| DataError::io(&path, e))
}

/// Reads and checks `data.toml` of a data directory.
pub fn read_data_toml(dir: impl AsRef<Path>) -> Result<DataToml> {
    let dir = dir.as_ref();
    let path = dir.join(DATA_TOML);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(DataError::NotADataDir {
                path: dir.to_path_buf(),
            });
        }
        Err(e) => return Err(DataError::io(&path, e)),
    };
    let meta: DataToml = toml::from_str(&text).map_err(|e| DataError::BadDataDir {
        path: path.clone(),
        message: format!(
            "cannot parse it: {}; fix: re-run `s2s prepare`",
            e.to_string().trim_end()
        ),
    })?;
    if meta.format_version != FORMAT_VERSION {
        return Err(DataError::BadDataDir {
            path,
            message: format!(
                "format_version {} is not supported (expected {FORMAT_VERSION}); fix: re-run `s2s prepare`",
                meta.format_version
            ),
        });
    }
    Ok(meta)
}

/// A vector-conditioned split's sources, each of `dim` numbers.
fn read_vectors(file: &crate::io::TextFile, dim: usize) -> Result<SplitVectors> {
    file.lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            crate::vectors::parse_dim(line, Some(dim)).map_err(|problem| DataError::BadDataDir {
                path: file.path.clone(),
                message: format!("line {}: {problem} (or re-run `s2s prepare`)", i + 1),
            })
        })
        .collect::<Result<Vec<_>>>()
        .map(Arc::from)
}

/// Loads a data directory: `data.toml`, both tokenizers and every split it lists, checking that
/// the line counts match the record.
pub fn load_data_dir(path: impl AsRef<Path>) -> Result<DataDir> {
    let dir = path.as_ref();
    let meta = read_data_toml(dir)?;
    let (src_tokenizer, tgt_tokenizer) = TextTokenizer::pair_from_files(
        dir.join(&meta.tokenizers.src.file),
        dir.join(&meta.tokenizers.tgt.file),
    )?;
    if src_tokenizer.specials() != tgt_tokenizer.specials() {
        return Err(DataError::Config(format!(
            "the tokenizers of {} reserve different special ids ({:?} and {:?}); fix: re-run `s2s prepare`",
            dir.display(),
            src_tokenizer.specials(),
            tgt_tokenizer.specials()
        )));
    }
    let load = |stats: &SplitStats| -> Result<ParallelText> {
        let src = read_text_file(dir.join(&stats.src_file))?;
        let tgt = read_text_file(dir.join(&stats.tgt_file))?;
        for f in [&src, &tgt] {
            if f.lines.len() != stats.kept {
                return Err(DataError::BadDataDir {
                    path: f.path.clone(),
                    message: format!(
                        "has {} lines but data.toml records {}; fix: re-run `s2s prepare`",
                        f.lines.len(),
                        stats.kept
                    ),
                });
            }
        }
        let frames = match (&stats.feats_file, &meta.audio) {
            (Some(file), Some(audio)) => {
                let path = dir.join(file);
                let mut feats = crate::audio::read_features(&path)?;
                if feats.len() != stats.kept {
                    return Err(DataError::BadDataDir {
                        path,
                        message: format!(
                            "has {} utterances but data.toml records {}; fix: re-run `s2s prepare`",
                            feats.len(),
                            stats.kept
                        ),
                    });
                }
                for f in &mut feats {
                    audio.cmvn.apply(f);
                }
                Some(Arc::from(feats))
            }
            (None, None) => None,
            _ => {
                return Err(DataError::BadDataDir {
                    path: dir.join(DATA_TOML),
                    message: "a speech split without its features, or features without the \
                              audio options; fix: re-run `s2s prepare`"
                        .into(),
                });
            }
        };
        let vectors = match &meta.vectors {
            Some(v) => Some(read_vectors(&src, v.dim)?),
            None => None,
        };
        Ok(ParallelText {
            src: src.lines,
            tgt: tgt.lines,
            frames,
            vectors,
        })
    };
    let train = load(&meta.splits.train)?;
    let valid = meta.splits.valid.as_ref().map(load).transpose()?;
    let test = meta.splits.test.as_ref().map(load).transpose()?;
    Ok(DataDir {
        path: dir.to_path_buf(),
        meta,
        src_tokenizer,
        tgt_tokenizer,
        train,
        valid,
        test,
    })
}
