//! Scoring a loaded test set with several metrics and rendering the result (the logic behind
//! `s2s eval`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::{
    BleuConfig, BleuScore, ChrfConfig, ChrfScore, ErrorCounts, EvalError, EvalInputs, Tokenize,
    Units, corpus_bleu, corpus_chrf, corpus_error_counts,
};

/// A corpus-level metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `bleu`
    Bleu,
    /// `chrf` (chrF2)
    Chrf,
    /// `chrf++` (chrF2++)
    ChrfPlusPlus,
    /// `wer`: word error rate (edits over reference words)
    Wer,
    /// `cer`: character error rate
    Cer,
    /// `per`: phoneme error rate (WER's arithmetic over space-separated phonemes)
    Per,
    /// `ser`: sequence error rate (outputs equal to none of their references; G2P's "WER")
    Ser,
}

impl Metric {
    /// The name used on the command line and as the JSON key.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bleu => "bleu",
            Metric::Chrf => "chrf",
            Metric::ChrfPlusPlus => "chrf++",
            Metric::Wer => "wer",
            Metric::Cer => "cer",
            Metric::Per => "per",
            Metric::Ser => "ser",
        }
    }

    /// Every metric, in the order reports list them.
    pub const ALL: [Metric; 7] = [
        Metric::Bleu,
        Metric::Chrf,
        Metric::ChrfPlusPlus,
        Metric::Wer,
        Metric::Cer,
        Metric::Per,
        Metric::Ser,
    ];

    /// How it is printed.
    pub fn display_name(self) -> &'static str {
        match self {
            Metric::Bleu => "BLEU",
            Metric::Chrf => "chrF2",
            Metric::ChrfPlusPlus => "chrF2++",
            Metric::Wer => "WER",
            Metric::Cer => "CER",
            Metric::Per => "PER",
            Metric::Ser => "SER",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Case-insensitive: `bleu`, `chrf`, `chrf++` (also `chrfpp`), `wer`, `cer`, `per`, `ser`.
impl FromStr for Metric {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bleu" => Ok(Metric::Bleu),
            "chrf" => Ok(Metric::Chrf),
            "chrf++" | "chrfpp" => Ok(Metric::ChrfPlusPlus),
            "wer" => Ok(Metric::Wer),
            "cer" => Ok(Metric::Cer),
            "per" => Ok(Metric::Per),
            "ser" => Ok(Metric::Ser),
            _ => Err(EvalError::UnknownMetric(s.to_owned())),
        }
    }
}

/// What [`evaluate`] computes: the requested metrics with sacreBLEU's defaults, the given BLEU
/// tokenizer and optional lowercasing (for every metric).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalOptions {
    pub tokenize: Tokenize,
    pub lowercase: bool,
    pub metrics: Vec<Metric>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            tokenize: Tokenize::ThirteenA,
            lowercase: false,
            metrics: vec![Metric::Bleu, Metric::Chrf],
        }
    }
}

/// The scores [`evaluate`] computed (`None` for metrics not requested).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalReport {
    pub bleu: Option<BleuScore>,
    pub chrf: Option<ChrfScore>,
    pub chrf_plus_plus: Option<ChrfScore>,
    /// The error rates requested (`wer`, `cer`, `per`, `ser`), in the order asked.
    pub error_rates: Vec<(Metric, ErrorCounts)>,
}

/// Scores `inputs` with every metric in `opts.metrics`.
pub fn evaluate(inputs: &EvalInputs, opts: &EvalOptions) -> Result<EvalReport, EvalError> {
    let mut report = EvalReport {
        bleu: None,
        chrf: None,
        chrf_plus_plus: None,
        error_rates: Vec::new(),
    };
    for &metric in &opts.metrics {
        match metric {
            Metric::Bleu => {
                let cfg = BleuConfig {
                    tokenize: opts.tokenize,
                    lowercase: opts.lowercase,
                    ..BleuConfig::default()
                };
                report.bleu = Some(corpus_bleu(&inputs.hyps, &inputs.refs, &cfg)?);
            }
            Metric::Chrf | Metric::ChrfPlusPlus => {
                let base = if metric == Metric::Chrf {
                    ChrfConfig::default()
                } else {
                    ChrfConfig::chrf_plus_plus()
                };
                let cfg = ChrfConfig {
                    lowercase: opts.lowercase,
                    ..base
                };
                let score = Some(corpus_chrf(&inputs.hyps, &inputs.refs, &cfg)?);
                if metric == Metric::Chrf {
                    report.chrf = score;
                } else {
                    report.chrf_plus_plus = score;
                }
            }
            Metric::Wer | Metric::Cer | Metric::Per | Metric::Ser => {
                let units = if metric == Metric::Cer {
                    Units::Chars
                } else {
                    Units::Tokens
                };
                let counts =
                    corpus_error_counts(&inputs.hyps, &inputs.refs, units, opts.lowercase)?;
                report.error_rates.push((metric, counts));
            }
        }
    }
    Ok(report)
}

