//! Throughput on fixed shapes (`s2s bench`): one training step, greedy decoding and beam-5
//! decoding of a synthetic batch, for the three model types. The shapes are those of the bake-off
//! that `bench/reference.py` measures in PyTorch, so the two can be compared side by side.

use crate::data_parallel::batch_gradients;
use crate::trainer::make_optimizer;
use burn::module::Module;
use burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::tensor::Device;
use s2s_data::Batch;
use s2s_infer::config::TrainConfig;
use s2s_infer::defaults::special_tokens;
use s2s_models::{ModelConfig, Seq2SeqModel, preset};
use s2s_search::{LengthPenalty, SearchConfig, Strategy};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The measured models: s2s presets, dropout as in the preset except RNNsearch (the bake-off's
/// RNNsearch has none).
pub const MODELS: [&str; 3] = ["rnnsearch", "transformer", "convs2s"];
pub const PHASES: [&str; 3] = ["train", "greedy", "beam"];

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Shape {
    pub batch: usize,
    pub src_len: usize,
    pub tgt_len: usize,
    pub vocab: usize,
    pub beam: usize,
}

impl Default for Shape {
    fn default() -> Self {
        Self {
            batch: 64,
            src_len: 20,
            tgt_len: 20,
            vocab: 8000,
            beam: 5,
        }
    }
}

/// One line of `s2s bench --json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub model: String,
    pub phase: String,
    /// Training: non-padding target tokens per second; decoding: generated tokens per second.
    pub tokens_per_sec: f64,
    /// Median over the repetitions.
    pub ms_per_batch: f64,
    /// Peak resident memory of the process (VmHWM); meaningful when one process measures one
    /// (model, phase), as `s2s bench` arranges.
    pub peak_rss_mb: f64,
    pub params: usize,
    pub reps: usize,
    pub shape: Shape,
}

/// The model config a bench name stands for.
pub fn model_config(name: &str) -> Option<ModelConfig> {
    let cfg = match name {
        "rnnsearch" => match preset("rnnsearch")? {
            ModelConfig::Rnn(c) => {
                ModelConfig::Rnn(s2s_models::rnn::RnnConfig { dropout: 0.0, ..c })
            }
            other => other,
        },
        "transformer" => preset("transformer-small")?,
        "convs2s" => preset("convs2s-small")?,
        _ => return None,
    };
    Some(cfg)
}

/// The bake-off's synthetic batch (same generator as `bench/reference.py`): random source ids
/// filling every position, targets that copy the source prefix with lengths 10..20, padded.
pub fn synthetic_batch(shape: &Shape) -> Batch {
    let (b, s, t) = (shape.batch, shape.src_len, shape.tgt_len);
    let mut state: u64 = 12345;
    let first = s2s_data::EOS + 1;
    let src: Vec<u32> = (0..b * s)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            first + ((state >> 33) % (shape.vocab as u64 - first as u64)) as u32
        })
        .collect();
    let (mut tgt_in, mut tgt_out) = (vec![s2s_data::PAD; b * t], vec![s2s_data::PAD; b * t]);
    let mut tgt_mask = vec![false; b * t];
    let mut tgt_lens = Vec::with_capacity(b);
    for row in 0..b {
        let len = (10 + row % 11).min(t);
        for j in 0..t {
            if j < len {
                tgt_out[row * t + j] = src[row * s + j.min(s - 1)];
                tgt_mask[row * t + j] = true;
            }
            tgt_in[row * t + j] = if j == 0 {
                s2s_data::BOS
            } else {
                tgt_out[row * t + j - 1]
            };
        }
        tgt_lens.push(len);
    }
    Batch {
        batch_size: b,
        src_len: s,
        tgt_len: t,
        src,
        src_lens: vec![s; b],
        src_mask: vec![true; b * s],
        tgt_in,
        tgt_out,
        tgt_lens,
        tgt_mask,
        specials: s2s_data::Specials::S2S,
        frames: None,
        vectors: None,
        chars: None,
    }
}

