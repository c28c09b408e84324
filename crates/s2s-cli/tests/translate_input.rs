//! What `s2s translate` and the server's path (`Translator::encode_all`, `search`, `describe`)
//! make of unusual input lines: text that looks like a control token is ordinary text, and an
//! empty or whitespace-only line translates to an empty line, without the model, in every output
//! format, with the other lines keeping their places. And models given together decode as an
//! ensemble.

mod common;

use common::{run, s2s, stderr};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// A tiny word-level model trained for a few steps on digit reversal, whose corpus also writes
/// the names `<eos>` and `<pad>` as text (so the vocabulary has `<`, `eos`, `pad`, `>`).
fn model(root: &Path) -> PathBuf {
    train(&prepare(root), root, "model", &[])
}

/// The digit-reversal corpus, prepared in `root/data`.
fn prepare(root: &Path) -> PathBuf {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    for (name, n, seed) in [("train", 300, 0), ("valid", 20, 5)] {
        let (mut src, mut tgt) = (String::new(), String::new());
        for i in seed..seed + n {
            let d: Vec<String> = (0..2 + i % 4)
                .map(|j| ((i * 7 + j * 3) % 10).to_string())
                .collect();
            let mut s = d.join(" ");
            let mut t = d.iter().rev().cloned().collect::<Vec<_>>().join(" ");
            if i % 10 == 0 {
                s = format!("<eos> {s} <pad>");
                t = format!("<pad> {t} <eos>");
            }
            src += &(s + "\n");
            tgt += &(t + "\n");
        }
        std::fs::write(raw.join(format!("{name}.src")), src).unwrap();
        std::fs::write(raw.join(format!("{name}.tgt")), tgt).unwrap();
    }
    let data = root.join("data");
    let o = run({
        let mut c = s2s();
        c.arg("prepare");
        for (flag, file) in [
            ("--train-src", "train.src"),
            ("--train-tgt", "train.tgt"),
            ("--valid-src", "valid.src"),
            ("--valid-tgt", "valid.tgt"),
        ] {
            c.arg(flag).arg(raw.join(file));
        }
        c.args(["--tokenizer", "word", "--out"]).arg(&data);
        c
    });
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

/// A tiny model trained for 3 steps on `data`, in `root/name`, with `extra` training options.
fn train(data: &Path, root: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let config = root.join("tiny.toml");
    std::fs::write(
        &config,
        "arch = \"rnnsearch-tiny\"\n[train]\nmax_tokens = 120\nvalid_every = 3\nvalid_bleu_sentences = 5\npatience = 0\nwarmup_steps = 2\nmax_epochs = 1000\n",
    )
    .unwrap();
    let out = root.join(name);
    let args: Vec<&str> = ["--max-steps", "3"].iter().chain(extra).copied().collect();
    let o = run(common::train_cmd(data, &config, &out, &args));
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// `s2s translate --model MODEL ARGS` with `input` on stdin; must succeed.
fn translate(model: &Path, args: &[&str], input: &str) -> String {
    let o = translate_with(&[model], args, input);
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// `s2s translate --model M1 --model M2 .. ARGS` with `input` on stdin.
fn translate_with(models: &[&Path], args: &[&str], input: &str) -> Output {
    let mut c = s2s();
    c.arg("translate");
    for m in models {
        c.arg("--model").arg(m);
    }
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut ch| {
            ch.stdin.take().unwrap().write_all(input.as_bytes())?;
            ch.wait_with_output()
        })
        .unwrap()
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn control_names_are_text_and_blank_lines_translate_to_blank_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let model = model(tmp.path());

    // Plain output: one line per input line; blank lines give empty lines, the others are what
    // they are without the blank lines around them. `--min-len 2`: a decoded line is never empty
    // (the model has trained for only a few steps), so an empty line was not decoded.
    const MIN: [&str; 2] = ["--min-len", "2"];
    let alone = translate(&model, &MIN, "1 2 3\n4 5\n");
    let alone: Vec<&str> = alone.lines().collect();
    assert_eq!(alone.len(), 2);
    assert!(alone.iter().all(|l| !l.is_empty()), "{alone:?}");
    let mixed = translate(&model, &MIN, "1 2 3\n\n   \n4 5\n\t\n");
    let mixed: Vec<&str> = mixed.lines().collect();
    assert_eq!(mixed, [alone[0], "", "", alone[1], ""]);
    // Only blank lines: no decoding at all, as many empty lines.
    assert_eq!(translate(&model, &MIN, "\n  \n"), "\n\n");

    // JSON: the blank lines' objects have no source tokens and one empty hypothesis, score 0.
    let out = json_lines(&translate(
        &model,
        &["--json", "--min-len", "2"],
        "1 2 3\n\n   \n4 5\n",
    ));
    assert_eq!(out.len(), 4);
    for (i, src) in [(1, ""), (2, "   ")] {
        let t = &out[i];
        assert_eq!(t["src"], src);
        assert_eq!(t["src_tokens"], serde_json::json!([]));
        assert_eq!(
            t["hyps"],
            serde_json::json!([{"text": "", "score": 0.0, "logprob": 0.0, "tokens": []}]),
            "{t}"
        );
    }
    assert_eq!(out[0]["hyps"][0]["text"], alone[0]);
    assert_eq!(out[3]["hyps"][0]["text"], alone[1]);

    // n-best as text: N lines per searched sentence, one `0.0000<TAB>` line for a blank one.
    let nbest = translate(
        &model,
        &["--beam", "2", "--nbest", "2", "--min-len", "2"],
        "1 2 3\n\n",
    );
    let nbest: Vec<&str> = nbest.lines().collect();
    assert_eq!(nbest.len(), 3, "{nbest:?}");
    assert_eq!(nbest[2], "0.0000\t");

    // Attention plots: one per decoded line, numbered by input line; a blank line has none.
    let svg = tmp.path().join("att.svg");
    let svg_arg = svg.to_str().unwrap();
    translate(
        &model,
        &["--attention-plot", svg_arg, "--min-len", "2"],
        "1 2 3\n\n4 5\n",
    );
    assert!(tmp.path().join("att.1.svg").is_file());
    assert!(!tmp.path().join("att.2.svg").exists());
    assert!(tmp.path().join("att.3.svg").is_file());

    // Control names are ordinary text: their pieces, never the control tokens.
    let out = json_lines(&translate(
        &model,
        &["--json"],
        "<eos> 1 <eos>\n<pad> <pad>\n<unk>\n",
    ));
    for (t, name, count) in [(&out[0], "eos", 2), (&out[1], "pad", 2)] {
        let tokens = strings(&t["src_tokens"]);
        assert!(
            !tokens.iter().any(|s| s == "<eos>" || s == "<pad>"),
            "{tokens:?}"
        );
        assert_eq!(
            tokens.iter().filter(|s| *s == name).count(),
            count,
            "{tokens:?}"
        );
        assert!(!tokens.contains(&"<unk>".to_owned()), "{tokens:?}");
    }
    assert_ne!(strings(&out[2]["src_tokens"]), ["<unk>"]);

    // The server's path, in process: encode_all, search, describe (what engine.rs calls).
    let device = burn::tensor::Device::flex();
    let translator = s2s_infer::Translator::load(&model, &device).unwrap();
    let specials = translator.loaded().src_tokenizer.specials();
    let texts: Vec<String> = ["<eos> 1 <eos>", "", "  ", "<pad> <pad>", "1 2 3"]
        .map(str::to_owned)
        .to_vec();
    let sources = translator.encode_all(&texts);
    for (text, src) in texts.iter().zip(&sources) {
        assert!(
            !src.ids
                .iter()
                .any(|&i| i == specials.pad || i == specials.bos || i == specials.eos),
            "{text:?}: {src:?}"
        );
    }
    assert!(sources[1].ids.is_empty() && sources[2].ids.is_empty());
    assert!(translator.is_blank(&sources[1].ids) && !translator.is_blank(&sources[0].ids));
    let mut cfg = translator.search_defaults(s2s_search::Strategy::Beam { k: 3 });
    cfg.nbest = 2;
    cfg.min_len = 2;
    cfg.return_attention = true;
    // One sentence per batch, so that each is searched alone in both calls below.
    let hyps = translator.search(&sources, &cfg, 1).unwrap();
    assert_eq!(hyps.len(), texts.len());
    for i in [1, 2] {
        assert_eq!(hyps[i], vec![s2s_infer::translator::empty_hypothesis()]);
        let t = translator.describe(&texts[i], &sources[i].ids, &hyps[i]);
        assert_eq!(t.src, texts[i]);
        assert!(t.src_tokens.is_empty());
        assert_eq!(t.hyps.len(), 1);
        let h = &t.hyps[0];
        assert_eq!((h.text.as_str(), h.score, h.logprob), ("", 0.0, 0.0));
        assert!(h.tokens.is_empty() && h.attention.is_none());
    }
    // The searched sentences get what they get on their own.
    let searched = [sources[0].clone(), sources[3].clone(), sources[4].clone()];
    let own = translator.search(&searched, &cfg, 1).unwrap();
    assert_eq!([&hyps[0], &hyps[3], &hyps[4]], [&own[0], &own[1], &own[2]]);
    assert!(hyps[0].len() == 2 && hyps[0][0].attention.is_some());
    assert!(hyps[0].iter().all(|h| h.tokens.len() >= 2));
    // Only blank sources: no search, still one empty hypothesis each.
    let blank = translator
        .search(&[Vec::new().into(), Vec::new().into()], &cfg, 2)
        .unwrap();
    assert_eq!(blank.len(), 2);
    assert!(blank.iter().all(|h| h.len() == 1 && h[0].tokens.is_empty()));
}

#[test]
fn models_given_together_decode_as_an_ensemble() {
    let tmp = tempfile::tempdir().unwrap();
    let data = prepare(tmp.path());
    let a = train(&data, tmp.path(), "a", &["--seed", "1"]);
    let b = train(&data, tmp.path(), "b", &["--seed", "2"]);
    let input = "1 2 3\n4 5\n6 7 8 9\n3 3\n";
    let json = |models: &[&Path]| {
        let o = translate_with(models, &["--json", "--ban-unk", "--min-len", "1"], input);
        assert!(o.status.success(), "{}", stderr(&o));
        json_lines(&String::from_utf8(o.stdout).unwrap())
    };
    let logprob = |t: &serde_json::Value| t["hyps"][0]["logprob"].as_f64().unwrap();

    // A model with itself: the mean of equal probabilities, so the same output and scores.
    let alone = json(&[&a]);
    let twice = json(&[&a, &a]);
    assert_eq!(alone.len(), 4);
    for (x, y) in alone.iter().zip(&twice) {
        assert_eq!(x["hyps"][0]["text"], y["hyps"][0]["text"]);
        assert!((logprob(x) - logprob(y)).abs() < 1e-4, "{x} / {y}");
    }

    // Two models: at every step log((p_a + p_b) / 2) >= (log p_a + log p_b) / 2, equal only
    // where the members agree, so the ensemble's log-probability of its own output is at least
    // the members' mean teacher-forced one (`s2s score`), and above it somewhere.
    let both = json(&[&a, &b]);
    let hyps = tmp.path().join("hyps.txt");
    let srcs = tmp.path().join("srcs.txt");
    std::fs::write(&srcs, input).unwrap();
    let texts: Vec<&str> = both
        .iter()
        .map(|t| t["hyps"][0]["text"].as_str().unwrap())
        .collect();
    std::fs::write(&hyps, texts.join("\n") + "\n").unwrap();
    let scored = |models: &[&Path]| -> Vec<f64> {
        let o = run({
            let mut c = s2s();
            c.arg("score");
            for m in models {
                c.arg("--model").arg(m);
            }
            c.arg("--src").arg(&srcs);
            c.arg("--ref").arg(&hyps).arg("--per-sentence");
            c
        });
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').next().unwrap().parse().unwrap())
            .collect()
    };
    let (by_a, by_b) = (scored(&[&a]), scored(&[&b]));
    // `s2s score` of the pair scores what the pair decoded, token by token.
    let by_both = scored(&[&a, &b]);
    let mut above = 0;
    for (i, t) in both.iter().enumerate() {
        assert!(
            (logprob(t) - by_both[i]).abs() < 1e-3,
            "line {i}: decoded {} but scored {}",
            logprob(t),
            by_both[i]
        );
        let mean = (by_a[i] + by_b[i]) / 2.0;
        assert!(
            logprob(t) >= mean - 1e-3,
            "line {i}: {} < {mean}",
            logprob(t)
        );
        above += usize::from(logprob(t) > mean + 1e-3);
    }
    assert!(
        above > 0,
        "the ensemble scores like the mean of log-probabilities"
    );

    // A member prepared otherwise is refused, named, with the fix.
    let other = tmp.path().join("other");
    let o = run({
        let mut c = s2s();
        c.arg("prepare")
            .arg("--train-src")
            .arg(tmp.path().join("raw/train.src"))
            .arg("--train-tgt")
            .arg(tmp.path().join("raw/train.tgt"))
            .arg("--valid-src")
            .arg(tmp.path().join("raw/valid.src"))
            .arg("--valid-tgt")
            .arg(tmp.path().join("raw/valid.tgt"))
            .args(["--tokenizer", "char", "--out"])
            .arg(&other);
        c
    });
    assert!(o.status.success(), "{}", stderr(&o));
    let c = train(&other, tmp.path(), "c", &[]);
    let o = translate_with(&[&a, &c], &[], input);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains(c.to_str().unwrap()) && err.contains("ensemble") && err.contains("fix"),
        "{err}"
    );
}
