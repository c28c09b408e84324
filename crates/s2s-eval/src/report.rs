//! Scoring a loaded test set with several metrics and rendering the result (the logic behind
//! `s2s eval`).

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value, json};

use crate::{
    BleuConfig, BleuScore, ChrfConfig, ChrfScore, CorpusRouge, ErrorCounts, EvalError, EvalInputs,
    LabelScores, RougeConfig, RougeType, Tokenize, Units, corpus_bleu, corpus_chrf,
    corpus_error_counts, corpus_rouge, label_scores,
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
    /// `accuracy`: correct labels over all labels (tagging, classification)
    Accuracy,
    /// `f1`: macro-F1, the unweighted mean of the labels' F1 (tagging, classification)
    F1,
    /// `rouge`: ROUGE-1, -2, -L and -Lsum (summarisation)
    Rouge,
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
            Metric::Accuracy => "accuracy",
            Metric::F1 => "f1",
            Metric::Rouge => "rouge",
        }
    }

    /// Every metric, in the order reports list them.
    pub const ALL: [Metric; 10] = [
        Metric::Bleu,
        Metric::Chrf,
        Metric::ChrfPlusPlus,
        Metric::Wer,
        Metric::Cer,
        Metric::Per,
        Metric::Ser,
        Metric::Accuracy,
        Metric::F1,
        Metric::Rouge,
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
            Metric::Accuracy => "accuracy",
            Metric::F1 => "macro-F1",
            Metric::Rouge => "ROUGE",
        }
    }
}

impl Metric {
    /// Whether a higher score is better: false for the error rates.
    pub fn higher_is_better(self) -> bool {
        self.error_units().is_none()
    }

    /// The units an error rate counts; `None` for the metrics that are not error rates.
    fn error_units(self) -> Option<Units> {
        match self {
            Metric::Wer | Metric::Per | Metric::Ser => Some(Units::Tokens),
            Metric::Cer => Some(Units::Chars),
            _ => None,
        }
    }
}

/// The ROUGE by which summaries are ranked (`best_by = "rouge"`, `s2s tune --metric rouge`):
/// ROUGE-1, -2 and -L with the stemmer, whose F-measures [`CorpusRouge::mean_fmeasure`] averages.
pub fn ranking_rouge() -> RougeConfig {
    RougeConfig {
        types: vec![RougeType::N(1), RougeType::N(2), RougeType::L],
        ..RougeConfig::default()
    }
}

/// The one number by which `metric` ranks systems on `hyps` against `refs` (one stream per
/// reference), with sacreBLEU's defaults: BLEU with `tokenize`; chrF2 or chrF2++; an error rate
/// in percent (`ser`: the share of outputs equal to none of their references); accuracy or
/// macro-F1; or the mean ROUGE F of [`ranking_rouge`]. [`Metric::higher_is_better`]
/// says which way is better.
pub fn ranking_score<H: AsRef<str>, R: AsRef<str>, S: AsRef<[R]>>(
    hyps: &[H],
    refs: &[S],
    metric: Metric,
    tokenize: Tokenize,
) -> Result<f64, EvalError> {
    if let Some(units) = metric.error_units() {
        let counts = corpus_error_counts(hyps, refs, units, false)?;
        return Ok(if metric == Metric::Ser {
            counts.sequence_rate()
        } else {
            counts.rate()
        });
    }
    Ok(match metric {
        Metric::Bleu => corpus_bleu(hyps, refs, &BleuConfig::with_tokenize(tokenize))?.score,
        Metric::Chrf => corpus_chrf(hyps, refs, &ChrfConfig::default())?.score,
        Metric::ChrfPlusPlus => corpus_chrf(hyps, refs, &ChrfConfig::chrf_plus_plus())?.score,
        Metric::Rouge => corpus_rouge(hyps, refs, &ranking_rouge())?.mean_fmeasure(),
        Metric::Accuracy | Metric::F1 => {
            let [first] = refs else {
                return Err(EvalError::InvalidConfig(format!(
                    "{metric} scores against one reference stream, not {}",
                    refs.len()
                )));
            };
            let h: Vec<String> = hyps.iter().map(|s| s.as_ref().to_owned()).collect();
            let r: Vec<String> = first
                .as_ref()
                .iter()
                .map(|s| s.as_ref().to_owned())
                .collect();
            let labels = label_scores(&h, &r)?;
            if metric == Metric::Accuracy {
                labels.accuracy
            } else {
                labels.macro_f1
            }
        }
        Metric::Wer | Metric::Cer | Metric::Per | Metric::Ser => unreachable!("error rates above"),
    })
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Case-insensitive: `bleu`, `chrf`, `chrf++` (also `chrfpp`), `wer`, `cer`, `per`, `ser`,
/// `accuracy` (also `acc`), `f1` (also `macro-f1`), `rouge`.
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
            "accuracy" | "acc" => Ok(Metric::Accuracy),
            "f1" | "macro-f1" => Ok(Metric::F1),
            "rouge" => Ok(Metric::Rouge),
            _ => Err(EvalError::UnknownMetric(s.to_owned())),
        }
    }
}

