//! `s2s data pairs` through the real binary: AESLC-shaped JSON lines to source, target and
//! reference files on a small fixture, a broken line refused with its place and nothing
//! written, and (where `../shared/data` is present) the real AESLC, SciTLDR and CamRest676 with
//! their published split sizes.

mod common;

use common::{run, s2s, stderr};
use std::path::{Path, PathBuf};

fn pairs(corpus: &str, from: &Path, out: &Path) -> std::process::Output {
    let mut c = s2s();
    c.args(["data", "pairs", corpus, "--from"])
        .arg(from)
        .arg("--out")
        .arg(out);
    run(c)
}

fn lines(path: PathBuf) -> Vec<String> {
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn aeslc_fixture_and_a_broken_line() {
    let root = tempfile::tempdir().unwrap();
    let from = root.path().join("aeslc");
    std::fs::create_dir_all(&from).unwrap();
    let ex = |email: &str, subject: &str, anns: bool| {
        let mut o = serde_json::json!({"id": "x", "email": email, "subject": subject});
        if anns {
            for k in 0..3 {
                o[format!("ann{k}")] = serde_json::json!(format!("{subject} {k}"));
            }
        }
        o.to_string() + "\n"
    };
    std::fs::write(
        from.join("train.jsonl"),
        ex("Hi,\n  the  meeting moved.\nThanks", "Meeting", false) + &ex("b", "B", false),
    )
    .unwrap();
    std::fs::write(from.join("dev.jsonl"), ex("c", "C", true)).unwrap();
    std::fs::write(from.join("test.jsonl"), ex("d\ne", "D", true)).unwrap();
    let out = root.path().join("out");
    let o = pairs("aeslc", &from, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        lines(out.join("train.src")),
        ["Hi, the meeting moved. Thanks", "b"]
    );
    assert_eq!(lines(out.join("train.tgt")), ["Meeting", "B"]);
    assert_eq!(lines(out.join("test.src")), ["d e"]);
    assert_eq!(lines(out.join("test.tgt")), ["D 0"]);
    assert_eq!(lines(out.join("test.tgt.3")), ["D 2"]);
    assert_eq!(lines(out.join("valid.tgt.2")), ["C 1"]);

    std::fs::write(from.join("test.jsonl"), ex("d", "D", false)).unwrap();
    let out2 = root.path().join("out2");
    let o = pairs("aeslc", &from, &out2);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("test.jsonl:1") && err.contains("ann0"),
        "{err}"
    );
    assert!(!out2.exists(), "nothing is written when a file is bad");
}

#[test]
fn shared_corpora_have_their_published_sizes() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if !shared.join("aeslc/test.jsonl").exists() {
        eprintln!("skipped: no {}", shared.display());
        return;
    }
    let root = tempfile::tempdir().unwrap();
    // Examples per split and test reference files, as the corpora's files hold them (SciTLDR:
    // a pair per TLDR in training, up to 4 TLDRs per test paper; CamRest676: a pair per system
    // turn of 405 / 135 / 136 dialogues).
    for (corpus, sizes, refs) in [
        ("aeslc", [14436, 1960, 1906], 3),
        ("scitldr", [1992, 619, 618], 4),
        ("camrest676", [1666, 539, 539], 1),
    ] {
        let out = root.path().join(corpus);
        let o = pairs(corpus, &shared.join(corpus), &out);
        assert!(o.status.success(), "{corpus}: {}", stderr(&o));
        let count = |name: &str| lines(out.join(name)).len();
        for (split, want) in ["train", "valid", "test"].into_iter().zip(sizes) {
            assert_eq!(count(&format!("{split}.src")), want, "{corpus} {split}");
            assert_eq!(count(&format!("{split}.tgt")), want, "{corpus} {split}");
        }
        let last = if refs > 1 {
            format!("test.tgt.{refs}")
        } else {
            "test.tgt".into()
        };
        assert!(out.join(last).exists(), "{corpus}");
        assert!(
            !out.join(format!("test.tgt.{}", refs + 1)).exists(),
            "{corpus}"
        );
    }
}
