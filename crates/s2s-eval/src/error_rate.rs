//! Edit-distance error rates: word and character error rate (WER, CER, as `jiwer` computes them
//! for one reference), phoneme error rate (PER: WER's arithmetic over space-separated phonemes)
//! and sequence error rate (SER: the share of outputs equal to none of their references, what
//! grapheme-to-phoneme papers call word error rate, each sequence being one word).
//!
//! Several references: stream 1 holds every segment's first reference; in the other streams an
//! empty line means "no further reference" (a word with one pronunciation among words with
//! three). A segment's edits are counted against its closest reference (fewest edits; the first
//! stream's on a tie) and its reference length is that reference's.

use crate::EvalError;
use crate::pystr::{py_split, py_strip};

/// Which units an error rate counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// Space-separated tokens (words, or phonemes).
    Tokens,
    /// Characters, spaces included, of the stripped segment.
    Chars,
}

/// Corpus totals of an error rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ErrorCounts {
    /// Segments scored.
    pub segments: usize,
    /// Segments equal (in units) to none of their references.
    pub wrong_segments: usize,
    /// Insertions, deletions and substitutions against each segment's closest reference.
    pub edits: usize,
    /// Units in those closest references.
    pub ref_units: usize,
}

impl ErrorCounts {
    /// Edits per reference unit, in percent (100 x edits when the references are all empty and
    /// the output is not; 0 when both are).
    pub fn rate(&self) -> f64 {
        if self.ref_units == 0 {
            100.0 * self.edits as f64
        } else {
            100.0 * self.edits as f64 / self.ref_units as f64
        }
    }

    /// Wrong segments per segment, in percent (0 for no segments).
    pub fn sequence_rate(&self) -> f64 {
        if self.segments == 0 {
            0.0
        } else {
            100.0 * self.wrong_segments as f64 / self.segments as f64
        }
    }
}

fn units(s: &str, units: Units, lowercase: bool) -> Vec<String> {
    let s = if lowercase {
        crate::pystr::py_lower(s)
    } else {
        s.to_owned()
    };
    match units {
        Units::Tokens => py_split(&s).map(str::to_owned).collect(),
        Units::Chars => py_strip(&s).chars().map(String::from).collect(),
    }
}

/// Counts the edits of `hyps` against `refs` (one stream per reference; see the module docs).
pub fn corpus_error_counts<H: AsRef<str>, R: AsRef<str>, S: AsRef<[R]>>(
    hyps: &[H],
    refs: &[S],
    unit: Units,
    lowercase: bool,
) -> Result<ErrorCounts, EvalError> {
    crate::check_streams(hyps.len(), refs)?;
    let mut counts = ErrorCounts::default();
    for (i, hyp) in hyps.iter().enumerate() {
        let hyp = units(hyp.as_ref(), unit, lowercase);
        let mut best: Option<(usize, usize)> = None;
        for (k, stream) in refs.iter().enumerate() {
            let r = stream.as_ref()[i].as_ref();
            if k > 0 && py_strip(r).is_empty() {
                continue;
            }
            let r = units(r, unit, lowercase);
            let edits = strsim::generic_levenshtein(&hyp, &r);
            if best.is_none_or(|(e, _)| edits < e) {
                best = Some((edits, r.len()));
            }
        }
        let (edits, ref_units) = best.expect("stream 1 always gives a reference");
        counts.segments += 1;
        counts.wrong_segments += usize::from(edits > 0);
        counts.edits += edits;
        counts.ref_units += ref_units;
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(hyps: &[&str], refs: &[&[&str]], unit: Units) -> ErrorCounts {
        corpus_error_counts(hyps, refs, unit, false).unwrap()
    }

    #[test]
    fn hand_computed_word_errors() {
        // "a x c" vs "a b c": 1 substitution; "d e" vs "d": 1 insertion; "" vs "f g": 2 deletions.
        let c = counts(
            &["a x c", "d e", ""],
            &[&["a b c", "d", "f g"]],
            Units::Tokens,
        );
        assert_eq!((c.edits, c.ref_units, c.wrong_segments), (4, 6, 3));
        assert!((c.rate() - 400.0 / 6.0).abs() < 1e-12);
        assert!((c.sequence_rate() - 100.0).abs() < 1e-12);
    }

    #[test]
    fn closest_reference_and_empty_alternatives() {
        // Segment 1 matches its second pronunciation exactly; segment 2 has no alternative
        // (empty line) and is one phoneme off its only reference.
        let c = counts(
            &["T AH0 M EY1 T OW2", "HH AH0 L OW1"],
            &[
                &["T AH0 M AA1 T OW2", "HH AH0 L OW2"],
                &["T AH0 M EY1 T OW2", ""],
            ],
            Units::Tokens,
        );
        assert_eq!(c.segments, 2);
        assert_eq!(c.wrong_segments, 1);
        assert_eq!((c.edits, c.ref_units), (1, 10));
        // On a tie (2 edits each) the first stream's reference, and its length, counts.
        let c = counts(&["a b"], &[&["a c d"], &["x y"]], Units::Tokens);
        assert_eq!((c.edits, c.ref_units), (2, 3));
        let c = counts(&["a b"], &[&["x y"], &["a c d"]], Units::Tokens);
        assert_eq!((c.edits, c.ref_units), (2, 2));
    }

    #[test]
    fn characters_keep_inner_spaces() {
        let c = counts(&[" ab  d "], &[&["ab c"]], Units::Chars);
        assert_eq!((c.edits, c.ref_units), (2, 4));
    }

    #[test]
    fn lowercasing_and_stream_checks() {
        let c = corpus_error_counts(&["A b"], &[&["a B"]], Units::Tokens, true).unwrap();
        assert_eq!(c.edits, 0);
        let short: &[&str] = &[];
        assert!(corpus_error_counts(&["a"], &[short], Units::Tokens, false).is_err());
    }
}
