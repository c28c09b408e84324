//! `s2s bench`: training and decoding throughput on fixed shapes. Each (model, phase) runs in a
//! child process of this binary so that its peak memory is its own.

use anyhow::{Context, bail};
use s2s_train::bench::{self, MODELS, Measurement, PHASES, Shape};

/// Measure training-step, greedy and beam-5 throughput of RNNsearch, Transformer and ConvS2S on
/// the bake-off's fixed shapes (batch 64, source and target length 20, vocabulary 8000), with the
/// peak memory of each. `bench/compare.sh` runs this beside the PyTorch reference.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Print one JSON object per measurement instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Comma-separated models: rnnsearch, transformer, convs2s.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "rnnsearch,transformer,convs2s"
    )]
    pub models: Vec<String>,
    /// Comma-separated phases: train, greedy, beam.
    #[arg(long, value_delimiter = ',', default_value = "train,greedy,beam")]
    pub phases: Vec<String>,
    /// Timed repetitions per measurement (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Untimed repetitions before timing.
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// Device: cpu (default), cuda:N, wgpu, rocm:N, as the build supports.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    #[arg(long, default_value_t = 20)]
    pub len: usize,
    #[arg(long, default_value_t = 8000)]
    pub vocab: usize,
    #[arg(long, default_value_t = 5)]
    pub beam: usize,
    /// Measure in this process instead of a child per measurement (peak memory then covers
    /// everything measured so far).
    #[arg(long)]
    pub in_process: bool,
    /// Measure speech feature extraction instead (80 log-mel bins of 16 kHz audio, on this
    /// thread): seconds of audio per second of compute, the real-time factor.
    #[arg(long)]
    pub features: bool,
}

/// Times `s2s_data::audio::Fbank` on 60 s of 16 kHz noise, `reps` times after `warmup`.
fn features(args: &BenchArgs) -> anyhow::Result<()> {
    use s2s_data::audio::{Fbank, FbankConfig};
    let cfg = FbankConfig::default();
    let fbank = Fbank::new(&cfg)?;
    let seconds = 60.0;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let samples: Vec<f32> = (0..(seconds * cfg.sample_rate as f64) as usize)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        })
        .collect();
    for _ in 0..args.warmup {
        std::hint::black_box(fbank.features(&samples));
    }
    let mut times: Vec<f64> = (0..args.reps.max(1))
        .map(|_| {
            let start = std::time::Instant::now();
            std::hint::black_box(fbank.features(&samples));
            start.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let factor = seconds / median;
    if args.json {
        println!(
            "{}",
            serde_json::json!({"phase": "features", "audio_sec": seconds, "median_sec": median, "real_time_factor": factor, "n_mels": cfg.n_mels, "sample_rate": cfg.sample_rate})
        );
    } else {
        println!(
            "features: {seconds:.0} s of {} Hz audio to {} log-mel bins in {:.1} ms (median of {}): {factor:.0}x real time on one thread",
            cfg.sample_rate,
            cfg.n_mels,
            median * 1000.0,
            times.len()
        );
    }
    Ok(())
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.features {
        return features(&args);
    }
    for m in &args.models {
        if !MODELS.contains(&m.as_str()) {
            bail!("unknown model {m:?} for --models; use some of {MODELS:?}");
        }
    }
    for p in &args.phases {
        if !PHASES.contains(&p.as_str()) {
            bail!("unknown phase {p:?} for --phases; use some of {PHASES:?}");
        }
    }
    let shape = Shape {
        batch: args.batch,
        src_len: args.len,
        tgt_len: args.len,
        vocab: args.vocab,
        beam: args.beam,
    };
    if !args.json {
        println!(
            "{:<12} {:<7} {:>10} {:>12} {:>10} {:>11}",
            "model", "phase", "ms/batch", "tokens/s", "peak MiB", "params"
        );
    }
    for model in &args.models {
        for phase in &args.phases {
            let m = if args.in_process {
                let device =
                    s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
                bench::measure(model, phase, &shape, args.warmup, args.reps, &device)
                    .map_err(anyhow::Error::msg)?
            } else {
                in_child(&args, model, phase)?
            };
            if args.json {
                println!("{}", serde_json::to_string(&m)?);
            } else {
                println!(
                    "{:<12} {:<7} {:>10.1} {:>12.0} {:>10.0} {:>11}",
                    m.model, m.phase, m.ms_per_batch, m.tokens_per_sec, m.peak_rss_mb, m.params
                );
            }
        }
    }
    Ok(())
}

/// Runs one measurement in a fresh `s2s bench --in-process` and parses its JSON line.
fn in_child(args: &BenchArgs, model: &str, phase: &str) -> anyhow::Result<Measurement> {
    let exe = std::env::current_exe().context("cannot find the s2s binary to re-run")?;
    let out = std::process::Command::new(exe)
        .args(["bench", "--in-process", "--json"])
        .args(["--models", model, "--phases", phase])
        .args(["--reps", &args.reps.to_string()])
        .args(["--warmup", &args.warmup.to_string()])
        .args(["--device", &args.device])
        .args(["--batch", &args.batch.to_string()])
        .args(["--len", &args.len.to_string()])
        .args(["--vocab", &args.vocab.to_string()])
        .args(["--beam", &args.beam.to_string()])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot start the measuring child process")?;
    if !out.status.success() {
        bail!("measuring {model} {phase} failed ({})", out.status);
    }
    let line = String::from_utf8_lossy(&out.stdout);
    let line = line.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(line)
        .with_context(|| format!("unreadable measurement from the child: {line:?}"))?;
    serde_json::from_value(v).context("measurement JSON lacks fields")
}
