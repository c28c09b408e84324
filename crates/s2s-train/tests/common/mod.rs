//! Shared helpers for training tests: a synthetic digit-reversal corpus prepared with the real
//! pipeline (`s2s_data::prepare`), and a trainer invocation on it.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use s2s_data::{CorpusSource, DataDir, PrepareConfig, TokenizerKind};
use s2s_infer::RunConfig;
use s2s_infer::config::resolve;
use s2s_train::{Corpus, TrainOptions};
use std::path::Path;

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

/// Writes `pairs` as `dir/NAME.src` and `dir/NAME.tgt`, one pair per line.
pub fn write_split(dir: &Path, name: &str, pairs: &[(String, String)]) -> CorpusSource {
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

/// Writes and prepares a reversal corpus under `root/data`.
pub fn reversal_data(root: &Path, n_train: usize, max_len: usize) -> DataDir {
    let raw = root.join("raw");
    std::fs::create_dir_all(&raw).unwrap();
    let train = write_split(&raw, "train", &reversal_pairs(n_train, 2, max_len, 1));
    let valid = write_split(&raw, "valid", &reversal_pairs(100, 2, max_len, 2));
    let test = write_split(&raw, "test", &reversal_pairs(200, 2, max_len, 3));
    let mut cfg = PrepareConfig::new(train, root.join("data"));
    cfg.valid = Some(valid);
    cfg.test = Some(test);
    cfg.src_tokenizer = Some(TokenizerKind::Word);
    cfg.tgt_tokenizer = Some(TokenizerKind::Word);
    cfg.joint = true;
    s2s_data::prepare(&cfg, &|_: &str| {}).unwrap();
    s2s_data::load_data_dir(root.join("data")).unwrap()
}

/// A run config for `arch` with training overrides given as TOML.
pub fn run_config(arch: &str, data: &DataDir, train_toml: &str) -> RunConfig {
    run_config_toml(data, &format!("arch = \"{arch}\"\n[train]\n{train_toml}\n"))
}

/// The run a whole config file (`arch`, `[model]`, `[train]`) describes, sized to `data`.
pub fn run_config_toml(data: &DataDir, text: &str) -> RunConfig {
    let task = data.meta.options.task;
    let (arch, model, train) = resolve(None, Some(("test", text)), Some(task)).unwrap();
    RunConfig::for_data(arch, model, train, data)
}

/// burn's random generator is process-wide: trainings in one test binary run one at a time, so
/// each is a deterministic function of its seed (and a pass is not luck of thread interleaving).
pub static TRAINING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Trains `run` on `data` into `model_dir` (which gets the files a real MODEL_DIR has).
pub fn train(
    model_dir: &Path,
    data: &DataDir,
    run: &RunConfig,
    resume: bool,
) -> s2s_train::TrainOutcome {
    try_train(model_dir, data, run, resume).unwrap()
}

/// [`train`], returning the trainer's error.
pub fn try_train(
    model_dir: &Path,
    data: &DataDir,
    run: &RunConfig,
    resume: bool,
) -> Result<s2s_train::TrainOutcome, s2s_train::TrainError> {
    try_train_on(
        model_dir,
        data,
        run,
        resume,
        &[burn::tensor::Device::flex()],
    )
}

/// [`train`] with data parallelism over `devices`.
pub fn train_on(
    model_dir: &Path,
    data: &DataDir,
    run: &RunConfig,
    resume: bool,
    devices: &[burn::tensor::Device],
) -> s2s_train::TrainOutcome {
    try_train_on(model_dir, data, run, resume, devices).unwrap()
}

/// [`train_on`], returning the trainer's error.
pub fn try_train_on(
    model_dir: &Path,
    data: &DataDir,
    run: &RunConfig,
    resume: bool,
    devices: &[burn::tensor::Device],
) -> Result<s2s_train::TrainOutcome, s2s_train::TrainError> {
    let _one_at_a_time = TRAINING.lock().unwrap_or_else(|e| e.into_inner());
    std::fs::create_dir_all(model_dir).unwrap();
    std::fs::write(model_dir.join("config.toml"), toml::to_string(run).unwrap()).unwrap();
    let encode =
        |text: &s2s_data::ParallelText| s2s_train::encode_split(&run.model, data, text).unwrap();
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
        resume,
        init: None,
        progress: false,
        interrupter: s2s_train::Interrupter::new(),
    };
    s2s_train::train_on(model_dir, run, &corpus, devices, &opts)
}

