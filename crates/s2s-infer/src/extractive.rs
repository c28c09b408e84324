//! Extractive summaries (`s2s extract`): each document's sentences rated by a sentence classifier
//! trained on `s2s data extractive`'s examples, the best kept. The document side (sentences,
//! their position words, the choice) is `s2s_eval::extractive`; the rating is the classifier's
//! probability of [`SUMMARY`], its teacher-forced score of that label ([`Translator::score`]),
//! so an ensemble of classifiers rates with the mean of their probabilities.

use s2s_eval::extractive::{SUMMARY, document_inputs, pick};

use crate::{InferError, Translator};

/// The summary of each of `documents`: its `sentences` best-rated sentences in its own order
/// (an empty line for a document without any), rating `batch_size` sentences at a time.
pub fn extract(
    translator: &Translator,
    documents: &[String],
    sentences: usize,
    batch_size: usize,
) -> Result<Vec<String>, InferError> {
    check_classifier(translator)?;
    let (docs, inputs): (Vec<Vec<String>>, Vec<Vec<String>>) =
        documents.iter().map(|d| document_inputs(d)).unzip();
    let inputs: Vec<String> = inputs.into_iter().flatten().collect();
    let labels = vec![SUMMARY.to_owned(); inputs.len()];
    let ratings: Vec<f64> = translator
        .score(&inputs, &labels, batch_size)?
        .iter()
        .map(|s| s.logprob)
        .collect();
    let mut at = 0;
    Ok(docs
        .iter()
        .map(|sents| {
            let summary = pick(sents, &ratings[at..at + sents.len()], sentences);
            at += sents.len();
            summary
        })
        .collect())
}

/// Whether `translator` is a sentence classifier with the label [`SUMMARY`].
fn check_classifier(translator: &Translator) -> Result<(), InferError> {
    let loaded = translator.loaded();
    let fix = "fix: train a classifier on the examples of s2s data extractive";
    if loaded.run.task != Some(s2s_data::Task::Classification) {
        return Err(InferError::Request(format!(
            "the model is a {:?} model, not a sentence classifier; {fix}",
            loaded.run.task.unwrap_or_default()
        )));
    }
    if !loaded
        .tgt_tokenizer
        .vocab()
        .iter()
        .any(|(label, _)| label == SUMMARY)
    {
        return Err(InferError::Request(format!(
            "the model has no label {SUMMARY:?} (the summary sentence's); {fix}"
        )));
    }
    Ok(())
}
