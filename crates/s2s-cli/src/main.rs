//! `s2s`: the command-line entry point. Argument parsing and wiring only; the work lives in the
//! library crates.

mod cmd;
mod datasets;
mod signals;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "s2s",
    version = version_line(),
    about = "Sequence-to-sequence learning: prepare, train, translate, evaluate, serve"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `s2s --version`: the version and the devices compiled in (`cpu, cuda, wgpu`).
fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| {
        let devices = s2s_models::backend::compiled_devices().join(", ");
        format!("{} (devices: {devices})", env!("CARGO_PKG_VERSION"))
    })
}

// Parsed once per process: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Train the default English->Chinese model on the embedded corpus and show it translating.
    Quickstart(cmd::quickstart::QuickstartArgs),
    /// Validate and clean a parallel corpus, train tokenizers and write a data directory.
    Prepare(cmd::prepare::PrepareArgs),
    /// Train a model, with validation, checkpoints and early stopping.
    Train(cmd::train::TrainArgs),
    /// Translate one sentence per line, from stdin by default.
    Translate(cmd::translate::TranslateArgs),
    /// Score a hypothesis file against one or more references (sacreBLEU-compatible).
    Eval(cmd::eval::EvalArgs),
    /// Output a simple baseline to score beside a model (`s2s baseline lead|retrieval`).
    Baseline(cmd::baseline::BaselineArgs),
    /// Summarise each line by extraction: the sentences a sentence classifier rates best.
    Extract(cmd::extract::ExtractArgs),
    /// Score references with a model: teacher-forced log-probabilities and perplexity.
    Score(cmd::score::ScoreArgs),
    /// Start the HTTP API and the web page (with attention heatmaps) for a trained model.
    Serve(cmd::serve::ServeArgs),
    /// Average the weights of the last N checkpoints into a new MODEL_DIR (train with --keep-last N).
    Average(cmd::average::AverageArgs),
    /// Draw training curves (loss, validation BLEU, learning rate) from metrics.jsonl as SVG.
    Plot(cmd::plot::PlotArgs),
    /// Measure training and decoding throughput and peak memory on fixed shapes.
    Bench(cmd::bench::BenchArgs),
    /// Import a model trained elsewhere (`s2s import marian Helsinki-NLP/opus-mt-en-zh --out DIR`).
    Import(cmd::convert::ImportArgs),
    /// Export a model for other toolkits (`s2s export hf-marian MODEL_DIR --out DIR`).
    Export(cmd::convert::ExportArgs),
    /// Write an int8 copy of a Transformer MODEL_DIR for faster, smaller inference.
    Quantize(cmd::quantize::QuantizeArgs),
    /// Choose a model's length penalty on the validation split and keep it in its MODEL_DIR.
    Tune(cmd::tune::TuneArgs),
    /// Get benchmark corpora (`s2s data get multi30k --out DIR [--from DIR]`), verified by sha256.
    Data(cmd::data::DataArgs),
}

fn main() {
    s2s_models::allocator::tune();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Quickstart(args) => cmd::quickstart::run(args),
        Command::Prepare(args) => cmd::prepare::run(args),
        Command::Train(args) => cmd::train::run(args),
        Command::Translate(args) => cmd::translate::run(args),
        Command::Eval(args) => cmd::eval::run(args),
        Command::Baseline(args) => cmd::baseline::run(args),
        Command::Extract(args) => cmd::extract::run(args),
        Command::Score(args) => cmd::score::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Average(args) => cmd::average::run(args),
        Command::Plot(args) => cmd::plot::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Data(args) => cmd::data::run(args),
        Command::Import(args) => cmd::convert::import(args),
        Command::Export(args) => cmd::convert::export(args),
        Command::Quantize(args) => cmd::quantize::run(args),
        Command::Tune(args) => cmd::tune::run(args),
    };
    if let Err(err) = result {
        eprintln!("error: {err:#}");
        std::process::exit(1);
    }
}
