//! ROUGE-N, ROUGE-L and ROUGE-Lsum as Google's `rouge-score` (PyPI, 0.1.2) computes them: its
//! tokenizer (lowercase, runs of ASCII letters and digits, NLTK's Porter stemmer on words of more
//! than three letters when asked), its n-gram and LCS counts, and with several references the
//! scores of the reference with the highest F-measure, type by type (`score_multi`). Corpus
//! scores are the means of the segments' precision, recall and F-measure, on a 0-100 scale:
//! `rouge-score`'s `BootstrapAggregator` reports a resampled estimate of the same means.

use std::collections::HashMap;
use std::fmt;

use crate::porter;
use crate::pystr::{py_lower, py_strip};

/// One ROUGE variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RougeType {
    /// ROUGE-N: overlap of n-grams (`rouge1`, `rouge2`, ...).
    N(usize),
    /// ROUGE-L: the longest common subsequence of the two token sequences.
    L,
    /// ROUGE-Lsum: the summary-level LCS over sentences (the union LCS of each reference
    /// sentence with all hypothesis sentences).
    Lsum,
}

impl RougeType {
    /// `rouge-score`'s name: `rouge1`, `rougeL`, `rougeLsum`.
    pub fn key(self) -> String {
        match self {
            RougeType::N(n) => format!("rouge{n}"),
            RougeType::L => "rougeL".into(),
            RougeType::Lsum => "rougeLsum".into(),
        }
    }
}

impl fmt::Display for RougeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RougeType::N(n) => write!(f, "ROUGE-{n}"),
            RougeType::L => f.write_str("ROUGE-L"),
            RougeType::Lsum => f.write_str("ROUGE-Lsum"),
        }
    }
}

/// What to compute and how to tokenize.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RougeConfig {
    pub types: Vec<RougeType>,
    /// Porter-stem words of more than three letters (`use_stemmer=True`).
    pub stem: bool,
    /// Where ROUGE-Lsum splits a summary into sentences. `rouge-score` splits at newlines, which
    /// a one-summary-per-line file cannot hold, so a file marks them with this string instead
    /// (e.g. `<n>`). `None`: each line is one sentence (ROUGE-Lsum then equals ROUGE-L).
    pub sentence_sep: Option<String>,
}

impl Default for RougeConfig {
    /// ROUGE-1, -2, -L and -Lsum with the stemmer (`ROUGE-1.5.5.pl -m`, as summarisation papers
    /// report them), one sentence per line.
    fn default() -> Self {
        RougeConfig {
            types: vec![
                RougeType::N(1),
                RougeType::N(2),
                RougeType::L,
                RougeType::Lsum,
            ],
            stem: true,
            sentence_sep: None,
        }
    }
}

/// Precision, recall and F-measure, each in 0..=1 for a segment and 0..=100 for a corpus.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RougeScore {
    pub precision: f64,
    pub recall: f64,
    pub fmeasure: f64,
}

impl RougeScore {
    fn new(precision: f64, recall: f64) -> Self {
        // `rouge-score`'s `fmeasure`, in its order of operations.
        let fmeasure = if precision + recall > 0.0 {
            2.0 * precision * recall / (precision + recall)
        } else {
            0.0
        };
        RougeScore {
            precision,
            recall,
            fmeasure,
        }
    }
}

/// Corpus-level ROUGE: per type, the mean of the segments' scores (0-100).
#[derive(Debug, Clone, PartialEq)]
pub struct CorpusRouge {
    pub scores: Vec<(RougeType, RougeScore)>,
    pub segments: usize,
    pub stem: bool,
}

impl CorpusRouge {
    /// The mean of the types' F-measures (0-100; 0 for no types).
    pub fn mean_fmeasure(&self) -> f64 {
        if self.scores.is_empty() {
            return 0.0;
        }
        self.scores.iter().map(|(_, s)| s.fmeasure).sum::<f64>() / self.scores.len() as f64
    }
}

