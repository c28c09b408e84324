use anyhow::Result;
use std::path::PathBuf;

/// Draw training curves from MODEL_DIR/metrics.jsonl as SVG.
///
/// Writes loss.svg (train and validation loss), bleu.svg (validation BLEU) and lr.svg (learning
/// rate), each against steps and against minutes of training, and curves.svg (validation BLEU
/// and loss against minutes, one figure for reports such as bench/multi30k.sh's).
#[derive(clap::Args)]
pub struct PlotArgs {
    /// MODEL_DIR written by `s2s train`.
    pub model: PathBuf,
    /// Folder for the SVG files (default: MODEL_DIR/plots).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: PlotArgs) -> Result<()> {
    let out = args.out.unwrap_or_else(|| args.model.join("plots"));
    for p in s2s_infer::plot::write_training_plots(&args.model, &out)? {
        println!("{}", p.display());
    }
    Ok(())
}
