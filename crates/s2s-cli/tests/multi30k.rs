//! The benchmark recipes: every config under `configs/` resolves, the Multi30k ones to their
//! presets with one shared recipe, and `bench/multi30k.sh` runs end to end on a slice of the
//! corpus with a -tiny model (a smoke run of about half a minute). A `best_by` that does not
//! score the task is refused with the ones that do.

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const MODELS: [(&str, &str); 5] = [
    ("lstm", "rnn-lstm"),
    ("gru-cho", "rnn-gru-cho"),
    ("rnnsearch", "rnnsearch"),
    ("convs2s", "convs2s-small"),
    ("transformer", "transformer-small"),
];

#[test]
fn every_recipe_resolves_to_a_valid_run() {
    let mut files = vec![workspace().join("configs/quickstart.toml")];
    for dir in std::fs::read_dir(workspace().join("configs")).unwrap() {
        let dir = dir.unwrap().path();
        if dir.is_dir() {
            files.extend(std::fs::read_dir(&dir).unwrap().map(|f| f.unwrap().path()));
        }
    }
    assert!(files.len() >= 12, "{files:?}");
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display().to_string();
        let (arch, model, mut train) = s2s_infer::config::resolve(None, Some((&name, &text)), None)
            .unwrap_or_else(|e| panic!("{e}"));
        if train.max_steps == 0 && train.max_minutes == 0.0 {
            // The quickstart's budget comes from `--minutes`.
            train.max_minutes = 10.0;
        }
        let run = s2s_infer::RunConfig {
            arch,
            task: None,
            src_vocab: 8000,
            tgt_vocab: 8000,
            src_vectors: false,
            model,
            train,
        };
        run.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn every_config_resolves_to_its_preset_with_the_shared_recipe() {
    for (name, preset) in MODELS {
        let path = workspace().join(format!("configs/multi30k/{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        let (arch, model, train) =
            s2s_infer::config::resolve(None, Some((&path.display().to_string(), &text)), None)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(arch.as_deref(), Some(preset), "{name}");
        // One joint vocabulary of 8000 types (the runner prepares with --joint).
        model.check_vocab(8000, 8000).unwrap();
        assert_eq!(train.label_smoothing, 0.1, "{name}");
        assert_eq!(train.max_tokens, 2500, "{name}");
        assert!(train.warmup_steps > 0, "{name}");
        // Every recipe decays linearly to zero as the runner's --max-minutes runs out (no step
        // count, which would tie the recipe to one machine's speed).
        assert_eq!(train.max_steps, 0, "{name}");
        assert_eq!(
            train.save_every, 0,
            "{name}: averaging checkpoints follow the budget"
        );
        assert_eq!(
            train.schedule,
            s2s_infer::config::LrSchedule::Linear,
            "{name}"
        );
        if let s2s_models::ModelConfig::Transformer(t) = &model {
            assert!(t.share_embeddings && t.tie_output);
        }
    }
}

fn shared_multi30k() -> Option<PathBuf> {
    let dir = std::env::var_os("S2S_MULTI30K")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("../shared/data/multi30k"));
    if dir.join("train.de").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: no Multi30k folder at {} (set S2S_MULTI30K to run this test)",
            dir.display()
        );
        None
    }
}

