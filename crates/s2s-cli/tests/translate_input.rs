//! What `s2s translate` and the server's path (`Translator::encode_all`, `search`, `describe`)
//! make of unusual input lines: text that looks like a control token is ordinary text, and an
//! empty or whitespace-only line translates to an empty line, without the model, in every output
//! format, with the other lines keeping their places.

mod common;

use common::{run, s2s, stderr};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// A tiny word-level model trained for a few steps on digit reversal, whose corpus also writes
/// the names `<eos>` and `<pad>` as text (so the vocabulary has `<`, `eos`, `pad`, `>`).
fn model(root: &Path) -> PathBuf {
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
    let config = root.join("tiny.toml");
    std::fs::write(
        &config,
        "arch = \"rnnsearch-tiny\"\n[train]\nmax_tokens = 120\nvalid_every = 3\nvalid_bleu_sentences = 5\npatience = 0\nwarmup_steps = 2\nmax_epochs = 1000\n",
    )
    .unwrap();
    let out = root.join("model");
    let o = run(common::train_cmd(
        &data,
        &config,
        &out,
        &["--max-steps", "3"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// `s2s translate --model MODEL ARGS` with `input` on stdin; must succeed.
fn translate(model: &Path, args: &[&str], input: &str) -> String {
    let o: Output = s2s()
        .arg("translate")
        .arg("--model")
        .arg(model)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut ch| {
            ch.stdin.take().unwrap().write_all(input.as_bytes())?;
            ch.wait_with_output()
        })
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout).unwrap()
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
