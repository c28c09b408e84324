//! Exact resume: N steps in one run equal N/2 steps, then `--resume` for N/2 more — same final
//! parameters and optimiser state, bit for bit, and the same logged losses. Dropout and scheduled
//! sampling are on, so their random streams must continue exactly too.

mod common;

use common::*;
use s2s_train::checkpoint;
use std::sync::Mutex;

/// burn's random generator is process-wide, so tests that compare random streams run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn config(data: &s2s_data::DataDir, max_steps: usize) -> s2s_infer::RunConfig {
    let text = format!(
        "arch = \"rnnsearch-tiny\"\n[model]\ndropout = 0.3\n[train]\nmax_steps = {max_steps}\nmax_tokens = 600\nlr = 3e-3\nwarmup_steps = 5\nschedule = \"inverse-sqrt\"\nteacher_forcing = 0.5\nvalid_every = 10\nvalid_bleu_sentences = 20\npatience = 0\n"
    );
    common::run_config_toml(data, &text)
}

#[test]
fn resuming_halfway_gives_the_same_model_and_losses() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 600, 6);
    let straight = dir.path().join("straight");
    let out = train(&straight, &data, &config(&data, 40), false);
    assert_eq!(out.state.step, 40);

    let halves = dir.path().join("halves");
    let first = train(&halves, &data, &config(&data, 20), false);
    assert_eq!(first.state.step, 20);
    let second = train(&halves, &data, &config(&data, 40), true);
    assert_eq!(second.state.step, 40);
    assert_eq!(second.state.epoch, out.state.epoch);
    assert_eq!(second.state.batch_in_epoch, out.state.batch_in_epoch);

    assert_eq!(assert_same_metrics(&straight, &halves), 4);
    assert_same_checkpoint(&straight, &halves, &config(&data, 40), "rnnsearch-tiny");
}

#[test]
fn a_corrupted_checkpoint_is_refused_with_the_file_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 200, 5);
    let model_dir = dir.path().join("model");
    train(&model_dir, &data, &config(&data, 10), false);
    let weights = model_dir.join("checkpoint").join(checkpoint::WEIGHTS);
    let mut bytes = std::fs::read(&weights).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&weights, &bytes).unwrap();
    let err = checkpoint::locate(&model_dir).unwrap_err().to_string();
    assert!(
        err.contains(checkpoint::WEIGHTS) && err.contains("corrupted"),
        "{err}"
    );
    // Nothing was changed by the failed attempt.
    assert_eq!(std::fs::read(&weights).unwrap(), bytes);
}