fn number(cell: &str) -> f64 {
    cell.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

#[test]
fn the_runner_writes_the_table_and_the_curves() {
    let Some(shared) = shared_multi30k() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("bench");
    let started = std::time::Instant::now();
    let o = Command::new("bash")
        .arg(workspace().join("bench/multi30k.sh"))
        .args(["--s2s", env!("CARGO_BIN_EXE_s2s")])
        .args(["--from", shared.to_str().unwrap()])
        .args(["--out", out.to_str().unwrap()])
        .args(["--models", "transformer", "--tiny", "--slice", "300"])
        .args(["--minutes", "0.25", "--average", "2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "runner failed:\n{stderr}");
    eprintln!("runner took {:.0} s", started.elapsed().as_secs_f64());

    let table = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(table.contains("Smoke run on a slice of 300"), "{table}");
    let header = table
        .lines()
        .find(|l| l.starts_with("| model"))
        .expect("table header");
    assert_eq!(header.matches('|').count(), 11, "{header}");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| transformer |"))
        .collect();
    assert_eq!(rows.len(), 1, "{table}");
    // --average 2: a second row for the averaged checkpoints. A 15-second run may have kept
    // fewer than two (one at the end, one per `save_every` steps before it), and the runner
    // averages what is there.
    let averaged = table
        .lines()
        .find(|l| l.starts_with("| transformer+avg2 |"))
        .unwrap_or_else(|| panic!("no averaged row:\n{table}"));
    let model_dir = out.join("models").join("transformer");
    let kept = 1 + std::fs::read_dir(model_dir.join("checkpoints"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!((1..=2).contains(&kept), "{kept} checkpoints kept");
    assert!(
        averaged.contains("s2s average --model") && averaged.contains(&format!("--last {kept}")),
        "{averaged}"
    );
    let cells: Vec<&str> = rows[0]
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect();
    assert_eq!(cells.len(), 10, "{cells:?}");
    let params = number(cells[1]);
    assert!(params > 1000.0 && params.fract() == 0.0, "{cells:?}");
    let minutes = number(cells[2]);
    assert!(minutes > 0.0 && minutes < 3.0, "{cells:?}");
    for bleu in &cells[3..7] {
        let b = number(bleu);
        assert!((0.0..=100.0).contains(&b), "{cells:?}");
    }
    let alpha = number(cells[7]);
    assert!([0.5, 0.75, 1.0, 1.25].contains(&alpha), "{cells:?}");
    assert!(
        cells[8].starts_with("`s2s train --data") && cells[8].contains("--max-minutes 0.25"),
        "{cells:?}"
    );
    let date = cells[9];
    assert!(
        date.len() == 10 && date.as_bytes()[4] == b'-' && date.as_bytes()[7] == b'-',
        "{date}"
    );

    // The machine-readable copy agrees with the table.
    let jsonl = std::fs::read_to_string(out.join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{jsonl}");
    let rec = records
        .iter()
        .find(|r| r["model"] == "transformer")
        .expect("the transformer record");
    assert_eq!(rec["parameters"].as_f64(), Some(params));
    assert_eq!(rec["greedy"]["sacrebleu"].as_f64(), Some(number(cells[3])));
    assert_eq!(rec["beam5"]["bleu_lc_13a"].as_f64(), Some(number(cells[6])));
    assert_eq!(rec["slice"], 300);
    // Beam 5's alpha is the one whose val translation scored best, of the four tried, as
    // `s2s tune` recorded them in the model's decoding.toml.
    assert_eq!(rec["beam5"]["alpha"].as_f64(), Some(alpha));
    let tuned: toml::Value = toml::from_str(
        &std::fs::read_to_string(out.join("models/transformer/decoding.toml")).unwrap(),
    )
    .unwrap();
    assert_eq!(tuned["alpha"].as_float(), Some(alpha));
    assert_eq!(tuned["beam"].as_integer(), Some(5));
    let valid: Vec<(f64, f64)> = tuned["tuned"]["tried"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_float().unwrap(), p[1].as_float().unwrap()))
        .collect();
    assert_eq!(
        valid.iter().map(|v| v.0).collect::<Vec<_>>(),
        [0.5, 0.75, 1.0, 1.25]
    );
    let best = valid.iter().map(|v| v.1).fold(f64::MIN, f64::max);
    let first_best = valid.iter().find(|v| v.1 == best).unwrap().0;
    // The runner copies the score's text; serde_json's default float parsing may land one ulp
    // away from toml's.
    let recorded = rec["beam5"]["valid_sacrebleu"].as_f64().unwrap();
    assert!(
        (recorded - best).abs() <= 1e-12 * best.abs(),
        "{recorded} vs {valid:?}"
    );
    assert_eq!(alpha, first_best, "{valid:?}");

    // model.json records the size the table reports.
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("models/transformer/model.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(info["parameters"].as_f64(), Some(params));
    assert_eq!(info["arch"], "transformer-tiny");

    // One SVG of validation BLEU and loss against minutes.
    let svg = std::fs::read_to_string(out.join("curves/transformer.svg")).unwrap();
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(100)]);
    assert!(svg.contains("validation BLEU") && svg.contains("minutes"));
    // Translations of the whole test slice (max(20, 300 / 5) = 60 sentences).
    for name in ["transformer", "transformer+avg2"] {
        for search in ["greedy", "beam5"] {
            let hyp = std::fs::read_to_string(out.join(format!("hyp/{name}.{search}.en"))).unwrap();
            assert_eq!(hyp.lines().count(), 60, "{name} {search}");
        }
    }
    assert!(out.join("models/transformer+avg2/average.json").exists());
}

#[test]
fn a_score_that_does_not_fit_the_task_is_refused_with_the_ones_that_do() {
    let path = workspace().join("configs/tagging/ud-ewt.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let (arch, model, mut train) =
        s2s_infer::config::resolve(None, Some((&path.display().to_string(), &text)), None).unwrap();
    let run = |train: s2s_infer::config::TrainConfig| s2s_infer::RunConfig {
        arch: arch.clone(),
        task: None,
        src_vocab: 8000,
        tgt_vocab: 20,
        src_vectors: false,
        model: model.clone(),
        train,
    };
    run(train.clone()).validate().unwrap();
    train.best_by = s2s_infer::config::BestBy::Rouge;
    let e = run(train).validate().unwrap_err();
    assert!(
        e.contains("best_by = \"rouge\"") && e.contains("\"accuracy\" or \"loss\""),
        "{e}"
    );
}
