//! `s2s data get`: copying Multi30k, the classification corpora and CMUdict from a local folder
//! with sha256 checks, and the error paths.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The shared Multi30k folder: `$S2S_MULTI30K`, else `../shared/data/multi30k` next to the
/// workspace. `None` (and the test skips) when it is absent.
fn shared_multi30k() -> Option<PathBuf> {
    let dir = std::env::var_os("S2S_MULTI30K")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/multi30k")
        });
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

fn s2s(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_s2s"))
        .args(args)
        .output()
        .expect("s2s runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const NAMES: [&str; 6] = [
    "train.de",
    "train.en",
    "val.de",
    "val.en",
    "test2016.de",
    "test2016.en",
];

/// Every entry of a folder, temp files included.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn from_the_shared_folder_plain_and_gzipped() {
    let Some(shared) = shared_multi30k() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("m30k");
    let o = s2s(&[
        "data",
        "get",
        "multi30k",
        "--from",
        shared.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut want: Vec<String> = NAMES.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(entries(&out), want);
    for n in NAMES {
        assert_eq!(
            std::fs::read(out.join(n)).unwrap(),
            std::fs::read(shared.join(n)).unwrap(),
            "{n}"
        );
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(stdout.lines().count(), 6, "{stdout}");

    // The upstream layout: gzipped files with upstream names (test_2016_flickr.*).
    let gz = tmp.path().join("gz");
    std::fs::create_dir(&gz).unwrap();
    for n in NAMES {
        let upstream = n.replace("test2016", "test_2016_flickr");
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "gzip -c '{}' > '{}'",
                shared.join(n).display(),
                gz.join(format!("{upstream}.gz")).display()
            ))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let out2 = tmp.path().join("from-gz");
    let o = s2s(&[
        "data",
        "get",
        "multi30k",
        "--from",
        gz.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for n in NAMES {
        assert_eq!(
            std::fs::read(out2.join(n)).unwrap(),
            std::fs::read(shared.join(n)).unwrap(),
            "{n}"
        );
    }
}

#[test]
fn a_corrupted_or_missing_file_is_rejected_and_nothing_is_written() {
    let Some(shared) = shared_multi30k() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for n in NAMES {
        std::fs::copy(shared.join(n), src.join(n)).unwrap();
    }
    // One changed byte in the last file checked: the five before it verify, yet none is written.
    let mut bytes = std::fs::read(src.join("test2016.en")).unwrap();
    bytes[0] ^= 0x20;
    std::fs::write(src.join("test2016.en"), &bytes).unwrap();
    let out = tmp.path().join("out");
    let o = s2s(&[
        "data",
        "get",
        "multi30k",
        "--from",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("test2016.en: sha256 mismatch"), "{err}");
    assert!(
        err.contains("399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182"),
        "expected hash: {err}"
    );
    let got = s2s_data::sha256_hex(&bytes);
    assert!(err.contains(&got), "actual hash {got}: {err}");
    assert!(entries(&out).is_empty(), "{:?}", entries(&out));

    // A missing file is named, with what was looked for.
    std::fs::remove_file(src.join("val.de")).unwrap();
    let o = s2s(&[
        "data",
        "get",
        "multi30k",
        "--from",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("val.de is missing"), "{err}");
    assert!(err.contains("val.de.gz"), "{err}");
    assert!(entries(&out).is_empty(), "{:?}", entries(&out));
}

/// `s2s data get CORPUS` against a server that is not there: its stderr, after checking that
/// it failed and wrote nothing.
fn get_unreachable(corpus: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    // Port 9 (discard) on localhost: nothing listens, so the connection is refused at once.
    let o = Command::new(env!("CARGO_BIN_EXE_s2s"))
        .args(["data", "get", corpus, "--out", out.to_str().unwrap()])
        .env("S2S_DATA_BASE_URL", "http://127.0.0.1:9/")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(entries(&out).is_empty());
    stderr(&o)
}

#[test]
fn an_unreachable_server_suggests_from() {
    let err = get_unreachable("multi30k");
    assert!(
        err.contains("cannot download http://127.0.0.1:9/data/task1/raw/train.de.gz"),
        "{err}"
    );
    assert!(err.contains("--from DIR"), "{err}");
}

/// The shared data folder, or `None` (and the test skips) when `NAME` is not in it.
fn shared_data(name: &str, probe: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(name);
    if dir.join(probe).is_file() {
        Some(dir)
    } else {
        eprintln!("skipped: no {} ", dir.join(probe).display());
        None
    }
}

#[test]
fn the_classification_and_g2p_corpora_from_the_shared_folder() {
    for (corpus, folder, files) in [
        (
            "sentence-classification",
            "sentence-classification",
            &[
                "LICENSE.repo",
                "TREC.test.all",
                "TREC.train.all",
                "stsa.binary.dev",
                "stsa.binary.test",
                "stsa.binary.train",
            ][..],
        ),
        (
            "cmudict",
            "cmudict",
            &[
                "LICENSE",
                "cmudict.dict",
                "split.test_words",
                "split.train_words",
            ][..],
        ),
    ] {
        let Some(shared) = shared_data(folder, files[1]) else {
            continue;
        };
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let o = s2s(&[
            "data",
            "get",
            corpus,
            "--from",
            shared.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{corpus}: {}", stderr(&o));
        assert_eq!(entries(&out), files, "{corpus}");
        for f in files {
            assert_eq!(
                std::fs::read(out.join(f)).unwrap(),
                std::fs::read(shared.join(f)).unwrap(),
                "{corpus}/{f}"
            );
        }
    }
    // Without network, a plain (not gzipped) corpus names its own upstream and --from.
    let err = get_unreachable("cmudict");
    assert!(
        err.contains("cannot download http://127.0.0.1:9/cmudict.dict")
            && err.contains("github.com/cmusphinx/cmudict")
            && err.contains("s2s data get cmudict --from DIR"),
        "{err}"
    );
}
