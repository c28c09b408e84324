use anyhow::Result;
use std::path::PathBuf;

/// Write an int8 copy of a Transformer MODEL_DIR for inference.
///
/// Every linear layer and the token embeddings become int8 with one scale per output row;
/// decoding quantises the activations on the fly and multiplies in int8 (AVX-512 VNNI where the
/// CPU has it, checked at run time). OUT translates, serves and scores like MODEL_DIR; fine-tune,
/// average or export the f32 model, then quantise again.
#[derive(clap::Args)]
pub struct QuantizeArgs {
    /// The f32 MODEL_DIR (a Transformer).
    pub model: PathBuf,
    /// The int8 MODEL_DIR to write.
    #[arg(long)]
    pub out: PathBuf,
    /// Replace a non-empty --out.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    let done = s2s_infer::quantize::quantize(&args.model, &args.out, args.force)?;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "quantised {} layers to int8: {} ({:.1} MiB) -> {} ({:.1} MiB); int8 kernel: {}",
        done.layers,
        args.model.display(),
        mib(done.float_bytes),
        done.out.display(),
        mib(done.int8_bytes),
        s2s_models::engine::int8::Kernel::best().name()
    );
    Ok(())
}
