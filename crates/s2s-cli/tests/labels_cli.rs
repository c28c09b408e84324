//! Tagging, classification and generation through the real binary: `s2s prepare --task` on CoNLL-U,
//! token/TAG and LABEL-text files (and the refusals of options that belong to another task),
//! and `s2s eval --metrics accuracy,f1` with its per-label table; generation (a sentence from
//! its label) prepared, trained and scored with `s2s score`.

mod common;

use common::{run, s2s, stderr};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn prepare(args: &[&str]) -> Output {
    let mut c = s2s();
    c.arg("prepare").args(args);
    run(c)
}

fn conllu_word(id: usize, form: &str, upos: &str) -> String {
    format!(
        "{id}\t{form}\t_\t{upos}\t{}\t_\t0\tdep\t_\t_\n",
        upos.to_lowercase()
    )
}

const TRAIN_CONLLU: &[&[(&str, &str)]] = &[
    &[
        ("I", "PRON"),
        ("don't", "AUX"),
        ("know", "VERB"),
        (".", "PUNCT"),
    ],
    &[("3 000", "NUM"), ("dogs", "NOUN"), ("bark", "VERB")],
];

fn conllu(sentences: &[&[(&str, &str)]]) -> String {
    let mut s = String::new();
    for (k, sent) in sentences.iter().enumerate() {
        s += &format!("# sent_id = {k}\n");
        for (i, (form, upos)) in sent.iter().enumerate() {
            s += &conllu_word(i + 1, form, upos);
        }
        s += "\n";
    }
    s
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn prepare_tagging_and_classification() {
    let d = tempfile::tempdir().unwrap();
    let train = write(d.path(), "train.conllu", &conllu(TRAIN_CONLLU));
    let valid = write(
        d.path(),
        "dev.conllu",
        &conllu(&[&[("Oh", "INTJ"), ("dogs", "NOUN")]]),
    );
    let out = d.path().join("tag");
    let o = prepare(&[
        "--task",
        "tagging",
        "--train",
        p(&train),
        "--valid",
        p(&valid),
        "--tag-column",
        "xpos",
        "--out",
        p(&out),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("task: tagging"), "{stdout}");
    assert!(
        stdout.contains("source split") && stdout.contains("target split"),
        "{stdout}"
    );
    let err = stderr(&o);
    assert!(err.contains("train: 1 word forms held whitespace"), "{err}");
    assert!(
        err.contains("valid: 1 labels not seen in training (in 1 pairs), mapped to <unk>"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("train.tgt")).unwrap(),
        "pron aux verb punct\nnum noun verb\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("train.src")).unwrap(),
        "I don't know .\n3_000 dogs bark\n"
    );
    let toml = std::fs::read_to_string(out.join("data.toml")).unwrap();
    assert!(toml.contains("task = \"tagging\""), "{toml}");

    // token/TAG lines.
    let tagged = write(d.path(), "tagged.txt", "The/DT dog/NN ./.\n");
    let o = prepare(&[
        "--task",
        "tagging",
        "--format",
        "tagged",
        "--train",
        p(&tagged),
        "--out",
        p(&d.path().join("tagged")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Classification: labels get `split`; any text tokenizer, but not for the labels.
    let labelled = write(d.path(), "sst.txt", "1 a fine film .\n0 dull .\n");
    let cls = d.path().join("cls");
    let o = prepare(&[
        "--task",
        "classification",
        "--train",
        p(&labelled),
        "--tokenizer",
        "bpe",
        "--out",
        p(&cls),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("target tokenizer is bpe") && err.contains("--src-tokenizer"),
        "{err}"
    );
    assert!(!cls.exists(), "nothing written on failure");
    let o = prepare(&[
        "--task",
        "classification",
        "--train",
        p(&labelled),
        "--src-tokenizer",
        "char",
        "--out",
        p(&cls),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("task: classification") && stdout.contains("source char"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(cls.join("train.tgt")).unwrap(),
        "1\n0\n"
    );
}

#[test]
fn options_of_another_task_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "f.txt", "1 a\n");
    let out = d.path().join("out");
    let cases: [(&[&str], &str); 5] = [
        (
            &["--train", p(&f)],
            "--train is for the tagging, classification and generation tasks; fix: pass --task tagging",
        ),
        (
            &[
                "--train-src",
                p(&f),
                "--train-tgt",
                p(&f),
                "--format",
                "conllu",
            ],
            "--format is for the tagging, classification and generation tasks",
        ),
        (
            &[
                "--task",
                "tagging",
                "--train-src",
                p(&f),
                "--train-tgt",
                p(&f),
            ],
            "--train-src is for translation data; fix: for --task tagging pass one labelled file",
        ),
        (
            &[
                "--task",
                "classification",
                "--train",
                p(&f),
                "--valid-tsv",
                p(&f),
            ],
            "--valid-tsv is for translation data",
        ),
        (
            &[
                "--task",
                "tagging",
                "--format",
                "tagged",
                "--train",
                p(&f),
                "--tag-column",
                "upos",
            ],
            "--tag-column chooses a CoNLL-U column",
        ),
    ];
    for (args, want) in cases {
        let mut all = args.to_vec();
        all.extend(["--out", p(&out)]);
        let o = prepare(&all);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!out.exists());
    }
    // A format of the wrong task reaches the library's check, which names the file.
    let o = prepare(&[
        "--task",
        "tagging",
        "--format",
        "labelled",
        "--train",
        p(&f),
        "--out",
        p(&out),
    ]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("f.txt") && err.contains("--task classification"),
        "{err}"
    );
    // A malformed CoNLL-U line: file, line and fix.
    let bad = write(d.path(), "bad.conllu", "# c\n1\tword\tNOUN\n");
    let o = prepare(&["--task", "tagging", "--train", p(&bad), "--out", p(&out)]);
    let err = stderr(&o);
    assert!(
        err.contains("bad.conllu:2: 3 tab-separated column(s)") && err.contains("fix:"),
        "{err}"
    );
}

fn eval(hyp: &Path, refs: &[&Path], extra: &[&str]) -> Output {
    let mut c = s2s();
    c.args(["eval", "--metrics", "accuracy,f1", "--hyp"])
        .arg(hyp);
    for r in refs {
        c.arg("--ref").arg(r);
    }
    c.args(extra);
    run(c)
}

#[test]
fn eval_accuracy_and_macro_f1() {
    let d = tempfile::tempdir().unwrap();
    // Positions (ref -> hyp): DET->DET NOUN->VERB VERB->VERB | NOUN->NOUN ADJ->NOUN.
    let refs = write(d.path(), "test.tgt", "DET NOUN VERB\nNOUN ADJ\n");
    let hyp = write(d.path(), "test.hyp", "DET VERB VERB\nNOUN NOUN\n");
    let o = eval(&hyp, &[&refs], &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["accuracy"],
        json!({"name": "accuracy", "score": 60.0, "correct": 3, "count": 5})
    );
    // ADJ 0; DET 100; NOUN P 50 R 50 F1 50; VERB P 50 R 100 F1 66.67 -> mean 54.17.
    assert_eq!(v["f1"]["score"], json!(54.17));
    assert_eq!(
        v["f1"]["labels"],
        json!([
            {"label": "ADJ", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
            {"label": "DET", "precision": 100.0, "recall": 100.0, "f1": 100.0, "support": 1},
            {"label": "NOUN", "precision": 50.0, "recall": 50.0, "f1": 50.0, "support": 2},
            {"label": "VERB", "precision": 50.0, "recall": 100.0, "f1": 66.67, "support": 1},
        ])
    );

    let o = eval(&hyp, &[&refs], &["--width", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0], "accuracy = 60.0 (3 of 5 labels correct)",
        "{text}"
    );
    assert_eq!(lines[1], "macro-F1 = 54.2 (mean over 4 labels)", "{text}");
    let verb: Vec<&str> = lines[6].split_whitespace().collect();
    assert_eq!(verb, ["VERB", "50.0", "100.0", "66.7", "1"], "{text}");

    // A hypothesis line with a missing tag: files, line, counts and the fix.
    let short = write(d.path(), "short.hyp", "DET VERB VERB\nNOUN\n");
    let o = eval(&short, &[&refs], &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("short.hyp against")
            && err.contains("test.tgt")
            && err.contains("line 2: the hypothesis has 1 label(s) but the reference has 2")
            && err.contains("fix:"),
        "{err}"
    );
    let o = eval(&hyp, &[&refs, &refs], &[]);
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("fix: pass one --ref"),
        "{err}"
    );
}

/// `s2s score --json` on MODEL with the given files.
fn score(model: &Path, src: &Path, reference: &Path, extra: &[&str]) -> Output {
    let mut c = s2s();
    c.args([
        "score",
        "--model",
        p(model),
        "--src",
        p(src),
        "--ref",
        p(reference),
    ])
    .args(extra);
    run(c)
}

#[test]
fn generation_trains_and_scores_through_the_binary() {
    let d = tempfile::tempdir().unwrap();
    let lines = |n: usize, seed: usize| -> String {
        (0..n)
            .map(|i| {
                let k = (i * 7 + seed) % 5;
                if (i + seed).is_multiple_of(2) {
                    format!("up d{k} d{} d{}\n", k + 1, k + 2)
                } else {
                    format!("down d{} d{} d{k}\n", k + 2, k + 1)
                }
            })
            .collect()
    };
    let train = write(d.path(), "train.txt", &lines(200, 0));
    let valid = write(d.path(), "valid.txt", &lines(20, 1));
    let data = d.path().join("data");
    let o = prepare(&[
        "--task",
        "generation",
        "--train",
        p(&train),
        "--valid",
        p(&valid),
        "--tgt-tokenizer",
        "word",
        "--out",
        p(&data),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(data.join("train.src"))
            .unwrap()
            .lines()
            .next(),
        Some("up")
    );

    let model = d.path().join("model");
    let mut c = s2s();
    c.args([
        "train",
        "--data",
        p(&data),
        "--arch",
        "rnn-gru-cho-tiny",
        "--out",
        p(&model),
    ])
    .args(["--max-steps", "30", "--quiet"]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let config = std::fs::read_to_string(model.join("config.toml")).unwrap();
    assert!(config.contains("task = \"generation\"") && config.contains("best_by = \"loss\""));

    // The validation perplexity that training logged for its best model is what `score` gives.
    let best = std::fs::read_to_string(model.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["valid_ppl"]
                .as_f64()
                .unwrap()
        })
        .fold(f64::INFINITY, f64::min);
    let (vsrc, vtgt) = (data.join("valid.src"), data.join("valid.tgt"));
    let o = score(&model, &vsrc, &vtgt, &["--json", "--per-sentence"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ppl = v["perplexity"].as_f64().unwrap();
    assert!(
        (ppl - best).abs() <= 1e-6 * best,
        "score {ppl}, training {best}"
    );
    assert_eq!(v["pairs"], json!(20));
    assert_eq!(v["tokens"], json!(80), "3 words and <eos> per reference");
    let scores = v["scores"].as_array().unwrap();
    let sum: f64 = scores.iter().map(|s| s["logprob"].as_f64().unwrap()).sum();
    assert!((sum - v["logprob"].as_f64().unwrap()).abs() < 1e-6);

    // Plain output: one `LOGPROB<TAB>TOKENS` line per pair, the summary on stderr.
    let o = score(&model, &vsrc, &vtgt, &["--per-sentence"]);
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(out.lines().count(), 20);
    assert!(out.lines().all(|l| l.ends_with("\t4")), "{out}");
    assert!(stderr(&o).contains("perplexity"), "{}", stderr(&o));

    // Misaligned files are refused, naming both.
    let short = write(d.path(), "short.txt", "up\n");
    let o = score(&model, &short, &vtgt, &[]);
    assert!(!o.status.success());
    let msg = stderr(&o);
    assert!(
        msg.contains("short.txt") && msg.contains("valid.tgt") && msg.contains("fix:"),
        "{msg}"
    );
}

/// Spoken words as N vs 1 classification: `prepare --task classification --format manifest`
/// reads audio (the manifest's second column is the label), refuses what audio cannot have, and
/// `train` refuses a model for text on it (and one for audio on text).
#[test]
fn spoken_words_prepare_as_classification_of_audio() {
    let d = tempfile::tempdir().unwrap();
    let raw = d.path().join("raw");
    let train = s2s_data::audio::write_first_tone_labels(&raw, "train", 30, 1).unwrap();
    let valid = s2s_data::audio::write_first_tone_labels(&raw, "valid", 6, 2).unwrap();
    let data = d.path().join("data");
    let audio = [
        "--task",
        "classification",
        "--format",
        "manifest",
        "--train",
        p(&train),
        "--valid",
        p(&valid),
        "--sample-rate",
        "8000",
        "--n-mels",
        "20",
    ];
    let o = prepare(&[&audio[..], &["--out", p(&data)]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("task: classification"), "{stdout}");
    assert!(stdout.contains("labels: split"), "{stdout}");
    let record = std::fs::read_to_string(data.join("data.toml")).unwrap();
    assert!(record.contains("[audio.fbank]"), "{record}");
    assert_eq!(
        std::fs::read_to_string(data.join("train.tgt"))
            .unwrap()
            .lines()
            .filter(|l| l.contains(' '))
            .count(),
        0,
        "one label per line"
    );

    // What audio cannot have, and a label of two words (named by file and line).
    let two_words = write(&raw, "two.tsv", "train/0000.wav\tlow mid\n");
    let text = write(d.path(), "text.txt", "pos a good film\n");
    let out = d.path().join("out");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            [&audio[..], &["--src-tokenizer", "word"]].concat(),
            "the sources are audio, which has no tokenizer",
        ),
        (
            [&audio[..], &["--unk-signatures"]].concat(),
            "the classification source is audio; fix: drop --unk-signatures",
        ),
        (
            [&audio[..], &["--max-src-tokens", "5"]].concat(),
            "these sources are audio",
        ),
        (
            [&audio[..], &["--test", p(&text)]].concat(),
            "text.txt:1: no tab",
        ),
        (
            [&audio[..4], &["--train", p(&two_words)], &audio[8..]].concat(),
            "two.tsv:1",
        ),
    ];
    for (args, needle) in cases {
        let o = prepare(&[&args[..], &["--out", p(&out)]].concat());
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains(needle),
            "{needle:?} not in {}",
            stderr(&o)
        );
        assert!(!out.join("data.toml").exists());
    }

    // A classifier of text on audio, and one of audio on text.
    let e = train_error(&data, "bilstm-classifier-tiny", &d.path().join("m1"));
    assert!(
        e.contains("classification data of audio, but the model reads text")
            && e.contains("speech-classifier"),
        "{e}"
    );
    let text_data = d.path().join("text-data");
    let labelled = write(d.path(), "l.txt", "pos a good film\nneg a bad film\n");
    let o = prepare(&[
        "--task",
        "classification",
        "--train",
        p(&labelled),
        "--out",
        p(&text_data),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = train_error(&text_data, "speech-classifier-tiny", &d.path().join("m2"));
    assert!(
        e.contains("data of text, but the model reads audio") && !e.contains("speech-classifier"),
        "{e}"
    );
}

/// `s2s train` of `arch` on `data`, which must fail: its stderr.
fn train_error(data: &Path, arch: &str, out: &Path) -> String {
    let mut c = s2s();
    c.args(["train", "--data", p(data), "--arch", arch, "--out", p(out)]);
    let o = run(c);
    assert!(!o.status.success(), "{arch} trained");
    stderr(&o)
}

/// Generation conditioned on vectors: `prepare --task generation --format vectors` reads a file of
/// vectors beside the texts, a recurrent generator and a Transformer learn which sentence each
/// vector stands for (from slightly jittered copies), `translate` writes it from the vector
/// alone, `score` rates a sentence under its own vector above another's, and bad vectors and
/// models that cannot read them are refused with the fix.
#[test]
fn generation_from_vectors_through_the_binary() {
    let d = tempfile::tempdir().unwrap();
    let centres: [[f32; 4]; 3] = [
        [0.9, -0.3, 0.1, 0.5],
        [-0.4, 0.8, 0.6, -0.2],
        [0.2, 0.1, -0.9, -0.7],
    ];
    let sentences = ["a red ball", "two green trees", "the blue sea is wide"];
    let (mut vecs, mut texts) = (String::new(), String::new());
    for i in 0..90 {
        let k = i % 3;
        let jitter = |j: usize| ((i * 7 + j * 3) % 11) as f32 / 11.0 * 0.1 - 0.05;
        let v: Vec<String> = (0..4)
            .map(|j| format!("{}", centres[k][j] + jitter(j)))
            .collect();
        vecs += &(v.join(" ") + "\n");
        texts += &format!("{}\n", sentences[k]);
    }
    let line = |v: &[f32; 4]| format!("{} {} {} {}", v[0], v[1], v[2], v[3]);
    let clean: String = centres.iter().map(|c| line(c) + "\n").collect();
    let train_v = write(d.path(), "train.vec", &vecs);
    let train_t = write(d.path(), "train.txt", &texts);
    let valid_v = write(d.path(), "valid.vec", &clean);
    let valid_t = write(d.path(), "valid.txt", &(sentences.join("\n") + "\n"));
    let data = d.path().join("data");
    let o = prepare(&[
        "--task",
        "generation",
        "--format",
        "vectors",
        "--train-src",
        p(&train_v),
        "--train-tgt",
        p(&train_t),
        "--valid-src",
        p(&valid_v),
        "--valid-tgt",
        p(&valid_t),
        "--tokenizer",
        "word",
        "--out",
        p(&data),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("conditions: vectors of 4 numbers; texts: word"),
        "{stdout}"
    );

    let model = d.path().join("model");
    // One batch an epoch: the epochs and a rate to learn three sentences in a few dozen steps.
    let recipe = write(
        d.path(),
        "gen.toml",
        "arch = \"rnn-gru-cho-tiny\"\n[train]\nlr = 0.01\nmax_epochs = 300\nmax_steps = 300\n",
    );
    let mut c = s2s();
    c.args(["train", "--data", p(&data), "--config", p(&recipe)])
        .args(["--out", p(&model), "--quiet"]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));

    // Each clean vector gives its sentence.
    let mut c = s2s();
    c.args(["translate", "--model", p(&model), "--input", p(&valid_v)]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().collect::<Vec<_>>(), sentences, "{out}");

    // A sentence is likelier under its own vector than under the next one's.
    let o = score(&model, &valid_v, &valid_t, &["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let own = serde_json::from_slice::<Value>(&o.stdout).unwrap()["perplexity"]
        .as_f64()
        .unwrap();
    let moved: String = centres[1..]
        .iter()
        .chain(&centres[..1])
        .map(|c| line(c) + "\n")
        .collect();
    let moved = write(d.path(), "moved.vec", &moved);
    let o = score(&model, &moved, &valid_t, &["--json"]);
    let other = serde_json::from_slice::<Value>(&o.stdout).unwrap()["perplexity"]
        .as_f64()
        .unwrap();
    assert!(own * 2.0 < other, "own vectors {own}, moved {other}");

    // A vector of another dimension names its input line.
    let bad = write(
        d.path(),
        "bad.vec",
        &format!("{}1 2 3\n", line(&centres[0]) + "\n"),
    );
    let mut c = s2s();
    c.args(["translate", "--model", p(&model), "--input", p(&bad)]);
    let o = run(c);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("input 2: has 3 numbers where 4 are expected") && err.contains("fix:"),
        "{err}"
    );
    // The Transformer reads vectors too (`s2s serve` is tested in serve_http.rs); ConvS2S not.
    let recipe = write(
        d.path(),
        "gen-t.toml",
        "arch = \"transformer-tiny\"\n[train]\nlr = 0.005\nwarmup_steps = 30\n\
         max_epochs = 300\nmax_steps = 300\n",
    );
    let transformer = d.path().join("transformer");
    let mut c = s2s();
    c.args(["train", "--data", p(&data), "--config", p(&recipe)])
        .args(["--out", p(&transformer), "--quiet"]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut c = s2s();
    c.args([
        "translate",
        "--model",
        p(&transformer),
        "--input",
        p(&valid_v),
    ]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.lines().collect::<Vec<_>>(), sentences, "{out}");
    let e = train_error(&data, "convs2s-tiny", &d.path().join("m2"));
    assert!(
        e.contains("conditioned on vectors") && e.contains("--arch transformer-small"),
        "{e}"
    );
    let o = prepare(&[
        "--format",
        "vectors",
        "--train-src",
        p(&train_v),
        "--train-tgt",
        p(&train_t),
        "--out",
        p(&d.path().join("d2")),
    ]);
    assert!(
        stderr(&o).contains("--format vectors gives generation its conditions, but the task is translation; fix: pass --task generation"),
        "{}",
        stderr(&o)
    );
}
