//! Failures that must be clear and harmless: each command below exits non-zero with a message
//! that names the file (or tensor) and says what to do, and no file in the directories involved
//! changes (hashed before and after).

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// A trained tiny model (6 steps; validations at 3 and 6 write model.safetensors).
fn trained_6(root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    trained(root, &["--max-steps", "6"])
}

fn translate(model: &Path) -> std::process::Command {
    let mut c = s2s();
    c.arg("translate").arg("--model").arg(model);
    c
}

/// Runs `c`, expects failure with every piece of `needles` in stderr, and `dir` unchanged.
fn fails_cleanly(c: std::process::Command, dir: &Path, needles: &[&str]) -> String {
    let before = hash_dir(dir);
    let o = run(c);
    let err = stderr(&o);
    assert!(!o.status.success(), "succeeded:\n{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in:\n{err}");
    }
    assert_eq!(
        before,
        hash_dir(dir),
        "a failed command changed files: {err}"
    );
    err
}

#[test]
fn a_truncated_or_corrupted_checkpoint_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, _, out) = trained_6(tmp.path());
    let w = out.join("checkpoint").join("optimizer.bpk");
    let bytes = std::fs::read(&w).unwrap();
    std::fs::write(&w, &bytes[..bytes.len() / 3]).unwrap();
    fails_cleanly(
        resume_cmd(&data, &out, &["--max-steps", "9"]),
        &out,
        &[
            &w.display().to_string(),
            "truncated or corrupted",
            "--force",
        ],
    );
    // A flipped byte, and a garbled manifest.
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 1;
    std::fs::write(&w, &flipped).unwrap();
    fails_cleanly(
        resume_cmd(&data, &out, &["--max-steps", "9"]),
        &out,
        &["optimizer.bpk", "truncated or corrupted"],
    );
    let m = out.join("checkpoint").join("manifest.json");
    std::fs::write(&m, b"{\"model.bpk\": ").unwrap();
    fails_cleanly(
        resume_cmd(&data, &out, &["--max-steps", "9"]),
        &out,
        &[&m.display().to_string(), "manifest is corrupted"],
    );
    // No checkpoint at all.
    std::fs::remove_dir_all(out.join("checkpoint")).unwrap();
    fails_cleanly(
        resume_cmd(&data, &out, &["--max-steps", "9"]),
        &out,
        &["no checkpoint in", "train without --resume first"],
    );
}

#[test]
fn a_config_that_does_not_fit_the_weights_names_the_tensor_and_both_shapes() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, _, out) = trained_6(tmp.path());
    let cfg = out.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(text.contains("\nhidden = 64\n"), "{text}");
    std::fs::write(&cfg, text.replace("\nhidden = 64\n", "\nhidden = 24\n")).unwrap();
    let err = fails_cleanly(
        translate(&out),
        &out,
        &[
            "model.safetensors",
            "tensor `Rnn.encoder.forward.0.ih.weight` has shape [32, 192] in the file but config.toml builds it with shape [32, 72]",
            "use the config.toml the weights were trained with",
        ],
    );
    assert!(err.lines().count() <= 2, "{err}");
}

#[test]
fn a_tokenizer_of_another_vocabulary_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, _, out) = trained_6(tmp.path());
    // A word tokenizer over other words has another vocabulary size.
    let raw = tmp.path().join("other");
    std::fs::create_dir_all(&raw).unwrap();
    let words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu\n".repeat(5);
    std::fs::write(raw.join("a.txt"), &words).unwrap();
    let o = run({
        let mut c = s2s();
        c.arg("prepare")
            .arg("--train-src")
            .arg(raw.join("a.txt"))
            .arg("--train-tgt")
            .arg(raw.join("a.txt"))
            .args(["--tokenizer", "word", "--out"])
            .arg(raw.join("data"));
        c
    });
    assert!(o.status.success(), "{}", stderr(&o));
    let tok = out.join("tokenizer.src.json");
    std::fs::copy(raw.join("data").join("tokenizer.src.json"), &tok).unwrap();
    fails_cleanly(
        translate(&out),
        &out,
        &[
            &tok.display().to_string(),
            "tokens but config.toml says",
            "copy the one it was trained with",
        ],
    );
}

#[test]
fn a_missing_model_dir_or_a_directory_that_is_not_a_model_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, _) = setup(tmp.path());
    let missing = tmp.path().join("no-such-model");
    let o = run(translate(&missing));
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains(&missing.display().to_string())
            && err.contains("does not exist")
            && err.contains("s2s train"),
        "{err}"
    );
    assert!(!missing.exists());
    fails_cleanly(
        translate(&data),
        &data,
        &[
            &data.display().to_string(),
            "is not a model directory",
            "config.toml",
        ],
    );
    let mut c = s2s();
    c.arg("serve").arg("--model").arg(&data);
    fails_cleanly(c, &data, &["is not a model directory"]);
}

