//! `s2s score`: the teacher-forced log-probability a model gives known outputs, and their
//! perplexity. Argument parsing and printing only; the work is `Translator::score`.

use anyhow::{Context, Result, bail};
use s2s_infer::{Translator, defaults};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Score references with a model: the log-probability of each reference given its source under
/// teacher forcing, and the perplexity over all of them, `exp(-sum(logprob) / tokens)`.
///
/// The tokens scored are those training's loss scores: every target token and `<eos>` for an
/// encoder-decoder (translation, generation), the tags of a tagger, the label of a classifier.
/// On a prepared split (DATA_DIR/valid.src and valid.tgt) with the model's data, the perplexity
/// is exp of the `valid_loss` that training logged. Compare two models on one test set by their
/// perplexity only when they share a target vocabulary: it is per token.
#[derive(clap::Args)]
#[command(after_help = "\
Examples:
  # the test perplexity of a generation model (TREC questions from their type)
  s2s score --model runs/trec-gen --src data/trec-gen/test.src --ref data/trec-gen/test.tgt
  # one log-probability per pair, for reranking
  s2s score --model runs/cmn-eng --src test.en --ref test.zh --per-sentence
  # an ensemble's perplexity (what `s2s translate --model A --model B` decodes)
  s2s score --model runs/a --model runs/b --src test.en --ref test.zh")]
pub struct ScoreArgs {
    /// MODEL_DIR written by `s2s train`. Given more than once, the models score as the ensemble
    /// `s2s translate` decodes with them: each token's probability is the mean of theirs.
    #[arg(long, required = true)]
    pub model: Vec<PathBuf>,
    /// Sources, one per line.
    #[arg(long, value_name = "FILE")]
    pub src: PathBuf,
    /// References (known outputs), one per line, aligned with --src.
    #[arg(long = "ref", value_name = "FILE")]
    pub refs: PathBuf,
    /// Also print each pair's score: a `LOGPROB<TAB>TOKENS` line per pair on stdout (the summary
    /// then goes to stderr), or a "scores" list in the JSON.
    #[arg(long)]
    pub per_sentence: bool,
    /// Print one JSON object: pairs, tokens, logprob, nll (per token) and perplexity.
    #[arg(long)]
    pub json: bool,
    /// Pairs scored together.
    #[arg(long, default_value_t = defaults::BATCH_SIZE)]
    pub batch_size: usize,
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

fn read_lines(path: &Path) -> Result<Vec<String>> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(s2s_data::io::split_lines(&bytes, path)?)
}

pub fn run(args: ScoreArgs) -> Result<()> {
    let sources = read_lines(&args.src)?;
    let refs = read_lines(&args.refs)?;
    if sources.len() != refs.len() {
        bail!(
            "{} has {} lines but {} has {}; fix: give one reference per source line",
            args.src.display(),
            sources.len(),
            args.refs.display(),
            refs.len()
        );
    }
    let device = s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
    let translator = Translator::ensemble(&args.model, &device)?;
    let scores = translator
        .score(&sources, &refs, args.batch_size)
        .with_context(|| format!("{} and {}", args.src.display(), args.refs.display()))?;
    let logprob: f64 = scores.iter().map(|s| s.logprob).sum();
    let tokens: usize = scores.iter().map(|s| s.tokens).sum();
    let nll = -logprob / tokens.max(1) as f64;
    let perplexity = nll.exp();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if args.json {
        let mut summary = serde_json::json!({
            "pairs": scores.len(),
            "tokens": tokens,
            "logprob": logprob,
            "nll": nll,
            "perplexity": perplexity,
        });
        if args.per_sentence {
            summary["scores"] = scores
                .iter()
                .map(|s| serde_json::json!({"logprob": s.logprob, "tokens": s.tokens}))
                .collect();
        }
        writeln!(out, "{summary}")?;
        return Ok(out.flush()?);
    }
    let summary = format!(
        "pairs {}  tokens {tokens}  nll/token {nll:.4}  perplexity {perplexity:.3}",
        scores.len()
    );
    if args.per_sentence {
        for s in &scores {
            writeln!(out, "{:.4}\t{}", s.logprob, s.tokens)?;
        }
        out.flush()?;
        eprintln!("{summary}");
    } else {
        writeln!(out, "{summary}")?;
    }
    Ok(out.flush()?)
}
