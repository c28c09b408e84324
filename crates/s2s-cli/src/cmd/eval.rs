//! `s2s eval`: score a hypothesis file against references with sacreBLEU-compatible BLEU and
//! chrF, edit-distance error rates, label accuracy and macro-F1, and ROUGE. Argument parsing
//! and printing only; the work is in `s2s-eval`.

use std::path::PathBuf;

use s2s_eval::{EvalOptions, Metric, RougeConfig, Tokenize};

/// Score a hypothesis file against one or more references with BLEU, chrF and chrF++,
/// computed exactly as sacreBLEU 2.x computes them, and with error rates (WER and CER as jiwer
/// computes them; PER and SER for grapheme-to-phoneme), and for tagging and classification with
/// label accuracy and macro-F1 (as scikit-learn computes them), and for summaries with ROUGE
/// (as Google's rouge-score computes it).
///
/// Files are UTF-8, one segment per line; every file must have the same number of lines. An
/// empty hypothesis file scores 0. Signatures follow sacreBLEU's but name this tool's version
/// (`version:s2s-...`).
#[derive(clap::Args)]
pub struct EvalArgs {
    /// Hypothesis (system output) file, one segment per line.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub hyp: PathBuf,

    /// Reference file, one segment per line. Repeat for multiple references.
    #[arg(long = "ref", short = 'r', value_name = "FILE", required = true)]
    pub refs: Vec<PathBuf>,

    /// BLEU tokenizer: 13a (mteval-v13a, the WMT standard), zh (Chinese), intl (mteval-v14
    /// international), char (characters) or none (whitespace only). chrF does not tokenize.
    #[arg(long, short = 't', value_name = "TOK", default_value = "13a")]
    pub tokenize: Tokenize,

    /// Lowercase hypotheses and references before scoring (all metrics).
    #[arg(long, short = 'l')]
    pub lowercase: bool,

    /// Comma-separated metrics to compute: bleu, chrf (chrF2), chrf++ (chrF2++), wer (word
    /// error rate: edits over reference words), cer (the same over characters), per (phoneme
    /// error rate: WER over space-separated phonemes), ser (sequence error rate: outputs equal
    /// to none of their references, what G2P papers call WER), accuracy (correct labels over
    /// all labels) and f1 (macro-F1 over the labels, with a per-label table). With several
    /// --ref files the error rates count each line against its closest reference, and an
    /// empty line in the second and later files means "no further reference". accuracy and
    /// f1 take one --ref; each line holds whitespace-separated labels (one per token for
    /// tagging, one for classification), and a hypothesis line must have as many as its
    /// reference line. rouge gives ROUGE-1, -2, -L and -Lsum (F-measure, precision, recall),
    /// each the mean over lines of the best score against the line's references; it
    /// lowercases and (unless --no-rouge-stemmer) stems with Porter's algorithm.
    #[arg(
        long,
        short = 'm',
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "bleu,chrf"
    )]
    pub metrics: Vec<Metric>,

    /// ROUGE without the Porter stemmer (rouge-score's use_stemmer=False; the default stems,
    /// as ROUGE-1.5.5 -m and most summarisation papers do).
    #[arg(long)]
    pub no_rouge_stemmer: bool,

    /// Sentence separator for ROUGE-Lsum within a line (e.g. "<n>"): rouge-score splits a
    /// summary into sentences at newlines, which a one-summary-per-line file cannot hold.
    /// Without it each line is one sentence and ROUGE-Lsum equals ROUGE-L.
    #[arg(long, value_name = "STR")]
    pub rouge_sentence_sep: Option<String>,

    /// Print a single JSON object with one key per metric ("bleu", "chrf", "chrf++", "wer",
    /// ..., "accuracy", "f1" with its "labels" table, "rouge" with "rouge1", "rouge2",
    /// "rougeL" and "rougeLsum") instead of the human-readable summary.
    #[arg(long)]
    pub json: bool,

    /// Decimal places for printed scores (JSON scores are rounded the same way, like sacreBLEU).
    #[arg(long, short = 'w', value_name = "N", default_value_t = 2)]
    pub width: usize,
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let inputs = s2s_eval::load_inputs(&args.hyp, &args.refs)?;
    if inputs.hyp_file_was_empty {
        eprintln!(
            "warning: {} is empty; scoring it as {} empty hypotheses",
            args.hyp.display(),
            inputs.hyps.len()
        );
    }
    let opts = EvalOptions {
        tokenize: args.tokenize,
        lowercase: args.lowercase,
        metrics: args.metrics,
        rouge: RougeConfig {
            stem: !args.no_rouge_stemmer,
            sentence_sep: args.rouge_sentence_sep,
            ..RougeConfig::default()
        },
    };
    let report = s2s_eval::evaluate(&inputs, &opts).map_err(|e| match e {
        // The error knows the line; the files are known here.
        s2s_eval::EvalError::LabelCount { .. } => anyhow::anyhow!(
            "{} against {}: {e}",
            args.hyp.display(),
            args.refs[0].display()
        ),
        e => e.into(),
    })?;
    if args.json {
        println!("{}", report.to_json(args.width));
    } else {
        print!("{}", report.to_text(args.width));
    }
    Ok(())
}
