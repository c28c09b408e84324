//! Speech recognition end to end on synthetic audio prepared with the real pipeline: WAV files
//! of "spoken" words (each word a tone of its own pitch and length, at two sample rates:
//! `s2s_data::audio::write_tone_corpus`), a manifest, `prepare --task asr`, a speech Transformer trained to transcribe them, and
//! transcripts through the translator (the path of `s2s translate` and `s2s serve`) scored by
//! word error rate, by the attention decoder and by the joint CTC head alone. A speech model
//! resumes exactly, SpecAugment included, and transcribes a file the same alone as in a batch.

mod common;

use common::*;
use s2s_data::audio::SpecAugment;
use s2s_data::{CorpusSource, DataDir, PrepareConfig, Task, TokenizerKind};
use std::path::Path;

fn write_manifest(dir: &Path, name: &str, n: usize, seed: u64) -> CorpusSource {
    let path = s2s_data::audio::write_tone_corpus(dir, name, n, seed).unwrap();
    CorpusSource::Manifest { path }
}

fn prepare(root: &Path) -> DataDir {
    let raw = root.join("raw");
    let mut cfg = PrepareConfig::new(write_manifest(&raw, "train", 600, 1), root.join("data"));
    cfg.task = Task::Asr;
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    cfg.valid = Some(write_manifest(&raw, "valid", 60, 2));
    cfg.test = Some(write_manifest(&raw, "test", 60, 3));
    cfg.fbank.sample_rate = 8_000;
    cfg.fbank.n_mels = 20;
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let data = s2s_data::load_data_dir(root.join("data")).unwrap();
    assert_eq!(data.meta.options.task, Task::Asr);
    assert_eq!(data.source_width(), 20);
    let frames = data
        .train
        .frames
        .as_ref()
        .expect("a speech split has frames");
    assert_eq!(frames.len(), 600);
    data
}

fn config(data: &DataDir, steps: usize, extra: &str) -> s2s_infer::RunConfig {
    run_config(
        "speech-transformer-tiny",
        data,
        &format!(
            "max_steps = {steps}\nmax_tokens = 4000\nlr = 3e-3\nwarmup_steps = 20\nvalid_every = 50\npatience = 0\nmax_epochs = 1000\n{extra}"
        ),
    )
}

/// Word error rate (percent) of the best model's greedy transcripts of `paths`.
fn transcribe(translator: &s2s_infer::Translator, paths: &[String], batch: usize) -> Vec<String> {
    let search = translator.search_defaults(s2s_search::Strategy::Greedy);
    translator.translate_best(paths, &search, batch).unwrap()
}

