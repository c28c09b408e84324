//! File input and output: reading aligned text and TSV corpora with precise errors, hashing,
//! and atomic writes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::error::{DataError, Result};

/// A simulated full disk for tests: while set, [`atomic_write`] to a file whose name equals the
/// pattern writes half of the bytes to its temporary file and then fails as a full disk would
/// (`ErrorKind::StorageFull`). The real write path runs up to the failure, so its clean-up and
/// its callers' error messages are what the tests see. Never set outside tests.
static WRITE_FAULT: Mutex<Option<String>> = Mutex::new(None);

/// Sets (or, with `None`, clears) the simulated full disk; see [`WRITE_FAULT`].
#[doc(hidden)]
pub fn simulate_full_disk_for(file_name: Option<&str>) {
    *WRITE_FAULT.lock().unwrap_or_else(|e| e.into_inner()) = file_name.map(str::to_string);
}

fn injected_fault(name: &std::ffi::OsStr) -> bool {
    WRITE_FAULT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_deref()
        .is_some_and(|p| name == p)
}

/// True when an I/O error means the disk (or a quota) is full.
pub fn is_disk_full(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge
    )
}

/// What to do about an I/O error while writing a model or checkpoint, for the errors with an
/// obvious remedy ("" otherwise), to follow the error's own message.
pub fn write_error_hint(e: &io::Error) -> &'static str {
    if is_disk_full(e) {
        "; the disk may be full: free some space and run again (files already written are intact; resume with --resume)"
    } else if e.kind() == io::ErrorKind::PermissionDenied {
        "; check the permissions of the directory"
    } else {
        ""
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// fsynced and renamed over `path`, then the directory is fsynced. Readers see either the old
/// file or the new one, never a partial one. The temporary file is removed on failure.
pub fn atomic_write(path: impl AsRef<Path>, bytes: &[u8]) -> io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file path", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(temp_name(name, std::process::id(), n));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => break (tmp, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let fail = injected_fault(name);
    let result = (|| {
        if fail {
            file.write_all(&bytes[..bytes.len() / 2])?;
            return Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (simulated)",
            ));
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)?;
        sync_dir(&dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The name of [`atomic_write`]'s temporary file for `name`, written by process `pid`:
/// `.NAME.tmp.PID.N`. [`atomic_temp_pid`] recognises these names.
fn temp_name(name: &std::ffi::OsStr, pid: u32, n: u64) -> std::ffi::OsString {
    let mut tmp = std::ffi::OsString::from(".");
    tmp.push(name);
    tmp.push(format!(".tmp.{pid}.{n}"));
    tmp
}

/// The id of the process that wrote `name`, when `name` is one of [`atomic_write`]'s temporary
/// files (`.NAME.tmp.PID.N`, both numbers decimal); `None` for any other name.
pub fn atomic_temp_pid(name: &std::ffi::OsStr) -> Option<u32> {
    let name = name.to_str()?;
    let rest = name.strip_prefix('.')?;
    let (rest, n) = rest.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let target = rest.strip_suffix(".tmp")?;
    let decimal = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !decimal(n) || !decimal(pid) {
        return None;
    }
    pid.parse().ok()
}

/// Removes the temporary files that [`atomic_write`] left in `dir` (not in its subfolders) when
/// a process was killed mid-write: only names of its pattern ([`atomic_temp_pid`]) and only those
/// of processes that no longer run (`is_running(pid)` says whether one does; the caller knows how
/// to ask the OS). Returns the paths removed; a missing `dir` has none.
pub fn sweep_temporaries(dir: &Path, is_running: impl Fn(u32) -> bool) -> io::Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Some(pid) = atomic_temp_pid(&entry.file_name()) else {
            continue;
        };
        if !entry.file_type()?.is_file() || is_running(pid) {
            continue;
        }
        let path = entry.path();
        match fs::remove_file(&path) {
            Ok(()) => removed.push(path),
            // Gone already (its writer finished after all): nothing to sweep.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The lines of one input file, with its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFile {
    pub path: PathBuf,
    /// Lines without their terminator (`\n` or `\r\n`).
    pub lines: Vec<String>,
    /// Hex sha256 of the raw bytes.
    pub sha256: String,
}

/// Hex sha256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Reads a UTF-8 text file, one item per line. A missing file, an I/O failure or invalid UTF-8
/// (with line and byte offset) is an error.
pub fn read_text_file(path: impl AsRef<Path>) -> Result<TextFile> {
    let path = path.as_ref();
    let bytes = fs::read(path).map_err(|e| DataError::io(path, e))?;
    let lines = split_lines(&bytes, path)?;
    Ok(TextFile {
        path: path.to_path_buf(),
        lines,
        sha256: sha256_hex(&bytes),
    })
}

/// Splits raw bytes into lines: `\n` terminates a line, one `\r` before it is dropped, and a
/// final line without terminator counts. Each line must be valid UTF-8; the error names `path`,
/// the 1-based line and the byte offset.
pub fn split_lines(bytes: &[u8], path: &Path) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut start = 0usize;
    let mut line_no = 0usize;
    while start < bytes.len() {
        line_no += 1;
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p);
        let mut raw = &bytes[start..end];
        if let Some(stripped) = raw.strip_suffix(b"\r") {
            raw = stripped;
        }
        match std::str::from_utf8(raw) {
            Ok(s) => lines.push(s.to_owned()),
            Err(e) => {
                return Err(DataError::InvalidUtf8 {
                    path: path.to_path_buf(),
                    line: line_no,
                    offset: (start + e.valid_up_to()) as u64,
                    column: e.valid_up_to(),
                });
            }
        }
        start = end + 1;
    }
    Ok(lines)
}

