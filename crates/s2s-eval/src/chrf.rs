//! chrF (Popović 2015) and chrF++ (Popović 2017), computed exactly as sacreBLEU 2.x
//! (`sacrebleu/metrics/chrf.py`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use crate::pystr::{py_lower, py_split};
use crate::{EvalError, check_streams, signature_version};

/// How to compute chrF. `ChrfConfig::default()` is sacreBLEU's chrF2 (character order 6,
/// no word n-grams, beta 2, whitespace removed, effective-order averaging);
/// [`ChrfConfig::chrf_plus_plus`] is chrF++ (word order 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChrfConfig {
    /// Maximum character n-gram order (6).
    pub char_order: usize,
    /// Maximum word n-gram order: 0 for chrF, 2 for chrF++.
    pub word_order: usize,
    /// Recall is `beta` times as important as precision (2).
    pub beta: u32,
    pub lowercase: bool,
    /// Keep whitespace inside character n-grams (sacreBLEU's `whitespace`, off by default).
    pub whitespace: bool,
    /// chrF++.py/NLTK/Moses-style epsilon smoothing instead of sacreBLEU's default
    /// effective-order averaging.
    pub eps_smoothing: bool,
}

impl Default for ChrfConfig {
    fn default() -> Self {
        ChrfConfig {
            char_order: 6,
            word_order: 0,
            beta: 2,
            lowercase: false,
            whitespace: false,
            eps_smoothing: false,
        }
    }
}

impl ChrfConfig {
    /// chrF++: chrF2 plus word uni- and bigrams.
    pub fn chrf_plus_plus() -> Self {
        ChrfConfig {
            word_order: 2,
            ..Self::default()
        }
    }

    /// The metric's name: `chrF2`, `chrF2++`, ...
    pub fn name(&self) -> String {
        format!("chrF{}{}", self.beta, "+".repeat(self.word_order))
    }

    /// The sacreBLEU signature for `nrefs` references, e.g.
    /// `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:s2s-0.1.0`.
    pub fn signature(&self, nrefs: usize) -> String {
        format!(
            "nrefs:{nrefs}|case:{}|eff:{}|nc:{}|nw:{}|space:{}|version:{}",
            if self.lowercase { "lc" } else { "mixed" },
            if self.eps_smoothing { "no" } else { "yes" },
            self.char_order,
            self.word_order,
            if self.whitespace { "yes" } else { "no" },
            signature_version(),
        )
    }

    fn order(&self) -> usize {
        self.char_order + self.word_order
    }

    fn validate(&self) -> Result<(), EvalError> {
        if self.order() == 0 {
            return Err(EvalError::InvalidConfig(
                "chrF needs char_order + word_order >= 1".into(),
            ));
        }
        Ok(())
    }

    fn preprocess(&self, segment: &str) -> String {
        if self.lowercase {
            py_lower(segment)
        } else {
            segment.to_owned()
        }
    }

    /// sacreBLEU's `CHRF._compute_f_score` on flattened `[hyp, ref, match]` triples.
    pub fn f_score(&self, stats: &[u64]) -> f64 {
        let eps = 1e-16;
        let factor = f64::from(self.beta * self.beta);
        let mut score = 0.0;
        let mut effective_order = 0u32;
        let (mut avg_prec, mut avg_rec) = (0.0, 0.0);
        let order = self.order();
        for i in 0..order {
            let (n_hyp, n_ref, n_match) = (stats[3 * i], stats[3 * i + 1], stats[3 * i + 2]);
            let prec = if n_hyp > 0 {
                n_match as f64 / n_hyp as f64
            } else {
                eps
            };
            let rec = if n_ref > 0 {
                n_match as f64 / n_ref as f64
            } else {
                eps
            };
            let denom = factor * prec + rec;
            score += if denom > 0.0 {
                (1.0 + factor) * prec * rec / denom
            } else {
                eps
            };
            if n_hyp > 0 && n_ref > 0 {
                avg_prec += prec;
                avg_rec += rec;
                effective_order += 1;
            }
        }
        if self.eps_smoothing {
            return 100.0 * score / order as f64;
        }
        if effective_order == 0 {
            avg_prec = 0.0;
            avg_rec = 0.0;
        } else {
            avg_prec /= f64::from(effective_order);
            avg_rec /= f64::from(effective_order);
        }
        if avg_prec + avg_rec != 0.0 {
            let mut score = (1.0 + factor) * avg_prec * avg_rec;
            score /= factor * avg_prec + avg_rec;
            100.0 * score
        } else {
            0.0
        }
    }
}

