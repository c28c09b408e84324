//! A model's own decoding defaults: `decoding.toml` in its MODEL_DIR, written by `s2s tune`
//! (which picks the length penalty on the validation set) or by hand, and read by every front end
//! (`s2s translate`, `s2s serve`, `s2s quickstart`) in place of [`crate::defaults`]' beam and
//! alpha. Options given on the command line or in a request still win. Hugging Face keeps the
//! same thing in `generation_config.json`, Marian in `decoder.yml`.
//!
//! ```toml
//! beam = 5
//! alpha = 1.0
//!
//! [tuned]                 # how s2s tune chose alpha (absent when written by hand)
//! metric = "sacreBLEU tok:13a"   # or chrF2, ROUGE-1/2/L mean F, WER, CER, PER, SER
//! split = "valid"
//! sentences = 1014
//! tried = [[0.5, 38.91], [0.75, 39.40], [1.0, 39.62], [1.25, 39.51]]
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{InferError, defaults};

/// The file's name in a MODEL_DIR.
pub const DECODING: &str = "decoding.toml";

/// Largest alpha a model may default to (the server refuses requests above it too).
pub const MAX_ALPHA: f32 = 5.0;

/// The beam width and length-penalty exponent (`score = logprob / L^alpha`) a model decodes with
/// unless told otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decoding {
    #[serde(default = "default_beam")]
    pub beam: usize,
    #[serde(default = "default_alpha")]
    pub alpha: f32,
    /// Where the values came from when `s2s tune` did not choose them: an imported model's
    /// `generation_config.json`, say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuned: Option<Tuning>,
}

/// What `s2s tune` measured: the score of every alpha it tried, in the order tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tuning {
    pub metric: String,
    pub split: String,
    pub sentences: usize,
    /// `[alpha, score]` pairs.
    pub tried: Vec<(f32, f64)>,
}

/// `beam` when a file leaves it out (serde's default, also for `/health`'s record of it).
pub fn default_beam() -> usize {
    defaults::BEAM
}

/// `alpha` when a file leaves it out.
pub fn default_alpha() -> f32 {
    defaults::ALPHA
}

impl Default for Decoding {
    fn default() -> Self {
        Decoding {
            beam: defaults::BEAM,
            alpha: defaults::ALPHA,
            from: None,
            tuned: None,
        }
    }
}

impl Decoding {
    /// The defaults of the model in `dir`: its `decoding.toml`, or [`crate::defaults`]' when it
    /// has none.
    pub fn read(dir: &Path) -> Result<Decoding, InferError> {
        let path = dir.join(DECODING);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Decoding::default()),
            Err(e) => return Err(InferError::io(&path, e)),
        };
        let fix = format!(
            "fix the file, or delete it to decode with the built-in defaults (beam {}, alpha {})",
            defaults::BEAM,
            defaults::ALPHA
        );
        Self::parse(&path, &text, &fix)
    }

    /// Defaults kept in a file of their own rather than in a MODEL_DIR: an ensemble's, which
    /// `s2s tune --out FILE` writes and `--decoding FILE` reads, since they belong to no one
    /// member. Unlike [`Decoding::read`], a missing file is an error.
    pub fn read_file(path: &Path) -> Result<Decoding, InferError> {
        let text = std::fs::read_to_string(path).map_err(|e| InferError::io(path, e))?;
        Self::parse(
            path,
            &text,
            "fix the file, or write it again with s2s tune --out",
        )
    }

    /// `text`, read from `path`, as validated defaults; an error names `path` and `fix`.
    fn parse(path: &Path, text: &str, fix: &str) -> Result<Decoding, InferError> {
        let bad = |why: String| InferError::Config(format!("{}: {why}; {fix}", path.display()));
        let decoding: Decoding = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        decoding.validate().map_err(bad)?;
        Ok(decoding)
    }

    /// Writes `dir/decoding.toml` atomically.
    pub fn write(&self, dir: &Path) -> Result<(), InferError> {
        self.write_file(&dir.join(DECODING))
    }

    /// Writes the defaults to `path` atomically (see [`Decoding::read_file`]).
    pub fn write_file(&self, path: &Path) -> Result<(), InferError> {
        self.validate().map_err(InferError::Config)?;
        let text = toml::to_string(self).map_err(|e| InferError::Config(e.to_string()))?;
        s2s_data::atomic_write(path, text.as_bytes()).map_err(|e| InferError::io(path, e))
    }

    pub fn validate(&self) -> Result<(), String> {
        if self.beam == 0 {
            return Err("beam must be at least 1".into());
        }
        if !(self.alpha.is_finite() && (0.0..=MAX_ALPHA).contains(&self.alpha)) {
            return Err(format!(
                "alpha must be between 0 and {MAX_ALPHA}, got {}",
                self.alpha
            ));
        }
        Ok(())
    }
}

/// The length-penalty exponents `s2s tune` tries unless told otherwise.
pub const ALPHAS: [f32; 4] = [0.5, 0.75, 1.0, 1.25];

/// How `s2s tune` names `metric` in `decoding.toml`.
fn metric_label(metric: s2s_eval::Metric, tokenize: s2s_eval::Tokenize) -> String {
    match metric {
        s2s_eval::Metric::Bleu => format!("sacreBLEU tok:{tokenize}"),
        s2s_eval::Metric::Rouge => "ROUGE-1/2/L mean F".into(),
        other => other.display_name().into(),
    }
}

