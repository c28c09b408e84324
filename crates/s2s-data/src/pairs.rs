//! Source and target text files from corpora that come in other shapes: summarisation's AESLC
//! and SciTLDR (JSON lines) and CamRest676's dialogues (one JSON document), written as the
//! parallel files [`crate::prepare`] reads and `s2s eval` scores, with every reference of a
//! validation or test example in `NAME.tgt`, `NAME.tgt.2`, ... (an empty line where an example
//! has fewer: `s2s eval` reads it as "no further reference").
//!
//! Texts keep their words; every run of whitespace (an email's line breaks included) becomes
//! one space, since a line of the output is one example.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{DataError, Result};
use crate::io::{atomic_write, read_text_file};

/// One split's examples: each source and its references (at least one; training pairs use the
/// first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitText {
    /// `train`, `valid` or `test`: the files' stem.
    pub name: String,
    pub examples: Vec<(String, Vec<String>)>,
}

impl SplitText {
    fn new(name: &str) -> Self {
        SplitText {
            name: name.into(),
            examples: Vec::new(),
        }
    }

    /// The most references any example has.
    pub fn references(&self) -> usize {
        self.examples
            .iter()
            .map(|(_, r)| r.len())
            .max()
            .unwrap_or(1)
    }
}

/// Writes each split as `NAME.src` and `NAME.tgt`, `NAME.tgt.2`, ... (one file per reference,
/// an empty line where an example has no such reference), atomically, into `out` (created if
/// needed). Returns the files in the order written.
pub fn write_splits(splits: &[SplitText], out: &Path) -> Result<Vec<PathBuf>> {
    fn lines<'a>(text: impl Iterator<Item = &'a str>) -> String {
        text.map(|t| format!("{t}\n")).collect()
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for split in splits {
        files.push((
            format!("{}.src", split.name),
            lines(split.examples.iter().map(|(s, _)| s.as_str())),
        ));
        for k in 0..split.references() {
            let name = if k == 0 {
                format!("{}.tgt", split.name)
            } else {
                format!("{}.tgt.{}", split.name, k + 1)
            };
            let refs = split
                .examples
                .iter()
                .map(|(_, r)| r.get(k).map_or("", String::as_str));
            files.push((name, lines(refs)));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| DataError::io(out, e))?;
    let mut written = Vec::new();
    for (name, text) in &files {
        let path = out.join(name);
        atomic_write(&path, text.as_bytes()).map_err(|e| DataError::io(&path, e))?;
        written.push(path);
    }
    Ok(written)
}

/// Every run of whitespace as one space, without spaces at the ends.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn bad(path: &Path, line: usize, message: impl std::fmt::Display) -> DataError {
    DataError::Config(format!("{}:{line}: {message}", path.display()))
}

/// The JSON objects of a JSON-lines file, with their 1-based line numbers (blank lines skipped).
fn json_lines(path: &Path) -> Result<Vec<(usize, serde_json::Map<String, Value>)>> {
    let file = read_text_file(path)?;
    let mut out = Vec::new();
    for (i, line) in file.lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => out.push((i + 1, o)),
            Ok(_) => {
                return Err(bad(
                    path,
                    i + 1,
                    "not a JSON object; fix: one object per line",
                ));
            }
            Err(e) => return Err(bad(path, i + 1, format_args!("not valid JSON ({e})"))),
        }
    }
    Ok(out)
}

/// A string field, or a list of strings (`join`ed), made one line.
fn text_field(
    o: &serde_json::Map<String, Value>,
    key: &str,
    path: &Path,
    line: usize,
) -> Result<String> {
    match o.get(key) {
        Some(Value::String(s)) => Ok(one_line(s)),
        Some(Value::Array(items)) => {
            let parts: Option<Vec<&str>> = items.iter().map(Value::as_str).collect();
            parts.map(|p| one_line(&p.join(" "))).ok_or_else(|| {
                bad(
                    path,
                    line,
                    format_args!("`{key}` holds something other than strings"),
                )
            })
        }
        Some(_) => Err(bad(path, line, format_args!("`{key}` is not a string"))),
        None => Err(bad(
            path,
            line,
            format_args!("no `{key}` field; fix: give every line one"),
        )),
    }
}

/// The corpora this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corpus {
    /// AESLC: email body -> subject line. Train pairs with the `subject`; dev and test score
    /// against the three annotations `ann0`-`ann2`, as the paper does.
    Aeslc,
    /// SciTLDR-A: abstract (`source`, a list of sentences) -> TLDR (`target`, a list). Training
    /// has a pair per TLDR; dev and test score against all of an abstract's TLDRs.
    Scitldr,
    /// CamRest676: dialogue history -> the system's next turn.
    Camrest676,
}