#[test]
fn train_out_on_an_existing_model_needs_resume_or_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config, out) = trained_6(tmp.path());
    fails_cleanly(
        train_cmd(&data, &config, &out, &["--max-steps", "3"]),
        &out,
        &[
            &out.display().to_string(),
            "already holds a model",
            "--resume",
            "--force",
        ],
    );
    // --force starts again: the old checkpoint and best model are replaced by the new run's.
    let o = run(train_cmd(
        &data,
        &config,
        &out,
        &["--max-steps", "3", "--force"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoint_step(&out.join("checkpoint")), 3);
    let metrics = s2s_infer::metrics::read(&out.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.iter().map(|m| m.step).collect::<Vec<_>>(), vec![3]);
}

#[test]
fn quickstart_out_on_an_existing_model_refuses_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, _, out) = trained_6(tmp.path());
    let mut quickstart = s2s();
    quickstart
        .args(["quickstart", "--minutes", "0.1", "--out"])
        .arg(&out);
    fails_cleanly(
        quickstart,
        &out,
        &[
            &out.display().to_string(),
            "already holds a model",
            "--force",
            "another --out",
        ],
    );
    assert!(!out.join("corpus").exists() && !out.join("data").exists());
}

#[test]
fn diverging_training_stops_keeps_the_last_good_checkpoint_and_exits_non_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, _, out) = trained_6(tmp.path());
    let cfg = out.join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text.replace("\nlr = 0.001\n", "\nlr = 1e38\n");
    let text = text.replace("\nclip_norm = 1.0\n", "\nclip_norm = 0.0\n");
    assert!(text.contains("lr = 1e38"), "{text}");
    std::fs::write(&cfg, text).unwrap();
    let ckpt = out.join("checkpoint");
    let before = hash_dir(&ckpt);
    let best = std::fs::read(out.join("model.safetensors")).unwrap();
    let o = run(resume_cmd(&data, &out, &["--max-steps", "1000"]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("warning: non-finite"), "{err}");
    assert!(
        err.contains("5 non-finite losses or gradient norms in a row")
            && err.contains("the last good checkpoint is kept")
            && err.contains("Lower the learning rate"),
        "{err}"
    );
    assert_eq!(before, hash_dir(&ckpt));
    assert_eq!(best, std::fs::read(out.join("model.safetensors")).unwrap());
    assert_eq!(checkpoint_step(&ckpt), 6);

    // Validating right after the step that blew the weights up: the validation loss is not
    // finite, and those weights are saved neither as the best model nor in a checkpoint.
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("\nvalid_every = 3\n", "\nvalid_every = 1\n"),
    )
    .unwrap();
    let o = run(resume_cmd(&data, &out, &["--max-steps", "1000"]));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("at step 7: the weights have diverged")
            && err.contains("the last good checkpoint and best model are kept"),
        "{err}"
    );
    assert_eq!(before, hash_dir(&ckpt));
    assert_eq!(best, std::fs::read(out.join("model.safetensors")).unwrap());
}

#[test]
fn a_second_trainer_is_refused_while_the_first_writes_the_model_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = setup(tmp.path());
    let out = tmp.path().join("model");
    let mut first = spawn(train_cmd(&data, &config, &out, &["--max-steps", "100000"]));
    first.wait_for_line("step ");
    let pid = first.child.id().to_string();
    // A resume and a forced restart would both write the files the first trainer is writing.
    for cmd in [
        resume_cmd(&data, &out, &["--max-steps", "100000"]),
        train_cmd(&data, &config, &out, &["--force"]),
    ] {
        let o = run(cmd);
        let err = stderr(&o);
        assert!(!o.status.success(), "succeeded:\n{err}");
        assert!(err.contains("in use by another s2s process"), "{err}");
        assert!(err.contains(&format!("pid {pid}")), "{err}");
    }
    first.signal(libc::SIGINT);
    let (code, err) = first.finish();
    assert!(
        code.is_some(),
        "the first trainer was not disturbed:\n{err}"
    );
    assert!(
        s2s_train::checkpoint::locate(&out).is_ok(),
        "its checkpoint is intact"
    );
    // Once it has stopped, the directory is free again.
    let o = run(resume_cmd(&data, &out, &["--max-steps", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn train_help_lists_every_preset() {
    let mut c = s2s();
    c.args(["train", "--help"]);
    let o = run(c);
    let help = String::from_utf8_lossy(&o.stdout);
    for name in s2s_models::preset_names() {
        assert!(help.contains(name), "{name} missing from:\n{help}");
    }
}

#[test]
fn the_version_names_the_devices_compiled_in_and_a_missing_one_is_refused_clearly() {
    let mut c = s2s();
    c.arg("--version");
    let o = run(c);
    let version = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{version}");
    assert!(version.contains("(devices: cpu"), "{version}");
    for kind in ["cuda", "wgpu"] {
        if version.contains(kind) {
            continue;
        }
        let mut c = s2s();
        c.args(["bench", "--models", "transformer", "--device", kind]);
        let o = run(c);
        let err = stderr(&o);
        assert!(!o.status.success(), "{err}");
        assert!(
            err.contains(&format!("not compiled-in device `{kind}`")),
            "{err}"
        );
        assert!(err.contains("--features"), "{err}");
    }
}
