//! `MODEL_DIR/metrics.jsonl`: one JSON object per validation, written by the trainer and read by
//! `--resume`, `s2s plot` and reports.
//!
//! A value that is not a finite number is written as `null`: the validation loss, perplexity
//! and BLEU of a run without a validation split (which are NaN in a [`MetricsRecord`]), or a
//! loss that overflowed. Every reader takes `null`, or a missing field, as "no value": it reads
//! back as NaN, which the plots leave out. JSON has no NaN or infinity, so this keeps the file
//! readable by any JSON parser (`None` in Python).

use crate::InferError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::Path;

/// One validation. The numbers are NaN where there is no value (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsRecord {
    pub step: usize,
    pub epoch: usize,
    #[serde(default = "absent", with = "finite_or_null")]
    pub train_loss: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_loss: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_ppl: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_bleu: f64,
    /// Percent of validation labels right (tagging, classification).
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_accuracy: f64,
    /// Percent word error rate of greedy validation transcripts (speech).
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_wer: f64,
    /// Mean ROUGE-1, -2 and -L F of greedy validation outputs, measured for `best_by = "rouge"`.
    #[serde(default = "absent", with = "finite_or_null")]
    pub valid_rouge: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub tokens_per_sec: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub elapsed_sec: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub lr: f64,
    #[serde(default = "absent", with = "finite_or_null")]
    pub teacher_forcing: f64,
}

impl MetricsRecord {
    /// The validation in words, as training prints it: `valid loss L, ppl P`, then the task's
    /// score where it has one (`accuracy A%`, `WER W%` or `BLEU B`, with `ROUGE R` where it was
    /// measured; generation has none).
    pub fn validation_summary(&self) -> String {
        let mut out = format!(
            "valid loss {:.3}, ppl {:.2}",
            self.valid_loss, self.valid_ppl
        );
        if self.valid_accuracy.is_finite() {
            out += &format!(", accuracy {:.2}%", self.valid_accuracy);
        } else if self.valid_wer.is_finite() {
            out += &format!(", WER {:.2}%", self.valid_wer);
        } else if self.valid_bleu.is_finite() {
            out += &format!(", BLEU {:.2}", self.valid_bleu);
        }
        if self.valid_rouge.is_finite() {
            out += &format!(", ROUGE {:.2}", self.valid_rouge);
        }
        out
    }
}

/// A missing number: NaN.
fn absent() -> f64 {
    f64::NAN
}

/// A finite number as itself, anything else as `null`; `null` back as NaN.
mod finite_or_null {
    use super::*;

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

pub fn read(path: &Path) -> Result<Vec<MetricsRecord>, InferError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(InferError::io(path, e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| InferError::Corrupt(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// Rewrites the file atomically with `records`.
pub fn write(path: &Path, records: &[MetricsRecord]) -> Result<(), InferError> {
    let mut out = String::new();
    for r in records {
        out.push_str(&serde_json::to_string(r).expect("metrics serialise"));
        out.push('\n');
    }
    s2s_data::atomic_write(path, out.as_bytes()).map_err(|e| InferError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(valid_loss: f64) -> MetricsRecord {
        MetricsRecord {
            step: 3,
            epoch: 0,
            train_loss: 2.5,
            valid_loss,
            valid_ppl: valid_loss.exp(),
            valid_bleu: f64::NAN,
            valid_accuracy: 91.5,
            valid_wer: f64::NAN,
            valid_rouge: f64::NAN,
            tokens_per_sec: 100.0,
            elapsed_sec: 1.5,
            lr: 1e-3,
            teacher_forcing: 1.0,
        }
    }

    #[test]
    fn numbers_that_are_not_finite_are_written_as_null_and_read_back_as_nan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.jsonl");
        write(
            &path,
            &[record(f64::NAN), record(f64::INFINITY), record(1.25)],
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("\"valid_loss\":null,\"valid_ppl\":null"),
            "{text}"
        );
        assert!(lines[1].contains("\"valid_loss\":null"), "{text}");
        assert!(lines[2].contains("\"valid_loss\":1.25"), "{text}");
        assert!(
            lines.iter().all(|l| l.contains("\"valid_bleu\":null")),
            "{text}"
        );
        for line in &lines {
            serde_json::from_str::<serde_json::Value>(line).expect("plain JSON");
        }
        let back = read(&path).unwrap();
        assert_eq!(back.len(), 3);
        assert!(back[0].valid_loss.is_nan() && back[0].valid_ppl.is_nan());
        assert!(back[1].valid_loss.is_nan() && back[1].valid_bleu.is_nan());
        assert_eq!(back[2].valid_loss, 1.25);
        assert!((back[2].valid_ppl - 1.25f64.exp()).abs() < 1e-9);
        assert_eq!(
            (back[0].step, back[0].train_loss, back[0].lr),
            (3, 2.5, 1e-3)
        );
    }

    #[test]
    fn a_missing_number_reads_as_nan_and_a_missing_step_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.jsonl");
        std::fs::write(&path, "{\"step\":3,\"epoch\":0,\"train_loss\":2.0}\n").unwrap();
        let back = read(&path).unwrap();
        assert_eq!((back[0].step, back[0].train_loss), (3, 2.0));
        assert!(back[0].valid_loss.is_nan() && back[0].lr.is_nan());
        std::fs::write(&path, "{\"epoch\":0}\n").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("metrics.jsonl:1") && e.contains("step"), "{e}");
    }
}
