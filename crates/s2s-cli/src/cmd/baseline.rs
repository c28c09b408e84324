//! `s2s baseline`: the simple systems a summarisation or dialogue model is compared with,
//! writing one output per input line like `s2s translate`. Argument parsing and file handling
//! only; the work is in `s2s_eval::baseline`.

use std::path::{Path, PathBuf};

use s2s_eval::baseline::{Retrieval, lead};

/// Output the simple baseline of a task, one line per input line, to score with `s2s eval`
/// beside a model's output:
///
/// - lead: the first --sentences sentences of each input (Lead-1 for summarisation);
/// - retrieval: the training output whose input is most similar to each input (TF-IDF
///   cosine over lowercased words; the dialogue baseline).
///
/// Example: `s2s baseline lead --input test.src --output lead1.txt`, then
/// `s2s eval --hyp lead1.txt --ref test.tgt --metrics rouge`.
#[derive(clap::Args)]
pub struct BaselineArgs {
    #[command(subcommand)]
    pub kind: BaselineKind,
}

#[derive(clap::Subcommand)]
pub enum BaselineKind {
    /// Lead-N: the first N sentences of each input line (sentences end at `.`, `!` or `?`
    /// before a capital or a digit; abbreviations and initials do not end one).
    Lead(LeadArgs),
    /// The training output paired with the most similar training input.
    Retrieval(RetrievalArgs),
}

#[derive(clap::Args)]
pub struct LeadArgs {
    /// Sentences to keep.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub sentences: usize,
    #[command(flatten)]
    pub io: BaselineIo,
}

#[derive(clap::Args)]
pub struct RetrievalArgs {
    /// Training inputs, one per line.
    #[arg(long, value_name = "FILE")]
    pub train_src: PathBuf,
    /// Training outputs, aligned with --train-src.
    #[arg(long, value_name = "FILE")]
    pub train_tgt: PathBuf,
    #[command(flatten)]
    pub io: BaselineIo,
}

#[derive(clap::Args)]
pub struct BaselineIo {
    /// Inputs, one per line.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub input: PathBuf,
    /// Where to write the outputs, one per input line (atomically); stdout if not given.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

fn lines(path: &Path) -> anyhow::Result<Vec<String>> {
    Ok(s2s_eval::read_lines(path)?)
}

pub fn run(args: BaselineArgs) -> anyhow::Result<()> {
    let (outputs, io) = match args.kind {
        BaselineKind::Lead(a) => {
            anyhow::ensure!(a.sentences > 0, "--sentences must be at least 1");
            let inputs = lines(&a.io.input)?;
            (inputs.iter().map(|t| lead(t, a.sentences)).collect(), a.io)
        }
        BaselineKind::Retrieval(a) => {
            let (src, tgt) = (lines(&a.train_src)?, lines(&a.train_tgt)?);
            anyhow::ensure!(
                src.len() == tgt.len(),
                "{} has {} lines but {} has {}; fix: give aligned training files",
                a.train_src.display(),
                src.len(),
                a.train_tgt.display(),
                tgt.len()
            );
            anyhow::ensure!(
                !src.is_empty(),
                "{} is empty; fix: give the training pairs to retrieve from",
                a.train_src.display()
            );
            let index = Retrieval::new(&src, &tgt);
            let inputs = lines(&a.io.input)?;
            let outputs: Vec<String> = inputs.iter().map(|t| index.respond(t).to_owned()).collect();
            (outputs, a.io)
        }
    };
    super::write_lines(&outputs, io.output.as_deref())
}
