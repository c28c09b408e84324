//! SentencePiece models in and out: a Marian model's `source.spm`/`target.spm` with its joint
//! `vocab.json` become [`TextTokenizer`]s that segment exactly as `MarianTokenizer` does, and a
//! `unigram` tokenizer is written back as a SentencePiece model for `s2s export`.
//!
//! `MarianTokenizer` segments with one side's SentencePiece model and then looks each piece up in
//! the joint vocabulary (unknown pieces by their surface). The tokenizer built here keeps the
//! joint ids: pieces of this side's model carry their scores, every other entry is stored with
//! [`FOREIGN_PREFIX`] so that segmentation never produces it, and [`TextTokenizer`] looks an
//! unknown surface up among them.

use std::collections::HashMap;

use prost::Message;
use sentencepiece_model::{
    ModelProto, ModelType, NormalizerSpec, SentencePiece, TrainerSpec, Type,
};
use tokenizers::models::unigram::Unigram;
use tokenizers::{AddedToken, Tokenizer};

use crate::error::{DataError, Result};
use crate::tokenizer::{
    FOREIGN_PREFIX, MARIAN_EOS, MARIAN_PAD, MARIAN_UNK, SPECIAL_TOKENS, TextTokenizer, spm_pipeline,
};

fn spm_err(what: &str, message: impl Into<String>) -> DataError {
    DataError::Tokenizer {
        what: what.to_owned(),
        message: message.into(),
    }
}

/// A parsed SentencePiece model.
pub struct SpmModel {
    proto: ModelProto,
}

impl SpmModel {
    /// Parses the bytes of a `.spm`/`.model` file; `what` names it in errors. Only unigram
    /// models without byte fallback are accepted (OPUS-MT's kind).
    pub fn parse(bytes: &[u8], what: &str) -> Result<Self> {
        let proto = ModelProto::decode(bytes).map_err(|e| {
            spm_err(
                what,
                format!(
                    "not a SentencePiece model ({e}); fix: pass the model's source.spm/target.spm"
                ),
            )
        })?;
        let trainer = proto.trainer_spec.clone().unwrap_or_default();
        if trainer.model_type() != ModelType::Unigram {
            return Err(spm_err(
                what,
                format!(
                    "SentencePiece model type {:?} is not supported; only unigram models (OPUS-MT's) are",
                    trainer.model_type()
                ),
            ));
        }
        if trainer.byte_fallback() {
            return Err(spm_err(
                what,
                "SentencePiece byte fallback is not supported; only models without it are",
            ));
        }
        if trainer.treat_whitespace_as_suffix() {
            return Err(spm_err(
                what,
                "`treat_whitespace_as_suffix` is not supported; only prefix-marked models are",
            ));
        }
        Ok(Self { proto })
    }