/// `rouge-score`'s `tokenize`: lowercase (Python's `str.lower`), every run of characters other
/// than `a-z0-9` a separator, and (with `stem`) words of more than three letters stemmed.
pub fn rouge_tokenize(text: &str, stem: bool) -> Vec<String> {
    py_lower(text)
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|t| !t.is_empty())
        .map(|t| {
            if stem && t.len() > 3 {
                porter::stem(t)
            } else {
                t.to_owned()
            }
        })
        .collect()
}

/// The scores of one hypothesis against its references (at least one), one per type of `cfg`:
/// for each type, those of the reference with the highest F-measure (the first of equals).
pub fn sentence_rouge(hyp: &str, refs: &[&str], cfg: &RougeConfig) -> Vec<RougeScore> {
    assert!(!refs.is_empty(), "sentence_rouge needs a reference");
    let hyp = Segment::new(hyp, cfg);
    let per_ref: Vec<Vec<RougeScore>> = refs
        .iter()
        .map(|r| {
            let r = Segment::new(r, cfg);
            cfg.types.iter().map(|&t| score(&r, &hyp, t)).collect()
        })
        .collect();
    (0..cfg.types.len())
        .map(|k| {
            // numpy's argmax: the first maximum.
            let mut best = per_ref[0][k];
            for scores in &per_ref[1..] {
                if scores[k].fmeasure > best.fmeasure {
                    best = scores[k];
                }
            }
            best
        })
        .collect()
}

/// Corpus ROUGE of `hyps` against reference streams (one segment per hypothesis in each). In the
/// second and later streams an empty segment means "no further reference", as for the error
/// rates.
pub fn corpus_rouge<H: AsRef<str>, R: AsRef<str>, S: AsRef<[R]>>(
    hyps: &[H],
    refs: &[S],
    cfg: &RougeConfig,
) -> Result<CorpusRouge, crate::EvalError> {
    crate::check_streams(hyps.len(), refs)?;
    let mut sums = vec![RougeScore::default(); cfg.types.len()];
    for (i, hyp) in hyps.iter().enumerate() {
        let segment_refs: Vec<&str> = refs
            .iter()
            .enumerate()
            .map(|(k, stream)| (k, stream.as_ref()[i].as_ref()))
            .filter(|&(k, r)| k == 0 || !py_strip(r).is_empty())
            .map(|(_, r)| r)
            .collect();
        for (sum, s) in sums
            .iter_mut()
            .zip(sentence_rouge(hyp.as_ref(), &segment_refs, cfg))
        {
            sum.precision += s.precision;
            sum.recall += s.recall;
            sum.fmeasure += s.fmeasure;
        }
    }
    let n = hyps.len();
    let mean = |sum: f64| {
        if n == 0 {
            0.0
        } else {
            100.0 * (sum / n as f64)
        }
    };
    Ok(CorpusRouge {
        scores: cfg
            .types
            .iter()
            .zip(sums)
            .map(|(&t, s)| {
                (
                    t,
                    RougeScore {
                        precision: mean(s.precision),
                        recall: mean(s.recall),
                        fmeasure: mean(s.fmeasure),
                    },
                )
            })
            .collect(),
        segments: n,
        stem: cfg.stem,
    })
}

/// A text's tokens, whole and (for ROUGE-Lsum) sentence by sentence.
struct Segment {
    tokens: Vec<String>,
    sentences: Vec<Vec<String>>,
}

impl Segment {
    fn new(text: &str, cfg: &RougeConfig) -> Self {
        let sep = cfg.sentence_sep.as_deref().filter(|s| !s.is_empty());
        let sentences = if cfg.types.contains(&RougeType::Lsum) {
            let parts: Vec<&str> = match sep {
                Some(sep) => text.split(sep).collect(),
                None => vec![text],
            };
            parts
                .into_iter()
                .filter(|s| !s.is_empty())
                .map(|s| rouge_tokenize(s, cfg.stem))
                .collect()
        } else {
            Vec::new()
        };
        // The separator stands for rouge-score's newline, which also separates words.
        let tokens = match sep {
            Some(sep) => rouge_tokenize(&text.replace(sep, " "), cfg.stem),
            None => rouge_tokenize(text, cfg.stem),
        };
        Segment { tokens, sentences }
    }
}

