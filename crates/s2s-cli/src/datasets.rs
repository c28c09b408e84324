//! `s2s data get`: benchmark corpora, downloaded or copied from a local folder, and verified.
//!
//! Multi30k (WMT16 multimodal task 1, German-English) comes from its public repository,
//! github.com/multi30k/dataset, pinned to one commit. Every file is checked against the sha256
//! sums below: the upstream `.gz` for downloads, and always the decompressed text, so a local
//! folder may hold the files plain or gzipped (recompressed files are fine). All six files are
//! fetched and verified in memory before the first one is written, and each is written
//! atomically, so a failure leaves no half-written corpus behind.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One file of a corpus.
#[derive(Clone, Copy, Debug)]
pub struct CorpusFile {
    /// The name written into `--out` (the layout of the shared data folder).
    pub name: &'static str,
    /// The path in the upstream repository.
    pub source: &'static str,
    /// sha256 of the upstream `.gz` file.
    pub gz_sha256: &'static str,
    /// sha256 of the decompressed text.
    pub sha256: &'static str,
    pub lines: usize,
}

/// The raw files of the repository at this commit ("Update README.md"; the data files were last
/// changed in c9be912, 2018-01-17).
pub const MULTI30K_BASE_URL: &str =
    "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/";

/// Overrides [`MULTI30K_BASE_URL`] (a mirror; the tests use it to exercise the network error).
pub const BASE_URL_ENV: &str = "S2S_MULTI30K_BASE_URL";

pub const MULTI30K: [CorpusFile; 6] = [
    CorpusFile {
        name: "train.de",
        source: "data/task1/raw/train.de.gz",
        gz_sha256: "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
        sha256: "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
        lines: 29000,
    },
    CorpusFile {
        name: "train.en",
        source: "data/task1/raw/train.en.gz",
        gz_sha256: "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
        sha256: "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
        lines: 29000,
    },
    CorpusFile {
        name: "val.de",
        source: "data/task1/raw/val.de.gz",
        gz_sha256: "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
        sha256: "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
        lines: 1014,
    },
    CorpusFile {
        name: "val.en",
        source: "data/task1/raw/val.en.gz",
        gz_sha256: "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
        sha256: "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
        lines: 1014,
    },
    CorpusFile {
        name: "test2016.de",
        source: "data/task1/raw/test_2016_flickr.de.gz",
        gz_sha256: "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
        sha256: "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
        lines: 1000,
    },
    CorpusFile {
        name: "test2016.en",
        source: "data/task1/raw/test_2016_flickr.en.gz",
        gz_sha256: "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
        sha256: "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
        lines: 1000,
    },
];

fn check_sha(what: &str, bytes: &[u8], expected: &str) -> Result<()> {
    let got = s2s_data::sha256_hex(bytes);
    if got != expected {
        bail!(
            "{what}: sha256 mismatch: expected {expected}, got {got}; the file is damaged or a \
             different version of the corpus. Delete it and fetch it again"
        );
    }
    Ok(())
}

fn gunzip(what: &str, gz: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .with_context(|| format!("{what}: not a valid gzip file"))?;
    Ok(out)
}

/// The names a local folder may hold `file` under, in the order they are tried: the plain name of
/// the shared layout, its `.gz`, the upstream name (plain and `.gz`), and the upstream path (a
/// clone of the repository).
fn local_candidates(file: &CorpusFile) -> Vec<String> {
    let upstream_gz = file.source.rsplit('/').next().unwrap_or(file.source);
    let upstream = upstream_gz.trim_end_matches(".gz");
    let mut names = vec![
        file.name.to_string(),
        format!("{}.gz", file.name),
        upstream.to_string(),
        upstream_gz.to_string(),
        file.source.to_string(),
    ];
    names.dedup();
    names
}