    /// The scores of the ordinary pieces (not control or unknown ones).
    fn scores(&self) -> HashMap<&str, f64> {
        self.proto
            .pieces
            .iter()
            .filter(|p| matches!(p.r#type(), Type::Normal | Type::UserDefined))
            .map(|p| (p.piece(), p.score() as f64))
            .collect()
    }

    fn normalizer(&self) -> NormalizerSpec {
        self.proto.normalizer_spec.clone().unwrap_or_default()
    }
}

/// Whether `token` is a Marian target-language tag such as `>>cmn_Hans<<`.
pub fn is_language_tag(token: &str) -> bool {
    token.len() > 4 && token.starts_with(">>") && token.ends_with("<<")
}

/// The tokenizer of one side of a Marian model: segmentation by `spm`, ids of `vocab` (the
/// joint vocabulary in id order, as `vocab.json` gives it). `what` names the files in errors.
pub fn marian_tokenizer(spm: &SpmModel, vocab: &[String], what: &str) -> Result<TextTokenizer> {
    let scores = spm.scores();
    let specials = [MARIAN_EOS, MARIAN_UNK, MARIAN_PAD];
    let unk_id = vocab
        .iter()
        .position(|t| t == MARIAN_UNK)
        .ok_or_else(|| spm_err(what, format!("vocab.json has no {MARIAN_UNK}")))?;
    let entries: Vec<(String, f64)> = vocab
        .iter()
        .map(|t| match scores.get(t.as_str()) {
            Some(&score) => (t.clone(), score),
            None if specials.contains(&t.as_str()) => (t.clone(), 0.0),
            None => (format!("{FOREIGN_PREFIX}{t}"), 0.0),
        })
        .collect();
    let unigram = Unigram::from(entries, Some(unk_id), false)
        .map_err(|e| spm_err(what, format!("cannot build the unigram model: {e}")))?;
    let mut tok = Tokenizer::new(unigram);
    let norm = spm.normalizer();
    spm_pipeline(
        &mut tok,
        norm.precompiled_charsmap(),
        norm.add_dummy_prefix(),
    )?;
    // Typed specials are control tokens, as in `MarianTokenizer`.
    tok.add_special_tokens(
        &specials
            .iter()
            .map(|t| AddedToken::from(*t, true))
            .collect::<Vec<_>>(),
    );
    TextTokenizer::from_tokenizer(tok, what)
}

/// A SentencePiece model of a `unigram` tokenizer trained by s2s (`s2s prepare --tokenizer
/// unigram`): its pieces and scores, with the identity normalisation its pipeline has.
pub fn to_spm(tok: &TextTokenizer, what: &str) -> Result<Vec<u8>> {
    let json: serde_json::Value = serde_json::from_str(&tok.to_json()?)
        .map_err(|e| spm_err(what, format!("cannot read the tokenizer back: {e}")))?;
    let model = &json["model"];
    if model["type"] != "Unigram" {
        return Err(spm_err(
            what,
            format!(
                "a {} tokenizer cannot be written as a SentencePiece model; fix: prepare the data \
                 with `--tokenizer unigram`",
                model["type"].as_str().unwrap_or("non-unigram")
            ),
        ));
    }
    if json["normalizer"].to_string().contains("Precompiled") {
        return Err(spm_err(
            what,
            "the tokenizer has a precompiled normalisation map; export the SentencePiece files it \
             was imported from instead",
        ));
    }
    let specials: Vec<&str> = SPECIAL_TOKENS
        .iter()
        .copied()
        .chain([MARIAN_EOS, MARIAN_UNK, MARIAN_PAD])
        .collect();
    let piece = |p: &str, score: f32, kind: Type| {
        let mut sp = SentencePiece {
            piece: Some(p.to_owned()),
            score: Some(score),
            ..Default::default()
        };
        sp.set_type(kind);
        sp
    };
    let mut pieces = vec![
        piece("<unk>", 0.0, Type::Unknown),
        piece("<s>", 0.0, Type::Control),
        piece("</s>", 0.0, Type::Control),
    ];
    for entry in model["vocab"].as_array().into_iter().flatten() {
        let (Some(p), Some(score)) = (entry[0].as_str(), entry[1].as_f64()) else {
            return Err(spm_err(what, "the unigram vocabulary is malformed"));
        };
        if specials.contains(&p) || p.starts_with(FOREIGN_PREFIX) || is_language_tag(p) {
            continue;
        }
        pieces.push(piece(p, score as f32, Type::Normal));
    }
    let mut trainer = TrainerSpec {
        vocab_size: Some(pieces.len() as i32),
        unk_id: Some(0),
        bos_id: Some(1),
        eos_id: Some(2),
        pad_id: Some(-1),
        byte_fallback: Some(false),
        ..Default::default()
    };
    trainer.set_model_type(ModelType::Unigram);
    let normalizer = NormalizerSpec {
        name: Some("identity".to_owned()),
        precompiled_charsmap: Some(Vec::new()),
        add_dummy_prefix: Some(true),
        remove_extra_whitespaces: Some(true),
        escape_whitespaces: Some(true),
        ..Default::default()
    };
    let proto = ModelProto {
        pieces,
        trainer_spec: Some(trainer),
        normalizer_spec: Some(normalizer),
        ..Default::default()
    };
    Ok(proto.encode_to_vec())
}

/// `MarianTokenizer`'s handling of a target-language tag (transformers 5): text that starts with
/// `>>` and has a `<<` is split after the first `<<`, into the tag and the rest.
pub fn split_language_tag(text: &str) -> (Option<&str>, &str) {
    match text.strip_prefix(">>").and_then(|_| text.find("<<")) {
        Some(end) => (Some(&text[..end + 2]), &text[end + 2..]),
        None => (None, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_tags_follow_marian_tokenizer() {
        assert_eq!(
            split_language_tag(">>cmn_Hans<< Hello"),
            (Some(">>cmn_Hans<<"), " Hello")
        );
        // Only at the start; the first `<<` ends the tag.
        assert_eq!(split_language_tag("a >>x<< b"), (None, "a >>x<< b"));
        assert_eq!(split_language_tag(">>a<< b <<"), (Some(">>a<<"), " b <<"));
        assert_eq!(split_language_tag(">><< x"), (Some(">><<"), " x"));
        assert_eq!(split_language_tag("plain"), (None, "plain"));
    }
}
