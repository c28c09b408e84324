//! The one error type of the crate. Every message names the file (and the line where there is
//! one) and says how to fix the problem.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;

/// Everything that can go wrong while reading, cleaning, tokenising or loading data.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// An input file does not exist.
    #[error("{}: no such file; fix: check the path", path.display())]
    MissingFile { path: PathBuf },

    /// Any other I/O failure on a file or directory.
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },

    /// A line is not valid UTF-8.
    #[error(
        "{}:{line}: invalid UTF-8 at byte offset {offset} of the file (byte {column} of the line); \
         fix: convert the file to UTF-8 (e.g. `iconv -f GB18030 -t UTF-8`)",
        path.display()
    )]
    InvalidUtf8 {
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// 0-based byte offset of the first invalid byte, from the start of the file.
        offset: u64,
        /// 0-based byte offset of the first invalid byte, from the start of the line.
        column: usize,
    },

    /// The source and target files of a split are not aligned.
    #[error(
        "line counts differ: {} has {src_lines} lines but {} has {tgt_lines}; \
         fix: the two files must be aligned, one sentence per line",
        src_path.display(),
        tgt_path.display()
    )]
    LineCountMismatch {
        src_path: PathBuf,
        src_lines: usize,
        tgt_path: PathBuf,
        tgt_lines: usize,
    },

    /// A TSV line has fewer columns than the chosen ones.
    #[error(
        "{}:{line}: {found} tab-separated column(s), but column {needed} is needed; \
         fix: repair the line or choose other columns (--src-col/--tgt-col, 1-based)",
        path.display()
    )]
    TsvColumns {
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        found: usize,
        needed: usize,
    },

    /// A line of a labelled corpus (CoNLL-U, `token/TAG`, `LABEL text`) is malformed; the
    /// message says how and the fix.
    #[error("{}:{line}: {message}", path.display())]
    BadLine {
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        message: String,
    },

    /// Nothing is left of a split after cleaning.
    #[error("{what}: no sentence pair is left after cleaning; fix: check the input files")]
    EmptyCorpus { what: String },

    /// A bad option or combination of options.
    #[error("{0}")]
    Config(String),

    /// An audio file (or a file of features) that cannot be used; the message says why and
    /// how to fix it.
    #[error("{}: {message}", path.display())]
    Audio { path: PathBuf, message: String },

    /// The output directory exists and is not empty.
    #[error(
        "{}: the directory exists and is not empty; fix: pass --force to overwrite it, or choose another --out",
        path.display()
    )]
    OutDirNotEmpty { path: PathBuf },

    /// Training, loading or using a tokenizer failed.
    #[error("{what}: {message}")]
    Tokenizer { what: String, message: String },

    /// The directory is not a prepared data directory.
    #[error("DATA_DIR {} has no data.toml: run `s2s prepare` first", path.display())]
    NotADataDir { path: PathBuf },

    /// A file of a data directory is malformed or inconsistent.
    #[error("{}: {message}", path.display())]
    BadDataDir { path: PathBuf, message: String },
}

impl DataError {
    /// Wraps an I/O error with the path it happened on; a missing file becomes
    /// [`DataError::MissingFile`].
    pub fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        let path = path.into();
        if err.kind() == std::io::ErrorKind::NotFound {
            DataError::MissingFile { path }
        } else {
            DataError::Io { path, err }
        }
    }
}
