//! Every recurrent architecture and context mode learns to reverse digit strings. A decreasing
//! loss can hide wiring bugs; exact-match accuracy on held-out strings cannot.

mod common;

use common::*;

fn learns_reversal(arch: &str, model_toml: &str, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 4000, 6);
    let mut run = run_config(
        arch,
        &data,
        &format!(
            "max_steps = {steps}\nmax_tokens = 1200\nmax_sentences = 100\nlr = 5e-3\nwarmup_steps = 50\nlabel_smoothing = 0.0\nvalid_every = {steps}\npatience = 0"
        ),
    );
    if !model_toml.is_empty() {
        let text = format!(
            "arch = \"{arch}\"\n[model]\n{model_toml}\n[train]\n{}",
            toml::to_string(&run.train).unwrap()
        );
        let (_, model, _) = s2s_train::config::resolve(None, Some(("test", &text))).unwrap();
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