/// Picks two 1-based columns out of tab-separated lines. A line with too few columns is an error
/// naming `path` and the line.
pub fn split_tsv(
    lines: &[String],
    path: &Path,
    src_col: usize,
    tgt_col: usize,
) -> Result<(Vec<String>, Vec<String>)> {
    if src_col == 0 || tgt_col == 0 {
        return Err(DataError::Config(format!(
            "{}: TSV columns are 1-based; fix: pass --src-col/--tgt-col of 1 or more",
            path.display()
        )));
    }
    let needed = src_col.max(tgt_col);
    let mut src = Vec::with_capacity(lines.len());
    let mut tgt = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < needed {
            // An entirely empty line is an empty pair, dropped and counted like any other.
            if line.is_empty() {
                src.push(String::new());
                tgt.push(String::new());
                continue;
            }
            return Err(DataError::TsvColumns {
                path: path.to_path_buf(),
                line: i + 1,
                found: cols.len(),
                needed,
            });
        }
        src.push(cols[src_col - 1].to_owned());
        tgt.push(cols[tgt_col - 1].to_owned());
    }
    Ok((src, tgt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.txt");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("f.txt")]);
        assert!(atomic_write(d.path().join("missing/f.txt"), b"x").is_err());
    }

    #[test]
    fn temporaries_of_dead_writers_are_swept_and_nothing_else() {
        let d = tempfile::tempdir().unwrap();
        let ours = std::process::id();
        let dead = temp_name("metrics.jsonl".as_ref(), 4_000_000_000, 7);
        assert_eq!(atomic_temp_pid(&dead), Some(4_000_000_000));
        let live = temp_name("model.safetensors".as_ref(), ours, 0);
        let kept = [
            "metrics.jsonl",
            ".metrics.jsonl.tmp",
            ".metrics.jsonl.tmp.12",
            ".metrics.jsonl.tmp.x.1",
            ".metrics.jsonl.tmp.12.",
            "metrics.jsonl.tmp.12.3",
            "..tmp.12.3",
            "notes.tmp.12.3",
        ];
        for name in kept
            .iter()
            .map(std::ffi::OsString::from)
            .chain([dead.clone(), live.clone()])
        {
            fs::write(d.path().join(&name), b"x").unwrap();
        }
        // A folder of the pattern is not one of atomic_write's files.
        fs::create_dir(d.path().join(temp_name("sub".as_ref(), 4_000_000_001, 0))).unwrap();
        let removed = sweep_temporaries(d.path(), |pid| pid == ours).unwrap();
        assert_eq!(removed, vec![d.path().join(&dead)]);
        assert!(!d.path().join(&dead).exists());
        assert!(
            d.path().join(&live).exists(),
            "a running writer's file stays"
        );
        for name in kept {
            assert!(d.path().join(name).exists(), "{name} was removed");
            assert_eq!(atomic_temp_pid(name.as_ref()), None, "{name}");
        }
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), kept.len() + 2);
        assert!(
            sweep_temporaries(&d.path().join("missing"), |_| false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn a_full_disk_keeps_the_old_file_and_removes_the_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("full-disk-unit.txt");
        atomic_write(&p, b"old").unwrap();
        simulate_full_disk_for(Some("full-disk-unit.txt"));
        let err = atomic_write(&p, b"new contents").unwrap_err();
        simulate_full_disk_for(None);
        assert!(is_disk_full(&err), "{err}");
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn splits_lines_like_a_text_editor() {
        let p = Path::new("t");
        assert_eq!(split_lines(b"", p).unwrap(), Vec::<String>::new());
        assert_eq!(split_lines(b"a\r\nb", p).unwrap(), vec!["a", "b"]);
        assert_eq!(split_lines(b"a\n\n", p).unwrap(), vec!["a", ""]);
        assert_eq!(split_lines(b"\n", p).unwrap(), vec![""]);
    }

    #[test]
    fn tsv_empty_lines_become_empty_pairs() {
        let lines: Vec<String> = vec!["a\tb\tc".into(), "".into()];
        let (s, t) = split_tsv(&lines, Path::new("t.tsv"), 2, 1).unwrap();
        assert_eq!(s, vec!["b", ""]);
        assert_eq!(t, vec!["a", ""]);
        assert!(split_tsv(&lines, Path::new("t.tsv"), 0, 1).is_err());
    }
}