/// Reads `file` from the folder `from`, decompressing a `.gz`, and verifies the text.
fn read_local(from: &Path, file: &CorpusFile) -> Result<Vec<u8>> {
    let names = local_candidates(file);
    let Some(path) = names.iter().map(|n| from.join(n)).find(|p| p.is_file()) else {
        bail!(
            "{}: {} is missing (looked for {}); --from expects the six Multi30k task-1 files \
             train, val and test2016 (or test_2016_flickr), .de and .en, plain or .gz",
            from.display(),
            file.name,
            names.join(", ")
        );
    };
    let raw = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let what = path.display().to_string();
    let text = if path.extension().is_some_and(|e| e == "gz") {
        gunzip(&what, &raw)?
    } else {
        raw
    };
    check_sha(&what, &text, file.sha256)?;
    Ok(text)
}

fn download(agent: &ureq::Agent, base: &str, file: &CorpusFile) -> Result<Vec<u8>> {
    let url = format!("{base}{}", file.source);
    let fetched: Result<Vec<u8>, ureq::Error> = agent.get(&url).call().and_then(|mut resp| {
        resp.body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
    });
    let gz = fetched.map_err(|e| {
        anyhow::anyhow!(
            "cannot download {url}: {e}. Without internet access, get the files elsewhere \
             (the .gz files of github.com/multi30k/dataset, data/task1/raw) and copy them with \
             `s2s data get multi30k --from DIR --out ...`"
        )
    })?;
    check_sha(&url, &gz, file.gz_sha256)?;
    let text = gunzip(&url, &gz)?;
    check_sha(&format!("{url} (decompressed)"), &text, file.sha256)?;
    Ok(text)
}

/// Gets Multi30k into `out` (from `from` if given, otherwise from GitHub) and returns the paths
/// written. Files already in `out` with the right checksum are kept.
pub fn get_multi30k(out: &Path, from: Option<&Path>) -> Result<Vec<PathBuf>> {
    if let Some(from) = from
        && !from.is_dir()
    {
        bail!("--from {}: not a directory", from.display());
    }
    let base = std::env::var(BASE_URL_ENV).unwrap_or_else(|_| MULTI30K_BASE_URL.to_string());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    // Everything is fetched and verified before anything is written.
    let mut texts = Vec::new();
    for file in &MULTI30K {
        let target = out.join(file.name);
        if let Ok(existing) = std::fs::read(&target)
            && s2s_data::sha256_hex(&existing) == file.sha256
        {
            eprintln!("{}: already present and verified", target.display());
            continue;
        }
        let text = match from {
            Some(dir) => read_local(dir, file)?,
            None => {
                eprintln!("downloading {}{}", base, file.source);
                download(&agent, &base, file)?
            }
        };
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        if lines != file.lines {
            bail!(
                "{}: {lines} lines, expected {} (checksum matched, so this is a bug)",
                file.name,
                file.lines
            );
        }
        texts.push((target, text));
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut written = Vec::new();
    for (target, text) in texts {
        s2s_data::atomic_write(&target, &text)
            .with_context(|| format!("cannot write {}", target.display()))?;
        written.push(target);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_cover_the_shared_and_upstream_layouts() {
        let names = local_candidates(&MULTI30K[4]);
        assert_eq!(
            names,
            [
                "test2016.de",
                "test2016.de.gz",
                "test_2016_flickr.de",
                "test_2016_flickr.de.gz",
                "data/task1/raw/test_2016_flickr.de.gz"
            ]
        );
    }

    #[test]
    fn gzipped_copies_are_accepted_and_checked_by_content() {
        use flate2::{Compression, write::GzEncoder};
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let file = CorpusFile {
            name: "x.de",
            source: "raw/x.de.gz",
            gz_sha256: "unused",
            sha256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
            lines: 1,
        };
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"hello\n").unwrap();
        std::fs::write(dir.path().join("x.de.gz"), enc.finish().unwrap()).unwrap();
        assert_eq!(read_local(dir.path(), &file).unwrap(), b"hello\n");
        std::fs::write(dir.path().join("x.de"), b"hullo\n").unwrap();
        let err = format!("{:#}", read_local(dir.path(), &file).unwrap_err());
        assert!(err.contains("x.de: sha256 mismatch"), "{err}");
        assert!(err.contains(file.sha256), "{err}");
    }
}
