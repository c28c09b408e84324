//! `s2s prepare`: read, validate and clean a parallel corpus, train the tokenizers and write a
//! data directory.
//!
//! Cleaning policy (recorded in `data.toml`, nothing is dropped silently):
//! - every line is cleaned with [`crate::clean_line`]; lines it changes are counted per side;
//! - a pair with an empty side after cleaning is dropped and counted, in every split;
//! - a pair with more than `max_len` tokens on either side (counted with the trained
//!   tokenizers, no specials) is dropped and counted **in the training split only**. The
//!   validation and test splits are kept complete, so scores stay comparable across settings;
//!   their pairs over `max_len` are only counted (`over_max_len_kept`).
//!
//! The tokenizers are trained on the cleaned training split before length filtering.
//!
//! Long inputs: with `max_src_tokens` every source keeps its first that many tokens, in every
//! split, at training and at inference alike ([`crate::DataOptions::truncate_source`]); the
//! files keep the whole text, the cut pairs are counted (`src_truncated`), and the length filter
//! measures the cut source.
//!
//! Tasks ([`Task`]): translation reads parallel text or TSV. Tagging reads CoNLL-U or
//! `token/TAG` files ([`crate::labelled`]) and needs `split` tokenizers on both sides, so that
//! every word and every tag is one token; each pair must have as many tags as tokens after
//! cleaning. Classification reads `LABEL text` files; its labels get a `split` tokenizer (the
//! text `word` by default) and each target line must be one label. Both also read parallel
//! text or TSV already in that shape (the checks are the same); a labelled format of the other
//! task is refused. Generation reads the same `LABEL text` files the other way round: the label
//! is the source (the condition, a `split` tokenizer), the text the target (`bpe` by default);
//! from parallel text or TSV the condition may be several labels, and from a vectors file
//! ([`CorpusSource::Vectors`], [`crate::vectors`]) it is a vector, checked and kept as numbers with
//! no tokenizer of its own (the text's is saved as both sides). For all three, the label side
//! keeps every label of the training split (`min_freq` does not apply to it; a `vocab_size` too
//! small for the labels is an error), and labels of the validation and test splits that
//! training never had become `<unk>`; they are counted (`unknown_labels`). Labels are names,
//! not text: no Chinese script conversion applies to them.

use std::path::{Path, PathBuf};

use crate::audio::{Fbank, FbankConfig, Features, GlobalCmvn};
use crate::clean::{CleanConfig, clean_line, looks_chinese, looks_cjk};
use crate::datadir::{
    AudioOptions, DATA_TOML, DataOptions, DataToml, FORMAT_VERSION, SRC_TOKENIZER_FILE, SourceFile,
    SplitName, SplitStats, SplitsInfo, TGT_TOKENIZER_FILE, TokenizerInfo, TokenizersInfo,
    VectorOptions,
};
use crate::error::{DataError, Result};
use crate::io::{atomic_write, read_text_file, split_tsv};
use crate::labelled::{LabelledFile, TagColumn, read_conllu, read_labelled, read_tagged};
use crate::task::{LabelSide, Task};
use crate::tokenizer::{TextTokenizer, TokenizerKind, TokenizerSpec, train_tokenizer};

/// Default maximum vocabulary size.
pub const DEFAULT_VOCAB_SIZE: usize = 8000;
/// Default maximum sentence length in tokens (training split).
pub const DEFAULT_MAX_LEN: usize = 100;

/// Where a split comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorpusSource {
    /// Two aligned files, one sentence per line.
    Parallel { src: PathBuf, tgt: PathBuf },
    /// One tab-separated file; columns are 1-based.
    Tsv {
        path: PathBuf,
        src_col: usize,
        tgt_col: usize,
    },
    /// A CoNLL-U file (tagging): the word forms and the tags of `column`.
    Conllu { path: PathBuf, column: TagColumn },
    /// One sentence per line of `token/TAG` items (tagging).
    Tagged { path: PathBuf },
    /// One example per line, `LABEL text` or `LABEL<TAB>text` (classification).
    Labelled { path: PathBuf },
    /// Speech: one utterance per line, `AUDIO_PATH<TAB>transcript`, paths relative to the
    /// manifest's folder ([`crate::audio::read_manifest`]).
    Manifest { path: PathBuf },
    /// Speech: a Kaldi data folder, `wav.scp` and `text`.
    KaldiDir { path: PathBuf },
    /// Generation conditioned on vectors: a file of one vector per line ([`crate::vectors`]) and
    /// the aligned file of texts to write.
    Vectors { src: PathBuf, tgt: PathBuf },
}

impl CorpusSource {
    /// Whether it lists audio files (a manifest or a Kaldi folder) rather than text.
    pub fn is_audio(&self) -> bool {
        matches!(
            self,
            CorpusSource::Manifest { .. } | CorpusSource::KaldiDir { .. }
        )
    }

    /// Whether its sources are vectors.
    pub fn is_vectors(&self) -> bool {
        matches!(self, CorpusSource::Vectors { .. })
    }