fn score(reference: &Segment, hyp: &Segment, t: RougeType) -> RougeScore {
    match t {
        RougeType::N(n) => ngram_score(&reference.tokens, &hyp.tokens, n),
        RougeType::L => lcs_score(&reference.tokens, &hyp.tokens),
        RougeType::Lsum => summary_lcs_score(&reference.sentences, &hyp.sentences),
    }
}

fn ngram_counts(tokens: &[String], n: usize) -> HashMap<&[String], usize> {
    let mut counts = HashMap::new();
    if n > 0 && tokens.len() >= n {
        for gram in tokens.windows(n) {
            *counts.entry(gram).or_insert(0) += 1;
        }
    }
    counts
}

fn ngram_score(reference: &[String], hyp: &[String], n: usize) -> RougeScore {
    let (r, h) = (ngram_counts(reference, n), ngram_counts(hyp, n));
    let overlap: usize = r
        .iter()
        .map(|(gram, &c)| c.min(h.get(gram).copied().unwrap_or(0)))
        .sum();
    let total = |c: &HashMap<&[String], usize>| c.values().sum::<usize>().max(1) as f64;
    RougeScore::new(overlap as f64 / total(&h), overlap as f64 / total(&r))
}

/// The LCS length table, `(reference.len() + 1) x (hyp.len() + 1)`.
fn lcs_table(reference: &[String], hyp: &[String]) -> Vec<Vec<usize>> {
    let mut t = vec![vec![0usize; hyp.len() + 1]; reference.len() + 1];
    for i in 1..=reference.len() {
        for j in 1..=hyp.len() {
            t[i][j] = if reference[i - 1] == hyp[j - 1] {
                t[i - 1][j - 1] + 1
            } else {
                t[i - 1][j].max(t[i][j - 1])
            };
        }
    }
    t
}

fn lcs_score(reference: &[String], hyp: &[String]) -> RougeScore {
    if reference.is_empty() || hyp.is_empty() {
        return RougeScore::default();
    }
    let lcs = lcs_table(reference, hyp)[reference.len()][hyp.len()] as f64;
    RougeScore::new(lcs / hyp.len() as f64, lcs / reference.len() as f64)
}

/// The reference positions of one LCS, read back from the table the way `rouge-score`'s
/// `_backtrack_norec` does (which LCS it finds decides the union below).
fn lcs_positions(reference: &[String], hyp: &[String]) -> Vec<usize> {
    let t = lcs_table(reference, hyp);
    let (mut i, mut j) = (reference.len(), hyp.len());
    let mut positions = Vec::new();
    while i > 0 && j > 0 {
        if reference[i - 1] == hyp[j - 1] {
            positions.push(i - 1);
            i -= 1;
            j -= 1;
        } else if t[i][j - 1] > t[i - 1][j] {
            j -= 1;
        } else {
            i -= 1;
        }
    }
    positions.reverse();
    positions
}

