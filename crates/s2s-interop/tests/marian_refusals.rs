//! What `import marian` refuses, each by name with its fix, leaving nothing behind.

use std::path::{Path, PathBuf};

use s2s_interop::marian;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/marian/model")
}

/// A copy of the fixture folder with `edit` applied to its config.json.
fn with_config(tmp: &Path, edit: impl Fn(&mut serde_json::Value)) -> PathBuf {
    let dir = tmp.join("src");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
    }
    let path = dir.join(marian::CONFIG_JSON);
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut cfg);
    std::fs::write(&path, cfg.to_string()).unwrap();
    dir
}

fn refused(src: &Path, tmp: &Path) -> String {
    let out = tmp.join("out");
    let err = marian::import(src, &out, false).unwrap_err().to_string();
    assert!(!out.exists(), "a refused import left {}", out.display());
    err
}

#[test]
fn unsupported_options_are_named() {
    for (field, value, words) in [
        (
            "normalize_before",
            serde_json::json!(true),
            "normalize_before = true",
        ),
        (
            "activation_function",
            serde_json::json!("tanh"),
            "activation_function = \"tanh\"",
        ),
        (
            "share_encoder_decoder_embeddings",
            serde_json::json!(false),
            "share_encoder_decoder_embeddings = false",
        ),
        (
            "model_type",
            serde_json::json!("bart"),
            "model_type is `bart`",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let src = with_config(tmp.path(), |c| c[field] = value.clone());
        let err = refused(&src, tmp.path());
        assert!(err.contains(words), "{field}: {err}");
    }
}

#[test]
fn a_bin_only_checkpoint_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let src = with_config(tmp.path(), |_| {});
    std::fs::rename(src.join(marian::WEIGHTS), src.join("pytorch_model.bin")).unwrap();
    let err = refused(&src, tmp.path());
    assert!(
        err.contains("pytorch_model.bin") && err.contains("safe_serialization=True"),
        "{err}"
    );
}

#[test]
fn a_tensor_of_another_shape_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    // One more layer than the checkpoint has: its tensors are missing.
    let src = with_config(tmp.path(), |c| c["encoder_layers"] = serde_json::json!(3));
    let err = refused(&src, tmp.path());
    assert!(err.contains("model.encoder.layers.2."), "{err}");
}

#[test]
fn a_non_empty_out_is_kept_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let err = marian::import(&fixture(), &out, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
    marian::import(&fixture(), &out, true).unwrap();
    assert!(!out.join("keep.txt").exists());
    assert!(out.join("config.toml").exists());
}
