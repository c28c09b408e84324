//! SIGTERM and SIGINT on a real `s2s train`: the step finishes, a checkpoint is written, the exit
//! status is 128 + the signal, the message gives the exact resume command, and that command
//! continues from the checkpoint. A second SIGINT exits at once and leaves a resumable MODEL_DIR.

mod common;

use common::*;

#[test]
fn sigterm_checkpoints_exits_143_and_the_printed_command_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = setup(tmp.path());
    let out = tmp.path().join("model");
    let mut p = spawn(train_cmd(&data, &config, &out, &["--max-steps", "100000"]));
    p.wait_for_line("step ");
    p.signal(libc::SIGTERM);
    let (code, err) = p.finish();
    assert_eq!(code, Some(143), "{err}");
    assert!(err.contains("SIGTERM received"), "{err}");
    let expected = format!(
        "Resume with: s2s train --data {} --out {} --resume",
        data.display(),
        out.display()
    );
    let line = err
        .lines()
        .find(|l| l.contains("Resume with: "))
        .unwrap_or_else(|| panic!("no resume command in:\n{err}"));
    assert!(line.ends_with(&expected), "{line}");
    let ckpt = s2s_train::checkpoint::locate(&out).unwrap();
    assert_eq!(ckpt, out.join("checkpoint"));
    let stopped_at = checkpoint_step(&ckpt);
    assert!(line.contains(&format!("at step {stopped_at};")), "{line}");

    // Run the printed command (with a new step limit): it continues from that checkpoint.
    let words: Vec<&str> = line
        .split("Resume with: ")
        .nth(1)
        .unwrap()
        .split(' ')
        .collect();
    assert_eq!(&words[..2], ["s2s", "train"]);
    let target = (stopped_at + 4).to_string();
    let mut c = s2s();
    c.args(&words[1..])
        .args(["--quiet", "--max-steps", &target]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoint_step(&out.join("checkpoint")), stopped_at + 4);
    let metrics = s2s_infer::metrics::read(&out.join("metrics.jsonl")).unwrap();
    assert!(
        metrics.windows(2).all(|w| w[0].step < w[1].step),
        "{metrics:?}"
    );
}

#[test]
fn sigint_exits_130_and_a_second_one_exits_at_once_leaving_a_resumable_model() {
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = setup(tmp.path());

    let out = tmp.path().join("once");
    let mut p = spawn(train_cmd(&data, &config, &out, &["--max-steps", "100000"]));
    p.wait_for_line("step ");
    p.signal(libc::SIGINT);
    let (code, err) = p.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(
        err.contains("stopped by SIGINT") && err.contains("--resume"),
        "{err}"
    );

    let out = tmp.path().join("twice");
    let mut p = spawn(train_cmd(&data, &config, &out, &["--max-steps", "100000"]));
    // A validation's line is printed before its checkpoint is written: after the second one,
    // the first checkpoint (step 3) is complete.
    p.wait_for_line("step ");
    p.wait_for_line("step ");
    p.signal(libc::SIGINT);
    p.wait_for_line("SIGINT received");
    p.signal(libc::SIGINT);
    let (code, err) = p.finish();
    assert_eq!(code, Some(130), "{err}");
    // The first validation already wrote a checkpoint; whatever the second signal interrupted,
    // a complete one is found and training continues from it.
    let ckpt = s2s_train::checkpoint::locate(&out).unwrap();
    let step = checkpoint_step(&ckpt);
    assert!(step >= 3, "{step}");
    let target = (step + 2).to_string();
    let o = run(resume_cmd(&data, &out, &["--max-steps", &target]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(checkpoint_step(&out.join("checkpoint")), step + 2);
}
