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

use std::path::{Path, PathBuf};

use crate::clean::{CleanConfig, clean_line, looks_chinese, looks_cjk};
use crate::datadir::{
    DATA_TOML, DataOptions, DataToml, FORMAT_VERSION, SRC_TOKENIZER_FILE, SourceFile, SplitName,
    SplitStats, SplitsInfo, TGT_TOKENIZER_FILE, TokenizerInfo, TokenizersInfo,
};
use crate::error::{DataError, Result};
use crate::io::{atomic_write, read_text_file, split_tsv};
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
}

/// Options of [`prepare`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareConfig {
    pub train: CorpusSource,
    pub valid: Option<CorpusSource>,
    pub test: Option<CorpusSource>,
    /// The DATA_DIR to write.
    pub out: PathBuf,
    /// Overwrite a non-empty `out`.
    pub force: bool,
    /// Tokenizer kind per side; `None` chooses: `char` for a CJK side, else `bpe` (for a joint
    /// tokenizer: `bpe`, or `char` if both sides are CJK).
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
    /// Minimum frequency; `None`: 2 for `bpe` merges, 1 for `char`/`word`.
    pub min_freq: Option<u64>,
    pub clean: CleanConfig,
    /// Language codes, recorded, and used as hints (e.g. `zh` selects `char`).
    pub src_lang: Option<String>,
    pub tgt_lang: Option<String>,
}

