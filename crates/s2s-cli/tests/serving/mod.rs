//! Helpers for the tests of `s2s serve` and the plots: a tiny model trained through the real
//! pipeline (a digit-reversal corpus prepared with `s2s_data::prepare`, `rnnsearch-tiny` for 300
//! steps, written as a MODEL_DIR the way `s2s train` writes one), a server on a loopback port,
//! and a small HTTP/1.1 client. They live beside the binary because they need the trainer, which
//! `s2s-serve` itself does not depend on.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_data::{CorpusSource, PrepareConfig, TokenizerKind};
use s2s_infer::RunConfig;
use s2s_serve::{RequestLog, ServeConfig, Server};
use s2s_train::{Corpus, TrainOptions};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Random digit strings of length `min..=max` and their reversals, as space-separated words.
pub fn reversal_pairs(n: usize, min: usize, max: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let len = rng.random_range(min..=max);
            let digits: Vec<String> = (0..len)
                .map(|_| rng.random_range(0..10).to_string())
                .collect();
            let rev: Vec<String> = digits.iter().rev().cloned().collect();
            (digits.join(" "), rev.join(" "))
        })
        .collect()
}

fn write_split(dir: &Path, name: &str, pairs: &[(String, String)]) -> CorpusSource {
    let src = dir.join(format!("{name}.src"));
    let tgt = dir.join(format!("{name}.tgt"));
    let join = |f: &dyn Fn(&(String, String)) -> &String| {
        pairs
            .iter()
            .map(|p| f(p).as_str())
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    };
    std::fs::write(&src, join(&|p| &p.0)).unwrap();
    std::fs::write(&tgt, join(&|p| &p.1)).unwrap();
    CorpusSource::Parallel { src, tgt }
}

/// Prepares a reversal corpus and trains `rnnsearch-tiny` on it into `root/model`, writing the
/// files `s2s train` writes (config.toml, data.toml, the tokenizers, weights, metrics.jsonl).
pub fn train_reversal_model(root: &Path) -> PathBuf {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let train = write_split(&raw, "train", &reversal_pairs(3000, 2, 6, 1));
    let valid = write_split(&raw, "valid", &reversal_pairs(100, 2, 6, 2));
    let data_dir = root.join("data");
    let mut cfg = PrepareConfig::new(train, &data_dir);
    cfg.valid = Some(valid);
    cfg.src_tokenizer = Some(TokenizerKind::Word);
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    cfg.joint = true;
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    train_reversal_member(root, "model", None, 300)
}

/// `rnnsearch-tiny` trained on the reversal corpus in `root/data` ([`train_reversal_model`]
/// prepares it) for `steps` steps into `root/name`, from `seed` (else the default seed): another
/// model of the same data, as an ensemble's members are.
pub fn train_reversal_member(root: &Path, name: &str, seed: Option<u64>, steps: usize) -> PathBuf {
    let data = s2s_data::load_data_dir(root.join("data")).unwrap();
    let seed = seed.map_or(String::new(), |s| format!("seed = {s}\n"));
    let text = format!(
        "arch = \"rnnsearch-tiny\"\n[train]\nmax_steps = {steps}\nmax_tokens = 1200\n\
         max_sentences = 100\nlr = 5e-3\nwarmup_steps = 50\nlabel_smoothing = 0.0\n\
         valid_every = 60\npatience = 0\n{seed}"
    );
    let (arch, model, train) =
        s2s_infer::config::resolve(None, Some(("test", &text)), None).unwrap();
    let run = RunConfig {
        arch,
        task: None,
        src_vocab: data.src_tokenizer.vocab_size(),
        tgt_vocab: data.tgt_tokenizer.vocab_size(),
        src_vectors: false,
        model,
        train,
    };
    train_into(&root.join(name), &run, &data)
}

/// Trains `run` on `data` (its train and valid splits) on the CPU into `model_dir`, writing the
/// files `s2s train` writes.
fn train_into(model_dir: &Path, run: &RunConfig, data: &s2s_data::DataDir) -> PathBuf {
    s2s_infer::model_dir::create(model_dir, run, data).unwrap();
    let encode = |text| s2s_train::encode_split(&run.model, data, text).unwrap();
    let train_split = encode(&data.train);
    let valid_split = encode(data.valid.as_ref().unwrap());
    let refs = data.valid.as_ref().unwrap().tgt.clone();
    let corpus = Corpus {
        train: &train_split,
        valid: Some(&valid_split),
        valid_refs: &refs,
        tgt_tokenizer: &data.tgt_tokenizer,
    };
    let opts = TrainOptions {
        resume: false,
        init: None,
        progress: false,
        interrupter: s2s_train::Interrupter::new(),
    };
    s2s_train::train(
        model_dir,
        run,
        &corpus,
        &burn::tensor::Device::flex(),
        &opts,
    )
    .unwrap();
    model_dir.to_owned()
}