#[test]
fn a_speech_transformer_learns_to_transcribe_tones() {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path());
    let run = config(&data, 600, "");
    assert_eq!(run.train.best_by, s2s_infer::config::BestBy::Wer);
    let model_dir = dir.path().join("model");
    let last = train(&model_dir, &data, &run, false).last.unwrap();
    assert!(last.valid_bleu.is_nan(), "speech is scored by WER");
    let best = s2s_infer::metrics::read(&model_dir.join("metrics.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.valid_wer)
        .fold(f64::INFINITY, f64::min);
    assert!(best <= 5.0, "best valid WER {best}");

    s2s_infer::model_dir::create(&model_dir, &run, &data).unwrap();
    let translator =
        s2s_infer::Translator::load(&model_dir, &burn::tensor::Device::flex()).unwrap();
    assert!(translator.reads_audio());
    let test = data.test.as_ref().unwrap();
    let hyps = transcribe(&translator, &test.src, 16);
    let refs = [&test.tgt[..]];
    let wer = s2s_eval::corpus_error_counts(&hyps, &refs, s2s_eval::Units::Tokens, false)
        .unwrap()
        .rate();
    assert!(wer <= 8.0, "test WER {wer}: {:?}", &hyps[..5]);
    // Batch invariance: each file alone gets the transcript it got in a batch.
    let alone: Vec<String> = test.src[..8]
        .iter()
        .flat_map(|p| transcribe(&translator, std::slice::from_ref(p), 1))
        .collect();
    assert_eq!(alone, hyps[..8].to_vec());
    // The joint CTC head decodes on its own (`--search ctc`), alone as in a batch.
    let ctc = translator.search_defaults(s2s_search::Strategy::Ctc);
    let ctc_hyps = translator.translate_best(&test.src, &ctc, 16).unwrap();
    let ctc_wer = s2s_eval::corpus_error_counts(&ctc_hyps, &refs, s2s_eval::Units::Tokens, false)
        .unwrap()
        .rate();
    assert!(
        ctc_wer <= 20.0,
        "CTC test WER {ctc_wer}: {:?}",
        &ctc_hyps[..5]
    );
    let ctc_alone: Vec<String> = test.src[..8]
        .iter()
        .flat_map(|p| {
            translator
                .translate_best(std::slice::from_ref(p), &ctc, 1)
                .unwrap()
        })
        .collect();
    assert_eq!(ctc_alone, ctc_hyps[..8].to_vec());
    // The attention is over the audio's encoder positions, labelled with their times.
    let search = translator.search_defaults(s2s_search::Strategy::Greedy);
    let search = s2s_search::SearchConfig {
        return_attention: true,
        ..search
    };
    let t = translator.translate(&test.src[..1], &search, 1).unwrap();
    let attn = t[0].hyps[0].attention.as_ref().unwrap();
    assert_eq!(attn.src.first().map(String::as_str), Some("0.00s"));
    assert_eq!(attn.mean[0].len(), attn.src.len());
    // `s2s score` reads the audio as training did: the best model's validation perplexity.
    let valid = data.valid.as_ref().unwrap();
    let scores = translator.score(&valid.src, &valid.tgt, 16).unwrap();
    let logprob: f64 = scores.iter().map(|s| s.logprob).sum();
    let tokens: usize = scores.iter().map(|s| s.tokens).sum();
    let ppl = (-logprob / tokens as f64).exp();
    let logged: Vec<f64> = s2s_infer::metrics::read(&model_dir.join("metrics.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.valid_ppl)
        .collect();
    assert!(
        logged.iter().any(|p| (p - ppl).abs() <= 1e-4 * p),
        "s2s score gives {ppl}, training logged {logged:?}"
    );
}

#[test]
fn a_speech_model_resumes_exactly_with_spec_augment() {
    let dir = tempfile::tempdir().unwrap();
    let data = prepare(dir.path());
    let run = |steps: usize| {
        let mut run = config(&data, steps, "");
        run.train.valid_every = 10;
        run.train.spec_augment = SpecAugment {
            freq_masks: 2,
            freq_width: 4,
            time_masks: 2,
            time_width: 10,
            time_ratio: 0.2,
        };
        run
    };
    assert!(!run(40).train.spec_augment.is_off());
    let straight = dir.path().join("straight");
    train(&straight, &data, &run(40), false);
    let halves = dir.path().join("halves");
    train(&halves, &data, &run(20), false);
    train(&halves, &data, &run(40), true);
    assert_eq!(assert_same_metrics(&straight, &halves), 4);
    assert_same_checkpoint(&straight, &halves, &run(40), "speech-transformer-tiny");
}

fn first_word_manifest(dir: &Path, name: &str, n: usize, seed: u64) -> CorpusSource {
    let path = s2s_data::audio::write_first_tone_labels(dir, name, n, seed).unwrap();
    CorpusSource::Manifest { path }
}

#[test]
fn a_speech_classifier_learns_the_first_tone_of_an_utterance() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let mut cfg = PrepareConfig::new(
        first_word_manifest(&raw, "train", 600, 1),
        dir.path().join("data"),
    );
    cfg.task = Task::Classification;
    cfg.valid = Some(first_word_manifest(&raw, "valid", 60, 2));
    cfg.test = Some(first_word_manifest(&raw, "test", 100, 3));
    cfg.fbank.sample_rate = 8_000;
    cfg.fbank.n_mels = 20;
    assert!(cfg.reads_audio());
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let data = s2s_data::load_data_dir(dir.path().join("data")).unwrap();
    assert_eq!(data.meta.options.task, Task::Classification);
    assert_eq!(
        data.source_width(),
        20,
        "an audio source is as wide as its bins"
    );
    // The four words and the specials.
    assert_eq!(data.tgt_tokenizer.vocab_size(), 4 + 4);

    let run = run_config(
        "speech-classifier-tiny",
        &data,
        "max_steps = 300\nmax_tokens = 4000\nlr = 3e-3\nwarmup_steps = 20\nvalid_every = 50\npatience = 0\nmax_epochs = 1000\n",
    );
    assert!(run.model.reads_audio());
    assert_eq!(run.train.best_by, s2s_infer::config::BestBy::Accuracy);
    let model_dir = dir.path().join("model");
    train(&model_dir, &data, &run, false);
    let best = s2s_infer::metrics::read(&model_dir.join("metrics.jsonl"))
        .unwrap()
        .into_iter()
        .map(|r| r.valid_accuracy)
        .fold(0.0, f64::max);
    assert!(best >= 95.0, "best valid accuracy {best}");

    s2s_infer::model_dir::create(&model_dir, &run, &data).unwrap();
    let translator =
        s2s_infer::Translator::load(&model_dir, &burn::tensor::Device::flex()).unwrap();
    assert!(translator.reads_audio());
    let test = data.test.as_ref().unwrap();
    let labels = transcribe(&translator, &test.src, 16);
    let right = labels.iter().zip(&test.tgt).filter(|(h, r)| h == r).count();
    assert!(
        right * 100 >= 90 * test.tgt.len(),
        "{right} of {} test labels right: {:?}",
        test.tgt.len(),
        &labels[..5]
    );
    // Batch invariance: each file alone gets the label it got in a batch.
    let alone: Vec<String> = test.src[..8]
        .iter()
        .flat_map(|p| transcribe(&translator, std::slice::from_ref(p), 1))
        .collect();
    assert_eq!(alone, labels[..8].to_vec());
    // `s2s score` reads the audio as the classifier does: its labels score above any other.
    let scores = translator.score(&test.src[..8], &labels[..8], 4).unwrap();
    for (i, s) in scores.iter().enumerate() {
        assert_eq!(s.tokens, 1);
        for (other, _, _) in s2s_data::audio::TONE_WORDS {
            if other != labels[i] {
                let o = translator
                    .score(&test.src[i..=i], &[other.to_owned()], 1)
                    .unwrap();
                assert!(
                    o[0].logprob < s.logprob,
                    "{other} scores above {}",
                    labels[i]
                );
            }
        }
    }
    let two_labels = translator.score(&test.src[..1], &["low mid".to_owned()], 1);
    assert!(
        two_labels.unwrap_err().to_string().contains("one label"),
        "a classifier's reference is one label"
    );
}
