//! The tasks other than translation end to end on synthetic data prepared with the real
//! pipeline: a tagger must learn a tagging rule that needs the left neighbour, a classifier a
//! counting rule; both are then labelled through the translator (the path of `s2s translate`
//! and `s2s serve`) and scored with the eval crate; a tagger that reads spellings tags words it
//! never saw. A labeller resumes exactly like a translation model, word dropout and spellings
//! included. A generator (1 vs N) must write the sequence its label asks for, with the
//! condition given at the first step only or at every step, and its label must lower the
//! perplexity of the references (`s2s score`).

mod common;

use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_data::{DataDir, PrepareConfig, Task};
use std::path::Path;

/// Digit sentences tagged UP / DOWN / SAME against the previous digit (`FIRST` for the first):
/// no tag can be read off its own token.
fn tagging_pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = rng.random_range(2..=8);
            let digits: Vec<u32> = (0..len).map(|_| rng.random_range(0..6)).collect();
            let tags: Vec<&str> = digits
                .iter()
                .enumerate()
                .map(
                    |(i, &d)| match i.checked_sub(1).map(|p| digits[p].cmp(&d)) {
                        None => "FIRST",
                        Some(std::cmp::Ordering::Less) => "UP",
                        Some(std::cmp::Ordering::Greater) => "DOWN",
                        Some(std::cmp::Ordering::Equal) => "SAME",
                    },
                )
                .collect();
            let words: Vec<String> = digits.iter().map(|d| format!("d{d}")).collect();
            (words.join(" "), tags.join(" "))
        })
        .collect()
}

/// The suffixes of [`suffix_pairs`] and the tag each gives: made up, so that no unknown-word
/// signature tells them apart (every unseen word's is `<unk-lc>`).
const SUFFIXES: [(&str, &str); 4] = [("ax", "ANT"), ("oz", "BEE"), ("uk", "CAT"), ("ev", "DOG")];

/// Sentences of made-up words, each a random stem of 5-8 letters (the split's seed draws them,
/// so another split's words are new to the vocabulary) and a suffix that gives its tag: a
/// tagger can tag an unseen word only by reading its spelling.
fn suffix_pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = rng.random_range(2..=6);
            let (words, tags): (Vec<String>, Vec<&str>) = (0..len)
                .map(|_| {
                    let stem: String = (0..rng.random_range(5..=8))
                        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
                        .collect();
                    let (suffix, tag) = SUFFIXES[rng.random_range(0..SUFFIXES.len())];
                    (format!("{stem}{suffix}"), tag)
                })
                .unzip();
            (words.join(" "), tags.join(" "))
        })
        .collect()
}

/// Sentences of `x` and `y` words (odd lengths), labelled by which word is in the majority.
fn classification_pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = 2 * rng.random_range(1..=4) + 1;
            let words: Vec<&str> = (0..len)
                .map(|_| if rng.random_bool(0.5) { "x" } else { "y" })
                .collect();
            let xs = words.iter().filter(|w| **w == "x").count();
            let label = if 2 * xs > len { "MORE_X" } else { "MORE_Y" };
            (words.join(" "), label.to_owned())
        })
        .collect()
}

/// Digit runs that go `up` or `down` from a random start: after the first digit, the label
/// decides every token.
fn generation_pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let up = rng.random_bool(0.5);
            let len: i32 = rng.random_range(3..=6);
            let start: i32 = if up {
                rng.random_range(0..=10 - len)
            } else {
                rng.random_range(len - 1..=9)
            };
            let step = if up { 1 } else { -1 };
            let words: Vec<String> = (0..len).map(|i| format!("d{}", start + step * i)).collect();
            let label = if up { "up" } else { "down" };
            (label.to_owned(), words.join(" "))
        })
        .collect()
}

fn prepare(root: &Path, task: Task, pairs: fn(usize, u64) -> Vec<(String, String)>) -> DataDir {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let mut cfg = PrepareConfig::new(
        write_split(&raw, "train", &pairs(1500, 1)),
        root.join("data"),
    );
    cfg.task = task;
    if task == Task::Generation {
        cfg.tgt_tokenizer = Some(s2s_data::TokenizerKind::Word);
    }
    cfg.valid = Some(write_split(&raw, "valid", &pairs(200, 2)));
    cfg.test = Some(write_split(&raw, "test", &pairs(200, 3)));
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let data = s2s_data::load_data_dir(root.join("data")).unwrap();
    assert_eq!(data.meta.options.task, task);
    data
}

fn config(data: &DataDir, arch: &str, max_steps: usize) -> s2s_infer::RunConfig {
    run_config(
        arch,
        data,
        &format!(
            "max_steps = {max_steps}\nmax_tokens = 800\nlr = 5e-3\nwarmup_steps = 10\nvalid_every = 50\npatience = 0\nmax_epochs = 1000\n"
        ),
    )
}