/// Prepares a synthetic speech corpus (`s2s_data::audio::write_tone_corpus`: words as tones, at
/// 8 and 16 kHz) and trains `speech-transformer-tiny` on it for `steps` steps into `root/model`.
/// Returns the model and the test split's WAV paths.
pub fn train_speech_model(root: &Path, steps: usize) -> (PathBuf, Vec<PathBuf>) {
    train_audio_model(root, s2s_data::Task::Asr, steps)
}

/// [`train_speech_model`] for `task`: asr, or classification (`speech-classifier-tiny` labelling
/// each utterance with its first word, `s2s_data::audio::write_first_tone_labels`).
pub fn train_audio_model(
    root: &Path,
    task: s2s_data::Task,
    steps: usize,
) -> (PathBuf, Vec<PathBuf>) {
    let raw = root.join("raw");
    let classify = task == s2s_data::Task::Classification;
    let manifest = |name: &str, n: usize, seed: u64| CorpusSource::Manifest {
        path: if classify {
            s2s_data::audio::write_first_tone_labels(&raw, name, n, seed)
        } else {
            s2s_data::audio::write_tone_corpus(&raw, name, n, seed)
        }
        .unwrap(),
    };
    let data_dir = root.join("data");
    let mut cfg = PrepareConfig::new(manifest("train", 200, 1), &data_dir);
    cfg.task = task;
    if !classify {
        cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    }
    cfg.valid = Some(manifest("valid", 20, 2));
    cfg.fbank.sample_rate = 8_000;
    cfg.fbank.n_mels = 20;
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let tests = manifest("test", 6, 3);
    let data = s2s_data::load_data_dir(&data_dir).unwrap();
    let arch = if classify {
        "speech-classifier-tiny"
    } else {
        "speech-transformer-tiny"
    };
    let text = format!(
        "arch = \"{arch}\"\n[train]\nmax_steps = {steps}\nmax_tokens = 4000\n\
         lr = 3e-3\nwarmup_steps = 10\nvalid_every = {steps}\npatience = 0\nmax_epochs = 1000\n"
    );
    let (arch, model, train) =
        s2s_infer::config::resolve(None, Some(("test", &text)), Some(task)).unwrap();
    let run = RunConfig::for_data(arch, model, train, &data);
    let model_dir = train_into(&root.join("model"), &run, &data);
    let CorpusSource::Manifest { path } = tests else {
        unreachable!()
    };
    let wavs = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| raw.join(l.split('\t').next().unwrap()))
        .collect();
    (model_dir, wavs)
}

/// Sentences of made-up lowercase words, each tagged `V` when it ends in a vowel and `C`
/// otherwise: the spelling decides every tag.
pub fn vowel_pairs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let (words, tags): (Vec<String>, Vec<&str>) = (0..rng.random_range(1..=7))
                .map(|_| {
                    let word: String = (0..rng.random_range(2..=7))
                        .map(|_| char::from(b'a' + rng.random_range(0..26u8)))
                        .collect();
                    let vowel = word.ends_with(['a', 'e', 'i', 'o', 'u']);
                    (word, if vowel { "V" } else { "C" })
                })
                .unzip();
            (words.join(" "), tags.join(" "))
        })
        .collect()
}

/// Prepares [`vowel_pairs`] as tagging data and trains `bilstm-tagger-tiny` (which reads each
/// word's characters) on it for `steps` steps into `root/model`.
pub fn train_tagger_model(root: &Path, steps: usize) -> PathBuf {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let data_dir = root.join("data");
    let mut cfg = PrepareConfig::new(write_split(&raw, "train", &vowel_pairs(400, 1)), &data_dir);
    cfg.task = s2s_data::Task::Tagging;
    cfg.valid = Some(write_split(&raw, "valid", &vowel_pairs(50, 2)));
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let data = s2s_data::load_data_dir(&data_dir).unwrap();
    let text = format!(
        "arch = \"bilstm-tagger-tiny\"\n[train]\nmax_steps = {steps}\nmax_tokens = 800\n\
         lr = 5e-3\nwarmup_steps = 10\nvalid_every = {steps}\npatience = 0\nmax_epochs = 1000\n"
    );
    let (arch, model, train) =
        s2s_infer::config::resolve(None, Some(("test", &text)), Some(cfg.task)).unwrap();
    let run = RunConfig::for_data(arch, model, train, &data);
    assert!(run.model.reads_characters());
    train_into(&root.join("model"), &run, &data)
}

/// Three 4-number vectors and the sentence each stands for: generation conditioned on vectors.
pub const VECTOR_CENTRES: [([f32; 4], &str); 3] = [
    ([0.9, -0.3, 0.1, 0.5], "a red ball"),
    ([-0.4, 0.8, 0.6, -0.2], "two green trees"),
    ([0.2, 0.1, -0.9, -0.7], "the blue sea is wide"),
];

/// A vector as a line of numbers.
pub fn vector_line(v: &[f32]) -> String {
    v.iter().map(f32::to_string).collect::<Vec<_>>().join(" ")
}