/// Summary-level LCS (Lin 2004, section 3.2): each reference sentence's union LCS with all
/// hypothesis sentences, each token counted at most as often as it occurs on both sides.
fn summary_lcs_score(reference: &[Vec<String>], hyp: &[Vec<String>]) -> RougeScore {
    let m: usize = reference.iter().map(Vec::len).sum();
    let n: usize = hyp.iter().map(Vec::len).sum();
    if reference.is_empty() || hyp.is_empty() || m == 0 || n == 0 {
        return RougeScore::default();
    }
    let mut left_r: HashMap<&str, usize> = HashMap::new();
    let mut left_h: HashMap<&str, usize> = HashMap::new();
    for t in reference.iter().flatten() {
        *left_r.entry(t).or_insert(0) += 1;
    }
    for t in hyp.iter().flatten() {
        *left_h.entry(t).or_insert(0) += 1;
    }
    let mut hits = 0usize;
    for r in reference {
        let mut union: Vec<usize> = hyp.iter().flat_map(|h| lcs_positions(r, h)).collect();
        union.sort_unstable();
        union.dedup();
        for &i in &union {
            let t = r[i].as_str();
            let (cr, ch) = (left_r.get_mut(t), left_h.get_mut(t));
            if let (Some(cr), Some(ch)) = (cr, ch)
                && *cr > 0
                && *ch > 0
            {
                *cr -= 1;
                *ch -= 1;
                hits += 1;
            }
        }
    }
    RougeScore::new(hits as f64 / n as f64, hits as f64 / m as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(stem: bool) -> RougeConfig {
        RougeConfig {
            stem,
            ..RougeConfig::default()
        }
    }

    #[test]
    fn tokenizer_as_rouge_score() {
        assert_eq!(
            rouge_tokenize("The QUICK-brown fox's 2 jumps!", false),
            ["the", "quick", "brown", "fox", "s", "2", "jumps"]
        );
        assert_eq!(
            rouge_tokenize("Running dogs ran", true),
            ["run", "dog", "ran"]
        );
        // Non-ASCII letters separate words; Python's lowercasing can yield ASCII (Kelvin sign).
        assert_eq!(
            rouge_tokenize("café \u{212A}elvin", false),
            ["caf", "kelvin"]
        );
    }

    #[test]
    fn identical_and_disjoint() {
        let s = sentence_rouge("a cat sat here", &["a cat sat here"], &cfg(false));
        assert!(s.iter().all(|s| s.fmeasure == 1.0), "{s:?}");
        let s = sentence_rouge("a b", &["c d"], &cfg(false));
        assert!(s.iter().all(|s| s.fmeasure == 0.0), "{s:?}");
        let s = sentence_rouge("", &["c d"], &cfg(false));
        assert!(s.iter().all(|s| *s == RougeScore::default()), "{s:?}");
    }

    #[test]
    fn hand_counted() {
        // Reference "the cat sat on the mat" (6), hypothesis "the cat on the mat sat" (6):
        // unigrams all match; bigrams the-cat, on-the, the-mat match (3 of 5); LCS 5.
        let s = sentence_rouge(
            "the cat on the mat sat",
            &["the cat sat on the mat"],
            &cfg(false),
        );
        assert_eq!(s[0].fmeasure, 1.0);
        assert_eq!((s[1].precision, s[1].recall), (3.0 / 5.0, 3.0 / 5.0));
        assert_eq!((s[2].precision, s[2].recall), (5.0 / 6.0, 5.0 / 6.0));
        // One sentence per line: Lsum is L.
        assert_eq!(s[3], s[2]);
    }

    #[test]
    fn best_reference_per_type() {
        let c = cfg(false);
        let alone = sentence_rouge("a b c d", &["a b x y"], &c);
        let both = sentence_rouge("a b c d", &["d c b a", "a b x y"], &c);
        // ROUGE-1 prefers the first (all unigrams), ROUGE-2 the second (a-b).
        assert_eq!(both[0].fmeasure, 1.0);
        assert_eq!(both[1], alone[1]);
    }

    #[test]
    fn summary_level_lcs_unites_sentences() {
        let c = RougeConfig {
            sentence_sep: Some("<n>".into()),
            ..cfg(false)
        };
        // Lin (2004)'s example: r = w1 w2 w3 w4 w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5;
        // the union LCS is w1 w2 w3 w5, so recall 4/5 and precision 4/10.
        let s = sentence_rouge("w1 w2 w6 w7 w8<n>w1 w3 w8 w9 w5", &["w1 w2 w3 w4 w5"], &c);
        assert_eq!((s[3].precision, s[3].recall), (0.4, 0.8));
    }

    #[test]
    fn corpus_is_the_mean_and_skips_empty_extra_references() {
        let c = cfg(false);
        let hyps = ["a b", "c d"];
        let one = corpus_rouge(&hyps, &[&["a b", "x y"]], &c).unwrap();
        assert_eq!(one.scores[0].1.fmeasure, 50.0);
        let two = corpus_rouge(&hyps, &[&["a b", "x y"][..], &["", "c d"][..]], &c).unwrap();
        assert_eq!(two.scores[0].1.fmeasure, 100.0);
        assert!(corpus_rouge(&hyps, &[&["a b"]], &c).is_err());
    }
}