/// Peak resident set size of this process in MiB (Linux), or 0 where unknown.
pub fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Measures one (model, phase): `warmup` untimed repetitions, then the median of `reps`.
pub fn measure(
    model_name: &str,
    phase: &str,
    shape: &Shape,
    warmup: usize,
    reps: usize,
    device: &Device,
) -> Result<Measurement, String> {
    let cfg = model_config(model_name)
        .ok_or_else(|| format!("unknown bench model {model_name:?}; use one of {MODELS:?}"))?;
    let data = synthetic_batch(shape);
    let (b, s, t) = (shape.batch, shape.src_len, shape.tgt_len);
    let mut times = Vec::with_capacity(reps);
    let params;
    let tokens_per_batch;
    match phase {
        "train" => {
            let ad = device.clone().autodiff();
            ad.seed(1);
            let mut model = Seq2SeqModel::try_new(&cfg, shape.vocab, shape.vocab, &ad)?;
            params = model.num_params();
            let train_cfg = TrainConfig::default();
            let mut optim = make_optimizer(&train_cfg);
            for i in 0..warmup + reps {
                let start = Instant::now();
                // The step `s2s train` takes: on a CPU, the rows split over the cores.
                let (_, _, pending) = batch_gradients(&model, device, &data, &train_cfg, i);
                let grads = pending.grads(&model);
                model = optim.step(ModuleLearningRate::from(1e-4), model, grads);
                if i >= warmup {
                    times.push(start.elapsed().as_secs_f64());
                }
            }
            tokens_per_batch = data.num_tgt_tokens();
        }
        "greedy" | "beam" => {
            device.seed(1);
            let model = Seq2SeqModel::try_new(&cfg, shape.vocab, shape.vocab, device)?;
            params = model.num_params();
            let strategy = if phase == "beam" {
                Strategy::Beam { k: shape.beam }
            } else {
                Strategy::Greedy
            };
            // Exactly `tgt_len` steps for every sentence, as in the reference: `tgt_len - 1`
            // tokens with `<eos>` banned, then the step that ends each hypothesis.
            let search = SearchConfig {
                strategy,
                nbest: 1,
                length_penalty: LengthPenalty::Alpha(0.75),
                min_len: t - 1,
                max_len: t - 1,
                max_len_ratio: None,
                special: special_tokens(s2s_data::Specials::S2S),
                ..SearchConfig::default()
            };
            let sources: Vec<Vec<u32>> = data.src.chunks(s).map(<[u32]>::to_vec).collect();
            for i in 0..warmup + reps {
                let start = Instant::now();
                let hyps = s2s_models::decoder::translate_all(
                    &model,
                    device,
                    shape.vocab,
                    &sources,
                    &search,
                    b,
                )
                .map_err(|e| e.to_string())?;
                if hyps.iter().any(|h| h[0].tokens.len() + 1 < t) {
                    return Err(format!("{phase} decoding did not run {t} steps"));
                }
                if i >= warmup {
                    times.push(start.elapsed().as_secs_f64());
                }
            }
            tokens_per_batch = b * t;
        }
        other => {
            return Err(format!(
                "unknown bench phase {other:?}; use one of {PHASES:?}"
            ));
        }
    }
    let secs = median(times);
    Ok(Measurement {
        model: model_name.to_string(),
        phase: phase.to_string(),
        tokens_per_sec: tokens_per_batch as f64 / secs,
        ms_per_batch: secs * 1000.0,
        peak_rss_mb: peak_rss_mb(),
        params,
        reps,
        shape: *shape,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_batch_is_shifted_copy_with_padding() {
        let shape = Shape::default();
        let d = synthetic_batch(&shape);
        let t = shape.tgt_len;
        for row in 0..shape.batch {
            let len = 10 + row % 11;
            assert_eq!(d.tgt_in[row * t], s2s_data::BOS);
            assert_eq!(d.tgt_in[row * t + 1], d.tgt_out[row * t]);
            assert!(
                d.tgt_out[row * t..row * t + len]
                    .iter()
                    .all(|&x| x > s2s_data::EOS)
            );
            assert!(
                d.tgt_out[row * t + len..(row + 1) * t]
                    .iter()
                    .all(|&x| x == 0)
            );
        }
        assert_eq!(
            d.num_tgt_tokens(),
            (0..shape.batch).map(|r| 10 + r % 11).sum::<usize>()
        );
        // The masks agree with the padding the loss skips.
        for (i, &m) in d.tgt_mask.iter().enumerate() {
            assert_eq!(m, d.tgt_out[i] != s2s_data::PAD, "target position {i}");
        }
        assert!(d.src_mask.iter().all(|&m| m));
    }

    #[test]
    fn every_bench_model_is_a_valid_config() {
        for m in MODELS {
            assert!(model_config(m).is_some(), "{m}");
        }
        assert!(model_config("nope").is_none());
    }

    #[test]
    fn measures_a_tiny_shape() {
        let shape = Shape {
            batch: 2,
            src_len: 4,
            tgt_len: 3,
            vocab: 50,
            beam: 2,
        };
        let device = s2s_models::backend::parse_device("cpu").unwrap();
        for phase in PHASES {
            let m = measure("rnnsearch", phase, &shape, 0, 1, &device).unwrap();
            assert!(
                m.ms_per_batch > 0.0 && m.tokens_per_sec.is_finite(),
                "{m:?}"
            );
            assert!(m.params > 0);
        }
    }
}