    /// What its sources are, for messages.
    fn source_kind(&self) -> &'static str {
        if self.is_audio() {
            "audio"
        } else if self.is_vectors() {
            "vectors"
        } else {
            "text"
        }
    }

    /// The tasks a source's format is for; `None` for parallel text and TSV, which any task
    /// may read.
    fn format_tasks(&self) -> Option<(&'static [Task], &Path, &'static str)> {
        const TAGGING: &[Task] = &[Task::Tagging];
        const LABELLED: &[Task] = &[Task::Classification, Task::Generation];
        const SPEECH: &[Task] = &[Task::Asr, Task::Classification];
        const GENERATION: &[Task] = &[Task::Generation];
        match self {
            CorpusSource::Parallel { .. } | CorpusSource::Tsv { .. } => None,
            CorpusSource::Manifest { path } => Some((SPEECH, path, "an audio manifest")),
            CorpusSource::KaldiDir { path } => Some((SPEECH, path, "a Kaldi data folder")),
            CorpusSource::Conllu { path, .. } => Some((TAGGING, path, "a CoNLL-U file")),
            CorpusSource::Tagged { path } => Some((TAGGING, path, "a token/TAG file")),
            CorpusSource::Labelled { path } => Some((LABELLED, path, "a LABEL-text file")),
            CorpusSource::Vectors { src, .. } => Some((GENERATION, src, "a vectors file")),
        }
    }
}

/// Options of [`prepare`].
#[derive(Debug, Clone, PartialEq)]
pub struct PrepareConfig {
    /// What the data is for; decides the formats, tokenizers and checks (module docs).
    pub task: Task,
    pub train: CorpusSource,
    pub valid: Option<CorpusSource>,
    pub test: Option<CorpusSource>,
    /// The DATA_DIR to write.
    pub out: PathBuf,
    /// Overwrite a non-empty `out`.
    pub force: bool,
    /// Tokenizer kind per side; `None` chooses: `char` for a CJK side, else `bpe` (for a joint
    /// tokenizer: `bpe`, or `char` if both sides are CJK). For tagging both sides are `split`,
    /// for classification the target is `split` and the source `word` by default, for
    /// generation the source is `split` and the target chosen as for translation.
    pub src_tokenizer: Option<TokenizerKind>,
    pub tgt_tokenizer: Option<TokenizerKind>,
    /// Maximum vocabulary size of each tokenizer, specials included.
    pub vocab_size: usize,
    /// Encode with these tokenizer files (source, target) instead of training new ones: a
    /// model's, to fine-tune it on this corpus.
    pub tokenizers_from: Option<(PathBuf, PathBuf)>,
    /// Train one tokenizer on both sides.
    pub joint: bool,
    /// Maximum tokens per side in the training split; 0 disables the filter.
    pub max_len: usize,
    /// Keep the first this many tokens of every source (all splits, and at inference); 0: all.
    pub max_src_tokens: usize,
    /// Minimum frequency; `None`: 2 for `bpe` merges and for a source with signatures, 1 for
    /// `char`/`word`/`split`. Not applied to the label side of a task ([`Task::label_side`]).
    pub min_freq: Option<u64>,
    /// Unknown-word signatures on a `split` source ([`crate::signature`]): its words rarer than
    /// `min_freq` train the tokens of their shapes. `None`: on for tagging, off otherwise.
    pub unk_signatures: Option<bool>,
    pub clean: CleanConfig,
    /// Language codes, recorded, and used as hints (e.g. `zh` selects `char`).
    pub src_lang: Option<String>,
    pub tgt_lang: Option<String>,
    /// The features of a speech task's audio.
    pub fbank: FbankConfig,
}

impl PrepareConfig {
    /// Whether the sources are audio files: a speech task's, or those of an audio manifest
    /// (spoken words to classify).
    pub fn reads_audio(&self) -> bool {
        self.task == Task::Asr || self.train.is_audio()
    }

    /// Whether the sources are vectors (generation conditioned on them).
    pub fn reads_vectors(&self) -> bool {
        self.train.is_vectors()
    }

    /// A config with the defaults: translation, automatic tokenizers, [`DEFAULT_VOCAB_SIZE`],
    /// [`DEFAULT_MAX_LEN`], no NFKC.
    pub fn new(train: CorpusSource, out: impl Into<PathBuf>) -> Self {
        Self {
            task: Task::Translation,
            train,
            valid: None,
            test: None,
            out: out.into(),
            force: false,
            src_tokenizer: None,
            tgt_tokenizer: None,
            vocab_size: DEFAULT_VOCAB_SIZE,
            tokenizers_from: None,
            joint: false,
            max_len: DEFAULT_MAX_LEN,
            max_src_tokens: 0,
            min_freq: None,
            unk_signatures: None,
            clean: CleanConfig::default(),
            src_lang: None,
            tgt_lang: None,
            fbank: FbankConfig::default(),
        }
    }
}

/// Cleaned sentence pairs.
type Pairs = Vec<(String, String)>;

/// A split as read, before cleaning.
struct RawSplit {
    src: Vec<String>,
    tgt: Vec<String>,
    sources: Vec<SourceFile>,
    place: Place,
    /// CoNLL-U forms whose inner whitespace became `_` (CoNLL-U input only).
    forms_with_spaces: Option<usize>,
}

/// Where the pairs of a split come from, for messages.
struct Place {
    /// The input file(s): one, or the source and target files of parallel text.
    files: Vec<PathBuf>,
    /// The 1-based input line of each raw pair; `None`: pair `i` is on line `i + 1`.
    lines: Option<Vec<usize>>,
}

impl Place {
    /// `FILE:LINE` (both files for parallel text) of raw pair `i`.
    fn at(&self, i: usize) -> String {
        let line = self.lines.as_ref().map_or(i + 1, |l| l[i]);
        self.files
            .iter()
            .map(|f| format!("{}:{line}", f.display()))
            .collect::<Vec<_>>()
            .join(" and ")
    }
}

