//! Helpers for tests that run the real `s2s` binary: a tiny digit-reversal corpus prepared with
//! `s2s prepare`, a training config that validates (and so checkpoints) often, and directory
//! hashes to prove that a failed command changed nothing.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_s2s");

pub fn s2s() -> Command {
    Command::new(BIN)
}

fn write_pairs(dir: &Path, name: &str, n: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut src, mut tgt) = (String::new(), String::new());
    for _ in 0..n {
        let len = rng.random_range(2..=5);
        let d: Vec<String> = (0..len)
            .map(|_| rng.random_range(0..10).to_string())
            .collect();
        src += &(d.join(" ") + "\n");
        tgt += &(d.iter().rev().cloned().collect::<Vec<_>>().join(" ") + "\n");
    }
    std::fs::write(dir.join(format!("{name}.src")), src).unwrap();
    std::fs::write(dir.join(format!("{name}.tgt")), tgt).unwrap();
}

/// Prepares a 300-pair reversal corpus into `root/data` with `s2s prepare`, and writes
/// `root/tiny.toml`: rnnsearch-tiny, small batches, validation (and a checkpoint) every 3 steps.
pub fn setup(root: &Path) -> (PathBuf, PathBuf) {
    setup_with(root, true)
}

/// [`setup`], with a 20-pair validation split or (`valid` false) none: the run still records a
/// validation point (and checkpoints) every 3 steps, with no validation loss or BLEU.
pub fn setup_with(root: &Path, valid: bool) -> (PathBuf, PathBuf) {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    write_pairs(&raw, "train", 300, 1);
    let data = root.join("data");
    let mut prepare = s2s();
    prepare
        .arg("prepare")
        .arg("--train-src")
        .arg(raw.join("train.src"))
        .arg("--train-tgt")
        .arg(raw.join("train.tgt"));
    if valid {
        write_pairs(&raw, "valid", 20, 2);
        prepare
            .arg("--valid-src")
            .arg(raw.join("valid.src"))
            .arg("--valid-tgt")
            .arg(raw.join("valid.tgt"));
    }
    let out = prepare
        .arg("--tokenizer")
        .arg("word")
        .arg("--out")
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let config = root.join("tiny.toml");
    std::fs::write(
        &config,
        "arch = \"rnnsearch-tiny\"\n[train]\nmax_tokens = 120\nvalid_every = 3\nvalid_bleu_sentences = 5\npatience = 0\nwarmup_steps = 2\nmax_epochs = 1000\n",
    )
    .unwrap();
    (data, config)
}

/// [`setup`], then a training run into `root/model` with `extra` flags, which must succeed.
/// Returns the data directory, the config and the model directory.
pub fn trained(root: &Path, extra: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let (data, config) = setup(root);
    let out = root.join("model");
    let o = run(train_cmd(&data, &config, &out, extra));
    assert!(o.status.success(), "{}", stderr(&o));
    (data, config, out)
}

/// `s2s train --data DATA --config CONFIG --out OUT --quiet` plus `extra`.
pub fn train_cmd(data: &Path, config: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = s2s();
    c.arg("train")
        .arg("--data")
        .arg(data)
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .arg("--quiet")
        .args(extra);
    c
}

/// `s2s train --data DATA --out OUT --resume --quiet` plus `extra`.
pub fn resume_cmd(data: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = s2s();
    c.arg("train")
        .arg("--data")
        .arg(data)
        .arg("--out")
        .arg(out)
        .arg("--resume")
        .arg("--quiet")
        .args(extra);
    c
}

pub fn run(mut c: Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

/// `s2s translate --model MODEL` with `input` on stdin.
pub fn translate_stdin(model: &Path, input: &[u8]) -> Output {
    let mut c = s2s();
    c.arg("translate").arg("--model").arg(model);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut ch| {
            use std::io::Write;
            ch.stdin.take().unwrap().write_all(input)?;
            ch.wait_with_output()
        })
        .unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A running command whose stderr lines arrive on a channel (and are collected).
pub struct Running {
    pub child: Child,
    lines: Receiver<String>,
    pub seen: Vec<String>,
}

pub fn spawn(mut c: Command) -> Running {
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Running {
        child,
        lines: rx,
        seen: Vec::new(),
    }
}

impl Running {
    /// Waits (up to 60 s) for a stderr line starting with `prefix`.
    pub fn wait_for_line(&mut self, prefix: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
                let hit = line.starts_with(prefix);
                self.seen.push(line);
                if hit {
                    return;
                }
            }
        }
        panic!(
            "no line starting with {prefix:?}; stderr so far:\n{}",
            self.seen.join("\n")
        );
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, sig) }, 0);
    }

    /// Waits for exit (up to 120 s); returns the exit code and all of stderr.
    pub fn finish(mut self) -> (Option<i32>, String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the process did not exit");
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(line);
        }
        (status.code(), self.seen.join("\n"))
    }
}

/// sha256 of every file under `dir`, by relative path; MODEL_DIR's lock file (which only names
/// the last process that held it) is left out.
pub fn hash_dir(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p
                .file_name()
                .is_some_and(|n| n == s2s_infer::model_dir::LOCK)
            {
                continue;
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(
                    rel,
                    format!("{:x}", Sha256::digest(std::fs::read(&p).unwrap())),
                );
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// The step recorded in a checkpoint directory's state.json.
pub fn checkpoint_step(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("state.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["step"].as_u64().unwrap() as usize
}