impl PrepareConfig {
    /// A config with the defaults: automatic tokenizers, [`DEFAULT_VOCAB_SIZE`],
    /// [`DEFAULT_MAX_LEN`], no NFKC.
    pub fn new(train: CorpusSource, out: impl Into<PathBuf>) -> Self {
        Self {
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
            min_freq: None,
            clean: CleanConfig::default(),
            src_lang: None,
            tgt_lang: None,
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
}

fn abs_path(p: &Path) -> String {
    std::fs::canonicalize(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

fn read_raw(name: SplitName, source: &CorpusSource) -> Result<RawSplit> {
    match source {
        CorpusSource::Parallel { src, tgt } => {
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
            let rec = |f: &crate::io::TextFile, side: &str| SourceFile {
                split: name.as_str().to_owned(),
                side: side.to_owned(),
                path: abs_path(&f.path),
                sha256: f.sha256.clone(),
                lines: f.lines.len(),
                format: "text".to_owned(),
                src_col: None,
                tgt_col: None,
            };
            let sources = vec![rec(&s, "src"), rec(&t, "tgt")];
            Ok(RawSplit {
                src: s.lines,
                tgt: t.lines,
                sources,
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
            Ok(RawSplit { src, tgt, sources })
        }
    }
}

/// Cleans a split: returns the non-empty pairs and the counts so far.
fn clean_split(
    raw: &RawSplit,
    clean: &CleanConfig,
    src_zh: bool,
    tgt_zh: bool,
    name: SplitName,
) -> (Vec<(String, String)>, SplitStats) {
    let (src_file, tgt_file) = name.file_names();
    let mut stats = SplitStats {
        src_file,
        tgt_file,
        input_pairs: raw.src.len(),
        ..SplitStats::default()
    };
    let mut pairs = Vec::with_capacity(raw.src.len());
    for (s, t) in raw.src.iter().zip(&raw.tgt) {
        let cs = clean_line(s, clean, src_zh);
        let ct = clean_line(t, clean, tgt_zh);
        stats.src_changed += usize::from(cs != *s);
        stats.tgt_changed += usize::from(ct != *t);
        if cs.is_empty() || ct.is_empty() {
            stats.dropped_empty += 1;
        } else {
            pairs.push((cs, ct));
        }
    }
    (pairs, stats)
}

/// Applies the length filter (if `filter`) and counts tokens.
fn length_pass(
    pairs: Vec<(String, String)>,
    stats: &mut SplitStats,
    src_tok: &TextTokenizer,
    tgt_tok: &TextTokenizer,
    max_len: usize,
    filter: bool,
) -> Vec<(String, String)> {
    stats.length_filtered = filter && max_len > 0;
    let mut kept = Vec::with_capacity(pairs.len());
    for (s, t) in pairs {
        let ls = src_tok.encode(&s).len();
        let lt = tgt_tok.encode(&t).len();
        let over = max_len > 0 && (ls > max_len || lt > max_len);
        if over && filter {
            stats.dropped_too_long += 1;
            continue;
        }
        stats.over_max_len_kept += usize::from(over);
        stats.src_tokens += ls;
        stats.tgt_tokens += lt;
        kept.push((s, t));
    }
    stats.kept = kept.len();
    kept
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
        TokenizerKind::Char | TokenizerKind::Word | TokenizerKind::Unigram => 1,
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

/// Runs the whole preparation and writes the data directory. `progress` is called with a short
/// description at the start of each step. Returns what was written to `data.toml`.
pub fn prepare(cfg: &PrepareConfig, progress: &dyn Fn(&str)) -> Result<DataToml> {
    check_out_dir(&cfg.out, cfg.force)?;
    if let Some(script) = cfg.clean.zh_script {
        crate::zh::check_available(script)?;
    }

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
            let raw = read_raw(name, source)?;
            sources.extend(raw.sources.iter().cloned());
            raws.push((name, raw));
        }
    }
    let train_raw = &raws[0].1;
    let src_lang = cfg.src_lang.as_deref();
    let tgt_lang = cfg.tgt_lang.as_deref();
    let src_zh = looks_chinese(src_lang, &train_raw.src);
    let tgt_zh = looks_chinese(tgt_lang, &train_raw.tgt);
    let src_cjk = looks_cjk(src_lang, &train_raw.src);
    let tgt_cjk = looks_cjk(tgt_lang, &train_raw.tgt);

    // Tokenizer kinds.
    let (src_kind, tgt_kind) = if cfg.joint {
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
        (s, t)
    } else {
        let auto = |cjk: bool| {
            if cjk {
                TokenizerKind::Char
            } else {
                TokenizerKind::Bpe
            }
        };
        (
            cfg.src_tokenizer.unwrap_or(auto(src_cjk)),
            cfg.tgt_tokenizer.unwrap_or(auto(tgt_cjk)),
        )
    };
    let src_spec = TokenizerSpec {
        kind: src_kind,
        vocab_size: cfg.vocab_size,
        min_freq: cfg.min_freq.unwrap_or(default_min_freq(src_kind)),
    };
    let tgt_spec = TokenizerSpec {
        kind: tgt_kind,
        vocab_size: cfg.vocab_size,
        min_freq: cfg.min_freq.unwrap_or(default_min_freq(tgt_kind)),
    };

    // Clean.
    let mut cleaned: Vec<(SplitName, Pairs, SplitStats)> = Vec::new();
    for (name, raw) in &raws {
        progress(&format!("cleaning the {name} split"));
        let (pairs, stats) = clean_split(raw, &cfg.clean, src_zh, tgt_zh, *name);
        cleaned.push((*name, pairs, stats));
    }
    drop(raws);
    let train_pairs = &cleaned[0].1;
    if train_pairs.is_empty() {
        return Err(DataError::EmptyCorpus {
            what: "the training split".to_owned(),
        });
    }

    // Tokenizers, trained on the cleaned training split (or given).
    let (src_tok, tgt_tok) = if let Some((src, tgt)) = &cfg.tokenizers_from {
        progress("loading the given tokenizers");
        let (s, t) = TextTokenizer::pair_from_files(src, tgt)?;
        if s.specials() != t.specials() {
            return Err(DataError::Config(format!(
                "{} and {} reserve different special ids; fix: pass the two tokenizers of one model",
                src.display(),
                tgt.display()
            )));
        }
        (s, t)
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
    for (name, pairs, mut stats) in cleaned {
        progress(&format!("measuring the {name} split"));
        let is_train = name == SplitName::Train;
        let kept = length_pass(pairs, &mut stats, &src_tok, &tgt_tok, cfg.max_len, is_train);
        if kept.is_empty() {
            return Err(DataError::EmptyCorpus {
                what: format!("the {name} split"),
            });
        }
        finals.push((name, kept, stats));
    }

    // Write: splits, tokenizers, then data.toml last.
    progress(&format!("writing {}", cfg.out.display()));
    std::fs::create_dir_all(&cfg.out).map_err(|e| DataError::io(&cfg.out, e))?;
    let old_record = cfg.out.join(DATA_TOML);
    if cfg.force {
        // A stale record would describe files about to change; stale splits would mislead.
        for name in SplitName::ALL {
            let (s, t) = name.file_names();
            for f in [old_record.clone(), cfg.out.join(s), cfg.out.join(t)] {
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
        options: DataOptions {
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
            clean: cfg.clean,
            src_is_chinese: src_zh,
            tgt_is_chinese: tgt_zh,
            src_lang: cfg.src_lang.clone(),
            tgt_lang: cfg.tgt_lang.clone(),
        },
        tokenizers: TokenizersInfo {
            src: TokenizerInfo {
                file: SRC_TOKENIZER_FILE.to_owned(),
                kind: src_tok.kind().unwrap_or(src_kind),
                vocab_size: src_tok.vocab_size(),
            },
            tgt: TokenizerInfo {
                file: TGT_TOKENIZER_FILE.to_owned(),
                kind: tgt_tok.kind().unwrap_or(tgt_kind),
                vocab_size: tgt_tok.vocab_size(),
            },
        },
        splits,
        sources,
    };
    crate::datadir::write_data_toml(&cfg.out, &record)?;
    Ok(record)
}
