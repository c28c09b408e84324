//! Readers for labelled corpora, the inputs of the tagging and classification tasks. Each gives
//! the pairs as `prepare` writes them: the source is the sentence's tokens joined by single
//! spaces (or its text), the target the tags joined by single spaces (one per token) or the one
//! label.
//!
//! - [`read_conllu`]: CoNLL-U (`*.conllu`, Universal Dependencies). Sentences are separated by
//!   blank lines; `#` comment lines, multiword-token ranges (`1-2`) and empty nodes (`8.1`) are
//!   skipped. Source: the FORM column (2); target: UPOS (4) or XPOS (5). A form holding
//!   whitespace (CoNLL-U allows `1 000`) keeps one token: its inner whitespace runs become `_`,
//!   and [`LabelledFile::forms_with_spaces`] counts those forms.
//! - [`read_tagged`]: one sentence per line of `token/TAG` items; the tag is what follows the
//!   last `/`, so `1/2/CD` is the token `1/2` tagged `CD`.
//! - [`read_labelled`]: one example per line, `LABEL<TAB>text` or `LABEL text` (the SST and TREC
//!   files): the first whitespace-separated field is the label, the rest the text.
//!
//! A blank line of a line-based format is an empty pair, which `prepare` drops and counts like
//! any other. Every error names the file, the 1-based line and the fix.

use std::path::{Path, PathBuf};

use crate::error::{DataError, Result};
use crate::io::{TextFile, read_text_file};

/// Which CoNLL-U column holds the tags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TagColumn {
    /// Column 4: the universal part-of-speech tag (17 tags).
    #[default]
    Upos,
    /// Column 5: the language-specific tag (Penn Treebank tags for English).
    Xpos,
}

impl TagColumn {
    /// The 1-based column.
    pub fn column(self) -> usize {
        match self {
            TagColumn::Upos => 4,
            TagColumn::Xpos => 5,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TagColumn::Upos => "upos",
            TagColumn::Xpos => "xpos",
        }
    }

    fn name(self) -> &'static str {
        match self {
            TagColumn::Upos => "UPOS",
            TagColumn::Xpos => "XPOS",
        }
    }
}

impl std::fmt::Display for TagColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for TagColumn {
    type Err = DataError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "upos" => Ok(TagColumn::Upos),
            "xpos" => Ok(TagColumn::Xpos),
            other => Err(DataError::Config(format!(
                "unknown CoNLL-U tag column `{other}`; fix: use upos or xpos"
            ))),
        }
    }
}

/// The pairs of one labelled file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledFile {
    pub path: PathBuf,
    /// Hex sha256 of the file's bytes.
    pub sha256: String,
    /// Lines in the file.
    pub file_lines: usize,
    /// `(source, target)`: the tokens (or text) and the tags (or label).
    pub pairs: Vec<(String, String)>,
    /// The 1-based line of each pair: its line, or the first word line of a CoNLL-U sentence.
    pub lines: Vec<usize>,
    /// CoNLL-U forms whose inner whitespace was replaced by `_` (0 for the other formats).
    pub forms_with_spaces: usize,
}

fn bad(path: &Path, line: usize, message: String) -> DataError {
    DataError::BadLine {
        path: path.to_path_buf(),
        line,
        message,
    }
}

/// The line without a byte-order mark when it is the file's first.
fn strip_bom(i: usize, line: &str) -> &str {
    if i == 0 {
        line.strip_prefix('\u{FEFF}').unwrap_or(line)
    } else {
        line
    }
}

/// An empty [`LabelledFile`] for `file`, and the file's lines.
fn labelled_file(file: TextFile) -> (LabelledFile, Vec<String>) {
    let TextFile {
        path,
        lines,
        sha256,
    } = file;
    let out = LabelledFile {
        path,
        sha256,
        file_lines: lines.len(),
        pairs: Vec::new(),
        lines: Vec::new(),
        forms_with_spaces: 0,
    };
    (out, lines)
}

/// Reads a CoNLL-U file: one pair per sentence, the forms and the tags of `column`.
pub fn read_conllu(path: impl AsRef<Path>, column: TagColumn) -> Result<LabelledFile> {
    let (mut out, lines) = labelled_file(read_text_file(path)?);
    parse_conllu(&lines, column, &mut out)?;
    Ok(out)
}

/// One sentence being read.
#[derive(Default)]
struct Sentence {
    forms: Vec<String>,
    tags: Vec<String>,
    first_line: usize,
}

