//! The JSON shapes of the HTTP API and the validation of requests.
//!
//! ```text
//! POST /v1/translate
//! {"text": "..." | ["...", ...], "beam": 5, "alpha": 0.75, "nbest": 1, "attention": false,
//!  "patience": 1.0, "target_lang": "cmn_Hans"}
//! -> {"translations": [{"src": "...", "src_tokens": ["..."],
//!                       "hyps": [{"text": "...", "score": -0.12, "logprob": -0.4,
//!                                 "tokens": ["..."], "attention": {...}?}]}]}
//! ```
//!
//! `attention` (only when asked for, and only for models that attend) is an [`Attention`]: the
//! row and column labels and the weights averaged over layers and heads. A later version may add
//! per-layer data beside `mean` without changing it.
//!
//! A generator conditioned on vectors (`GET /health`: `"input": "vectors"`, `"vector_dim": N`)
//! takes the same request, each text a vector of N numbers separated by spaces; its reply's
//! `src_tokens` is `["<vector>"]`.
//!
//! A speech model transcribes a WAV file sent as the body, its options in the query string:
//!
//! ```text
//! POST /v1/transcribe?beam=5&alpha=0.75&nbest=1&attention=true&patience=1.0
//! Content-Type: audio/wav
//! <the WAV file's bytes>
//! -> {"translations": [{"src": "upload.wav", "src_tokens": ["0.00s", "0.04s", ...], "hyps": [...]}]}
//! ```

use s2s_infer::Specials;
use s2s_infer::defaults;
pub use s2s_infer::{Attention, Hyp, Translation};
use s2s_search::{LengthPenalty, SearchConfig, Strategy};
use serde::{Deserialize, Serialize};

/// The body of `POST /v1/translate`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslateRequest {
    pub text: TextInput,
    #[serde(default)]
    pub beam: Option<usize>,
    #[serde(default)]
    pub alpha: Option<f32>,
    #[serde(default)]
    pub nbest: Option<usize>,
    #[serde(default)]
    pub attention: Option<bool>,
    /// End a sentence once `round(beam * patience)` hypotheses have finished (absent: search
    /// until no open hypothesis can still win).
    #[serde(default)]
    pub patience: Option<f32>,
    /// The target language of a multilingual Marian model (`cmn_Hans` or `>>cmn_Hans<<`).
    #[serde(default)]
    pub target_lang: Option<String>,
}

/// The query string of `POST /v1/transcribe`: the search options of [`TranslateRequest`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscribeQuery {
    #[serde(default)]
    pub beam: Option<usize>,
    #[serde(default)]
    pub alpha: Option<f32>,
    #[serde(default)]
    pub nbest: Option<usize>,
    #[serde(default)]
    pub attention: Option<bool>,
    #[serde(default)]
    pub patience: Option<f32>,
    /// Names the upload in the reply's `src` and in errors (default `upload.wav`).
    #[serde(default)]
    pub name: Option<String>,
}

impl TranscribeQuery {
    /// Checks the options against `limits` and fills in the model's `defaults`, as for
    /// `/v1/translate`; returns the upload's name and the search options.
    pub fn validate(
        self,
        limits: &Limits,
        defaults: &SearchOptions,
    ) -> Result<(String, SearchOptions), ApiError> {
        let opts = SearchOptions::checked(
            limits,
            defaults,
            self.beam,
            self.alpha,
            self.nbest,
            self.attention,
            self.patience,
        )?;
        let name = self.name.unwrap_or_else(|| "upload.wav".to_owned());
        if name.chars().count() > 200 || name.contains(['\n', '\r']) {
            return Err(ApiError::bad_request(
                "name must be one line of at most 200 characters",
            ));
        }
        Ok((name, opts))
    }
}

/// One sentence or a list of them.
#[derive(Clone, Debug, PartialEq)]
pub enum TextInput {
    One(String),
    Many(Vec<String>),
}

