use anyhow::Result;
use std::path::PathBuf;

/// Average the weights of the last N checkpoints into a new MODEL_DIR.
///
/// The checkpoints are those training kept with `--keep-last N` (MODEL_DIR/checkpoint and
/// MODEL_DIR/checkpoints/step-*), each verified against its manifest. OUT gets config.toml, the
/// data record, the tokenizers and the averaged model.safetensors, plus average.json naming the
/// steps; translate and serve it like any MODEL_DIR (it has no checkpoint to resume).
#[derive(clap::Args)]
pub struct AverageArgs {
    /// MODEL_DIR written by `s2s train --keep-last N`.
    #[arg(long)]
    pub model: PathBuf,
    /// How many of the newest checkpoints to average.
    #[arg(long, default_value_t = 5, value_name = "N")]
    pub last: usize,
    /// The new MODEL_DIR.
    #[arg(long)]
    pub out: PathBuf,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: AverageArgs) -> Result<()> {
    let device = s2s_models::backend::parse_device("cpu").map_err(anyhow::Error::msg)?;
    let done = s2s_train::average::average_checkpoints(
        &args.model,
        args.last,
        &args.out,
        args.force,
        &device,
    )?;
    let steps: Vec<String> = done.steps.iter().map(|s| s.to_string()).collect();
    println!(
        "averaged {} checkpoints (steps {}) into {}",
        steps.len(),
        steps.join(", "),
        done.out.display()
    );
    Ok(())
}
