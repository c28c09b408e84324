//! Grapheme-to-phoneme data: a pronouncing dictionary in CMUdict's format, split by word lists
//! into the plain text files that [`crate::prepare`] and `s2s eval` read.
//!
//! A dictionary line is `word phone phone ...`; a second pronunciation of a word is written
//! `word(2) ...`, and `#` starts a comment. Training pairs are every pronunciation of every
//! training word; validation and test have one line per word, its first pronunciation in
//! `*.tgt` and the others in `test.tgt.2`, `test.tgt.3`, ... (an empty line where a word has no
//! such alternative: `s2s eval` reads it as "no further reference").

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use crate::error::{DataError, Result};
use crate::io::read_text_file;
use crate::pairs::{SplitText, write_splits};

/// A pronouncing dictionary: each word's pronunciations (space-separated phones), in the order of
/// their variant numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dictionary {
    pub words: BTreeMap<String, Vec<String>>,
}

fn bad_line(path: &Path, line: usize, message: impl std::fmt::Display) -> DataError {
    DataError::Config(format!("{}:{line}: {message}", path.display()))
}

/// Reads a CMUdict-format dictionary. A line without phones, a malformed variant number or a
/// variant that repeats an earlier one is an error naming the file and line.
pub fn read_dictionary(path: impl AsRef<Path>) -> Result<Dictionary> {
    let path = path.as_ref();
    let file = read_text_file(path)?;
    let mut variants: BTreeMap<String, Vec<(u32, String)>> = BTreeMap::new();
    for (i, line) in file.lines.iter().enumerate() {
        let line_no = i + 1;
        let text = line.split_once('#').map_or(line.as_str(), |(t, _)| t);
        let mut fields = text.split_whitespace();
        let Some(head) = fields.next() else { continue };
        let phones: Vec<&str> = fields.collect();
        if phones.is_empty() {
            return Err(bad_line(
                path,
                line_no,
                format_args!(
                    "{head:?} has no phones; fix: write `word PH1 PH2 ...` or remove the line"
                ),
            ));
        }
        let (word, variant) = match head.strip_suffix(')').and_then(|h| h.rsplit_once('(')) {
            Some((word, n)) => match n.parse::<u32>() {
                Ok(n) if n >= 2 && !word.is_empty() => (word, n),
                _ => {
                    return Err(bad_line(
                        path,
                        line_no,
                        format_args!("{head:?}: a variant is written `word(N)` with N >= 2"),
                    ));
                }
            },
            None => (head, 1),
        };
        let list = variants.entry(word.to_owned()).or_default();
        if list.iter().any(|(n, _)| *n == variant) {
            return Err(bad_line(
                path,
                line_no,
                format_args!(
                    "{head:?} is listed twice; fix: number the variants word(2), word(3), ..."
                ),
            ));
        }
        list.push((variant, phones.join(" ")));
    }
    let words = variants
        .into_iter()
        .map(|(word, mut list)| {
            list.sort_by_key(|(n, _)| *n);
            (word, list.into_iter().map(|(_, p)| p).collect())
        })
        .collect();
    Ok(Dictionary { words })
}

/// Reads a word list: one word per line, blank lines ignored. A line with two words, or a word
/// listed twice, is an error naming the file and line.
pub fn read_word_list(path: impl AsRef<Path>) -> Result<Vec<String>> {
    let path = path.as_ref();
    let file = read_text_file(path)?;
    let mut seen = HashSet::new();
    let mut words = Vec::new();
    for (i, line) in file.lines.iter().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(word) = fields.next() else { continue };
        if fields.next().is_some() {
            return Err(bad_line(
                path,
                i + 1,
                "more than one word; fix: one word per line",
            ));
        }
        if !seen.insert(word.to_owned()) {
            return Err(bad_line(
                path,
                i + 1,
                format_args!("{word:?} is listed twice; fix: remove the repeat"),
            ));
        }
        words.push(word.to_owned());
    }
    Ok(words)
}

/// What [`write_split_files`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct G2pSummary {
    /// Paths written, in order.
    pub files: Vec<PathBuf>,
    /// Training words, and their pronunciations (the training pairs).
    pub train_words: usize,
    pub train_pairs: usize,
    pub valid_words: usize,
    pub test_words: usize,
    /// The number of reference files of the test split (the most pronunciations of a test word).
    pub test_refs: usize,
}

