//! `s2s tune` chooses alpha on the validation split, keeps it in the MODEL_DIR's
//! `decoding.toml`, and `s2s translate` decodes with it unless told otherwise; a broken file or
//! a data directory without a validation split is refused with the file named.

mod common;

use common::{run, s2s, stderr};
use std::path::Path;

/// `s2s CMD --model MODEL FLAG PATH extra..`, run to its end.
fn s2s_on(
    cmd: &str,
    model: &Path,
    flag: &str,
    path: &Path,
    extra: &[&str],
) -> std::process::Output {
    run({
        let mut c = s2s();
        c.arg(cmd)
            .arg("--model")
            .arg(model)
            .arg(flag)
            .arg(path)
            .args(extra);
        c
    })
}

fn translate_json(model: &Path, input: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let mut json = vec!["--json"];
    json.extend_from_slice(extra);
    let o = s2s_on("translate", model, "--input", input, &json);
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `[alpha, score]` pairs of a `[tuned]` table.
fn tried_pairs(tuned: &toml::Value) -> Vec<(f64, f64)> {
    tuned["tried"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_float().unwrap(), p[1].as_float().unwrap()))
        .collect()
}

#[test]
fn tune_writes_the_best_alpha_and_translate_uses_it() {
    let root = tempfile::tempdir().unwrap();
    let (data, _, model) = common::trained(root.path(), &["--max-steps", "30"]);
    let o = s2s_on(
        "tune",
        &model,
        "--data",
        &data,
        &["--alphas", "0,2.5", "--beam", "3"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let file = model.join("decoding.toml");
    let written: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["beam"].as_integer(), Some(3));
    let alpha = written["alpha"].as_float().unwrap();
    let tuned = &written["tuned"];
    assert_eq!(tuned["split"].as_str(), Some("valid"));
    assert_eq!(tuned["sentences"].as_integer(), Some(20));
    assert!(tuned["metric"].as_str().unwrap().starts_with("sacreBLEU"));
    let tried = tried_pairs(tuned);
    assert_eq!(tried.iter().map(|t| t.0).collect::<Vec<_>>(), [0.0, 2.5]);
    let best = tried
        .iter()
        .fold(tried[0], |b, &t| if t.1 > b.1 { t } else { b });
    assert_eq!(
        alpha, best.0,
        "the highest score wins, the first of equals: {tried:?}"
    );

    // Without --alpha, translate ranks by the tuned exponent: score = logprob / L^alpha.
    let input = root.path().join("raw/valid.src");
    let lines = translate_json(&model, &input, &["--nbest", "3"]);
    assert_eq!(lines.len(), 20);
    for line in &lines {
        for h in line["hyps"].as_array().unwrap() {
            let len = h["tokens"].as_array().unwrap().len() + 1;
            let (score, logprob) = (h["score"].as_f64().unwrap(), h["logprob"].as_f64().unwrap());
            let want = logprob / (len as f64).powf(alpha);
            assert!(
                (score - want).abs() < 1e-4,
                "{h}: score {score}, want {want}"
            );
        }
        assert_eq!(line["hyps"].as_array().unwrap().len(), 3);
    }
    // --alpha still wins over the file.
    let other = if alpha == 0.0 { 2.5 } else { 0.0 };
    let lines = translate_json(&model, &input, &["--alpha", &other.to_string()]);
    let h = &lines[0]["hyps"][0];
    let len = h["tokens"].as_array().unwrap().len() + 1;
    let want = h["logprob"].as_f64().unwrap() / (len as f64).powf(other);
    assert!((h["score"].as_f64().unwrap() - want).abs() < 1e-4, "{h}");

    // An error rate is ranked lowest first: SER, the share of outputs equal to none of their
    // references, recomputed here from translate's own outputs at the alpha kept.
    let o = s2s_on(
        "tune",
        &model,
        "--data",
        &data,
        &["--alphas", "2.5,0", "--beam", "3", "--metric", "ser"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let written: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let tuned = &written["tuned"];
    assert_eq!(tuned["metric"].as_str(), Some("SER"));
    let tried = tried_pairs(tuned);
    let best = tried
        .iter()
        .fold(tried[0], |b, &t| if t.1 < b.1 { t } else { b });
    let kept = written["alpha"].as_float().unwrap();
    assert_eq!(kept, best.0, "the lowest error wins: {tried:?}");
    let o = s2s_on(
        "translate",
        &model,
        "--input",
        &input,
        &["--beam", "3", "--alpha", &kept.to_string()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let refs = std::fs::read_to_string(root.path().join("raw/valid.tgt")).unwrap();
    let hyps = String::from_utf8(o.stdout).unwrap();
    let wrong = hyps
        .lines()
        .zip(refs.lines())
        .filter(|(h, r)| !h.split_whitespace().eq(r.split_whitespace()))
        .count();
    assert_eq!(hyps.lines().count(), 20);
    assert!(
        (best.1 - 100.0 * wrong as f64 / 20.0).abs() < 1e-9,
        "SER {} recorded, {wrong} of 20 wrong",
        best.1
    );
    // Label metrics rank no generated text.
    let o = s2s_on("tune", &model, "--data", &data, &["--metric", "accuracy"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("scores labels"), "{}", stderr(&o));

    // A hand-broken file stops translate with the file named and the fix.
    std::fs::write(&file, "alpha = 7.0\n").unwrap();
    let o = s2s_on("translate", &model, "--input", &input, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("decoding.toml") && err.contains("alpha must be between 0 and 5"),
        "{err}"
    );
    assert!(err.contains("delete it"), "{err}");

    // The broken file is reported before the data; without it, a data directory lacking a
    // validation split is refused and nothing is written.
    let bare = root.path().join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    let (bare_data, _) = common::setup_with(&bare, false);
    let o = s2s_on("tune", &model, "--data", &bare_data, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("decoding.toml"),
        "the broken file is reported first: {err}"
    );
    std::fs::remove_file(&file).unwrap();
    let o = s2s_on("tune", &model, "--data", &bare_data, &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("no validation split"), "{err}");
    assert!(!file.exists(), "a failed tune writes nothing");
}

/// `s2s CMD --model A --model B extra..`, run to its end.
fn s2s_pair(cmd: &str, a: &Path, b: &Path, extra: &[&std::ffi::OsStr]) -> std::process::Output {
    run({
        let mut c = s2s();
        c.arg(cmd)
            .arg("--model")
            .arg(a)
            .arg("--model")
            .arg(b)
            .args(extra);
        c
    })
}

#[test]
fn an_ensemble_is_tuned_into_a_file_of_its_own() {
    let root = tempfile::tempdir().unwrap();
    let (data, config, a) = common::trained(root.path(), &["--max-steps", "30"]);
    let b = root.path().join("b");
    let o = run(common::train_cmd(
        &data,
        &config,
        &b,
        &["--max-steps", "30", "--seed", "2"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    let os = |s: &str| std::ffi::OsString::from(s);

    // Without --out there is no right place for it.
    let tune = |extra: &[std::ffi::OsString]| {
        let mut args = vec![os("--data"), data.clone().into_os_string()];
        args.extend_from_slice(extra);
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        s2s_pair("tune", &a, &b, &refs)
    };
    let o = tune(&[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--out FILE"), "{}", stderr(&o));

    let file = root.path().join("ensemble.toml");
    let o = tune(&[
        os("--alphas"),
        os("2.5,0"),
        os("--beam"),
        os("3"),
        os("--metric"),
        os("ser"),
        os("--out"),
        file.clone().into_os_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("ensemble of 2"), "{}", stderr(&o));
    for member in [&a, &b] {
        assert!(
            !member.join("decoding.toml").exists(),
            "{} keeps its own defaults",
            member.display()
        );
    }
    let written: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["beam"].as_integer(), Some(3));
    let alpha = written["alpha"].as_float().unwrap();
    let tried = tried_pairs(&written["tuned"]);
    let best = tried
        .iter()
        .fold(tried[0], |b, &t| if t.1 < b.1 { t } else { b });
    assert_eq!(alpha, best.0, "the lowest error wins: {tried:?}");

    // The SER recorded is the ensemble's, as translate decodes it with the file's defaults.
    let input = root.path().join("raw/valid.src");
    let decode = |extra: &[&str]| {
        let mut args = vec![
            os("--decoding"),
            file.clone().into_os_string(),
            os("--input"),
            input.clone().into_os_string(),
        ];
        args.extend(extra.iter().map(|s| os(s)));
        let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        s2s_pair("translate", &a, &b, &refs)
    };
    let o = decode(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let refs = std::fs::read_to_string(root.path().join("raw/valid.tgt")).unwrap();
    let hyps = String::from_utf8(o.stdout).unwrap();
    assert_eq!(hyps.lines().count(), 20);
    let wrong = hyps
        .lines()
        .zip(refs.lines())
        .filter(|(h, r)| !h.split_whitespace().eq(r.split_whitespace()))
        .count();
    assert!(
        (best.1 - 100.0 * wrong as f64 / 20.0).abs() < 1e-9,
        "SER {} recorded, {wrong} of 20 wrong",
        best.1
    );
    // The file's beam (3) and alpha rank the hypotheses.
    let o = decode(&["--nbest", "4"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--beam 3"), "{}", stderr(&o));
    let o = decode(&["--json", "--nbest", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for line in String::from_utf8(o.stdout).unwrap().lines() {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        for h in line["hyps"].as_array().unwrap() {
            let len = h["tokens"].as_array().unwrap().len() + 1;
            let want = h["logprob"].as_f64().unwrap() / (len as f64).powf(alpha);
            assert!((h["score"].as_f64().unwrap() - want).abs() < 1e-4, "{h}");
        }
    }
    // A missing file is named.
    let gone = root.path().join("gone.toml");
    let o = s2s_pair(
        "translate",
        &a,
        &b,
        &[
            std::ffi::OsStr::new("--decoding"),
            gone.as_os_str(),
            std::ffi::OsStr::new("--input"),
            input.as_os_str(),
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("gone.toml"), "{}", stderr(&o));
}