impl Corpus {
    pub fn name(self) -> &'static str {
        match self {
            Corpus::Aeslc => "aeslc",
            Corpus::Scitldr => "scitldr",
            Corpus::Camrest676 => "camrest676",
        }
    }
}

/// How a dialogue history is written into a source line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryFormat {
    /// The last this many utterances (user and system together) before the response; 0 keeps
    /// the whole dialogue so far.
    pub turns: usize,
    /// Put before each user utterance.
    pub user_tag: String,
    /// Put before each system utterance.
    pub system_tag: String,
}

impl Default for HistoryFormat {
    fn default() -> Self {
        HistoryFormat {
            turns: 0,
            user_tag: "<usr>".into(),
            system_tag: "<sys>".into(),
        }
    }
}

/// Reads `corpus` from its folder (the files of `../shared/data/NAME`) into train, valid and
/// test splits.
pub fn read_corpus(corpus: Corpus, dir: &Path, history: &HistoryFormat) -> Result<Vec<SplitText>> {
    let jsonl = |read: fn(&Path, bool) -> Result<Examples>| -> Result<Vec<SplitText>> {
        [("train", "train"), ("dev", "valid"), ("test", "test")]
            .into_iter()
            .map(|(file, name)| {
                Ok(SplitText {
                    name: name.into(),
                    examples: read(&dir.join(format!("{file}.jsonl")), file != "train")?,
                })
            })
            .collect()
    };
    match corpus {
        Corpus::Aeslc => jsonl(read_aeslc),
        Corpus::Scitldr => jsonl(read_scitldr),
        Corpus::Camrest676 => read_camrest(&dir.join("CamRest676.json"), history),
    }
}

type Examples = Vec<(String, Vec<String>)>;

fn read_aeslc(path: &Path, annotated: bool) -> Result<Examples> {
    json_lines(path)?
        .into_iter()
        .map(|(line, o)| {
            let email = text_field(&o, "email", path, line)?;
            let refs = if annotated {
                ["ann0", "ann1", "ann2"]
                    .iter()
                    .map(|k| text_field(&o, k, path, line))
                    .collect::<Result<Vec<_>>>()?
            } else {
                vec![text_field(&o, "subject", path, line)?]
            };
            Ok((email, refs))
        })
        .collect()
}

fn read_scitldr(path: &Path, all_targets: bool) -> Result<Examples> {
    let mut out = Vec::new();
    for (line, o) in json_lines(path)? {
        let source = text_field(&o, "source", path, line)?;
        let targets: Vec<String> = match o.get("target") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|t| t.as_str().map(one_line))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad(path, line, "`target` holds something other than strings"))?,
            _ => {
                return Err(bad(
                    path,
                    line,
                    "no `target` list; fix: give every line its TLDRs as a list of strings",
                ));
            }
        };
        if targets.is_empty() {
            return Err(bad(
                path,
                line,
                "`target` is empty; fix: give at least one TLDR",
            ));
        }
        if all_targets {
            out.push((source, targets));
        } else {
            out.extend(targets.into_iter().map(|t| (source.clone(), vec![t])));
        }
    }
    Ok(out)
}

