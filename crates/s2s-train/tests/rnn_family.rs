//! Every recurrent architecture and context mode learns to reverse digit strings. A decreasing
//! loss can hide wiring bugs; exact-match accuracy on held-out strings cannot.

mod common;

use common::*;

fn learns_reversal(arch: &str, model_toml: &str, steps: usize) {
    learns_reversal_up_to(arch, model_toml, steps, 6);
}

/// Reversal of digit strings of 2..=`max_len` digits, in exactly `steps` steps (the epoch limit is
/// lifted: 4000 pairs make only 40 batches).
fn learns_reversal_up_to(arch: &str, model_toml: &str, steps: usize, max_len: usize) {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 4000, max_len);
    let mut run = run_config(
        arch,
        &data,
        &format!(
            "max_steps = {steps}\nmax_tokens = 1200\nmax_sentences = 100\nlr = 5e-3\nwarmup_steps = 50\nlabel_smoothing = 0.0\nvalid_every = {steps}\npatience = 0\nmax_epochs = 1000"
        ),
    );
    if !model_toml.is_empty() {
        let text = format!(
            "arch = \"{arch}\"\n[model]\n{model_toml}\n[train]\n{}",
            toml::to_string(&run.train).unwrap()
        );
        let (_, model, _) = s2s_infer::config::resolve(None, Some(("test", &text)), None).unwrap();
        run.model = model;
    }
    let model_dir = dir.path().join("model");
    train(&model_dir, &data, &run, false);
    let acc = exact_match(&model_dir, &data, &run);
    eprintln!("{arch} {model_toml:?}: exact match {acc:.3}");
    assert!(
        acc >= 0.95,
        "{arch} {model_toml}: exact match {acc:.3} < 0.95"
    );
}

#[test]
fn rnnsearch_learns_reversal() {
    learns_reversal("rnnsearch-tiny", "", 600);
}

#[test]
fn lstm_encoder_decoder_learns_reversal() {
    // Sutskever: the encoder's final states initialise the decoder.
    learns_reversal_up_to("rnn-lstm-tiny", "hidden = 128", 1200, 4);
}

#[test]
fn gru_with_context_at_every_step_learns_reversal() {
    // Cho: context as initial state and at every step.
    // One fixed vector must hold the whole source: a wider state and shorter strings.
    learns_reversal_up_to("rnn-gru-cho-tiny", "hidden = 128", 1200, 4);
}

#[test]
fn context_at_every_step_without_init_learns_reversal() {
    learns_reversal_up_to(
        "rnn-gru-cho-tiny",
        "context_mode = \"every-step-no-init\"\nbridge = \"linear\"\nhidden = 128",
        1600,
        4,
    );
}

#[test]
fn luong_general_with_input_feeding_learns_reversal() {
    learns_reversal("luong-tiny", "", 800);
}

#[test]
fn luong_dot_and_concat_scores_learn_reversal() {
    // Unscaled dot scores start out sharp: 800 steps were enough for only some seeds.
    learns_reversal("luong-tiny", "score = \"dot\"\ninput_feed = false", 1200);
    // Luong's `concat` score is the additive form on the current state.
    learns_reversal("luong-tiny", "score = \"additive\"", 1000);
}

#[test]
fn lstm_rnnsearch_learns_reversal() {
    learns_reversal("rnnsearch-tiny", "cell = \"lstm\"", 600);
}
