//! The listings of a speech corpus: a manifest of `AUDIO_PATH<TAB>transcript` lines, or a Kaldi
//! data folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{DataError, Result};
use crate::io::read_text_file;

fn at(path: &Path, line: usize, message: String) -> DataError {
    DataError::Config(format!("{}:{line}: {message}", path.display()))
}

/// Reads a manifest: one utterance per line, `AUDIO_PATH<TAB>transcript`, the path relative to
/// the manifest's folder (or absolute). Blank lines and `#` comments are skipped. Every audio
/// file must exist.
pub fn read_manifest(path: &Path) -> Result<Vec<(PathBuf, String)>> {
    let file = read_text_file(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (i, line) in file.lines.iter().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((audio, text)) = line.split_once('\t') else {
            return Err(at(
                path,
                n,
                "no tab; fix: write `AUDIO_PATH<TAB>transcript` on every line".into(),
            ));
        };
        if audio.trim().is_empty() {
            return Err(at(
                path,
                n,
                "an empty audio path; fix: name the WAV file before the tab".into(),
            ));
        }
        let audio = base.join(audio);
        if !audio.is_file() {
            return Err(at(
                path,
                n,
                format!(
                    "{}: no such file; fix: paths are relative to the manifest's folder",
                    audio.display()
                ),
            ));
        }
        out.push((audio, text.to_owned()));
    }
    Ok(out)
}

/// `utt-id rest-of-line` entries of a Kaldi file, by id.
fn kaldi_table(path: &Path) -> Result<BTreeMap<String, (usize, String)>> {
    let file = read_text_file(path)?;
    let mut out = BTreeMap::new();
    for (i, line) in file.lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let (id, rest) = line
            .trim()
            .split_once(char::is_whitespace)
            .unwrap_or((line.trim(), ""));
        if out
            .insert(id.to_owned(), (i + 1, rest.trim().to_owned()))
            .is_some()
        {
            return Err(at(path, i + 1, format!("utterance `{id}` is listed twice")));
        }
    }
    Ok(out)
}

/// Reads a Kaldi data folder: `wav.scp` (`utt-id PATH`, paths relative to the folder or
/// absolute; commands ending in `|` are refused) and `text` (`utt-id transcript`), joined by
/// utterance id in `wav.scp`'s sorted order.
pub fn read_kaldi_dir(dir: &Path) -> Result<Vec<(PathBuf, String)>> {
    let (scp, text) = (dir.join("wav.scp"), dir.join("text"));
    let wavs = kaldi_table(&scp)?;
    let mut texts = kaldi_table(&text)?;
    let mut out = Vec::with_capacity(wavs.len());
    for (id, (line, audio)) in wavs {
        if audio.ends_with('|') {
            return Err(at(
                &scp,
                line,
                "a command, not a file; fix: write the audio to WAV files and list their paths"
                    .into(),
            ));
        }
        let Some((_, transcript)) = texts.remove(&id) else {
            return Err(at(
                &scp,
                line,
                format!("utterance `{id}` has no line in {}", text.display()),
            ));
        };
        let audio = dir.join(audio);
        if !audio.is_file() {
            return Err(at(&scp, line, format!("{}: no such file", audio.display())));
        }
        out.push((audio, transcript));
    }
    if let Some((id, (line, _))) = texts.into_iter().next() {
        return Err(at(
            &text,
            line,
            format!("utterance `{id}` has no audio in {}", scp.display()),
        ));
    }
    Ok(out)
}
