//! Extractive summarisation as sentence classification (the BertSumExt shape, with a classifier
//! trained from scratch): a document's summary is the sentence a classifier rates most likely to
//! be the one closest to the reference. This module is everything but the classifier: how a
//! document becomes the classifier's inputs ([`document_inputs`]: its sentences, each marked
//! with where it stands), which sentence a training document's reference is closest to
//! ([`oracle`], the label), and how the classifier's ratings become a summary ([`pick`]).

use crate::baseline::split_sentences;
use crate::rouge::{RougeConfig, RougeType, sentence_rouge};

/// The label of the sentence closest to the reference.
pub const SUMMARY: &str = "1";
/// The label of every other sentence.
pub const OTHER: &str = "0";

/// Sentence positions with a word of their own; later ones share the last
/// (`sentpos0` .. `sentpos7`).
pub const POSITIONS: usize = 8;

/// A sentence as the classifier reads it: two words for where it stands (`sentpos{i}`, capped
/// at [`POSITIONS`] - 1, and `sentlast` or `sentmore`), then the sentence. Position matters
/// (Lead-1 is the baseline to beat) and a classifier of one sentence cannot see it otherwise;
/// plain lowercase words pass every tokenizer whole.
pub fn marked(sentence: &str, index: usize, count: usize) -> String {
    let tail = if index + 1 >= count {
        "sentlast"
    } else {
        "sentmore"
    };
    format!("sentpos{} {tail} {sentence}", index.min(POSITIONS - 1))
}

/// A document's sentences ([`split_sentences`]), and each one [`marked`].
pub fn document_inputs(document: &str) -> (Vec<String>, Vec<String>) {
    let sentences = split_sentences(document);
    let n = sentences.len();
    let inputs = (0..n).map(|i| marked(&sentences[i], i, n)).collect();
    (sentences, inputs)
}

/// The index of the sentence closest to `reference`: the highest mean of ROUGE-1, -2 and -L
/// F-measures with the stemmer (what `best_by = "rouge"` and `s2s tune --metric rouge` rank by),
/// the first of equals. `None` for no sentences.
pub fn oracle(sentences: &[String], reference: &str) -> Option<usize> {
    let cfg = RougeConfig {
        types: vec![RougeType::N(1), RougeType::N(2), RougeType::L],
        ..RougeConfig::default()
    };
    let mut best: Option<(usize, f64)> = None;
    for (i, s) in sentences.iter().enumerate() {
        let scores = sentence_rouge(s, &[reference], &cfg);
        let mean = scores.iter().map(|r| r.fmeasure).sum::<f64>() / scores.len() as f64;
        if best.is_none_or(|(_, b)| mean > b) {
            best = Some((i, mean));
        }
    }
    best.map(|(i, _)| i)
}

/// A training document's examples: every sentence, [`marked`], labelled [`SUMMARY`] if it is
/// the [`oracle`] sentence for `reference` and [`OTHER`] if not.
pub fn labelled(document: &str, reference: &str) -> Vec<(&'static str, String)> {
    let (sentences, inputs) = document_inputs(document);
    let best = oracle(&sentences, reference);
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| (if Some(i) == best { SUMMARY } else { OTHER }, input))
        .collect()
}

/// The summary: the `n` sentences with the highest `ratings` (the earlier of equals), in the
/// document's order, joined by spaces.
pub fn pick(sentences: &[String], ratings: &[f64], n: usize) -> String {
    assert_eq!(sentences.len(), ratings.len(), "one rating per sentence");
    let mut order: Vec<usize> = (0..sentences.len()).collect();
    order.sort_by(|&a, &b| ratings[b].total_cmp(&ratings[a]).then(a.cmp(&b)));
    let mut chosen = order[..n.min(order.len())].to_vec();
    chosen.sort_unstable();
    chosen
        .iter()
        .map(|&i| sentences[i].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_are_marked_with_where_they_stand() {
        let (sentences, inputs) =
            document_inputs("We study cats. Cats purr. Dogs bark. Fish swim.");
        assert_eq!(sentences.len(), 4, "{sentences:?}");
        assert_eq!(inputs[0], "sentpos0 sentmore We study cats.");
        assert_eq!(inputs[3], "sentpos3 sentlast Fish swim.");
        let many: Vec<String> = (0..12).map(|i| format!("Sentence {i} is here.")).collect();
        let (_, inputs) = document_inputs(&many.join(" "));
        assert_eq!(inputs.len(), 12);
        assert!(inputs[9].starts_with("sentpos7 sentmore "), "{}", inputs[9]);
        assert!(
            inputs[11].starts_with("sentpos7 sentlast "),
            "{}",
            inputs[11]
        );
    }

    #[test]
    fn the_label_goes_to_the_sentence_closest_to_the_reference() {
        let doc = "Deep nets forget. We propose FearNet, a memory model. It is efficient.";
        let got = labelled(doc, "FearNet is a brain-inspired memory model");
        let labels: Vec<&str> = got.iter().map(|(l, _)| *l).collect();
        assert_eq!(labels, [OTHER, SUMMARY, OTHER]);
        assert!(got[1].1.ends_with("We propose FearNet, a memory model."));
        // Nothing in common: the first of equals.
        let got = labelled(doc, "zzz");
        assert_eq!(got[0].0, SUMMARY);
        assert_eq!(oracle(&[], "zzz"), None);
    }

    #[test]
    fn the_best_rated_sentences_come_back_in_the_documents_order() {
        let s: Vec<String> = ["a.", "b.", "c.", "d."].map(String::from).to_vec();
        assert_eq!(pick(&s, &[0.1, 0.9, 0.3, 0.5], 1), "b.");
        assert_eq!(pick(&s, &[0.1, 0.9, 0.3, 0.5], 2), "b. d.");
        assert_eq!(pick(&s, &[0.5, 0.5, 0.5, 0.5], 2), "a. b.");
        assert_eq!(pick(&s, &[0.1, 0.9, 0.3, 0.5], 9), "a. b. c. d.");
        assert_eq!(pick(&[], &[], 1), "");
    }
}
