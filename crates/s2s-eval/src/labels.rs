//! Label metrics for tagging and classification: accuracy and macro-F1, with each label's
//! precision, recall and F1, as scikit-learn computes them (`accuracy_score`,
//! `f1_score(average="macro")`, `precision_recall_fscore_support` with `zero_division=0`) over
//! the labels of all lines taken together.
//!
//! A line holds one label (classification) or one per token (tagging), separated by
//! whitespace; a hypothesis line must have exactly as many as its reference line.

use std::collections::BTreeMap;

use crate::EvalError;
use crate::pystr::py_split;

/// One label's scores, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelStat {
    pub label: String,
    /// Of the positions given this label, the share the reference labels so (0 when the label
    /// was never given).
    pub precision: f64,
    /// Of the positions the reference labels so, the share given this label (0 when the
    /// reference never has it).
    pub recall: f64,
    /// `2 TP / (2 TP + FP + FN)`: the harmonic mean of the two (0 when both are 0).
    pub f1: f64,
    /// Positions the reference gives this label.
    pub support: usize,
}

/// Accuracy and macro-F1 over the labels of a corpus, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelScores {
    /// Correct labels over all labels (0 when there are none).
    pub accuracy: f64,
    /// The unweighted mean of the F1 of every label that occurs in the references or the
    /// hypotheses (0 when there are none).
    pub macro_f1: f64,
    /// Every such label, sorted by label (by code point, as Python sorts strings).
    pub labels: Vec<LabelStat>,
    /// Labels scored (reference labels; as many as hypothesis labels).
    pub count: usize,
    /// Labels equal to their reference.
    pub correct: usize,
}

#[derive(Default)]
struct Counts {
    tp: usize,
    fp: usize,
    fn_: usize,
}

fn percent(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        100.0 * num as f64 / den as f64
    }
}

/// Scores hypothesis labels against reference labels, line by line. A hypothesis line with
/// another number of labels than its reference is an error naming the (1-based) line.
pub fn label_scores(hyps: &[String], refs: &[String]) -> Result<LabelScores, EvalError> {
    crate::check_streams(hyps.len(), &[refs])?;
    let mut per: BTreeMap<&str, Counts> = BTreeMap::new();
    let (mut count, mut correct) = (0usize, 0usize);
    for (i, (h, r)) in hyps.iter().zip(refs).enumerate() {
        let h: Vec<&str> = py_split(h).collect();
        let r: Vec<&str> = py_split(r).collect();
        if h.len() != r.len() {
            return Err(EvalError::LabelCount {
                line: i + 1,
                hyp: h.len(),
                reference: r.len(),
            });
        }
        for (&h, &r) in h.iter().zip(&r) {
            count += 1;
            if h == r {
                correct += 1;
                per.entry(h).or_default().tp += 1;
            } else {
                per.entry(h).or_default().fp += 1;
                per.entry(r).or_default().fn_ += 1;
            }
        }
    }
    let labels: Vec<LabelStat> = per
        .into_iter()
        .map(|(label, c)| LabelStat {
            label: label.to_owned(),
            precision: percent(c.tp, c.tp + c.fp),
            recall: percent(c.tp, c.tp + c.fn_),
            f1: percent(2 * c.tp, 2 * c.tp + c.fp + c.fn_),
            support: c.tp + c.fn_,
        })
        .collect();
    let macro_f1 = if labels.is_empty() {
        0.0
    } else {
        labels.iter().map(|l| l.f1).sum::<f64>() / labels.len() as f64
    };
    Ok(LabelScores {
        accuracy: percent(correct, count),
        macro_f1,
        labels,
        count,
        correct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn hand_computed_tagging_scores() {
        // Positions (ref -> hyp): N->N, V->N, D->D | N->N, A->V, N->N.
        let s = label_scores(&lines(&["N N D", "N  V N "]), &lines(&["N V D", "N A N"])).unwrap();
        assert_eq!((s.count, s.correct), (6, 4));
        assert!(close(s.accuracy, 400.0 / 6.0));
        let names: Vec<&str> = s.labels.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(names, ["A", "D", "N", "V"]);
        let get = |n: &str| s.labels.iter().find(|l| l.label == n).unwrap();
        // A: TP 0, FP 0, FN 1. D: TP 1. N: TP 3, FP 1 (V->N), FN 0. V: TP 0, FP 1, FN 1.
        let a = get("A");
        assert_eq!((a.precision, a.recall, a.f1, a.support), (0.0, 0.0, 0.0, 1));
        let d = get("D");
        assert_eq!(
            (d.precision, d.recall, d.f1, d.support),
            (100.0, 100.0, 100.0, 1)
        );
        let n = get("N");
        assert!(close(n.precision, 75.0) && close(n.recall, 100.0));
        assert!(close(n.f1, 600.0 / 7.0));
        assert_eq!(n.support, 3);
        let v = get("V");
        assert_eq!((v.precision, v.recall, v.f1, v.support), (0.0, 0.0, 0.0, 1));
        assert!(close(s.macro_f1, (0.0 + 100.0 + 600.0 / 7.0 + 0.0) / 4.0));
    }

    #[test]
    fn a_label_only_predicted_counts_in_the_macro_mean() {
        // Classification: the system says `x`, which no reference has.
        let s = label_scores(&lines(&["a", "x", "b"]), &lines(&["a", "b", "b"])).unwrap();
        assert!(close(s.accuracy, 200.0 / 3.0));
        assert_eq!(s.labels.len(), 3);
        // a: 1.0; b: P 1, R 0.5, F1 2/3; x: 0.
        assert!(close(s.macro_f1, (100.0 + 200.0 / 3.0 + 0.0) / 3.0));
        assert_eq!(s.labels[2].label, "x");
        assert_eq!(s.labels[2].support, 0);
    }

    #[test]
    fn counts_must_match_line_by_line() {
        let err = label_scores(&lines(&["a b", "a"]), &lines(&["a b", "a b"])).unwrap_err();
        assert!(matches!(
            err,
            EvalError::LabelCount {
                line: 2,
                hyp: 1,
                reference: 2
            }
        ));
        let msg = err.to_string();
        assert!(msg.contains("line 2") && msg.contains("fix:"), "{msg}");
        assert!(label_scores(&lines(&["a"]), &lines(&["a", "b"])).is_err());
    }

    #[test]
    fn nothing_to_score_is_zero() {
        let s = label_scores(&lines(&["", " "]), &lines(&["", ""])).unwrap();
        assert_eq!((s.count, s.accuracy, s.macro_f1), (0, 0.0, 0.0));
        assert!(s.labels.is_empty());
    }
}