/// What [`evaluate`] computes: the requested metrics with sacreBLEU's defaults, the given BLEU
/// tokenizer and optional lowercasing (for every metric; ROUGE always lowercases), and ROUGE's
/// settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalOptions {
    pub tokenize: Tokenize,
    pub lowercase: bool,
    pub metrics: Vec<Metric>,
    pub rouge: RougeConfig,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            tokenize: Tokenize::ThirteenA,
            lowercase: false,
            metrics: vec![Metric::Bleu, Metric::Chrf],
            rouge: RougeConfig::default(),
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
    /// The label scores, when `accuracy` or `f1` was requested.
    pub labels: Option<LabelScores>,
    /// Which of `accuracy` and `f1` were requested, in the order asked.
    pub label_metrics: Vec<Metric>,
    pub rouge: Option<CorpusRouge>,
}

/// Scores `inputs` with every metric in `opts.metrics`.
pub fn evaluate(inputs: &EvalInputs, opts: &EvalOptions) -> Result<EvalReport, EvalError> {
    let mut report = EvalReport {
        bleu: None,
        chrf: None,
        chrf_plus_plus: None,
        error_rates: Vec::new(),
        labels: None,
        label_metrics: Vec::new(),
        rouge: None,
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
                let units = metric.error_units().expect("an error rate");
                let counts =
                    corpus_error_counts(&inputs.hyps, &inputs.refs, units, opts.lowercase)?;
                report.error_rates.push((metric, counts));
            }
            Metric::Accuracy | Metric::F1 => {
                if report.labels.is_none() {
                    if inputs.refs.len() != 1 {
                        return Err(EvalError::InvalidConfig(format!(
                            "accuracy and f1 score against one reference file, but {} were \
                             given; fix: pass one --ref",
                            inputs.refs.len()
                        )));
                    }
                    let lower = |v: &[String]| -> Vec<String> {
                        v.iter().map(|s| crate::pystr::py_lower(s)).collect()
                    };
                    report.labels = Some(if opts.lowercase {
                        label_scores(&lower(&inputs.hyps), &lower(&inputs.refs[0]))?
                    } else {
                        label_scores(&inputs.hyps, &inputs.refs[0])?
                    });
                }
                if !report.label_metrics.contains(&metric) {
                    report.label_metrics.push(metric);
                }
            }
            Metric::Rouge => {
                report.rouge = Some(corpus_rouge(&inputs.hyps, &inputs.refs, &opts.rouge)?);
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
        if let Some(l) = &self.labels {
            for &metric in &self.label_metrics {
                let value = if metric == Metric::Accuracy {
                    json!({
                        "name": metric.display_name(),
                        "score": finite(round_to(l.accuracy, width)),
                        "correct": l.correct,
                        "count": l.count,
                    })
                } else {
                    let labels: Vec<Value> = l
                        .labels
                        .iter()
                        .map(|s| {
                            json!({
                                "label": s.label,
                                "precision": finite(round_to(s.precision, width)),
                                "recall": finite(round_to(s.recall, width)),
                                "f1": finite(round_to(s.f1, width)),
                                "support": s.support,
                            })
                        })
                        .collect();
                    json!({
                        "name": metric.display_name(),
                        "score": finite(round_to(l.macro_f1, width)),
                        "count": l.count,
                        "labels": labels,
                    })
                };
                obj.insert(metric.name().into(), value);
            }
        }
        if let Some(r) = &self.rouge {
            let mut value = Map::new();
            value.insert("name".into(), json!("ROUGE"));
            for (t, s) in &r.scores {
                value.insert(
                    t.key(),
                    json!({
                        "precision": finite(round_to(s.precision, width)),
                        "recall": finite(round_to(s.recall, width)),
                        "fmeasure": finite(round_to(s.fmeasure, width)),
                    }),
                );
            }
            value.insert("stemmer".into(), json!(r.stem));
            value.insert("segments".into(), json!(r.segments));
            obj.insert("rouge".into(), Value::Object(value));
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
        if let Some(l) = &self.labels {
            for &metric in &self.label_metrics {
                if metric == Metric::Accuracy {
                    out.push_str(&format!(
                        "accuracy = {:.width$} ({} of {} labels correct)\n",
                        l.accuracy, l.correct, l.count
                    ));
                } else {
                    out.push_str(&format!(
                        "macro-F1 = {:.width$} (mean over {} labels)\n",
                        l.macro_f1,
                        l.labels.len()
                    ));
                    out.push_str(&label_table(l, width));
                }
            }
        }
        if let Some(r) = &self.rouge {
            for (t, s) in &r.scores {
                out.push_str(&format!(
                    "{t} = {:.width$} (F; P {:.width$}, R {:.width$})\n",
                    s.fmeasure, s.precision, s.recall
                ));
            }
            out.push_str(&format!(
                "ROUGE: mean over {} segments, {}\n",
                r.segments,
                if r.stem {
                    "Porter stemmer"
                } else {
                    "no stemmer"
                }
            ));
        }
        out
    }
}

/// The per-label table of `to_text`: label, precision, recall, F1 (percent) and support.
fn label_table(l: &LabelScores, width: usize) -> String {
    let name_w = l
        .labels
        .iter()
        .map(|s| s.label.chars().count())
        .chain([5])
        .max()
        .unwrap_or(5);
    let num_w = (width + 5).max(9);
    let mut out = format!(
        "{:<name_w$}  {:>num_w$}  {:>num_w$}  {:>num_w$}  {:>7}\n",
        "label", "precision", "recall", "f1", "support"
    );
    for s in &l.labels {
        out.push_str(&format!(
            "{:<name_w$}  {:>num_w$.width$}  {:>num_w$.width$}  {:>num_w$.width$}  {:>7}\n",
            s.label, s.precision, s.recall, s.f1, s.support
        ));
    }
    out
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
        assert_eq!("Accuracy".parse::<Metric>().unwrap(), Metric::Accuracy);
        assert_eq!("macro-f1".parse::<Metric>().unwrap(), Metric::F1);
    }

    #[test]
    fn the_ranking_score_is_the_reports_headline_number() {
        let hyps = ["the cat sat on the mat", "a dog", "N V N"];
        let refs: &[&[&str]] = &[
            &["the cat sat on a mat", "a dog", "N V V"],
            &["a cat sat on the mat", "", ""],
        ];
        let all = EvalOptions {
            metrics: Metric::ALL.to_vec(),
            rouge: ranking_rouge(),
            ..EvalOptions::default()
        };
        let report = evaluate(&inputs(&hyps, &refs[..1]), &all).unwrap();
        let text_metrics = EvalOptions {
            metrics: Metric::ALL
                .into_iter()
                .filter(|m| !matches!(m, Metric::Accuracy | Metric::F1))
                .collect(),
            ..all.clone()
        };
        let several = evaluate(&inputs(&hyps, refs), &text_metrics).unwrap();
        let rate = |r: &EvalReport, m: Metric| {
            let c = r.error_rates.iter().find(|(k, _)| *k == m).unwrap().1;
            if m == Metric::Ser {
                c.sequence_rate()
            } else {
                c.rate()
            }
        };
        for metric in Metric::ALL {
            let labels = matches!(metric, Metric::Accuracy | Metric::F1);
            let (r, streams) = if labels {
                (&report, &refs[..1])
            } else {
                (&several, refs)
            };
            let want = match metric {
                Metric::Bleu => r.bleu.as_ref().unwrap().score,
                Metric::Chrf => r.chrf.as_ref().unwrap().score,
                Metric::ChrfPlusPlus => r.chrf_plus_plus.as_ref().unwrap().score,
                Metric::Wer | Metric::Cer | Metric::Per | Metric::Ser => rate(r, metric),
                Metric::Accuracy => r.labels.as_ref().unwrap().accuracy,
                Metric::F1 => r.labels.as_ref().unwrap().macro_f1,
                Metric::Rouge => {
                    let s = &r.rouge.as_ref().unwrap().scores;
                    assert_eq!(s.len(), 3);
                    s.iter().map(|(_, x)| x.fmeasure).sum::<f64>() / 3.0
                }
            };
            let got = ranking_score(&hyps, streams, metric, Tokenize::ThirteenA).unwrap();
            assert_eq!(got, want, "{metric}");
            assert_eq!(
                metric.higher_is_better(),
                !matches!(
                    metric,
                    Metric::Wer | Metric::Cer | Metric::Per | Metric::Ser
                ),
                "{metric}"
            );
        }
        // One output right of three, whichever reference it matches.
        let ser = ranking_score(&hyps, refs, Metric::Ser, Tokenize::ThirteenA).unwrap();
        assert!((ser - 200.0 / 3.0).abs() < 1e-9, "{ser}");
        assert!(ranking_score(&hyps, refs, Metric::Accuracy, Tokenize::ThirteenA).is_err());
    }

    fn inputs(hyps: &[&str], refs: &[&[&str]]) -> EvalInputs {
        let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        EvalInputs {
            hyps: own(hyps),
            refs: refs.iter().map(|r| own(r)).collect(),
            hyp_file_was_empty: false,
        }
    }

    #[test]
    fn label_metrics_in_json_and_text() {
        let opts = EvalOptions {
            metrics: vec![Metric::F1, Metric::Accuracy],
            ..EvalOptions::default()
        };
        let report = evaluate(&inputs(&["N V", "N"], &[&["N N", "N"]]), &opts).unwrap();
        let json: Value = serde_json::from_str(&report.to_json(2)).unwrap();
        // N: TP 2, FN 1 -> P 100, R 66.67, F1 80; V: FP 1 -> 0. Macro-F1 40.
        assert_eq!(json["accuracy"]["score"], json!(66.67));
        assert_eq!(json["accuracy"]["correct"], json!(2));
        assert_eq!(json["accuracy"]["count"], json!(3));
        assert_eq!(json["f1"]["name"], json!("macro-F1"));
        assert_eq!(json["f1"]["score"], json!(40.0));
        assert_eq!(
            json["f1"]["labels"],
            json!([
                {"label": "N", "precision": 100.0, "recall": 66.67, "f1": 80.0, "support": 3},
                {"label": "V", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0},
            ])
        );
        let text = report.to_text(2);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "macro-F1 = 40.00 (mean over 2 labels)");
        assert!(lines[1].starts_with("label") && lines[1].ends_with("support"));
        assert!(lines[2].starts_with("N ") && lines[2].contains("66.67"));
        assert_eq!(lines[4], "accuracy = 66.67 (2 of 3 labels correct)");
        assert!(report.bleu.is_none());
    }

    #[test]
    fn label_metrics_lowercase_and_take_one_reference() {
        let mut opts = EvalOptions {
            metrics: vec![Metric::Accuracy],
            ..EvalOptions::default()
        };
        let one = inputs(&["noun VERB"], &[&["NOUN verb"]]);
        assert_eq!(evaluate(&one, &opts).unwrap().labels.unwrap().accuracy, 0.0);
        opts.lowercase = true;
        assert_eq!(
            evaluate(&one, &opts).unwrap().labels.unwrap().accuracy,
            100.0
        );
        let two = inputs(&["a"], &[&["a"], &["b"]]);
        let err = evaluate(&two, &opts).unwrap_err().to_string();
        assert!(
            err.contains("one reference") && err.contains("fix:"),
            "{err}"
        );
    }

    #[test]
    fn rouge_in_json_and_text() {
        let opts = EvalOptions {
            metrics: vec![Metric::Rouge],
            ..EvalOptions::default()
        };
        let report = evaluate(&inputs(&["the cats sat"], &[&["The cat sat down"]]), &opts).unwrap();
        let json: Value = serde_json::from_str(&report.to_json(2)).unwrap();
        // Stemmed, 3 of 3 hypothesis words and 3 of 4 reference words match.
        assert_eq!(json["rouge"]["rouge1"]["precision"], json!(100.0));
        assert_eq!(json["rouge"]["rouge1"]["recall"], json!(75.0));
        assert_eq!(json["rouge"]["rougeLsum"]["fmeasure"], json!(85.71));
        assert_eq!(json["rouge"]["stemmer"], json!(true));
        let text = report.to_text(2);
        assert!(
            text.starts_with("ROUGE-1 = 85.71 (F; P 100.00, R 75.00)\n"),
            "{text}"
        );
        assert!(
            text.contains("mean over 1 segments, Porter stemmer"),
            "{text}"
        );
    }

    #[test]
    fn rounding() {
        assert_eq!(round_to(48.530827, 2), 48.53);
        assert_eq!(round_to(100.0, 2), 100.0);
    }
}