impl TextInput {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            TextInput::One(s) => vec![s],
            TextInput::Many(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for TextInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TextInput;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TextInput, E> {
                Ok(TextInput::One(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<TextInput, E> {
                Ok(TextInput::One(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TextInput, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s);
                }
                Ok(TextInput::Many(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// The search options of a request after defaults and validation. Requests with equal options
/// can share a batched search.
#[derive(Clone, Copy, Debug)]
pub struct SearchOptions {
    pub beam: usize,
    pub alpha: f32,
    pub nbest: usize,
    pub attention: bool,
    pub patience: Option<f32>,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            beam: defaults::BEAM,
            alpha: defaults::ALPHA,
            nbest: defaults::NBEST,
            attention: false,
            patience: None,
        }
    }
}

impl PartialEq for SearchOptions {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for SearchOptions {}

impl SearchOptions {
    /// What a request to a model whose decoding defaults (`decoding.toml`) are `beam` and
    /// `alpha` gets unless it asks otherwise.
    pub fn model_defaults(beam: usize, alpha: f32) -> SearchOptions {
        SearchOptions {
            beam,
            alpha,
            ..SearchOptions::default()
        }
    }

    /// The options a request asked for, checked against `limits`, with `d`'s filled in.
    fn checked(
        limits: &Limits,
        d: &SearchOptions,
        beam: Option<usize>,
        alpha: Option<f32>,
        nbest: Option<usize>,
        attention: Option<bool>,
        patience: Option<f32>,
    ) -> Result<SearchOptions, ApiError> {
        // The default beam, narrowed to the server's limit.
        let beam = beam.unwrap_or(d.beam.min(limits.max_beam));
        if beam == 0 || beam > limits.max_beam {
            return Err(ApiError::bad_request(format!(
                "beam must be between 1 and {}, got {beam}",
                limits.max_beam
            )));
        }
        let nbest = nbest.unwrap_or(d.nbest);
        if nbest == 0 || nbest > beam {
            return Err(ApiError::bad_request(format!(
                "nbest must be between 1 and beam ({beam}), got {nbest}"
            )));
        }
        let alpha = alpha.unwrap_or(d.alpha);
        if !(alpha.is_finite() && (0.0..=s2s_infer::decoding::MAX_ALPHA).contains(&alpha)) {
            return Err(ApiError::bad_request(format!(
                "alpha must be between 0 and {}, got {alpha}",
                s2s_infer::decoding::MAX_ALPHA
            )));
        }
        if let Some(p) = patience
            && !(p.is_finite() && (0.0..=100.0).contains(&p) && p > 0.0)
        {
            return Err(ApiError::bad_request(format!(
                "patience must be above 0 and at most 100, got {p}"
            )));
        }
        Ok(SearchOptions {
            beam,
            alpha,
            nbest,
            attention: attention.unwrap_or(false),
            patience,
        })
    }

    fn key(&self) -> (usize, u32, usize, bool, Option<u32>) {
        (
            self.beam,
            self.alpha.to_bits(),
            self.nbest,
            self.attention,
            self.patience.map(f32::to_bits),
        )
    }

    /// The search the server runs for these options: beam search with the length penalty
    /// `logprob / L^alpha` and the output length limits of `s2s translate`
    /// ([`s2s_infer::defaults`]), so the API and the CLI translate alike.
    pub fn to_config(&self, specials: Specials) -> SearchConfig {
        SearchConfig {
            nbest: self.nbest,
            length_penalty: LengthPenalty::Alpha(self.alpha),
            return_attention: self.attention,
            patience: self.patience,
            ..defaults::search(Strategy::Beam { k: self.beam }, specials)
        }
    }
}

/// Request-size limits enforced by the server.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest request body in bytes (413 above).
    pub max_body_bytes: usize,
    /// Most source tokens in one sentence (422 above).
    pub max_tokens: usize,
    /// Most sentences in one request (422 above).
    pub max_sentences: usize,
    /// Largest beam (400 above).
    pub max_beam: usize,
    /// Largest WAV upload in bytes (413 above).
    pub max_audio_bytes: usize,
    /// Longest audio in one upload, in seconds (422 above).
    pub max_audio_seconds: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            max_tokens: 200,
            max_sentences: 64,
            max_beam: 16,
            max_audio_bytes: 8 << 20,
            max_audio_seconds: 30.0,
        }
    }
}

/// A refused or failed request: an HTTP status and a message for `{"error": "..."}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }
}

impl TranslateRequest {
    /// Checks the options against `limits` and fills in the model's `defaults`; returns the
    /// sentences and the search options. Token limits are checked later, by the worker that
    /// owns the tokenizer.
    pub fn validate(
        self,
        limits: &Limits,
        defaults: &SearchOptions,
    ) -> Result<(Vec<String>, SearchOptions), ApiError> {
        let opts = SearchOptions::checked(
            limits,
            defaults,
            self.beam,
            self.alpha,
            self.nbest,
            self.attention,
            self.patience,
        )?;
        let texts = self.text.into_vec();
        if texts.is_empty() {
            return Err(ApiError::bad_request(
                "text is an empty list: send at least one sentence",
            ));
        }
        if texts.len() > limits.max_sentences {
            return Err(ApiError::new(
                422,
                format!(
                    "{} sentences in one request; the limit is {} (--max-sentences)",
                    texts.len(),
                    limits.max_sentences
                ),
            ));
        }
        if let Some(i) = texts.iter().position(|t| t.contains(['\n', '\r'])) {
            return Err(ApiError::bad_request(format!(
                "text[{i}] contains a line break: send one sentence per list item"
            )));
        }
        Ok((texts, opts))
    }
}

/// The body of a successful `POST /v1/translate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TranslateResponse {
    pub translations: Vec<Translation>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<TranslateRequest, serde_json::Error> {
        serde_json::from_str(s)
    }

    #[test]
    fn text_is_a_string_or_a_list() {
        assert_eq!(
            parse(r#"{"text":"a b"}"#).unwrap().text,
            TextInput::One("a b".into())
        );
        assert_eq!(
            parse(r#"{"text":["a","b"]}"#).unwrap().text,
            TextInput::Many(vec!["a".into(), "b".into()])
        );
        let e = parse(r#"{"text":3}"#).unwrap_err().to_string();
        assert!(e.contains("a string or an array of strings"), "{e}");
        assert!(parse(r#"{"text":[1]}"#).is_err());
        assert!(parse(r#"{"text":"a","beem":3}"#).is_err());
        assert!(parse(r#"{"beam":3}"#).is_err());
    }

    #[test]
    fn validation() {
        let l = Limits::default();
        let d = SearchOptions::default();
        let ok = |s: &str| parse(s).unwrap().validate(&l, &d);
        let (texts, o) = ok(r#"{"text":"x"}"#).unwrap();
        assert_eq!(texts, vec!["x"]);
        assert_eq!(o, SearchOptions::default());
        assert_eq!(ok(r#"{"text":"x","beam":0}"#).unwrap_err().status, 400);
        assert_eq!(ok(r#"{"text":"x","beam":17}"#).unwrap_err().status, 400);
        assert_eq!(
            ok(r#"{"text":"x","beam":2,"nbest":3}"#).unwrap_err().status,
            400
        );
        assert_eq!(ok(r#"{"text":"x","nbest":0}"#).unwrap_err().status, 400);
        assert_eq!(ok(r#"{"text":"x","alpha":-1}"#).unwrap_err().status, 400);
        assert_eq!(ok(r#"{"text":"x","patience":0}"#).unwrap_err().status, 400);
        assert_eq!(
            ok(r#"{"text":"x","patience":101}"#).unwrap_err().status,
            400
        );
        let (_, o) = ok(r#"{"text":"x","patience":1.5}"#).unwrap();
        assert_eq!(o.patience, Some(1.5));
        assert_ne!(o, SearchOptions::default());
        assert_eq!(ok(r#"{"text":[]}"#).unwrap_err().status, 400);
        assert_eq!(ok(r#"{"text":"a\nb"}"#).unwrap_err().status, 400);
        let narrow = Limits {
            max_beam: 2,
            ..Limits::default()
        };
        let (_, o) = parse(r#"{"text":"x"}"#)
            .unwrap()
            .validate(&narrow, &d)
            .unwrap();
        assert_eq!(o.beam, 2, "the default beam is narrowed to --max-beam");
        let many = serde_json::json!({ "text": vec!["x"; 65] }).to_string();
        assert_eq!(ok(&many).unwrap_err().status, 422);
    }

    #[test]
    fn a_request_without_beam_or_alpha_gets_the_models_own() {
        let tuned = SearchOptions::model_defaults(3, 1.25);
        let l = Limits::default();
        let (_, o) = parse(r#"{"text":"x"}"#)
            .unwrap()
            .validate(&l, &tuned)
            .unwrap();
        assert_eq!((o.beam, o.alpha, o.nbest), (3, 1.25, 1));
        let (_, o) = parse(r#"{"text":"x","alpha":0.5,"beam":4}"#)
            .unwrap()
            .validate(&l, &tuned)
            .unwrap();
        assert_eq!((o.beam, o.alpha), (4, 0.5), "the request wins");
        let narrow = Limits {
            max_beam: 2,
            ..Limits::default()
        };
        let (_, o) = parse(r#"{"text":"x"}"#)
            .unwrap()
            .validate(&narrow, &tuned)
            .unwrap();
        assert_eq!(o.beam, 2, "the model's beam is narrowed to --max-beam");
    }

    #[test]
    fn options_group_by_value() {
        let a = SearchOptions::default();
        let b = SearchOptions { alpha: 0.5, ..a };
        assert_ne!(a, b);
        assert_eq!(a, SearchOptions::default());
        assert!(a.to_config(Specials::S2S).validate(10).is_ok());
        let p = SearchOptions {
            patience: Some(1.0),
            ..a
        };
        assert_ne!(a, p);
        assert_eq!(p.to_config(Specials::S2S).patience, Some(1.0));
    }

    #[test]
    fn a_transcription_query_is_checked_like_a_translation_request() {
        let q = |s: &str| {
            let uri: axum::http::Uri = format!("/v1/transcribe?{s}").parse().unwrap();
            axum::extract::Query::<TranscribeQuery>::try_from_uri(&uri).map(|q| q.0)
        };
        let limits = Limits::default();
        let d = SearchOptions::default();
        let (name, o) = q("").unwrap().validate(&limits, &d).unwrap();
        assert_eq!(name, "upload.wav");
        assert_eq!(o, SearchOptions::default());
        let (name, o) = q("beam=3&nbest=2&attention=true&name=a.wav")
            .unwrap()
            .validate(&limits, &d)
            .unwrap();
        assert_eq!(
            (name.as_str(), o.beam, o.nbest, o.attention),
            ("a.wav", 3, 2, true)
        );
        assert_eq!(
            q("beam=0")
                .unwrap()
                .validate(&limits, &d)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            q("beam=2&nbest=3")
                .unwrap()
                .validate(&limits, &d)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            q("alpha=9")
                .unwrap()
                .validate(&limits, &d)
                .unwrap_err()
                .status,
            400
        );
        assert_eq!(
            q("name=a%0Ab")
                .unwrap()
                .validate(&limits, &d)
                .unwrap_err()
                .status,
            400
        );
        assert!(q("bogus=1").is_err(), "unknown options are refused");
        assert!(q("beam=x").is_err());
    }
}