/// Test accuracy (percent) of the best model in `model_dir`, labelled by the translator and
/// scored by the eval crate, as `s2s translate` and `s2s eval --metrics accuracy` would.
fn test_accuracy(model_dir: &Path, data: &DataDir, run: &s2s_infer::RunConfig) -> f64 {
    s2s_infer::model_dir::create(model_dir, run, data).unwrap();
    let translator = s2s_infer::Translator::load(model_dir, &burn::tensor::Device::flex()).unwrap();
    let test = data.test.as_ref().unwrap();
    let search = translator.search_defaults(s2s_search::Strategy::Greedy);
    let hyps = translator.translate_best(&test.src, &search, 32).unwrap();
    s2s_eval::labels::label_scores(&hyps, &test.tgt)
        .unwrap()
        .accuracy
}

/// Trains `arch` on `task` data for 300 steps; asserts that validation and test accuracy (through
/// the translator) reach `floor` percent, and returns the last validation record.
fn learns(
    task: Task,
    pairs: fn(usize, u64) -> Vec<(String, String)>,
    arch: &str,
    floor: f64,
) -> s2s_infer::metrics::MetricsRecord {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path(), task, pairs);
    let run = config(&data, arch, 300);
    assert_eq!(run.train.best_by, s2s_infer::config::BestBy::Accuracy);
    let model_dir = dir.path().join("model");
    let last = train(&model_dir, &data, &run, false).last.unwrap();
    let valid = last.valid_accuracy;
    assert!(valid >= floor, "{arch}: valid accuracy {valid}");
    let acc = test_accuracy(&model_dir, &data, &run);
    assert!(acc >= floor, "{arch}: test accuracy {acc}");
    last
}

#[test]
fn a_tagger_learns_a_rule_that_needs_context() {
    let last = learns(Task::Tagging, tagging_pairs, "bilstm-tagger-tiny", 97.0);
    assert!(last.valid_bleu.is_nan(), "a tagger has no BLEU");
}

/// The tagger preset reads each word's characters: trained on [`suffix_pairs`], it tags the
/// test split, whose words it has never seen (`<unk>` to its vocabulary), by their suffixes
/// through the translator, and `s2s score` scores its tags; the same model with the character
/// model off can only guess.
#[test]
fn a_character_aware_tagger_tags_unseen_words_by_their_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path(), Task::Tagging, suffix_pairs);
    let test = data.test.as_ref().unwrap();
    let words: Vec<&str> = test.src.iter().flat_map(|s| s.split(' ')).collect();
    let known = words
        .iter()
        .filter(|w| data.src_tokenizer.token_to_id(w).is_some())
        .count();
    assert!(
        known * 100 <= words.len(),
        "{known} of {} test words are known",
        words.len()
    );
    let text = |maps: usize| {
        format!(
            "arch = \"bilstm-tagger-tiny\"\n[model.chars]\nmaps = {maps}\n[train]\nmax_steps = 300\n\
             max_tokens = 800\nlr = 5e-3\nwarmup_steps = 10\nvalid_every = 50\npatience = 0\n\
             max_epochs = 1000\n"
        )
    };
    let spelled = run_config_toml(&data, &text(16));
    assert!(spelled.model.reads_characters());
    let model_dir = dir.path().join("spelled");
    let last = train(&model_dir, &data, &spelled, false).last.unwrap();
    assert!(
        last.valid_accuracy >= 95.0,
        "valid accuracy {}",
        last.valid_accuracy
    );
    let acc = test_accuracy(&model_dir, &data, &spelled);
    eprintln!("with characters: test accuracy {acc}");
    assert!(acc >= 95.0, "test accuracy {acc}");

    let translator =
        s2s_infer::Translator::load(&model_dir, &burn::tensor::Device::flex()).unwrap();
    assert!(translator.reads_characters());
    let scores = translator.score(&test.src, &test.tgt, 16).unwrap();
    let tags: usize = test.tgt.iter().map(|t| t.split(' ').count()).sum();
    assert_eq!(scores.iter().map(|s| s.tokens).sum::<usize>(), tags);
    let mean = scores.iter().map(|s| s.logprob).sum::<f64>() / tags as f64;
    assert!(
        mean > (0.5f64).ln(),
        "mean log-probability of the gold tags {mean}"
    );
    // Ids alone do not say how a word is spelled.
    let search = translator.search_defaults(s2s_search::Strategy::Greedy);
    let ids: Vec<s2s_infer::TextSource> = vec![translator.encode(&test.src[0]).into()];
    assert!(translator.search(&ids, &search, 1).is_err());

    let words_only = run_config_toml(&data, &text(0));
    assert!(!words_only.model.reads_characters());
    let model_dir = dir.path().join("words");
    train(&model_dir, &data, &words_only, false);
    let acc = test_accuracy(&model_dir, &data, &words_only);
    eprintln!("without characters: test accuracy {acc}");
    assert!(acc < 50.0, "without characters, test accuracy {acc}");
}