/// Prepares `--task generation --format vectors` data from jittered [`VECTOR_CENTRES`] (the
/// clean centres as validation) and trains `arch` on it for `steps` steps into `root/model`.
pub fn train_vector_model(root: &Path, arch: &str, steps: usize) -> PathBuf {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let pairs = |n: usize, jitter: f32| -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                let (centre, sentence) = VECTOR_CENTRES[i % 3];
                let v: Vec<f32> = (0..4)
                    .map(|j| centre[j] + jitter * (((i * 7 + j * 3) % 11) as f32 / 11.0 - 0.5))
                    .collect();
                (vector_line(&v), sentence.to_owned())
            })
            .collect()
    };
    let vectors = |split: CorpusSource| match split {
        CorpusSource::Parallel { src, tgt } => CorpusSource::Vectors { src, tgt },
        other => other,
    };
    let data_dir = root.join("data");
    let mut cfg = PrepareConfig::new(
        vectors(write_split(&raw, "train", &pairs(90, 0.1))),
        &data_dir,
    );
    cfg.task = s2s_data::Task::Generation;
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    cfg.valid = Some(vectors(write_split(&raw, "valid", &pairs(3, 0.0))));
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    let data = s2s_data::load_data_dir(&data_dir).unwrap();
    let text = format!(
        "arch = \"{arch}\"\n[train]\nmax_steps = {steps}\nlr = 0.01\nmax_epochs = 1000\n\
         valid_every = {steps}\npatience = 0\n"
    );
    let (arch, model, train) =
        s2s_infer::config::resolve(None, Some(("test", &text)), Some(cfg.task)).unwrap();
    let run = RunConfig::for_data(arch, model, train, &data);
    assert!(run.src_vectors && run.model.reads_vectors());
    train_into(&root.join("model"), &run, &data)
}

/// One trained model per test binary, kept alive (with its temporary folder) for all its tests.
pub fn model_dir() -> &'static Path {
    static MODEL: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let t = std::time::Instant::now();
            let model = train_reversal_model(dir.path());
            eprintln!(
                "trained the test model in {:.1} s",
                t.elapsed().as_secs_f64()
            );
            (dir, model)
        })
        .1
}

/// A server config for the shared model on a free loopback port, logging into memory.
pub fn config() -> ServeConfig {
    let mut cfg = ServeConfig::new(model_dir());
    cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    cfg.log = RequestLog::Capture(Default::default());
    cfg
}

pub fn start(cfg: ServeConfig) -> Server {
    Server::start(cfg).expect("server starts")
}

/// An HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("response is not JSON ({e}): {}", self.body))
    }

    /// The `error` of a JSON error body, checking its shape.
    pub fn error(&self) -> String {
        let v = self.json();
        let obj = v.as_object().expect("error body is an object");
        assert_eq!(obj.len(), 1, "error body has only `error`: {v}");
        obj["error"].as_str().expect("error is a string").to_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

fn dechunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\r\n") {
        let size_line = std::str::from_utf8(&rest[..pos]).unwrap();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap().trim(), 16).unwrap();
        rest = &rest[pos + 2..];
        if size == 0 {
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
    out
}

/// Sends one request (`Connection: close`) with raw `extra_headers` and reads the response.
pub fn raw_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra_headers: &str,
    body: &[u8],
) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra_headers}\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    // The server may answer (413) and close before reading a large body; that is fine.
    let _ = s.write_all(body);
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP response: {:?}", String::from_utf8_lossy(&buf)));
    let headers = String::from_utf8(buf[..split].to_vec()).unwrap();
    let mut body = buf[split + 4..].to_vec();
    if headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    Resp {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    }
}

pub fn get(addr: SocketAddr, path: &str) -> Resp {
    raw_request(addr, "GET", path, "", b"")
}

/// POSTs `body` with a Content-Length and, if given, a Content-Type.
pub fn post_bytes(addr: SocketAddr, path: &str, content_type: Option<&str>, body: &[u8]) -> Resp {
    let ct = content_type
        .map(|c| format!("Content-Type: {c}\r\n"))
        .unwrap_or_default();
    raw_request(
        addr,
        "POST",
        path,
        &format!("{ct}Content-Length: {}\r\n", body.len()),
        body,
    )
}

pub fn post(addr: SocketAddr, path: &str, body: &str) -> Resp {
    post_bytes(addr, path, Some("application/json"), body.as_bytes())
}

pub fn translate(addr: SocketAddr, req: &serde_json::Value) -> Resp {
    post(addr, "/v1/translate", &req.to_string())
}

/// Polls `GET /health` until the worker's counters satisfy `ok`; no fixed sleeps, so a fast or
/// a slow machine sees the same sequence of states.
pub fn wait_for_stats(addr: SocketAddr, what: &str, ok: impl Fn(&serde_json::Value) -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let stats = get(addr, "/health").json()["stats"].clone();
        if ok(&stats) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "waited 60 s for {what}: {stats}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}