/// A chrF score (0-100).
#[derive(Debug, Clone, PartialEq)]
pub struct ChrfScore {
    pub score: f64,
    /// `chrF2`, `chrF2++`, ...
    pub name: String,
    pub char_order: usize,
    pub word_order: usize,
    pub beta: u32,
    /// Corpus statistics: `[hyp, ref, match]` n-gram counts per order, character orders first.
    pub stats: Vec<u64>,
    pub signature: String,
}

impl ChrfScore {
    /// sacreBLEU's score line, e.g. `chrF2 = 59.73`, with `width` decimals.
    pub fn format(&self, width: usize) -> String {
        format!("{} = {:.width$}", self.name, self.score)
    }
}

impl fmt::Display for ChrfScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(2))
    }
}

/// ASCII punctuation (Python's `string.punctuation`), chrF++'s word-level punctuation set.
fn is_punct(c: char) -> bool {
    c.is_ascii_punctuation()
}

/// sacreBLEU's `CHRF._remove_punctuation`: splits one leading or trailing ASCII punctuation
/// character off each word (only one, and the trailing one takes precedence).
fn remove_punctuation(sent: &str) -> Vec<&str> {
    let mut tokenized = Vec::new();
    for w in py_split(sent) {
        let mut chars = w.chars();
        let first = chars.next().expect("split yields non-empty words");
        let Some(last) = chars.next_back() else {
            tokenized.push(w);
            continue;
        };
        if is_punct(last) {
            let cut = w.len() - last.len_utf8();
            tokenized.extend([&w[..cut], &w[cut..]]);
        } else if is_punct(first) {
            let cut = first.len_utf8();
            tokenized.extend([&w[..cut], &w[cut..]]);
        } else {
            tokenized.push(w);
        }
    }
    tokenized
}

/// One n-gram counter; keys borrow from the segment where possible.
type Counter<'a> = HashMap<Cow<'a, str>, u64>;

/// The text character n-grams are taken from: without whitespace unless `whitespace`
/// (sacreBLEU: `''.join(line.split())`).
fn char_source(segment: &str, whitespace: bool) -> Cow<'_, str> {
    if whitespace {
        Cow::Borrowed(segment)
    } else {
        Cow::Owned(py_split(segment).collect())
    }
}

/// All n-gram counters of one preprocessed segment: character orders 1..=char_order over
/// `chars` (see [`char_source`]), then word orders 1..=word_order over `segment` (words joined
/// with single spaces as keys, like sacreBLEU's `extract_word_ngrams`).
fn segment_ngrams<'a>(chars: &'a str, segment: &'a str, cfg: &ChrfConfig) -> Vec<Counter<'a>> {
    let bounds: Vec<usize> = chars
        .char_indices()
        .map(|(i, _)| i)
        .chain([chars.len()])
        .collect();
    let len = bounds.len() - 1;
    let mut counters = Vec::with_capacity(cfg.order());
    for n in 1..=cfg.char_order {
        let mut counter = Counter::new();
        for i in 0..(len + 1).saturating_sub(n) {
            *counter
                .entry(Cow::Borrowed(&chars[bounds[i]..bounds[i + n]]))
                .or_insert(0) += 1;
        }
        counters.push(counter);
    }
    if cfg.word_order > 0 {
        let words = remove_punctuation(segment);
        for n in 1..=cfg.word_order {
            let mut counter = Counter::new();
            if words.len() >= n {
                for ngram in words.windows(n) {
                    let key = if n == 1 {
                        Cow::Borrowed(ngram[0])
                    } else {
                        Cow::Owned(ngram.join(" "))
                    };
                    *counter.entry(key).or_insert(0) += 1;
                }
            }
            counters.push(counter);
        }
    }
    counters
}

/// Appends `[hyp_count, ref_count, match_count]` for one order (sacreBLEU's
/// `_get_match_statistics`).
fn match_stats(hyp: &Counter<'_>, reference: &Counter<'_>, out: &mut Vec<u64>) {
    let mut match_count = 0;
    let mut hyp_count = 0;
    for (ngram, &count) in hyp {
        hyp_count += count;
        if let Some(&ref_count) = reference.get(ngram) {
            match_count += count.min(ref_count);
        }
    }
    // Hypothesis n-grams are not counted when the reference has none of this order.
    out.push(if reference.is_empty() { 0 } else { hyp_count });
    out.push(reference.values().sum());
    out.push(match_count);
}

