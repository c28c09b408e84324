//! `s2s import` and `s2s export`: other toolkits' model formats (see `s2s-interop`).

use anyhow::Result;
use s2s_interop::{hub, marian};
use std::path::PathBuf;

/// Import a model trained elsewhere as a MODEL_DIR.
#[derive(clap::Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub format: ImportFormat,
}

#[derive(clap::Subcommand)]
pub enum ImportFormat {
    /// A Hugging Face MarianMT model (OPUS-MT's layout): a local folder with config.json,
    /// model.safetensors, source.spm, target.spm and vocab.json, or a hub id such as
    /// Helsinki-NLP/opus-mt-en-zh (needs network).
    Marian(MarianImportArgs),
}

#[derive(clap::Args)]
pub struct MarianImportArgs {
    /// The model folder, or a Hugging Face hub id (`owner/name`).
    pub src: String,
    /// MODEL_DIR to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace a non-empty --out.
    #[arg(long)]
    pub force: bool,
}

/// Export a MODEL_DIR in another toolkit's format.
#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub format: ExportFormat,
}

#[derive(clap::Subcommand)]
pub enum ExportFormat {
    /// A Hugging Face MarianMT folder that transformers loads (`MarianMTModel.from_pretrained`)
    /// and `ct2-transformers-converter` converts. Needs a Transformer with shared embeddings over
    /// one joint unigram vocabulary and `positions = "sinusoidal-concat"`.
    HfMarian(MarianExportArgs),
}

#[derive(clap::Args)]
pub struct MarianExportArgs {
    /// MODEL_DIR to export.
    pub model: PathBuf,
    /// Folder to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace a non-empty --out.
    #[arg(long)]
    pub force: bool,
}

/// The files `import marian` reads. Some hub repositories have only `pytorch_model.bin`: the
/// weights are fetched if present, and the import then says how to convert them.
const MARIAN_FILES: [&str; 4] = [
    marian::CONFIG_JSON,
    marian::VOCAB_JSON,
    "source.spm",
    "target.spm",
];
const MARIAN_OPTIONAL: [&str; 3] = [
    marian::WEIGHTS,
    marian::TOKENIZER_CONFIG,
    marian::GENERATION_CONFIG,
];

pub fn import(args: ImportArgs) -> Result<()> {
    let ImportFormat::Marian(args) = args.format;
    let src = if hub::looks_like_hub_id(&args.src) {
        eprintln!("fetching {} from the Hugging Face hub", args.src);
        hub::fetch(&args.src, &MARIAN_FILES, &MARIAN_OPTIONAL)?
    } else {
        PathBuf::from(&args.src)
    };
    let done = marian::import(&src, &args.out, args.force)?;
    let m = &done.model;
    eprintln!(
        "imported {} into {}: Transformer d {} x {} heads, {}+{} layers, FFN {} ({:?}), vocabulary {}, {} parameters",
        args.src,
        done.out.display(),
        m.d_model,
        m.heads,
        m.enc_layers,
        m.dec_layers,
        m.ffn_dim,
        m.activation,
        done.vocab_size,
        done.parameters
    );
    if let Some(d) = &done.decoding {
        eprintln!(
            "decoding defaults (decoding.toml): beam {}, alpha {}, from {}",
            d.beam,
            d.alpha,
            d.from.as_deref().unwrap_or("the model")
        );
    }
    for note in &done.notes {
        eprintln!("note: {note}");
    }
    if !done.language_tags.is_empty() {
        eprintln!(
            "target languages (pass one with --target-lang): {}",
            done.language_tags.join(" ")
        );
    }
    Ok(())
}

pub fn export(args: ExportArgs) -> Result<()> {
    let ExportFormat::HfMarian(args) = args.format;
    let done = marian::export(&args.model, &args.out, args.force)?;
    eprintln!(
        "exported {} to {} (MarianMT, vocabulary {}{})",
        args.model.display(),
        done.out.display(),
        done.vocab_size,
        if done.reordered {
            ", ids reordered into Marian's layout"
        } else {
            ""
        }
    );
    if !done.zero_start {
        eprintln!(
            "note: the model learned its decoder-start embedding (zero_start = false); \
             transformers reproduces it, but ct2-transformers-converter starts from a zero vector \
             and builds a different model. Train with `zero_start = true` for an exact \
             CTranslate2 conversion."
        );
    }
    Ok(())
}