fn abs_path(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Reads a split as (source, target) pairs of `task`: a `LABEL text` file gives (text, label)
/// for classification and (label, text) for generation.
fn read_raw(name: SplitName, source: &CorpusSource, task: Task) -> Result<RawSplit> {
    match source {
        CorpusSource::Parallel { src, tgt } | CorpusSource::Vectors { src, tgt } => {
            let s = read_text_file(src)?;
            let t = read_text_file(tgt)?;
            if s.lines.len() != t.lines.len() {
                return Err(DataError::LineCountMismatch {
                    src_path: src.clone(),
                    src_lines: s.lines.len(),
                    tgt_path: tgt.clone(),
                    tgt_lines: t.lines.len(),
                });
            }
            let rec = |f: &crate::io::TextFile, side: &str, format: &str| SourceFile {
                split: name.as_str().to_owned(),
                side: side.to_owned(),
                path: abs_path(&f.path),
                sha256: f.sha256.clone(),
                lines: f.lines.len(),
                format: format.to_owned(),
                src_col: None,
                tgt_col: None,
            };
            let src_format = if source.is_vectors() {
                "vectors"
            } else {
                "text"
            };
            let sources = vec![rec(&s, "src", src_format), rec(&t, "tgt", "text")];
            Ok(RawSplit {
                src: s.lines,
                tgt: t.lines,
                sources,
                place: Place {
                    files: vec![src.clone(), tgt.clone()],
                    lines: None,
                },
                forms_with_spaces: None,
            })
        }
        CorpusSource::Tsv {
            path,
            src_col,
            tgt_col,
        } => {
            if src_col == tgt_col {
                return Err(DataError::Config(format!(
                    "{}: source and target column are both {src_col}; fix: pass different --src-col and --tgt-col",
                    path.display()
                )));
            }
            let f = read_text_file(path)?;
            let (src, tgt) = split_tsv(&f.lines, path, *src_col, *tgt_col)?;
            let sources = vec![SourceFile {
                split: name.as_str().to_owned(),
                side: "both".to_owned(),
                path: abs_path(&f.path),
                sha256: f.sha256.clone(),
                lines: f.lines.len(),
                format: "tsv".to_owned(),
                src_col: Some(*src_col),
                tgt_col: Some(*tgt_col),
            }];
            Ok(RawSplit {
                src,
                tgt,
                sources,
                place: Place {
                    files: vec![path.clone()],
                    lines: None,
                },
                forms_with_spaces: None,
            })
        }
        CorpusSource::Conllu { path, column } => {
            let f = read_conllu(path, *column)?;
            let cols = (Some(2), Some(column.column()));
            let spaces = Some(f.forms_with_spaces);
            Ok(labelled_raw(name, f, "conllu", cols, spaces))
        }
        CorpusSource::Tagged { path } => {
            let f = read_tagged(path)?;
            Ok(labelled_raw(name, f, "tagged", (None, None), None))
        }
        CorpusSource::Manifest { path } | CorpusSource::KaldiDir { path } => {
            let (utterances, format) = match source {
                CorpusSource::Manifest { .. } => (crate::audio::read_manifest(path)?, "manifest"),
                _ => (crate::audio::read_kaldi_dir(path)?, "kaldi"),
            };
            let listing = if format == "kaldi" {
                path.join("wav.scp")
            } else {
                path.clone()
            };
            let bytes = std::fs::read(&listing).map_err(|e| DataError::io(&listing, e))?;
            let sources = vec![SourceFile {
                split: name.as_str().to_owned(),
                side: "both".to_owned(),
                path: abs_path(path),
                sha256: crate::io::sha256_hex(&bytes),
                lines: utterances.len(),
                format: format.to_owned(),
                src_col: None,
                tgt_col: None,
            }];
            let (src, tgt) = utterances
                .into_iter()
                .map(|(audio, text)| (abs_path(&audio), text))
                .unzip();
            Ok(RawSplit {
                src,
                tgt,
                sources,
                place: Place {
                    files: vec![path.clone()],
                    lines: None,
                },
                forms_with_spaces: None,
            })
        }
        CorpusSource::Labelled { path } => {
            let mut f = read_labelled(path)?;
            if task.label_side() == Some(LabelSide::Source) {
                for (text, label) in &mut f.pairs {
                    std::mem::swap(text, label);
                }
            }
            Ok(labelled_raw(name, f, "labelled", (None, None), None))
        }
    }
}

fn labelled_raw(
    name: SplitName,
    f: LabelledFile,
    format: &str,
    (src_col, tgt_col): (Option<usize>, Option<usize>),
    forms_with_spaces: Option<usize>,
) -> RawSplit {
    let sources = vec![SourceFile {
        split: name.as_str().to_owned(),
        side: "both".to_owned(),
        path: abs_path(&f.path),
        sha256: f.sha256,
        lines: f.file_lines,
        format: format.to_owned(),
        src_col,
        tgt_col,
    }];
    let (src, tgt) = f.pairs.into_iter().unzip();
    RawSplit {
        src,
        tgt,
        sources,
        place: Place {
            files: vec![f.path],
            lines: Some(f.lines),
        },
        forms_with_spaces,
    }
}

/// A cleaned split.
struct CleanSplit {
    name: SplitName,
    pairs: Pairs,
    stats: SplitStats,
    /// The raw index of each pair, for [`Place::at`].
    origin: Vec<usize>,
    place: Place,
}

/// Cleans a split: keeps the non-empty pairs and counts. For a labelling task, checks the
/// shape of every kept pair: as many tags as tokens (tagging), one label (classification). An
/// `raw_source` (an audio path, a vector) is kept as it is.
fn clean_split(
    raw: RawSplit,
    clean: &CleanConfig,
    (src_zh, tgt_zh): (bool, bool),
    name: SplitName,
    task: Task,
    raw_source: bool,
) -> Result<CleanSplit> {
    let (src_file, tgt_file) = name.file_names();
    let mut stats = SplitStats {
        src_file,
        tgt_file,
        input_pairs: raw.src.len(),
        forms_with_spaces: raw.forms_with_spaces,
        ..SplitStats::default()
    };
    let mut pairs = Vec::with_capacity(raw.src.len());
    let mut origin = Vec::with_capacity(raw.src.len());
    for (i, (s, t)) in raw.src.iter().zip(&raw.tgt).enumerate() {
        // An audio path is a name, and a vector numbers, not text.
        let cs = if raw_source {
            s.clone()
        } else {
            clean_line(s, clean, src_zh)
        };
        let ct = clean_line(t, clean, tgt_zh);
        stats.src_changed += usize::from(cs != *s);
        stats.tgt_changed += usize::from(ct != *t);
        if cs.is_empty() || ct.is_empty() {
            stats.dropped_empty += 1;
            continue;
        }
        // Cleaned text is single-spaced: tokens are the space-separated items.
        let (tokens, labels) = (cs.split(' ').count(), ct.split(' ').count());
        let shape_error = match task {
            Task::Translation => None,
            Task::Tagging if tokens != labels => Some(format!(
                "{tokens} token(s) but {labels} tag(s) after cleaning; fix: give every token \
                 exactly one tag (cleaning removes zero-width and control characters, so a token \
                 made only of them vanishes, and --nfkc can turn a character into a space)"
            )),
            Task::Classification if labels != 1 => Some(format!(
                "the label `{ct}` is {labels} space-separated items after cleaning; fix: give \
                 each example exactly one label, without spaces"
            )),
            Task::Tagging | Task::Classification | Task::Generation | Task::Asr => None,
        };
        if let Some(problem) = shape_error {
            return Err(DataError::Config(format!(
                "the {name} split, {}: {problem}",
                raw.place.at(i)
            )));
        }
        pairs.push((cs, ct));
        origin.push(i);
    }
    Ok(CleanSplit {
        name,
        pairs,
        stats,
        origin,
        place: raw.place,
    })
}

/// Applies the length filter (if `filter`) and counts tokens. For a task with labels also counts
/// the labels their side's vocabulary does not have (`<unk>`), and checks that each tagging
/// pair has one source id per tag id. Returns the kept pairs, and where the first pair with an
/// unknown label came from. A `raw_source` (audio, vectors) has no tokens: audio is measured
/// later, in frames, and a vector is one position.
fn length_pass(
    split: &mut CleanSplit,
    (src_tok, tgt_tok): (&TextTokenizer, &TextTokenizer),
    options: &DataOptions,
    raw_source: bool,
    filter: bool,
) -> Result<(Pairs, Option<String>)> {
    let (max_len, task) = (options.max_len, options.task);
    let stats = &mut split.stats;
    stats.length_filtered = filter && max_len > 0;
    let unk = tgt_tok.specials().unk;
    let (mut unknown, mut unknown_pairs, mut first_unknown) = (0usize, 0usize, None);
    // Labels are counted where they are tokens: not a vector condition.
    let label_side = task
        .label_side()
        .filter(|&side| side == LabelSide::Target || !raw_source);
    let mut kept = Vec::with_capacity(split.pairs.len());
    for ((s, t), &i) in std::mem::take(&mut split.pairs)
        .into_iter()
        .zip(&split.origin)
    {
        let mut src_ids = if raw_source {
            Vec::new()
        } else {
            src_tok.encode(&s)
        };
        let truncated = options.truncate_source(&mut src_ids);
        let tgt_ids = tgt_tok.encode(&t);
        let (ls, lt) = (src_ids.len(), tgt_ids.len());
        if task == Task::Tagging && ls != lt {
            return Err(DataError::Config(format!(
                "the {} split, {}: the tokenizers give {ls} source and {lt} target ids; fix: \
                 tagging needs `split` tokenizers on both sides (one id per token and per tag)",
                split.name,
                split.place.at(i)
            )));
        }
        let over = max_len > 0 && (ls > max_len || lt > max_len);
        if over && filter {
            stats.dropped_too_long += 1;
            continue;
        }
        if let Some(side) = label_side {
            let (text, ids) = match side {
                LabelSide::Source => (&s, &src_ids),
                LabelSide::Target => (&t, &tgt_ids),
            };
            let n = ids.iter().filter(|&&id| id == unk).count();
            unknown += n;
            unknown_pairs += usize::from(n > 0);
            if n > 0 && first_unknown.is_none() {
                let label = text
                    .split(' ')
                    .zip(ids)
                    .find(|&(_, &id)| id == unk)
                    .map_or("", |(label, _)| label);
                first_unknown = Some(format!("`{label}` at {}", split.place.at(i)));
            }
        }
        stats.over_max_len_kept += usize::from(over);
        stats.src_truncated += usize::from(truncated);
        stats.src_tokens += ls;
        stats.tgt_tokens += lt;
        kept.push((s, t));
    }
    stats.kept = kept.len();
    if label_side.is_some() {
        stats.unknown_labels = Some(unknown);
        stats.pairs_with_unknown_labels = Some(unknown_pairs);
    }
    Ok((kept, first_unknown))
}

/// The tokenizer kinds of the two sides: the given ones, or the task's defaults.
fn tokenizer_kinds(
    cfg: &PrepareConfig,
    src_cjk: bool,
    tgt_cjk: bool,
) -> Result<(TokenizerKind, TokenizerKind)> {
    let task = cfg.task;
    if task.label_side().is_some() && cfg.joint {
        return Err(DataError::Config(format!(
            "--joint: a {task} data directory has one vocabulary for the text and one for the \
             labels; fix: drop --joint"
        )));
    }
    let needs_split = |side: &str, kind: Option<TokenizerKind>, why: &str, fix: &str| match kind {
        Some(k) if k != TokenizerKind::Split => Err(DataError::Config(format!(
            "the {side} tokenizer is {k}, but {task} needs `split` there: {why}; fix: {fix}"
        ))),
        _ => Ok(TokenizerKind::Split),
    };
    match task {
        Task::Tagging => {
            let why = "the model gives one tag per source token, so every word and every tag \
                       must be exactly one token";
            let fix = "drop --tokenizer/--src-tokenizer/--tgt-tokenizer (split is the default \
                       for tagging)";
            Ok((
                needs_split("source", cfg.src_tokenizer, why, fix)?,
                needs_split("target", cfg.tgt_tokenizer, why, fix)?,
            ))
        }
        Task::Classification => {
            let tgt = needs_split(
                "target",
                cfg.tgt_tokenizer,
                "every label must be exactly one token",
                "drop --tgt-tokenizer and --tokenizer (which sets both sides); choose the text's \
                 tokenizer with --src-tokenizer",
            )?;
            if cfg.reads_audio() {
                if cfg.src_tokenizer.is_some() {
                    return Err(DataError::Config(
                        "the sources are audio, which has no tokenizer; fix: drop \
                         --src-tokenizer"
                            .into(),
                    ));
                }
                // The labels' tokenizer, saved as both sides (as for asr).
                return Ok((tgt, tgt));
            }
            Ok((cfg.src_tokenizer.unwrap_or(TokenizerKind::Word), tgt))
        }
        Task::Generation if cfg.reads_vectors() => {
            if cfg.src_tokenizer.is_some() {
                return Err(DataError::Config(
                    "the conditions are vectors, which have no tokenizer; fix: drop \
                     --src-tokenizer (choose the text's with --tgt-tokenizer or --tokenizer)"
                        .into(),
                ));
            }
            // The text's tokenizer, saved as both sides (as for asr).
            let t = cfg.tgt_tokenizer.unwrap_or(text_default(tgt_cjk));
            Ok((t, t))
        }
        Task::Generation => {
            let src = needs_split(
                "source",
                cfg.src_tokenizer,
                "every condition label must be exactly one token",
                "drop --src-tokenizer and --tokenizer (which sets both sides); choose the text's \
                 tokenizer with --tgt-tokenizer",
            )?;
            Ok((src, cfg.tgt_tokenizer.unwrap_or(text_default(tgt_cjk))))
        }
        Task::Translation if cfg.joint => {
            let auto = if src_cjk && tgt_cjk {
                TokenizerKind::Char
            } else {
                TokenizerKind::Bpe
            };
            let s = cfg.src_tokenizer.or(cfg.tgt_tokenizer).unwrap_or(auto);
            let t = cfg.tgt_tokenizer.or(cfg.src_tokenizer).unwrap_or(auto);
            if s != t {
                return Err(DataError::Config(format!(
                    "a joint vocabulary needs one tokenizer kind, but source is {s} and target is {t}; \
                     fix: pass one --tokenizer, or drop --joint"
                )));
            }
            Ok((s, t))
        }
        Task::Translation => Ok((
            cfg.src_tokenizer.unwrap_or(text_default(src_cjk)),
            cfg.tgt_tokenizer.unwrap_or(text_default(tgt_cjk)),
        )),
        Task::Asr => {
            if cfg.joint || cfg.src_tokenizer.is_some() {
                return Err(DataError::Config(
                    "asr reads audio, which has no tokenizer: the transcripts' tokenizer is the only \
                     one; fix: drop --joint and --src-tokenizer (choose it with --tgt-tokenizer \
                     or --tokenizer)"
                        .into(),
                ));
            }
            let t = cfg.tgt_tokenizer.unwrap_or(text_default(tgt_cjk));
            Ok((t, t))
        }
    }
}

/// The tokenizer of a side of text when none is given: `char` for Chinese or Japanese, else
/// `bpe`.
fn text_default(cjk: bool) -> TokenizerKind {
    if cjk {
        TokenizerKind::Char
    } else {
        TokenizerKind::Bpe
    }
}

/// Checks every vector of every split (a blank line is left for cleaning to drop and count)
/// and rewrites it in [`crate::vectors::format`]; returns their dimension, the first training
/// vector's, which the others must have.
fn check_vectors(raws: &mut [(SplitName, RawSplit)]) -> Result<usize> {
    let mut dim: Option<(usize, String)> = None;
    for (name, raw) in raws.iter_mut() {
        for (i, line) in raw.src.iter_mut().enumerate() {
            if line.trim().is_empty() {
                line.clear();
                continue;
            }
            let v = crate::vectors::parse(line).map_err(|problem| {
                DataError::Config(format!("the {name} split, {}: {problem}", raw.place.at(i)))
            })?;
            match &dim {
                None => dim = Some((v.len(), raw.place.at(i))),
                Some((d, first)) if v.len() != *d => {
                    return Err(DataError::Config(format!(
                        "the {name} split, {}: a vector of {} numbers, but the first one ({first}) \
                         has {d}; fix: give every vector the same number of numbers",
                        raw.place.at(i),
                        v.len()
                    )));
                }
                Some(_) => {}
            }
            *line = crate::vectors::format(&v);
        }
    }
    dim.map(|(d, _)| d).ok_or_else(|| DataError::EmptyCorpus {
        what: "the training split's vectors".to_owned(),
    })
}

/// Checks that given tokenizers (`--tokenizers-from`) suit the task.
fn check_given_tokenizers(
    task: Task,
    vectors: bool,
    (src, tgt): (&TextTokenizer, &TextTokenizer),
    (src_path, tgt_path): (&Path, &Path),
) -> Result<()> {
    let sides: &[(&TextTokenizer, &Path)] = match task {
        Task::Translation | Task::Asr => &[],
        Task::Tagging => &[(src, src_path), (tgt, tgt_path)],
        Task::Classification => &[(tgt, tgt_path)],
        // A vector condition has no tokens: both files are the text's tokenizer.
        Task::Generation if vectors => &[],
        Task::Generation => &[(src, src_path)],
    };
    for (tok, path) in sides {
        if tok.kind() != Some(TokenizerKind::Split) {
            let kind = tok.kind().map_or("foreign".to_owned(), |k| k.to_string());
            return Err(DataError::Config(format!(
                "{}: a {kind} tokenizer, but {task} needs `split` tokenizers for its tokens and \
                 labels; fix: use a model trained for {task}, or drop --tokenizers-from",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Checks that `out` may be written: it must be absent, an empty directory, or `force`.
fn check_out_dir(out: &Path, force: bool) -> Result<()> {
    match std::fs::read_dir(out) {
        Ok(mut entries) => {
            if entries.next().is_some() && !force {
                return Err(DataError::OutDirNotEmpty {
                    path: out.to_path_buf(),
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(DataError::Io {
            path: out.to_path_buf(),
            err: e,
        }),
    }
}

fn default_min_freq(kind: TokenizerKind) -> u64 {
    match kind {
        TokenizerKind::Bpe => 2,
        TokenizerKind::Char
        | TokenizerKind::Word
        | TokenizerKind::Unigram
        | TokenizerKind::Split => 1,
    }
}

fn write_split(out: &Path, stats: &SplitStats, pairs: &[(String, String)]) -> Result<()> {
    let mut src = String::new();
    let mut tgt = String::new();
    for (s, t) in pairs {
        src.push_str(s);
        src.push('\n');
        tgt.push_str(t);
        tgt.push('\n');
    }
    for (file, text) in [(&stats.src_file, src), (&stats.tgt_file, tgt)] {
        let path = out.join(file);
        atomic_write(&path, text.as_bytes()).map_err(|e| DataError::io(&path, e))?;
    }
    Ok(())
}

/// An utterance's log-mel features, at the feature extractor's sample rate.
fn utterance_features(path: &Path, fbank: &Fbank) -> Result<Features> {
    let audio = crate::audio::read_wav(path)?;
    let audio = crate::audio::resample(&audio, fbank.config().sample_rate)?;
    Ok(fbank.features(&audio.samples))
}

/// Runs the whole preparation and writes the data directory. `progress` is called with a short
/// description at the start of each step. Returns what was written to `data.toml`.
pub fn prepare(cfg: &PrepareConfig, progress: &dyn Fn(&str)) -> Result<DataToml> {
    check_out_dir(&cfg.out, cfg.force)?;
    if let Some(script) = cfg.clean.zh_script {
        crate::zh::check_available(script)?;
    }
    let task = cfg.task;
    let audio = cfg.reads_audio();
    if audio && cfg.max_src_tokens > 0 {
        return Err(DataError::Config(
            "--max-src-tokens cuts text sources, but these sources are audio; fix: drop \
             --max-src-tokens"
                .into(),
        ));
    }
    if cfg.max_src_tokens > 0 && task != Task::Translation && task != Task::Classification {
        return Err(DataError::Config(format!(
            "--max-src-tokens cuts long text sources, but a {task} source must stay whole (one \
             tag per token, or a condition of labels); fix: drop --max-src-tokens"
        )));
    }
    for (name, source) in [
        (SplitName::Train, Some(&cfg.train)),
        (SplitName::Valid, cfg.valid.as_ref()),
        (SplitName::Test, cfg.test.as_ref()),
    ] {
        if let Some((for_tasks, path, what)) = source.and_then(CorpusSource::format_tasks)
            && !for_tasks.contains(&task)
        {
            let names: Vec<&str> = for_tasks.iter().map(|t| t.as_str()).collect();
            return Err(DataError::Config(format!(
                "{}: the {name} split is {what}, which is {} data, but the task is {task}; fix: \
                 pass --task {}, or give {task} data",
                path.display(),
                names.join(" or "),
                names[0]
            )));
        }
    }

    for (name, source) in [(SplitName::Valid, &cfg.valid), (SplitName::Test, &cfg.test)] {
        if let Some(source) = source
            && source.source_kind() != cfg.train.source_kind()
        {
            return Err(DataError::Config(format!(
                "the training split is {}, but the {name} split is {}; fix: give every split \
                 in one kind (audio manifests or Kaldi folders for audio, --format vectors for \
                 vectors)",
                cfg.train.source_kind(),
                source.source_kind()
            )));
        }
    }
    let vectors = cfg.reads_vectors();
    // Audio paths and vectors are kept as they are: they are not text.
    let raw_source = audio || vectors;

    // Read everything first: a bad input fails before anything is written.
    let mut raws: Vec<(SplitName, RawSplit)> = Vec::new();
    let mut sources: Vec<SourceFile> = Vec::new();
    for (name, source) in [
        (SplitName::Train, Some(&cfg.train)),
        (SplitName::Valid, cfg.valid.as_ref()),
        (SplitName::Test, cfg.test.as_ref()),
    ] {
        if let Some(source) = source {
            progress(&format!("reading the {name} split"));
            let raw = read_raw(name, source, task)?;
            sources.extend(raw.sources.iter().cloned());
            raws.push((name, raw));
        }
    }
    let vector_dim = if vectors {
        Some(check_vectors(&mut raws)?)
    } else {
        None
    };
    let train_raw = &raws[0].1;
    let src_lang = cfg.src_lang.as_deref();
    let tgt_lang = cfg.tgt_lang.as_deref();
    // Labels are names, not text: no script conversion.
    let label_side = task.label_side();
    let src_zh = label_side != Some(LabelSide::Source) && looks_chinese(src_lang, &train_raw.src);
    let tgt_zh = label_side != Some(LabelSide::Target) && looks_chinese(tgt_lang, &train_raw.tgt);
    let src_cjk = looks_cjk(src_lang, &train_raw.src);
    let tgt_cjk = looks_cjk(tgt_lang, &train_raw.tgt);

    // Tokenizer kinds.
    let (src_kind, tgt_kind) = tokenizer_kinds(cfg, src_cjk, tgt_cjk)?;
    let signatures = cfg.unk_signatures.unwrap_or(task == Task::Tagging);
    if signatures
        && (audio || src_kind != TokenizerKind::Split || label_side == Some(LabelSide::Source))
    {
        return Err(DataError::Config(format!(
            "--unk-signatures gives unknown source words the token of their shape, which needs \
             a split source of words, but the {task} source is {}; fix: drop --unk-signatures",
            if audio {
                "audio".to_owned()
            } else if label_side == Some(LabelSide::Source) {
                "labels".to_owned()
            } else {
                format!("{src_kind}")
            }
        )));
    }
    // Every label seen in training is a class (or a condition). Signatures are trained on the
    // words below `min_freq`, so they need it above 1.
    let min_freq = |kind, side| match label_side {
        Some(s) if s == side => 1,
        _ if side == LabelSide::Source && signatures => cfg.min_freq.unwrap_or(2),
        _ => cfg.min_freq.unwrap_or(default_min_freq(kind)),
    };
    let src_spec = TokenizerSpec {
        kind: src_kind,
        vocab_size: cfg.vocab_size,
        min_freq: min_freq(src_kind, LabelSide::Source),
        signatures,
    };
    let tgt_spec = TokenizerSpec {
        kind: tgt_kind,
        vocab_size: cfg.vocab_size,
        min_freq: min_freq(tgt_kind, LabelSide::Target),
        signatures: false,
    };

    let options = DataOptions {
        task,
        src_tokenizer: src_kind,
        tgt_tokenizer: tgt_kind,
        vocab_size: cfg.vocab_size,
        src_min_freq: src_spec.min_freq,
        tgt_min_freq: if cfg.joint {
            src_spec.min_freq
        } else {
            tgt_spec.min_freq
        },
        joint: cfg.joint,
        max_len: cfg.max_len,
        max_src_tokens: cfg.max_src_tokens,
        clean: cfg.clean,
        src_is_chinese: src_zh,
        tgt_is_chinese: tgt_zh,
        src_lang: cfg.src_lang.clone(),
        tgt_lang: cfg.tgt_lang.clone(),
    };

    // Clean.
    let mut cleaned: Vec<CleanSplit> = Vec::new();
    for (name, raw) in raws {
        progress(&format!("cleaning the {name} split"));
        cleaned.push(clean_split(
            raw,
            &cfg.clean,
            (src_zh, tgt_zh),
            name,
            task,
            raw_source,
        )?);
    }
    let train_pairs = &cleaned[0].pairs;
    if train_pairs.is_empty() {
        return Err(DataError::EmptyCorpus {
            what: "the training split".to_owned(),
        });
    }

    // Tokenizers, trained on the cleaned training split (or given).
    let (src_tok, tgt_tok) = if let Some((src, tgt)) = &cfg.tokenizers_from {
        progress("loading the given tokenizers");
        let (s, t) = TextTokenizer::pair_from_files(src, tgt)?;
        check_given_tokenizers(task, vectors, (&s, &t), (src, tgt))?;
        if s.specials() != t.specials() {
            return Err(DataError::Config(format!(
                "{} and {} reserve different special ids; fix: pass the two tokenizers of one model",
                src.display(),
                tgt.display()
            )));
        }
        (s, t)
    } else if raw_source {
        // Saved as both sides, so that a DATA_DIR and a MODEL_DIR keep their usual files.
        progress(&format!("training the target {tgt_kind} tokenizer"));
        let t = train_tokenizer(&tgt_spec, train_pairs.iter().map(|p| p.1.as_str()))?;
        (t.clone(), t)
    } else if cfg.joint {
        progress(&format!("training the joint {src_kind} tokenizer"));
        let texts = train_pairs
            .iter()
            .map(|p| p.0.as_str())
            .chain(train_pairs.iter().map(|p| p.1.as_str()));
        let tok = train_tokenizer(&src_spec, texts)?;
        (tok.clone(), tok)
    } else {
        progress(&format!("training the source {src_kind} tokenizer"));
        let s = train_tokenizer(&src_spec, train_pairs.iter().map(|p| p.0.as_str()))?;
        progress(&format!("training the target {tgt_kind} tokenizer"));
        let t = train_tokenizer(&tgt_spec, train_pairs.iter().map(|p| p.1.as_str()))?;
        (s, t)
    };

    // Length pass.
    let mut finals: Vec<(SplitName, Pairs, SplitStats)> = Vec::new();
    for mut split in cleaned {
        let name = split.name;
        progress(&format!("measuring the {name} split"));
        let is_train = name == SplitName::Train;
        let (kept, first_unknown) = length_pass(
            &mut split,
            (&src_tok, &tgt_tok),
            &options,
            raw_source,
            is_train,
        )?;
        if is_train && let Some(first) = first_unknown {
            let n = split.stats.unknown_labels.unwrap_or(0);
            let side = match label_side {
                Some(LabelSide::Source) => "source",
                _ => "target",
            };
            let fix = if cfg.tokenizers_from.is_some() {
                format!(
                    "fix: the given {side} tokenizer lacks these labels; drop --tokenizers-from, \
                     or give data with the model's labels"
                )
            } else {
                format!(
                    "fix: raise --vocab-size (now {}) to hold every label and the 4 special tokens",
                    cfg.vocab_size
                )
            };
            return Err(DataError::Config(format!(
                "{n} label(s) of the training split are not in the {side} vocabulary, the first \
                 {first}; {fix}"
            )));
        }
        if kept.is_empty() {
            return Err(DataError::EmptyCorpus {
                what: format!("the {name} split"),
            });
        }
        if vectors {
            // One source position per vector.
            split.stats.src_tokens = kept.len();
        }
        finals.push((name, kept, split.stats));
    }

    // Speech: every utterance's features, before anything is written.
    let mut features: Vec<Vec<Features>> = Vec::new();
    if audio {
        let fbank = Fbank::new(&cfg.fbank)?;
        for (name, pairs, stats) in &mut finals {
            progress(&format!("computing the {name} split's features"));
            let feats = pairs
                .iter()
                .map(|(path, _)| utterance_features(Path::new(path), &fbank))
                .collect::<Result<Vec<_>>>()?;
            stats.src_tokens = feats.iter().map(|f| f.frames).sum();
            stats.feats_file = Some(name.feats_file());
            features.push(feats);
        }
    }

    // Write: splits, tokenizers, then data.toml last.
    progress(&format!("writing {}", cfg.out.display()));
    std::fs::create_dir_all(&cfg.out).map_err(|e| DataError::io(&cfg.out, e))?;
    let old_record = cfg.out.join(DATA_TOML);
    if cfg.force {
        // A stale record would describe files about to change; stale splits would mislead.
        for name in SplitName::ALL {
            let (s, t) = name.file_names();
            let feats = cfg.out.join(name.feats_file());
            for f in [old_record.clone(), cfg.out.join(s), cfg.out.join(t), feats] {
                match std::fs::remove_file(&f) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(DataError::io(&f, e)),
                }
            }
        }
    }
    for (_, pairs, stats) in &finals {
        write_split(&cfg.out, stats, pairs)?;
    }
    for ((_, _, stats), feats) in finals.iter().zip(&features) {
        let file = stats
            .feats_file
            .as_deref()
            .expect("speech splits name their features");
        crate::audio::write_features(&cfg.out.join(file), feats)?;
    }
    let audio = match features.first() {
        Some(train) => Some(AudioOptions {
            fbank: cfg.fbank.clone(),
            cmvn: GlobalCmvn::from_features(train.iter())?,
        }),
        None => None,
    };
    match &cfg.tokenizers_from {
        // Byte for byte: a model's tokenizer files are how `train --init` recognises its data.
        Some((src, tgt)) => {
            for (from, to) in [(src, SRC_TOKENIZER_FILE), (tgt, TGT_TOKENIZER_FILE)] {
                let bytes = std::fs::read(from).map_err(|e| DataError::io(from, e))?;
                let to = cfg.out.join(to);
                atomic_write(&to, &bytes).map_err(|e| DataError::io(&to, e))?;
            }
        }
        None => {
            src_tok.save(cfg.out.join(SRC_TOKENIZER_FILE))?;
            tgt_tok.save(cfg.out.join(TGT_TOKENIZER_FILE))?;
        }
    }

    let mut splits = SplitsInfo {
        train: SplitStats::default(),
        valid: None,
        test: None,
    };
    for (name, _, stats) in finals {
        match name {
            SplitName::Train => splits.train = stats,
            SplitName::Valid => splits.valid = Some(stats),
            SplitName::Test => splits.test = Some(stats),
        }
    }
    let record = DataToml {
        format_version: FORMAT_VERSION,
        created_by: format!("s2s-data {}", env!("CARGO_PKG_VERSION")),
        options,
        tokenizers: TokenizersInfo {
            src: TokenizerInfo {
                file: SRC_TOKENIZER_FILE.to_owned(),
                kind: src_tok.kind().unwrap_or(src_kind),
                vocab_size: src_tok.vocab_size(),
                signatures: src_tok.has_signatures(),
            },
            tgt: TokenizerInfo {
                file: TGT_TOKENIZER_FILE.to_owned(),
                kind: tgt_tok.kind().unwrap_or(tgt_kind),
                vocab_size: tgt_tok.vocab_size(),
                signatures: tgt_tok.has_signatures(),
            },
        },
        splits,
        sources,
        audio,
        vectors: vector_dim.map(|dim| VectorOptions { dim }),
    };
    crate::datadir::write_data_toml(&cfg.out, &record)?;
    Ok(record)
}
