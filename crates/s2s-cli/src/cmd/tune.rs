//! `s2s tune`: choose a model's length penalty on the validation split and keep it in its
//! MODEL_DIR (`decoding.toml`), where `translate`, `serve` and `quickstart` find it; or an
//! ensemble's, in a file of its own (`--out`) that `translate` and `serve` read with
//! `--decoding`. The work is in `s2s_infer::decoding`.

use anyhow::{Context, Result, bail};
use s2s_data::Task;
use s2s_eval::Metric;
use s2s_infer::config::BestBy;
use s2s_infer::{Translator, decoding};
use std::path::PathBuf;

/// Choose the length-penalty exponent alpha (score = logprob / L^alpha) of beam search on the
/// validation split and write it into MODEL_DIR's decoding.toml, with the score of every alpha
/// tried: from then on `s2s translate`, `s2s serve` and their requests use it unless told
/// otherwise. Scores are sacreBLEU with the tokenisation the model was validated with
/// (`bleu_tokenize` in its config.toml), or the metric named by --metric; the best wins (the
/// highest, the lowest of an error rate), the first of equals.
///
/// Given --model more than once, the models decode as an ensemble (as in `s2s translate`), and
/// what suits it belongs to none of them alone: --out names the file to keep it in, which
/// `s2s translate --decoding FILE` and `s2s serve --decoding FILE` read.
#[derive(clap::Args)]
pub struct TuneArgs {
    /// MODEL_DIR to tune (its decoding.toml is written; nothing else changes). Given more than
    /// once: an ensemble, tuned as one (needs --out).
    #[arg(long, required = true)]
    pub model: Vec<PathBuf>,
    /// Write the defaults to FILE instead of the MODEL_DIR's decoding.toml (required for an
    /// ensemble).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// DATA_DIR whose validation split to decode (the one the model was trained on).
    #[arg(long)]
    pub data: PathBuf,
    /// Comma-separated exponents to try.
    #[arg(long, value_delimiter = ',', default_values_t = decoding::ALPHAS)]
    pub alphas: Vec<f32>,
    /// What to rank by: bleu, chrf, chrf++, rouge (the mean of ROUGE-1, -2 and -L F with the
    /// stemmer), or an error rate, lowest best: wer, cer, per, ser (outputs equal to none of
    /// their references: grapheme-to-phoneme's word error rate) [default: rouge for a model kept
    /// by it (`best_by` in its config.toml), else bleu].
    #[arg(long)]
    pub metric: Option<s2s_eval::Metric>,
    /// Beam width to tune for and keep [default: the model's decoding.toml, else 5].
    #[arg(long)]
    pub beam: Option<usize>,
    /// Decode at most the first N validation pairs (0 = all).
    #[arg(long, default_value_t = 0)]
    pub max_sentences: usize,
    /// Sentences decoded together.
    #[arg(long, default_value_t = s2s_infer::defaults::BATCH_SIZE)]
    pub batch_size: usize,
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

pub fn run(args: TuneArgs) -> Result<()> {
    let device = s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
    let first = &args.model[0];
    if args.model.len() > 1 && args.out.is_none() {
        bail!(
            "an ensemble's length penalty belongs to none of its {} models' decoding.toml: give \
             --out FILE, then decode with --decoding FILE",
            args.model.len()
        );
    }
    let translator = Translator::ensemble(&args.model, &device)?;
    let run = &translator.loaded().run;
    let task = run.task.unwrap_or_default();
    if !matches!(task, Task::Translation | Task::Generation) {
        bail!(
            "{} is a {task:?} model: s2s tune chooses the length penalty of generated text (translation and generation models); score other models with s2s eval",
            first.display()
        );
    }
    let tokenize: s2s_eval::Tokenize = run
        .train
        .bleu_tokenize
        .parse()
        .map_err(|e| anyhow::anyhow!("{}: bleu_tokenize: {e}", first.display()))?;
    let metric = args.metric.unwrap_or(match run.train.best_by {
        BestBy::Rouge => Metric::Rouge,
        _ => Metric::Bleu,
    });
    if matches!(metric, Metric::Accuracy | Metric::F1) {
        bail!(
            "--metric {metric} scores labels; s2s tune ranks generated text (bleu, chrf, chrf++, rouge, wer, cer, per, ser)"
        );
    }
    let data = s2s_data::load_data_dir(&args.data)?;
    let valid = data.valid.as_ref().with_context(|| {
        format!(
            "{} has no validation split: prepare it with --valid-src/--valid-tgt",
            args.data.display()
        )
    })?;
    let n = match args.max_sentences {
        0 => valid.src.len(),
        n => n.min(valid.src.len()),
    };
    let beam = args.beam.unwrap_or(translator.decoding().beam);
    let what = match metric {
        Metric::Bleu => s2s_eval::BleuConfig::with_tokenize(tokenize).signature(1),
        other => format!(
            "{}, {} best",
            other.display_name(),
            if other.higher_is_better() {
                "highest"
            } else {
                "lowest"
            }
        ),
    };
    let members = match translator.members() {
        1 => String::new(),
        n => format!(" of an ensemble of {n}"),
    };
    eprintln!(
        "tuning alpha{members} for beam {beam} on {n} validation pairs of {} ({what})",
        args.data.display(),
    );
    let tuned = decoding::tune_alpha(
        &translator,
        &valid.src[..n],
        &valid.tgt[..n],
        "valid",
        &translator.search_defaults(s2s_search::Strategy::Beam { k: beam }),
        &args.alphas,
        metric,
        tokenize,
        args.batch_size,
        |alpha, score| eprintln!("  alpha {alpha}: {} {score:.2}", metric.display_name()),
    )?;
    let path = match &args.out {
        Some(path) => {
            tuned.write_file(path)?;
            path.clone()
        }
        None => {
            // The directory may be in use by a trainer, which rewrites its files.
            let _lock = s2s_infer::model_dir::lock(first)?;
            tuned.write(first)?;
            first.join(decoding::DECODING)
        }
    };
    println!(
        "alpha {} (beam {beam}) written to {}",
        tuned.alpha,
        path.display()
    );
    Ok(())
}
