//! SIGKILL at random moments (seeded): whatever a kill interrupts — start-up, a step, a
//! validation, a checkpoint swap — MODEL_DIR stays usable: the newest complete checkpoint is
//! found and `--resume` continues from it, the best model (once written) loads, and a final
//! resume finishes and translates. Also `keep_last`: the last N checkpoints are kept; the
//! temporary files a kill leaves are swept by the next run; and a run without a validation split
//! (no validation loss to record) resumes, restarts and plots like any other.

mod common;

use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

#[test]
fn sigkill_at_random_moments_never_loses_the_last_complete_checkpoint() {
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = setup(tmp.path());
    let out = tmp.path().join("model");
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut last_step = 0usize;
    let mut kills = 0;
    for round in 0..8 {
        let cmd = if out.join("checkpoint").exists() || out.join("checkpoint.old").exists() {
            resume_cmd(&data, &out, &["--max-steps", "100000"])
        } else {
            train_cmd(&data, &config, &out, &["--max-steps", "100000", "--force"])
        };
        let p = spawn(cmd);
        let delay = rng.random_range(100..2500);
        std::thread::sleep(Duration::from_millis(delay));
        p.signal(libc::SIGKILL);
        let (code, err) = p.finish();
        assert_eq!(code, None, "round {round}: exited by itself:\n{err}");
        kills += 1;

        match s2s_train::checkpoint::locate(&out) {
            Ok(dir) => {
                let step = checkpoint_step(&dir);
                assert!(
                    step >= last_step,
                    "round {round}: checkpoint went back from step {last_step} to {step}"
                );
                last_step = step;
            }
            Err(e) => assert_eq!(last_step, 0, "round {round}: checkpoint lost: {e}"),
        }
        if out.join("model.safetensors").exists() {
            let device = burn::tensor::Device::flex();
            s2s_infer::model_dir::load(&out, &device)
                .unwrap_or_else(|e| panic!("round {round}, killed after {delay} ms: {e}"));
        }
    }
    assert!(kills >= 5);
    assert!(last_step > 0, "no checkpoint in 8 rounds");

    let target = (last_step + 3).to_string();
    let o = run(resume_cmd(&data, &out, &["--max-steps", &target]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoint_step(&out.join("checkpoint")), last_step + 3);
    let o = translate_stdin(&out, b"1 2 3\n4 5\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    eprintln!("{kills} kills in {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn keep_last_keeps_the_newest_checkpoints_and_resume_uses_the_newest() {
    let tmp = tempfile::tempdir().unwrap();
    // Validation, and so a checkpoint, every 3 steps: steps 3, 6, ..., 18, then the final one.
    let (data, _, out) = trained(tmp.path(), &["--max-steps", "20", "--keep-last", "3"]);
    assert_eq!(checkpoint_step(&out.join("checkpoint")), 20);
    let archived: Vec<usize> = s2s_train::checkpoint::archived(&out)
        .into_iter()
        .map(|(s, d)| {
            assert_eq!(checkpoint_step(&d), s);
            s2s_train::checkpoint::verify(&d).unwrap();
            s
        })
        .collect();
    assert_eq!(archived, vec![15, 18]);
    assert!(!out.join("checkpoint.old").exists() && !out.join("checkpoint.new").exists());

    // A damaged newest checkpoint: resume falls back to the newest archived one.
    let w = out.join("checkpoint").join(s2s_train::checkpoint::WEIGHTS);
    let mut bytes = std::fs::read(&w).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&w, &bytes).unwrap();
    assert_eq!(
        s2s_train::checkpoint::locate(&out).unwrap(),
        out.join("checkpoints").join("step-00000018")
    );
    let o = run(resume_cmd(&data, &out, &["--max-steps", "22"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("using the older complete checkpoint"),
        "{}",
        stderr(&o)
    );
    assert_eq!(checkpoint_step(&out.join("checkpoint")), 22);
    // The damaged checkpoint was dropped, not archived.
    let steps: Vec<usize> = s2s_train::checkpoint::archived(&out)
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(steps, vec![18, 21]);
    // keep_last = 1 (the default) keeps no archive.
    let o = run(resume_cmd(
        &data,
        &out,
        &["--max-steps", "24", "--keep-last", "1"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s2s_train::checkpoint::archived(&out).is_empty());
}

/// A pid that no process has: above Linux's largest `pid_max` (2^22), yet a valid `pid_t`.
const GONE: u32 = 2_000_000_000;

#[test]
fn the_next_run_sweeps_the_temporaries_a_kill_left_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, _, out) = trained(tmp.path(), &["--max-steps", "3"]);
    // What a kill in the middle of atomic writes leaves (`.NAME.tmp.PID.N`), beside files that
    // only look alike, and the temporary file of a writer that still runs (this test).
    let stale = [
        format!(".metrics.jsonl.tmp.{GONE}.0"),
        format!(".model.safetensors.tmp.{GONE}.17"),
    ];
    let kept = [
        format!(".metrics.jsonl.tmp.{}.0", std::process::id()),
        format!("metrics.jsonl.tmp.{GONE}.0"),
        ".metrics.jsonl.tmp".to_owned(),
        format!(".notes.tmp.{GONE}"),
        "notes.txt".to_owned(),
    ];
    for name in stale.iter().chain(&kept) {
        std::fs::write(out.join(name), b"half a file").unwrap();
    }
    let o = run(resume_cmd(&data, &out, &["--max-steps", "4"]));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for name in &stale {
        assert!(!out.join(name).exists(), "{name} was not swept:\n{err}");
        assert!(
            err.contains(&format!("removed {}:", out.join(name).display())),
            "{name} not reported:\n{err}"
        );
    }
    for name in &kept {
        assert!(out.join(name).exists(), "{name} was removed:\n{err}");
        assert!(
            !err.contains(&format!("removed {}:", out.join(name).display())),
            "{name} reported:\n{err}"
        );
    }
    assert_eq!(checkpoint_step(&out.join("checkpoint")), 4);
}

#[test]
fn a_run_without_a_validation_split_resumes_restarts_and_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = setup_with(tmp.path(), false);
    let out = tmp.path().join("model");
    // Validation points at steps 3 and 4 (the last), with no validation loss, perplexity or BLEU.
    let o = run(train_cmd(&data, &config, &out, &["--max-steps", "4"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no validation split"), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("metrics.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for field in ["valid_loss", "valid_ppl", "valid_bleu"] {
            assert!(v[field].is_null(), "{field} in {line}");
        }
        assert!(v["train_loss"].as_f64().unwrap().is_finite(), "{line}");
    }

    let o = run(resume_cmd(&data, &out, &["--max-steps", "7"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoint_step(&out.join("checkpoint")), 7);
    let records = s2s_infer::metrics::read(&out.join("metrics.jsonl")).unwrap();
    let steps: Vec<usize> = records.iter().map(|r| r.step).collect();
    assert_eq!(steps, vec![3, 4, 6, 7]);
    assert!(
        records
            .iter()
            .all(|r| r.valid_loss.is_nan() && r.valid_bleu.is_nan() && r.train_loss.is_finite()),
        "{records:?}"
    );

    let plots = tmp.path().join("plots");
    let mut plot = s2s();
    plot.arg("plot").arg(&out).arg("--out").arg(&plots);
    let o = run(plot);
    assert!(o.status.success(), "{}", stderr(&o));
    for name in ["loss.svg", "bleu.svg", "lr.svg", "curves.svg"] {
        let svg = std::fs::read_to_string(plots.join(name)).unwrap();
        assert!(svg.contains("<svg"), "{name}");
    }

    let o = translate_stdin(&out, b"1 2 3\n");
    assert!(o.status.success(), "{}", stderr(&o));

    // --force starts again over the old run's file.
    let o = run(train_cmd(
        &data,
        &config,
        &out,
        &["--max-steps", "3", "--force"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let records = s2s_infer::metrics::read(&out.join("metrics.jsonl")).unwrap();
    assert_eq!(records.iter().map(|r| r.step).collect::<Vec<_>>(), vec![3]);
}