/// `count` words spread evenly over `words` (which keeps the rest), for a validation split that
/// samples the whole alphabet of a sorted list, the same every time.
fn take_spread(words: &mut Vec<String>, count: usize) -> Vec<String> {
    let n = words.len();
    let picked: HashSet<usize> = (0..count).map(|i| i * n / count.max(1)).collect();
    let mut taken = Vec::with_capacity(count);
    let mut kept = Vec::with_capacity(n - picked.len());
    for (i, w) in words.drain(..).enumerate() {
        if picked.contains(&i) {
            taken.push(w);
        } else {
            kept.push(w);
        }
    }
    *words = kept;
    taken
}

/// Writes `train.src`/`train.tgt` (every pronunciation of every training word),
/// `valid.src`/`valid.tgt` (`valid_words` words taken evenly from the training list, first
/// pronunciations) and `test.src`, `test.tgt`, `test.tgt.2`, ... into `out`. A listed word that
/// the dictionary lacks, a word in both lists, or more validation words than training words is an
/// error, and then nothing is written.
pub fn write_split_files(
    dict: &Dictionary,
    train_list: (&Path, Vec<String>),
    test_list: (&Path, Vec<String>),
    valid_words: usize,
    out: &Path,
) -> Result<G2pSummary> {
    let (train_path, mut train) = train_list;
    let (test_path, test) = test_list;
    for (path, list) in [(train_path, &train), (test_path, &test)] {
        let missing: Vec<&String> = list
            .iter()
            .filter(|w| !dict.words.contains_key(*w))
            .collect();
        if let Some(first) = missing.first() {
            return Err(DataError::Config(format!(
                "{}: {} word(s) are not in the dictionary, the first {first:?}; fix: remove them from the list",
                path.display(),
                missing.len()
            )));
        }
    }
    let test_set: HashSet<&String> = test.iter().collect();
    if let Some(both) = train.iter().find(|w| test_set.contains(w)) {
        return Err(DataError::Config(format!(
            "{both:?} is in both {} and {}; fix: a word belongs to one split",
            train_path.display(),
            test_path.display()
        )));
    }
    if valid_words >= train.len() {
        return Err(DataError::Config(format!(
            "{} validation words asked of {} training words; fix: ask for fewer (--valid-words)",
            valid_words,
            train.len()
        )));
    }
    let valid = take_spread(&mut train, valid_words);
    let prons = |w: &String| &dict.words[w];
    let split = |name: &str, examples: Vec<(String, Vec<String>)>| SplitText {
        name: name.into(),
        examples,
    };
    let train_pairs: Vec<(String, Vec<String>)> = train
        .iter()
        .flat_map(|w| prons(w).iter().map(|p| (w.clone(), vec![p.clone()])))
        .collect();
    let train_pair_count = train_pairs.len();
    let splits = [
        split("train", train_pairs),
        split(
            "valid",
            valid
                .iter()
                .map(|w| (w.clone(), vec![prons(w)[0].clone()]))
                .collect(),
        ),
        split(
            "test",
            test.iter().map(|w| (w.clone(), prons(w).clone())).collect(),
        ),
    ];
    let test_refs = splits[2].references();
    let written = write_splits(&splits, out)?;
    Ok(G2pSummary {
        test_refs,
        files: written,
        train_words: train.len(),
        train_pairs: train_pair_count,
        valid_words: valid.len(),
        test_words: test.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn variants_comments_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "d.dict",
            "tomato(2) T AH0 M AA1 T OW2\ntomato T AH0 M EY1 T OW2 # usual\n\n# note\nhello HH AH0 L OW1\n",
        );
        let d = read_dictionary(&p).unwrap();
        assert_eq!(
            d.words["tomato"],
            ["T AH0 M EY1 T OW2", "T AH0 M AA1 T OW2"]
        );
        assert_eq!(d.words["hello"], ["HH AH0 L OW1"]);
        for (text, line, needle) in [
            ("a AH0\nb\n", 2, "no phones"),
            ("a AH0\na(1) AH1\n", 2, "word(N)"),
            ("a AH0\na(x) AH1\n", 2, "word(N)"),
            ("a AH0\na(2) AH1\na(2) AH2\n", 3, "twice"),
        ] {
            let p = write(dir.path(), "bad.dict", text);
            let err = read_dictionary(&p).unwrap_err().to_string();
            assert!(err.contains(&format!("bad.dict:{line}:")), "{err}");
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn spread_is_even_and_complete() {
        let mut words: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let taken = take_spread(&mut words, 3);
        assert_eq!(taken, ["0", "3", "6"]);
        assert_eq!(words.len(), 7);
    }
}