/// `search` (a beam search) with each of `alphas` as its length-penalty exponent over `sources`,
/// scored against `references` by `metric` ([`s2s_eval::ranking_score`]; BLEU with `tokenize`);
/// returns decoding defaults with the search's beam and the alpha that scored best (highest,
/// or lowest for an error rate; the first of equals), and the scores of all, labelled `split`.
/// `on_score` hears each alpha and its score as it is measured.
#[allow(clippy::too_many_arguments)]
pub fn tune_alpha(
    translator: &crate::Translator,
    sources: &[String],
    references: &[String],
    split: &str,
    search: &s2s_search::SearchConfig,
    alphas: &[f32],
    metric: s2s_eval::Metric,
    tokenize: s2s_eval::Tokenize,
    batch_size: usize,
    mut on_score: impl FnMut(f32, f64),
) -> Result<Decoding, InferError> {
    let s2s_search::Strategy::Beam { k: beam } = search.strategy else {
        return Err(InferError::Config(format!(
            "alpha is tuned for beam search, not {:?}",
            search.strategy
        )));
    };
    if alphas.is_empty() {
        return Err(InferError::Config(
            "no alpha to try: give at least one".into(),
        ));
    }
    if sources.is_empty() || sources.len() != references.len() {
        return Err(InferError::Config(format!(
            "the {split} split has {} sources and {} references: tuning needs pairs",
            sources.len(),
            references.len()
        )));
    }
    let mut scores = Vec::with_capacity(alphas.len());
    translator.keep_packed_weights(|| -> Result<(), InferError> {
        for &alpha in alphas {
            let candidate = Decoding {
                beam,
                alpha,
                ..Decoding::default()
            };
            candidate.validate().map_err(InferError::Config)?;
            let search = s2s_search::SearchConfig {
                length_penalty: s2s_search::LengthPenalty::Alpha(alpha),
                ..search.clone()
            };
            let hyps = translator.translate_best(sources, &search, batch_size)?;
            let score = s2s_eval::ranking_score(&hyps, &[references], metric, tokenize)
                .map_err(|e| InferError::Config(e.to_string()))?;
            on_score(alpha, score);
            scores.push((alpha, score));
        }
        Ok(())
    })?;
    let better = |a: f64, b: f64| {
        if metric.higher_is_better() {
            a > b
        } else {
            a < b
        }
    };
    let best = scores.iter().fold(
        scores[0],
        |best, &s| if better(s.1, best.1) { s } else { best },
    );
    Ok(Decoding {
        beam,
        alpha: best.0,
        from: None,
        tuned: Some(Tuning {
            metric: metric_label(metric, tokenize),
            split: split.to_owned(),
            sentences: sources.len(),
            tried: scores,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_without_the_file_decodes_with_the_built_in_defaults() {
        let d = tempfile::tempdir().unwrap();
        let got = Decoding::read(d.path()).unwrap();
        assert_eq!(got.beam, defaults::BEAM);
        assert_eq!(got.alpha, defaults::ALPHA);
        assert_eq!(got.tuned, None);
    }

    #[test]
    fn what_is_written_reads_back_and_missing_fields_take_the_defaults() {
        let d = tempfile::tempdir().unwrap();
        let tuned = Decoding {
            beam: 4,
            alpha: 1.25,
            from: Some("generation_config.json".into()),
            tuned: Some(Tuning {
                metric: "sacreBLEU tok:13a".into(),
                split: "valid".into(),
                sentences: 7,
                tried: vec![(0.5, 10.0), (1.25, 12.5)],
            }),
        };
        tuned.write(d.path()).unwrap();
        assert_eq!(Decoding::read(d.path()).unwrap(), tuned);
        std::fs::write(d.path().join(DECODING), "alpha = 1.0\n").unwrap();
        let got = Decoding::read(d.path()).unwrap();
        assert_eq!((got.beam, got.alpha), (defaults::BEAM, 1.0));
    }

    #[test]
    fn a_file_of_its_own_reads_back_and_must_exist() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("ensemble.toml");
        let err = Decoding::read_file(&path).unwrap_err().to_string();
        assert!(err.contains("ensemble.toml"), "{err}");
        let tuned = Decoding {
            beam: 3,
            alpha: 0.5,
            ..Decoding::default()
        };
        tuned.write_file(&path).unwrap();
        assert_eq!(Decoding::read_file(&path).unwrap(), tuned);
        // The model directory's file is another: d has no decoding.toml.
        assert_eq!(Decoding::read(d.path()).unwrap(), Decoding::default());
        std::fs::write(&path, "beam = 0\n").unwrap();
        let err = Decoding::read_file(&path).unwrap_err().to_string();
        assert!(
            err.contains("ensemble.toml") && err.contains("beam must be at least 1"),
            "{err}"
        );
        assert!(err.contains("s2s tune --out"), "{err}");
    }

    #[test]
    fn a_bad_file_is_refused_with_its_name_and_the_fix() {
        let d = tempfile::tempdir().unwrap();
        for (text, why) in [
            ("alpha = 9.0\n", "alpha must be between 0 and 5"),
            ("beam = 0\n", "beam must be at least 1"),
            ("alfa = 1.0\n", "unknown field"),
            ("alpha = \"one\"\n", "invalid type"),
        ] {
            std::fs::write(d.path().join(DECODING), text).unwrap();
            let err = Decoding::read(d.path()).unwrap_err().to_string();
            assert!(err.contains(DECODING), "{text}: {err}");
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("delete it"), "{text}: {err}");
        }
        let bad = Decoding {
            alpha: f32::NAN,
            ..Decoding::default()
        };
        assert!(bad.write(d.path()).is_err());
    }
}
