use anyhow::Result;
use s2s_models::engine::CacheFormat;
use std::path::PathBuf;

/// Write an int8 copy of a Transformer MODEL_DIR for inference.
///
/// Every linear layer and the token embeddings become int8 with one scale per output row;
/// decoding quantises the activations on the fly and multiplies in int8 (AMX, AVX-512 VNNI or
/// AVX2, picked at run time), and keeps the keys and values it attends over in int8 (--kv-cache).
/// OUT translates, serves and scores like MODEL_DIR; fine-tune, average or export the f32 model,
/// then quantise again.
#[derive(clap::Args)]
pub struct QuantizeArgs {
    /// The f32 MODEL_DIR (a Transformer).
    pub model: PathBuf,
    /// The int8 MODEL_DIR to write.
    #[arg(long)]
    pub out: PathBuf,
    /// How decoding keeps the attention keys and values of the source and of the prefix decoded
    /// so far: int8 (one scale per head and position; a quarter of their memory, most of a large
    /// beam search's) or f32 (CTranslate2's int8_float32 arithmetic exactly).
    #[arg(long, default_value = "int8", value_parser = ["int8", "f32"])]
    pub kv_cache: String,
    /// Replace a non-empty --out.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    let kv_cache = CacheFormat::parse(&args.kv_cache).expect("clap checks the values");
    let done = s2s_infer::quantize::quantize(&args.model, &args.out, kv_cache, args.force)?;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "quantised {} layers to int8: {} ({:.1} MiB) -> {} ({:.1} MiB); kv cache: {}; int8 kernel: {}",
        done.layers,
        args.model.display(),
        mib(done.float_bytes),
        done.out.display(),
        mib(done.int8_bytes),
        kv_cache.name(),
        s2s_models::engine::int8::Kernel::best().name()
    );
    Ok(())
}