impl Sentence {
    fn flush(&mut self, out: &mut LabelledFile) {
        if !self.forms.is_empty() {
            out.pairs.push((self.forms.join(" "), self.tags.join(" ")));
            out.lines.push(self.first_line);
        }
        *self = Sentence::default();
    }
}

fn parse_conllu(lines: &[String], column: TagColumn, out: &mut LabelledFile) -> Result<()> {
    let path = out.path.clone();
    let tag_name = column.name();
    let mut sent = Sentence::default();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let line = strip_bom(i, line);
        if line.trim().is_empty() {
            sent.flush(out);
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() != 10 {
            return Err(bad(
                &path,
                n,
                format!(
                    "{} tab-separated column(s), but a CoNLL-U word line has 10; fix: separate \
                     the 10 columns with single tabs (spaces do not separate columns), and \
                     sentences with one blank line",
                    cols.len()
                ),
            ));
        }
        let id = cols[0];
        let is_number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if let Some((a, b)) = id.split_once('-').or_else(|| id.split_once('.')) {
            // A multiword-token range (`3-4`) or an empty node (`8.1`): not a word to tag.
            if is_number(a) && is_number(b) {
                continue;
            }
        }
        let expected = sent.forms.len() + 1;
        if !is_number(id) || id.parse::<usize>().ok() != Some(expected) {
            let after = if expected == 1 {
                "the sentence's first word must be 1".to_owned()
            } else {
                format!("it follows word {}", expected - 1)
            };
            return Err(bad(
                &path,
                n,
                format!(
                    "word ID `{id}` where {expected} was expected ({after}); fix: number the \
                     words of each sentence 1, 2, 3, ... (ranges `1-2` and empty nodes `1.1` \
                     aside), and separate sentences with a blank line"
                ),
            ));
        }
        let form = cols[1].trim();
        if form.is_empty() {
            return Err(bad(
                &path,
                n,
                "the FORM (column 2) is empty; fix: write the word form (`_` for an underscore)"
                    .to_owned(),
            ));
        }
        let joined = form.split_whitespace().collect::<Vec<_>>().join("_");
        if joined != cols[1] {
            out.forms_with_spaces += 1;
        }
        let tag = cols[column.column() - 1];
        if tag.is_empty() || tag == "_" {
            return Err(bad(
                &path,
                n,
                format!(
                    "the {tag_name} (column {}) is {}; fix: tag every word, or read the other \
                     tag column (--tag-column upos|xpos)",
                    column.column(),
                    if tag.is_empty() {
                        "empty"
                    } else {
                        "`_` (not annotated)"
                    }
                ),
            ));
        }
        if tag.contains(char::is_whitespace) {
            return Err(bad(
                &path,
                n,
                format!(
                    "the {tag_name} `{tag}` (column {}) holds whitespace; fix: write tags without \
                     spaces",
                    column.column()
                ),
            ));
        }
        if sent.forms.is_empty() {
            sent.first_line = n;
        }
        sent.forms.push(joined);
        sent.tags.push(tag.to_owned());
    }
    sent.flush(out);
    if out.pairs.is_empty() {
        return Err(DataError::Config(format!(
            "{}: no sentence in the file; fix: give a CoNLL-U file (word lines of 10 \
             tab-separated columns, sentences separated by blank lines)",
            path.display()
        )));
    }
    Ok(())
}

/// Reads a file of `token/TAG` lines, one sentence per line.
pub fn read_tagged(path: impl AsRef<Path>) -> Result<LabelledFile> {
    let (mut out, lines) = labelled_file(read_text_file(path)?);
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let (mut tokens, mut tags) = (Vec::new(), Vec::new());
        for (k, item) in strip_bom(i, line).split_whitespace().enumerate() {
            let problem = match item.rsplit_once('/') {
                None => Some("has no `/TAG`"),
                Some(("", _)) => Some("has an empty token before its `/`"),
                Some((_, "")) => Some("has an empty tag after its last `/`"),
                Some((token, tag)) => {
                    tokens.push(token);
                    tags.push(tag);
                    None
                }
            };
            if let Some(problem) = problem {
                return Err(bad(
                    &out.path,
                    n,
                    format!(
                        "item {} `{item}` {problem}; fix: write every token as TOKEN/TAG, \
                         separated by spaces (the tag follows the last `/`)",
                        k + 1
                    ),
                ));
            }
        }
        out.pairs.push((tokens.join(" "), tags.join(" ")));
        out.lines.push(n);
    }
    Ok(out)
}

