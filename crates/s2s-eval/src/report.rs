//! Scoring a loaded test set with several metrics and rendering the result (the logic behind
//! `s2s eval`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::{
    BleuConfig, BleuScore, ChrfConfig, ChrfScore, EvalError, EvalInputs, Tokenize, corpus_bleu,
    corpus_chrf,
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
}

impl Metric {
    /// The name used on the command line and as the JSON key.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bleu => "bleu",
            Metric::Chrf => "chrf",
            Metric::ChrfPlusPlus => "chrf++",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Case-insensitive: `bleu`, `chrf`, `chrf++` (also `chrfpp`).
impl FromStr for Metric {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bleu" => Ok(Metric::Bleu),
            "chrf" => Ok(Metric::Chrf),
            "chrf++" | "chrfpp" => Ok(Metric::ChrfPlusPlus),
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
}

/// Scores `inputs` with every metric in `opts.metrics`.
pub fn evaluate(inputs: &EvalInputs, opts: &EvalOptions) -> Result<EvalReport, EvalError> {
    let mut report = EvalReport {
        bleu: None,
        chrf: None,
        chrf_plus_plus: None,
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
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names() {
        for m in [Metric::Bleu, Metric::Chrf, Metric::ChrfPlusPlus] {
            assert_eq!(m.to_string().parse::<Metric>().unwrap(), m);
        }
        assert_eq!("chrF++".parse::<Metric>().unwrap(), Metric::ChrfPlusPlus);
        assert!("ter".parse::<Metric>().is_err());
    }

    #[test]
    fn rounding() {
        assert_eq!(round_to(48.530827, 2), 48.53);
        assert_eq!(round_to(100.0, 2), 100.0);
    }
}