/// `x` rounded to `width` decimals, as sacreBLEU's JSON does (`float(f"{x:.{width}f}")`).
fn round_to(x: f64, width: usize) -> f64 {
    format!("{x:.width$}").parse().unwrap_or(x)
}

fn finite(x: f64) -> Value {
    // JSON has no NaN/inf; scores never are, but be safe.
    if x.is_finite() { json!(x) } else { Value::Null }
}

fn chrf_json(score: &ChrfScore, width: usize) -> Value {
    json!({
        "name": score.name,
        "score": finite(round_to(score.score, width)),
        "signature": score.signature,
    })
}

impl EvalReport {
    /// One JSON object with a key per computed metric (`bleu`, `chrf`, `chrf++`). Scores are
    /// rounded to `width` decimals like sacreBLEU's JSON; other numbers are exact.
    pub fn to_json(&self, width: usize) -> String {
        let mut obj = Map::new();
        if let Some(b) = &self.bleu {
            obj.insert(
                "bleu".into(),
                json!({
                    "name": "BLEU",
                    "score": finite(round_to(b.score, width)),
                    "signature": b.signature,
                    "precisions": b.precisions.iter().map(|&p| finite(p)).collect::<Vec<_>>(),
                    "bp": finite(b.bp),
                    "ratio": finite(b.ratio),
                    "sys_len": b.sys_len,
                    "ref_len": b.ref_len,
                    "counts": b.counts,
                    "totals": b.totals,
                }),
            );
        }
        if let Some(c) = &self.chrf {
            obj.insert("chrf".into(), chrf_json(c, width));
        }
        if let Some(c) = &self.chrf_plus_plus {
            obj.insert("chrf++".into(), chrf_json(c, width));
        }
        for &(metric, c) in &self.error_rates {
            let value = if metric == Metric::Ser {
                json!({
                    "name": metric.display_name(),
                    "score": finite(round_to(c.sequence_rate(), width)),
                    "wrong": c.wrong_segments,
                    "segments": c.segments,
                })
            } else {
                json!({
                    "name": metric.display_name(),
                    "score": finite(round_to(c.rate(), width)),
                    "edits": c.edits,
                    "ref_units": c.ref_units,
                    "segments": c.segments,
                })
            };
            obj.insert(metric.name().into(), value);
        }
        Value::Object(obj).to_string()
    }

    /// Human-readable lines: each score as sacreBLEU prints it, then its signature.
    pub fn to_text(&self, width: usize) -> String {
        let mut out = String::new();
        if let Some(b) = &self.bleu {
            out.push_str(&format!(
                "{}\nBLEU signature: {}\n",
                b.format(width),
                b.signature
            ));
        }
        for c in [&self.chrf, &self.chrf_plus_plus].into_iter().flatten() {
            out.push_str(&format!(
                "{}\n{} signature: {}\n",
                c.format(width),
                c.name,
                c.signature
            ));
        }
        for &(metric, c) in &self.error_rates {
            let line = match metric {
                Metric::Ser => format!(
                    "SER = {:.width$} ({} of {} outputs match no reference)",
                    c.sequence_rate(),
                    c.wrong_segments,
                    c.segments
                ),
                _ => format!(
                    "{} = {:.width$} ({} edits / {} reference {}, {} segments)",
                    metric.display_name(),
                    c.rate(),
                    c.edits,
                    c.ref_units,
                    match metric {
                        Metric::Cer => "characters",
                        Metric::Per => "phonemes",
                        _ => "words",
                    },
                    c.segments
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names() {
        for m in Metric::ALL {
            assert_eq!(m.to_string().parse::<Metric>().unwrap(), m);
        }
        assert_eq!("chrF++".parse::<Metric>().unwrap(), Metric::ChrfPlusPlus);
        assert!("ter".parse::<Metric>().is_err());
        assert_eq!("WER".parse::<Metric>().unwrap(), Metric::Wer);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_to(48.530827, 2), 48.53);
        assert_eq!(round_to(100.0, 2), 100.0);
    }
}