/// Greedy exact-match accuracy of the best model in `model_dir` on the test split.
pub fn exact_match(model_dir: &Path, data: &DataDir, run: &RunConfig) -> f64 {
    let device = burn::tensor::Device::flex();
    let model = s2s_models::Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &device);
    let model = s2s_models::io::load_weights(model, &model_dir.join("model.safetensors")).unwrap();
    let test = data.encode(data.test.as_ref().unwrap());
    let cfg = s2s_search::SearchConfig {
        strategy: s2s_search::Strategy::Greedy,
        nbest: 1,
        max_len: 20,
        special: s2s_infer::defaults::special_tokens(s2s_data::Specials::S2S),
        ..Default::default()
    };
    let hyps =
        s2s_models::decoder::translate_all(&model, &device, run.tgt_vocab, &test.src, &cfg, 64)
            .unwrap();
    let correct = hyps
        .iter()
        .zip(&test.tgt)
        .filter(|(h, t)| &h[0].tokens == *t)
        .count();
    correct as f64 / test.len() as f64
}

/// Asserts that two MODEL_DIRs logged the same validations, bit for bit: steps, epochs, losses
/// and scores (a resumed run against one that ran straight through). Returns how many.
pub fn assert_same_metrics(a: &Path, b: &Path) -> usize {
    let a = s2s_infer::metrics::read(&a.join("metrics.jsonl")).unwrap();
    let b = s2s_infer::metrics::read(&b.join("metrics.jsonl")).unwrap();
    assert_eq!(a.len(), b.len(), "validations logged");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.step, x.epoch), (y.step, y.epoch));
        for (what, u, v) in [
            ("train loss", x.train_loss, y.train_loss),
            ("valid loss", x.valid_loss, y.valid_loss),
            ("valid BLEU", x.valid_bleu, y.valid_bleu),
            ("valid accuracy", x.valid_accuracy, y.valid_accuracy),
            ("valid WER", x.valid_wer, y.valid_wer),
            ("valid ROUGE", x.valid_rouge, y.valid_rouge),
        ] {
            assert_eq!(u.to_bits(), v.to_bits(), "{what} at step {}", x.step);
        }
    }
    a.len()
}

/// Asserts that two MODEL_DIRs' checkpoints hold bit-identical parameters. Tensors are compared,
/// not files, so container metadata cannot mask or fake a difference.
pub fn assert_same_checkpoint(a: &Path, b: &Path, run: &RunConfig, what: &str) {
    use burn::store::ModuleSnapshot;
    let tensors = |dir: &Path| {
        let device = burn::tensor::Device::flex();
        let m = s2s_models::Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &device);
        let path = dir.join("checkpoint").join(s2s_train::checkpoint::WEIGHTS);
        let m = s2s_models::io::load_checkpoint(m, &path).unwrap();
        let mut out: Vec<(String, Vec<u8>)> = m
            .collect(None, None, false)
            .into_iter()
            .map(|t| {
                let (name, _, _, _, bytes) = t.into_parts().unwrap();
                (name, bytes.to_vec())
            })
            .collect();
        out.sort_by(|x, y| x.0.cmp(&y.0));
        out
    };
    let (ta, tb) = (tensors(a), tensors(b));
    assert_eq!(ta.len(), tb.len());
    for ((na, va), (nb, vb)) in ta.iter().zip(&tb) {
        assert_eq!(na, nb);
        assert!(va == vb, "{what}: parameter {na} differs after resume");
    }
}
