//! The simple baselines a summarisation or dialogue score is read against, scored the same way
//! as a model's output:
//!
//! - **Lead-N** ([`lead`]): the first N sentences of the input, the classic summarisation
//!   baseline (SciTLDR's Lead-1);
//! - **retrieval** ([`Retrieval`]): the output paired with the training input most similar to
//!   this input (TF-IDF cosine over lowercased words), the classic dialogue baseline.

use std::collections::HashMap;

/// Tokens that end in a period without ending a sentence (compared lowercased, period removed).
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "ca", "cf", "dr", "e.g", "eq", "eqs", "etc", "fig", "figs", "i.e", "inc", "jr",
    "ltd", "mr", "mrs", "ms", "no", "prof", "ref", "refs", "resp", "sec", "secs", "sr", "st",
    "tab", "viz", "vs",
];

/// Closing quotes and brackets that may follow a sentence's final punctuation.
const CLOSERS: &[char] = &['"', '\'', ')', ']', '\u{2019}', '\u{201D}'];
/// Opening quotes and brackets that may precede a sentence's first letter.
const OPENERS: &[char] = &['"', '\'', '(', '[', '\u{2018}', '\u{201C}'];

/// Splits one line of text into sentences at whitespace, where the word before ends in `.`,
/// `!` or `?` (closing quotes and brackets allowed after it) and the word after starts, past
/// any opening quote or bracket, with an upper-case letter or a digit. A period after a known
/// abbreviation (`e.g.`, `Fig.`, `et al.`, `Dr.`) or a single letter (an initial) ends no
/// sentence. Sentences keep their words and single spaces between them.
pub fn split_sentences(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut sentences = Vec::new();
    let mut start = 0;
    for i in 0..words.len() {
        let ends = words
            .get(i + 1)
            .is_some_and(|next| ends_sentence(words[i], next));
        if ends || i + 1 == words.len() {
            sentences.push(words[start..=i].join(" "));
            start = i + 1;
        }
    }
    sentences
}

fn ends_sentence(word: &str, next: &str) -> bool {
    let core = word.trim_end_matches(CLOSERS);
    let Some(last) = core.chars().last() else {
        return false;
    };
    if !matches!(last, '.' | '!' | '?') {
        return false;
    }
    if last == '.' {
        let stem = core[..core.len() - 1]
            .trim_start_matches(OPENERS)
            .to_lowercase();
        let initial = stem.chars().count() == 1 && stem.chars().all(char::is_alphabetic);
        if initial || ABBREVIATIONS.contains(&stem.as_str()) {
            return false;
        }
    }
    next.trim_start_matches(OPENERS)
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
}

/// Lead-N: the first `n` sentences of `text` ([`split_sentences`]), joined by single spaces.
pub fn lead(text: &str, n: usize) -> String {
    let sentences = split_sentences(text);
    sentences[..n.min(sentences.len())].join(" ")
}

/// The lowercased alphanumeric words of `text`: what the retrieval baseline compares.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A sparse TF-IDF vector, L2-normalised: word id -> weight.
type Vector = HashMap<u32, f64>;

/// The retrieval baseline: remembers training (input, output) pairs and answers a new input
/// with the output of the most similar training input, by the cosine of TF-IDF vectors (raw
/// counts times scikit-learn's smoothed idf, `ln((1 + N) / (1 + df)) + 1`). Ties go to the
/// earlier training pair; an input sharing no word with any training input gets the first.
pub struct Retrieval {
    vocab: HashMap<String, u32>,
    idf: Vec<f64>,
    /// Per word id, the training pairs that have it, with its weight there.
    postings: Vec<Vec<(u32, f64)>>,
    outputs: Vec<String>,
}

