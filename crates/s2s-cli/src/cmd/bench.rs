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
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
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