/// CamRest676: dialogues in file order split 3:1:1 as Sequicity's reader cuts them (405 / 135 /
/// 136 of 676, the cuts rounded down); one
/// example per system turn, its source the history up to and including the user's turn.
fn read_camrest(path: &Path, history: &HistoryFormat) -> Result<Vec<SplitText>> {
    let file = read_text_file(path)?;
    let doc: Value = serde_json::from_str(&file.lines.join("\n"))
        .map_err(|e| bad(path, e.line(), format_args!("not valid JSON ({e})")))?;
    let dialogues = doc.as_array().ok_or_else(|| {
        DataError::Config(format!(
            "{}: expected a list of dialogues (CamRest676.json's shape)",
            path.display()
        ))
    })?;
    let n = dialogues.len();
    let (train_end, valid_end) = (n * 3 / 5, n * 4 / 5);
    let mut splits = vec![
        SplitText::new("train"),
        SplitText::new("valid"),
        SplitText::new("test"),
    ];
    for (d, dialogue) in dialogues.iter().enumerate() {
        let where_ = |what: &str| {
            DataError::Config(format!(
                "{}: dialogue {} (0-based): {what}; fix: each dialogue is {{\"dial\": [{{\"usr\": \
                 {{\"transcript\": ...}}, \"sys\": {{\"sent\": ...}}}}, ...]}}",
                path.display(),
                d
            ))
        };
        let turns = dialogue
            .get("dial")
            .and_then(Value::as_array)
            .ok_or_else(|| where_("no `dial` list"))?;
        let split = &mut splits[if d < train_end {
            0
        } else if d < valid_end {
            1
        } else {
            2
        }];
        let mut utterances: Vec<String> = Vec::new();
        for (t, turn) in turns.iter().enumerate() {
            let user = turn
                .pointer("/usr/transcript")
                .and_then(Value::as_str)
                .ok_or_else(|| where_(&format!("turn {t} has no usr.transcript")))?;
            let system = turn
                .pointer("/sys/sent")
                .and_then(Value::as_str)
                .ok_or_else(|| where_(&format!("turn {t} has no sys.sent")))?;
            utterances.push(format!("{} {}", history.user_tag, one_line(user)));
            let from = if history.turns == 0 {
                0
            } else {
                utterances.len().saturating_sub(history.turns)
            };
            split.examples.push((
                one_line(&utterances[from..].join(" ")),
                vec![one_line(system)],
            ));
            utterances.push(format!("{} {}", history.system_tag, one_line(system)));
        }
    }
    Ok(splits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_write_one_file_per_reference() {
        let dir = tempfile::tempdir().unwrap();
        let mut test = SplitText::new("test");
        test.examples = vec![
            ("a".into(), vec!["x".into(), "y".into()]),
            ("b".into(), vec!["z".into()]),
        ];
        let files = write_splits(&[test], dir.path()).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["test.src", "test.tgt", "test.tgt.2"]);
        let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
        assert_eq!(read("test.src"), "a\nb\n");
        assert_eq!(read("test.tgt"), "x\nz\n");
        assert_eq!(read("test.tgt.2"), "y\n\n");
    }

    #[test]
    fn dialogue_history_is_tagged_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("CamRest676.json");
        let turn =
            |u: &str, s: &str| serde_json::json!({"usr": {"transcript": u}, "sys": {"sent": s}});
        let dialogues: Vec<Value> = (0..5)
            .map(|d| {
                serde_json::json!({"dial": [
                    turn(&format!("hi {d}"), "hello"),
                    turn("cheap  food\nplease", "try x"),
                ]})
            })
            .collect();
        std::fs::write(&path, serde_json::to_string(&dialogues).unwrap()).unwrap();
        let splits = read_camrest(&path, &HistoryFormat::default()).unwrap();
        assert_eq!(
            splits.iter().map(|s| s.examples.len()).collect::<Vec<_>>(),
            [6, 2, 2]
        );
        assert_eq!(
            splits[0].examples[1],
            (
                "<usr> hi 0 <sys> hello <usr> cheap food please".to_string(),
                vec!["try x".to_string()]
            )
        );
        let short = HistoryFormat {
            turns: 2,
            ..HistoryFormat::default()
        };
        let splits = read_camrest(&path, &short).unwrap();
        assert_eq!(
            splits[2].examples[1].0,
            "<sys> hello <usr> cheap food please"
        );

        std::fs::write(&path, r#"[{"dial": [{"usr": {"transcript": "x"}}]}]"#).unwrap();
        let err = read_camrest(&path, &short).unwrap_err().to_string();
        assert!(
            err.contains("dialogue 0") && err.contains("sys.sent"),
            "{err}"
        );
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("train.jsonl");
        std::fs::write(
            &path,
            "{\"email\": \"a\", \"subject\": \"b\"}\n\n{\"email\": \"c\"}\n",
        )
        .unwrap();
        let err = read_aeslc(&path, false).unwrap_err().to_string();
        assert!(
            err.contains("train.jsonl:3") && err.contains("`subject`"),
            "{err}"
        );
        std::fs::write(
            &path,
            "{\"source\": [\"s1\", \"s2\"], \"target\": [\"t1\", \"t2\"]}\n",
        )
        .unwrap();
        assert_eq!(
            read_scitldr(&path, false).unwrap(),
            [
                ("s1 s2".to_string(), vec!["t1".to_string()]),
                ("s1 s2".to_string(), vec!["t2".to_string()])
            ]
        );
        assert_eq!(read_scitldr(&path, true).unwrap().len(), 1);
        std::fs::write(&path, "{\"source\": [\"s1\"], \"target\": \"t\"}\n").unwrap();
        let err = read_scitldr(&path, false).unwrap_err().to_string();
        assert!(
            err.contains("train.jsonl:1") && err.contains("fix:"),
            "{err}"
        );
    }
}