impl Retrieval {
    /// Indexes the training pairs. Panics if `inputs` and `outputs` differ in length.
    pub fn new(inputs: &[String], outputs: &[String]) -> Self {
        assert_eq!(inputs.len(), outputs.len(), "one output per input");
        let mut vocab: HashMap<String, u32> = HashMap::new();
        let mut counts: Vec<HashMap<u32, f64>> = Vec::with_capacity(inputs.len());
        for input in inputs {
            let mut tf = HashMap::new();
            for w in words(input) {
                let next = vocab.len() as u32;
                let id = *vocab.entry(w).or_insert(next);
                *tf.entry(id).or_insert(0.0) += 1.0;
            }
            counts.push(tf);
        }
        let mut df = vec![0usize; vocab.len()];
        for tf in &counts {
            for &id in tf.keys() {
                df[id as usize] += 1;
            }
        }
        let n = inputs.len() as f64;
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| ((1.0 + n) / (1.0 + d as f64)).ln() + 1.0)
            .collect();
        let mut postings = vec![Vec::new(); vocab.len()];
        for (doc, tf) in counts.into_iter().enumerate() {
            for (id, w) in normalise(tf, &idf) {
                postings[id as usize].push((doc as u32, w));
            }
        }
        Self {
            vocab,
            idf,
            postings,
            outputs: outputs.to_vec(),
        }
    }

    /// The index of the training pair most similar to `input`, and the cosine similarity.
    pub fn nearest(&self, input: &str) -> (usize, f64) {
        let mut tf: HashMap<u32, f64> = HashMap::new();
        for w in words(input) {
            if let Some(&id) = self.vocab.get(&w) {
                *tf.entry(id).or_insert(0.0) += 1.0;
            }
        }
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for (id, w) in normalise(tf, &self.idf) {
            for &(doc, dw) in &self.postings[id as usize] {
                *scores.entry(doc).or_insert(0.0) += w * dw;
            }
        }
        scores
            .into_iter()
            .map(|(doc, s)| (doc as usize, s))
            .fold((0, 0.0), |best, (doc, s)| {
                if s > best.1 || (s == best.1 && doc < best.0) {
                    (doc, s)
                } else {
                    best
                }
            })
    }

    /// The output of the training pair most similar to `input`.
    pub fn respond(&self, input: &str) -> &str {
        &self.outputs[self.nearest(input).0]
    }
}

/// Counts times idf, scaled to unit length (empty for no words).
fn normalise(tf: HashMap<u32, f64>, idf: &[f64]) -> Vector {
    let mut v: Vector = tf
        .into_iter()
        .map(|(id, c)| (id, c * idf[id as usize]))
        .collect();
    let norm = v.values().map(|w| w * w).sum::<f64>().sqrt();
    if norm > 0.0 {
        v.values_mut().for_each(|w| *w /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences_end_at_punctuation_before_a_capital() {
        let text = "We study this. It works well! Does it? \"Yes.\" (Table 2) shows 3.5 points.";
        assert_eq!(
            split_sentences(text),
            [
                "We study this.",
                "It works well!",
                "Does it?",
                "\"Yes.\"",
                "(Table 2) shows 3.5 points."
            ]
        );
    }

    #[test]
    fn abbreviations_initials_and_lower_case_do_not_end_sentences() {
        let text = "Methods (e.g. RNNs) by J. Smith et al. are used in Fig. 3 and vs. others. \
                    see below. Next one.";
        assert_eq!(
            split_sentences(text),
            [
                "Methods (e.g. RNNs) by J. Smith et al. are used in Fig. 3 and vs. others. see below.",
                "Next one."
            ]
        );
        assert_eq!(split_sentences("  "), Vec::<String>::new());
        assert_eq!(split_sentences("no final stop"), ["no final stop"]);
    }

    #[test]
    fn lead_takes_the_first_sentences() {
        let text = "One.  Two!   Three?";
        assert_eq!(lead(text, 1), "One.");
        assert_eq!(lead(text, 2), "One. Two!");
        assert_eq!(lead(text, 9), "One. Two! Three?");
        assert_eq!(lead("", 1), "");
    }

    #[test]
    fn retrieval_answers_with_the_most_similar_input() {
        let inputs: Vec<String> = [
            "cheap food in the north",
            "expensive italian food in the south",
            "where is the train station",
            "cheap food in the north",
        ]
        .map(String::from)
        .to_vec();
        let outputs: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let r = Retrieval::new(&inputs, &outputs);
        assert_eq!(r.respond("I want Italian food, South please"), "b");
        assert_eq!(r.respond("the STATION?"), "c");
        // Identical inputs tie: the earlier pair wins; the similarity of equal texts is 1.
        let (i, s) = r.nearest("cheap food in the north");
        assert_eq!(i, 0);
        assert!((s - 1.0).abs() < 1e-12, "{s}");
        // Rare words weigh more than common ones: "station" outweighs "the".
        assert_eq!(r.respond("the the the station"), "c");
        // Nothing in common: the first pair.
        assert_eq!(r.nearest("zzz"), (0, 0.0));
    }
}
