//! `s2s extract`: extractive summaries with a sentence classifier. Argument parsing and file
//! handling only; the work is in `s2s_infer::extractive`.

use anyhow::{Context, Result};
use s2s_infer::{Translator, defaults};
use std::path::PathBuf;

/// Summarise each input line by extraction: split it into sentences, rate each with a sentence
/// classifier trained on the examples of `s2s data extractive`, and output the best-rated (or
/// the --sentences best, in the document's order), one summary per input line.
///
/// Example: `s2s data extractive --src train.src --tgt train.tgt --out train.tsv` (and the
/// validation pairs), `s2s prepare --task classification --format labelled --train train.tsv
/// --valid valid.tsv ...`, `s2s train` with a classifier, then `s2s extract --model MODEL_DIR
/// --input test.src --output hyp.txt` and `s2s eval --hyp hyp.txt --ref test.tgt --metrics
/// rouge`.
#[derive(clap::Args)]
pub struct ExtractArgs {
    /// MODEL_DIR of the sentence classifier. Given more than once, the classifiers rate as an
    /// ensemble (the mean of their probabilities).
    #[arg(long, required = true)]
    pub model: Vec<PathBuf>,
    /// Documents, one per line.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub input: PathBuf,
    /// Where to write the summaries, one per input line (atomically); stdout if not given.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Sentences per summary.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sentences: usize,
    /// Sentences rated together.
    #[arg(long, default_value_t = defaults::BATCH_SIZE)]
    pub batch_size: usize,
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

pub fn run(args: ExtractArgs) -> Result<()> {
    anyhow::ensure!(args.sentences > 0, "--sentences must be at least 1");
    let device = s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
    let translator = Translator::ensemble(&args.model, &device)?;
    let documents = s2s_eval::read_lines(&args.input)?;
    let summaries =
        s2s_infer::extractive::extract(&translator, &documents, args.sentences, args.batch_size)
            .with_context(|| format!("{}", args.model[0].display()))?;
    super::write_lines(&summaries, args.output.as_deref())
}
