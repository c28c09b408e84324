//! `s2s average`: the averaged MODEL_DIR holds the element-wise mean of the newest N
//! checkpoints (computed here independently from the checkpoints themselves), translates, and
//! bad requests fail with a clear message and touch nothing.

mod common;

use burn::store::{ModuleSnapshot, bridge};
use common::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Every parameter of a model, by name.
fn weights(model: &s2s_models::Seq2SeqModel) -> BTreeMap<String, Vec<f32>> {
    model
        .collect(None, None, false)
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            (
                name,
                bridge::into_data(t).unwrap().try_into_vec::<f32>().unwrap(),
            )
        })
        .collect()
}

fn checkpoint_weights(model_dir: &Path, ckpt: &Path) -> BTreeMap<String, Vec<f32>> {
    let run = s2s_infer::model_dir::read_run_config(model_dir).unwrap();
    let device = burn::tensor::Device::flex();
    let model = s2s_models::Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &device);
    let model =
        s2s_models::io::load_checkpoint(model, &ckpt.join(s2s_train::checkpoint::WEIGHTS)).unwrap();
    weights(&model)
}

fn average(model: &Path, last: &str, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut c = s2s();
    c.arg("average")
        .arg("--model")
        .arg(model)
        .arg("--last")
        .arg(last)
        .arg("--out")
        .arg(out)
        .args(extra);
    run(c)
}

#[test]
fn average_writes_the_mean_of_the_newest_checkpoints() {
    let tmp = tempfile::tempdir().unwrap();
    // A checkpoint every 3 steps; the newest three are steps 15, 18 and 20.
    let (_, _, model) = trained(tmp.path(), &["--max-steps", "20", "--keep-last", "3"]);

    let avg = tmp.path().join("avg");
    let o = average(&model, "3", &avg, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("steps 15, 18, 20"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(avg.join("average.json")).unwrap()).unwrap();
    assert_eq!(record["steps"], serde_json::json!([15, 18, 20]));

    // The mean, computed here from the three checkpoints.
    let dirs = [
        model.join("checkpoints").join("step-00000015"),
        model.join("checkpoints").join("step-00000018"),
        model.join("checkpoint"),
    ];
    let parts: Vec<_> = dirs.iter().map(|d| checkpoint_weights(&model, d)).collect();
    let device = burn::tensor::Device::flex();
    let loaded = s2s_infer::model_dir::load(&avg, &device).unwrap();
    let got = weights(&loaded.model);
    assert_eq!(got.len(), parts[0].len());
    let mut differs_from_last = false;
    for (name, values) in &got {
        for (i, v) in values.iter().enumerate() {
            let want = parts.iter().map(|p| p[name][i] as f64).sum::<f64>() / 3.0;
            assert!(
                (*v as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "{name}[{i}]: {v} is not the mean {want}"
            );
            differs_from_last |= *v != parts[2][name][i];
        }
    }
    // Training moved the weights between checkpoints, so the mean is not the last one.
    assert!(differs_from_last);

    // The averaged MODEL_DIR translates.
    let o = translate_stdin(&avg, b"1 2 3\n4 5\n");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);

    // Bad requests: a clear message, nothing written or changed.
    let before = hash_dir(&model);
    let more = tmp.path().join("avg4");
    let o = average(&model, "4", &more, &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("holds 3 checkpoint(s) but 4 were asked for")
            && stderr(&o).contains("--keep-last 4"),
        "{}",
        stderr(&o)
    );
    assert!(!more.exists());
    let o = average(&model, "2", &model, &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("is the model directory itself"),
        "{}",
        stderr(&o)
    );
    let avg_before = hash_dir(&avg);
    let o = average(&model, "2", &avg, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("pass --force"), "{}", stderr(&o));
    assert_eq!(hash_dir(&avg), avg_before);
    // Not even --force writes over another training run.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("checkpoint")).unwrap();
    std::fs::write(other.join("checkpoint").join("state.json"), "{}").unwrap();
    let o = average(&model, "2", &other, &["--force"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("holds a training run's checkpoints"),
        "{}",
        stderr(&o)
    );
    assert!(!other.join("model.safetensors").exists());
    assert_eq!(hash_dir(&model), before);

    // A damaged checkpoint is named, not silently skipped.
    let w = model
        .join("checkpoints")
        .join("step-00000018")
        .join(s2s_train::checkpoint::WEIGHTS);
    let mut bytes = std::fs::read(&w).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&w, &bytes).unwrap();
    let o = average(&model, "3", &avg, &["--force"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("step-00000018") && stderr(&o).contains("does not match its manifest"),
        "{}",
        stderr(&o)
    );
    assert_eq!(hash_dir(&avg), avg_before);
    // The newest alone is intact: averaging it (over the first result, with --force) works.
    let o = average(&model, "1", &avg, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn save_every_writes_checkpoints_between_validations() {
    let tmp = tempfile::tempdir().unwrap();
    // Validation every 3 steps, a checkpoint also every 2: steps 2, 3, 4, 6, 8, 9, 10 (the end).
    let (_, _, model) = trained(
        tmp.path(),
        &["--max-steps", "10", "--keep-last", "4", "--save-every", "2"],
    );
    let o = average(&model, "4", &tmp.path().join("avg"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("steps 6, 8, 9, 10"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // Checkpoints between validations are not validations: metrics.jsonl has steps 3, 6, 9, 10.
    let steps: Vec<usize> = s2s_infer::metrics::read(&model.join("metrics.jsonl"))
        .unwrap()
        .iter()
        .map(|r| r.step)
        .collect();
    assert_eq!(steps, [3, 6, 9, 10]);
}
