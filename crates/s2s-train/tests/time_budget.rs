//! Time-budgeted schedules: with `max_minutes` and a linear decay, the rate reaches (nearly) zero
//! as the budget runs out, the checkpoints kept for averaging lie at the end of the run, and a
//! run resumed from one of them follows the plan its `state.json` recorded, bit for bit.

mod common;

use common::*;
use s2s_train::checkpoint::{self, STATE};
use s2s_train::schedule::DecayPlan;
use std::path::Path;

const BUDGET_MINUTES: f64 = 0.1;

fn config(data: &s2s_data::DataDir, max_minutes: f64, max_steps: usize) -> s2s_infer::RunConfig {
    run_config(
        "rnnsearch-tiny",
        data,
        &format!(
            "max_minutes = {max_minutes}\nmax_steps = {max_steps}\nmax_epochs = 1000\nmax_tokens = 300\nlr = 3e-3\nwarmup_steps = 5\nschedule = \"linear\"\nvalid_every = 40\nvalid_bleu_sentences = 10\npatience = 0\nkeep_last = 4\n"
        ),
    )
}

fn plan_in(dir: &Path) -> (usize, DecayPlan) {
    let state: s2s_train::checkpoint::TrainerState =
        serde_json::from_slice(&std::fs::read(dir.join(STATE)).unwrap()).unwrap();
    (
        state.step,
        state.decay.expect("a timed run records its plan"),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn the_decay_ends_with_the_budget_and_resumes_from_its_recorded_plan() {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 600, 6);
    let run = config(&data, BUDGET_MINUTES, 0);
    let a = dir.path().join("a");
    let out = train(&a, &data, &run, false);
    assert_eq!(out.reason, s2s_train::StopReason::MaxMinutes);
    let steps = out.state.step;
    assert!(steps > 50, "only {steps} steps in {BUDGET_MINUTES} minutes");
    // It used its budget (the final validation comes after it) ...
    let budget = BUDGET_MINUTES * 60.0;
    assert!(
        out.state.elapsed_sec > 0.75 * budget,
        "stopped after {:.2} of {budget} s",
        out.state.elapsed_sec
    );
    // ... and the rate decayed to (nearly) zero by then: the plan was re-estimated from the
    // measured speed, not from a step count.
    let last = out.last.as_ref().unwrap();
    assert!(
        last.lr <= 0.25 * run.train.lr,
        "rate {:.2e} at the end of the budget (peak {:.0e})",
        last.lr,
        run.train.lr
    );
    let (_, final_plan) = plan_in(&checkpoint::locate(&a).unwrap());
    assert!(final_plan.end_step >= steps && final_plan.end_step <= steps + steps / 4);

    // The kept checkpoints (keep_last = 4) lie at the end of the run, not at fixed steps.
    let archived = checkpoint::archived(&a);
    assert_eq!(archived.len(), 3, "{archived:?}");
    for (step, _) in &archived {
        assert!(
            *step as f64 >= 0.6 * steps as f64,
            "checkpoint at step {step} of {steps} kept for averaging"
        );
    }

    // Resume from the second-last archived checkpoint up to the next one: the steps between
    // follow the plan recorded in the first, so the result is the second, bit for bit.
    let (k, from) = &archived[archived.len() - 2];
    let (k_next, to) = &archived[archived.len() - 1];
    let (at, plan) = plan_in(from);
    assert_eq!(at, *k);
    assert!(
        plan.end_step > 0,
        "a plan from the measured speed: {plan:?}"
    );
    let b = dir.path().join("b");
    copy_dir(&a, &b);
    copy_dir(from, &b.join("checkpoint"));
    // A different budget must not matter before the next checkpoint re-plans.
    let resumed = train(&b, &data, &config(&data, 10.0, *k_next), true);
    assert_eq!(resumed.state.step, *k_next);
    let expected = dir.path().join("a-at-next");
    copy_dir(to, &expected.join("checkpoint"));
    assert_same_checkpoint(&expected, &b, &run, "resumed timed run");
}