/// Reads a file of `LABEL text` (or `LABEL<TAB>text`) lines, one example per line.
pub fn read_labelled(path: impl AsRef<Path>) -> Result<LabelledFile> {
    let (mut out, lines) = labelled_file(read_text_file(path)?);
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        let line = strip_bom(i, line);
        if line.trim().is_empty() {
            out.pairs.push((String::new(), String::new()));
            out.lines.push(n);
            continue;
        }
        if line.starts_with(char::is_whitespace) {
            return Err(bad(
                &out.path,
                n,
                "the line starts with whitespace, so its label is empty; fix: start every line \
                 with its label, then a space or tab and the text"
                    .to_owned(),
            ));
        }
        let (label, text) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if text.trim().is_empty() {
            return Err(bad(
                &out.path,
                n,
                format!(
                    "the label `{label}` has no text after it; fix: write LABEL TEXT (the label, \
                     then a space or tab and the text)"
                ),
            ));
        }
        out.pairs.push((text.to_owned(), label.to_owned()));
        out.lines.push(n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conllu(text: &str, column: TagColumn) -> Result<LabelledFile> {
        let mut out = LabelledFile {
            path: PathBuf::from("t.conllu"),
            sha256: String::new(),
            file_lines: 0,
            pairs: Vec::new(),
            lines: Vec::new(),
            forms_with_spaces: 0,
        };
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        parse_conllu(&lines, column, &mut out)?;
        Ok(out)
    }

    fn word(id: &str, form: &str, upos: &str, xpos: &str) -> String {
        format!("{id}\t{form}\t{form}\t{upos}\t{xpos}\t_\t0\troot\t_\t_\n")
    }

    #[test]
    fn conllu_skips_comments_ranges_and_empty_nodes() {
        let text = format!(
            "\u{FEFF}# sent_id = 1\n# text = I don't\n{}{}{}{}{}\n\n\n# sent_id = 2\n{}{}",
            word("1", "I", "PRON", "PRP"),
            word("2-3", "don't", "_", "_"),
            word("2", "do", "AUX", "VBP"),
            word("3", "n't", "PART", "RB"),
            word("3.1", "x", "VERB", "VB"),
            word("1", "1 000", "NUM", "CD"),
            word("2", "dogs", "NOUN", "NNS"),
        );
        let f = conllu(&text, TagColumn::Upos).unwrap();
        assert_eq!(
            f.pairs,
            vec![
                ("I do n't".to_owned(), "PRON AUX PART".to_owned()),
                ("1_000 dogs".to_owned(), "NUM NOUN".to_owned()),
            ]
        );
        assert_eq!(f.lines, vec![3, 12]);
        assert_eq!(f.forms_with_spaces, 1);
        let x = conllu(&text, TagColumn::Xpos).unwrap();
        assert_eq!(x.pairs[0].1, "PRP VBP RB");
    }

    #[test]
    fn conllu_errors_name_the_line_and_the_fix() {
        let two = format!("{}{}", word("1", "a", "X", "X"), word("2", "b", "X", "X"));
        let cases = [
            (format!("{}\n1\ta b\n", two), 4, "2 tab-separated column(s)"),
            (word("2", "a", "X", "X"), 1, "first word must be 1"),
            (
                format!("{}{}", two, word("4", "c", "X", "X")),
                3,
                "it follows word 2",
            ),
            (word("1", "", "X", "X"), 1, "FORM (column 2) is empty"),
            (word("1", "a", "", "X"), 1, "UPOS (column 4) is empty"),
            (word("1", "a", "_", "X"), 1, "not annotated"),
            (word("1", "a", "N N", "X"), 1, "holds whitespace"),
            (word("x", "a", "X", "X"), 1, "word ID `x`"),
        ];
        for (text, line, what) in cases {
            let err = conllu(&text, TagColumn::Upos).unwrap_err();
            let msg = err.to_string();
            assert!(
                msg.starts_with(&format!("t.conllu:{line}: ")),
                "{msg} (for {text:?})"
            );
            assert!(msg.contains(what) && msg.contains("fix:"), "{msg}");
        }
        let none = conllu("# only a comment\n\n", TagColumn::Upos).unwrap_err();
        assert!(none.to_string().contains("no sentence"), "{none}");
    }
}