/// Statistics of one raw segment against its raw references (at least one): those of the
/// reference with the best f-score, the first one on ties (sacreBLEU's
/// `_compute_segment_statistics`).
pub fn segment_chrf_stats<R: AsRef<str>>(hyp: &str, refs: &[R], cfg: &ChrfConfig) -> Vec<u64> {
    let hyp = cfg.preprocess(hyp);
    let hyp_chars = char_source(&hyp, cfg.whitespace);
    let hyp_ngrams = segment_ngrams(&hyp_chars, &hyp, cfg);

    let mut best_stats = vec![0; 3 * cfg.order()];
    let mut best_f_score = -1.0;
    let mut stats = Vec::with_capacity(3 * cfg.order());
    for reference in refs {
        let reference = cfg.preprocess(reference.as_ref());
        let ref_chars = char_source(&reference, cfg.whitespace);
        let ref_ngrams = segment_ngrams(&ref_chars, &reference, cfg);
        stats.clear();
        for (h, r) in hyp_ngrams.iter().zip(&ref_ngrams) {
            match_stats(h, r, &mut stats);
        }
        let f_score = cfg.f_score(&stats);
        if f_score > best_f_score {
            best_f_score = f_score;
            best_stats.clone_from(&stats);
        }
    }
    best_stats
}

fn score_from_stats(stats: Vec<u64>, cfg: &ChrfConfig, nrefs: usize) -> ChrfScore {
    ChrfScore {
        score: cfg.f_score(&stats),
        name: cfg.name(),
        char_order: cfg.char_order,
        word_order: cfg.word_order,
        beta: cfg.beta,
        stats,
        signature: cfg.signature(nrefs),
    }
}

/// Corpus chrF/chrF++, as sacreBLEU's `corpus_chrf` / `CHRF(...).corpus_score`: segment
/// statistics are summed over the corpus and the f-score is computed once from the sums.
///
/// `refs` holds one stream per reference (`&[&refs]` for a single reference), each with one
/// segment per hypothesis. An empty corpus scores 0.
pub fn corpus_chrf<H, R, S>(
    hyps: &[H],
    refs: &[S],
    cfg: &ChrfConfig,
) -> Result<ChrfScore, EvalError>
where
    H: AsRef<str>,
    R: AsRef<str>,
    S: AsRef<[R]>,
{
    cfg.validate()?;
    check_streams(hyps.len(), refs)?;
    let mut total = vec![0u64; 3 * cfg.order()];
    let mut seg_refs: Vec<&str> = Vec::with_capacity(refs.len());
    for (i, hyp) in hyps.iter().enumerate() {
        seg_refs.clear();
        seg_refs.extend(refs.iter().map(|stream| stream.as_ref()[i].as_ref()));
        let stats = segment_chrf_stats(hyp.as_ref(), &seg_refs, cfg);
        for (t, s) in total.iter_mut().zip(stats) {
            *t += s;
        }
    }
    Ok(score_from_stats(total, cfg, refs.len()))
}

/// Sentence chrF of one hypothesis against one or more references (sacreBLEU's
/// `sentence_chrf` / `CHRF(...).sentence_score`).
pub fn sentence_chrf<R: AsRef<str>>(
    hyp: &str,
    refs: &[R],
    cfg: &ChrfConfig,
) -> Result<ChrfScore, EvalError> {
    cfg.validate()?;
    if refs.is_empty() {
        return Err(EvalError::NoReferences);
    }
    Ok(score_from_stats(
        segment_chrf_stats(hyp, refs, cfg),
        cfg,
        refs.len(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_splitting() {
        assert_eq!(
            remove_punctuation("(hi) a , b. \"c 'd'"),
            ["(hi", ")", "a", ",", "b", ".", "\"", "c", "'d", "'"]
        );
        assert_eq!(remove_punctuation("é. ¿qué?"), ["é", ".", "¿qué", "?"]);
    }

    #[test]
    fn names_and_signature() {
        assert_eq!(ChrfConfig::default().name(), "chrF2");
        assert_eq!(ChrfConfig::chrf_plus_plus().name(), "chrF2++");
        assert!(
            ChrfConfig::default()
                .signature(1)
                .starts_with("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:s2s-")
        );
    }

    #[test]
    fn char_ngrams_are_unicode_aware() {
        let cfg = ChrfConfig {
            char_order: 2,
            ..ChrfConfig::default()
        };
        let src = char_source("ä b", false);
        let counters = segment_ngrams(&src, "ä b", &cfg);
        assert_eq!(counters[0].len(), 2);
        assert_eq!(counters[1].get("äb"), Some(&1));
    }
}