#[test]
fn a_classifier_learns_a_counting_rule() {
    learns(
        Task::Classification,
        classification_pairs,
        "bilstm-classifier-tiny",
        95.0,
    );
}

#[test]
fn a_labeller_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path(), Task::Tagging, tagging_pairs);
    let text = |steps: usize| {
        format!(
            "arch = \"bilstm-tagger-tiny\"\n[model]\ndropout = 0.3\n[train]\nmax_steps = {steps}\nmax_tokens = 600\nlr = 3e-3\nwarmup_steps = 5\nvalid_every = 10\npatience = 0\nword_dropout = 0.2\n"
        )
    };
    let straight = dir.path().join("straight");
    train(&straight, &data, &run_config_toml(&data, &text(40)), false);
    let halves = dir.path().join("halves");
    train(&halves, &data, &run_config_toml(&data, &text(20)), false);
    train(&halves, &data, &run_config_toml(&data, &text(40)), true);
    assert_eq!(assert_same_metrics(&straight, &halves), 4);
    assert_same_checkpoint(
        &straight,
        &halves,
        &run_config_toml(&data, &text(40)),
        "bilstm-tagger-tiny",
    );
}

/// The digits of a generated run, in order.
fn digits(text: &str) -> Vec<i32> {
    text.split(' ')
        .map(|w| w.trim_start_matches('d').parse().unwrap())
        .collect()
}

/// Trains the encoder-decoder `arch` on `up`/`down` runs; asserts that it writes a run in the
/// direction of its label, that `s2s score` gives the validation perplexity training logged,
/// and that the right labels make the test references far likelier than swapped ones.
fn generates(arch: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path(), Task::Generation, generation_pairs);
    let run = config(&data, arch, 300);
    assert_eq!(run.train.best_by, s2s_infer::config::BestBy::Loss);
    let model_dir = dir.path().join("model");
    let last = train(&model_dir, &data, &run, false).last.unwrap();
    assert!(
        last.valid_bleu.is_nan(),
        "{arch}: generation is not scored by BLEU"
    );

    s2s_infer::model_dir::create(&model_dir, &run, &data).unwrap();
    let translator =
        s2s_infer::Translator::load(&model_dir, &burn::tensor::Device::flex()).unwrap();
    let mut search = translator.search_defaults(s2s_search::Strategy::Greedy);
    // At most 1 token for a translation of a one-token source; a condition does not bound it.
    search.max_len_ratio = Some(s2s_search::LenRatio {
        ratio: 0.0,
        offset: 1,
    });
    let labels: Vec<String> = ["up", "down"].map(String::from).to_vec();
    let runs = translator.translate_best(&labels, &search, 2).unwrap();
    for (label, text) in labels.iter().zip(&runs) {
        let d = digits(text);
        let step = if label == "up" { 1 } else { -1 };
        assert!(
            d.len() >= 3 && d.windows(2).all(|w| w[1] - w[0] == step),
            "{arch}: `{label}` gave `{text}`"
        );
    }

    let ppl = |sources: &[String], refs: &[String]| {
        let scores = translator.score(sources, refs, 32).unwrap();
        let logprob: f64 = scores.iter().map(|s| s.logprob).sum();
        let tokens: usize = scores.iter().map(|s| s.tokens).sum();
        (-logprob / tokens as f64).exp()
    };
    let valid = data.valid.as_ref().unwrap();
    let valid_ppl = ppl(&valid.src, &valid.tgt);
    // The best model is the last one only if the loss fell at the last validation; score the
    // validation of the record that chose it.
    let best = s2s_infer::metrics::read(&model_dir.join("metrics.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.valid_ppl)
        .fold(f64::INFINITY, f64::min);
    assert!(
        (valid_ppl - best).abs() <= 1e-6 * best,
        "{arch}: s2s score gives {valid_ppl}, training logged {best}"
    );
    let test = data.test.as_ref().unwrap();
    let swapped: Vec<String> = test
        .src
        .iter()
        .map(|l| if l == "up" { "down" } else { "up" }.to_owned())
        .collect();
    let (right, wrong) = (ppl(&test.src, &test.tgt), ppl(&swapped, &test.tgt));
    assert!(
        right < 0.5 * wrong,
        "{arch}: perplexity {right} with the right labels, {wrong} with swapped ones"
    );
}

#[test]
fn a_generator_conditioned_at_the_first_step_writes_what_its_label_asks() {
    generates("rnn-lstm-tiny");
}

#[test]
fn a_generator_conditioned_at_every_step_writes_what_its_label_asks() {
    generates("rnn-gru-cho-tiny");
}
