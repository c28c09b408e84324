use anyhow::Result;
use s2s_serve::{EngineConfig, Limits, RequestLog, ServeConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Start the HTTP API and the web page for a trained model.
///
/// Routes: GET / (web page), GET /health, POST /v1/translate. Errors are JSON {"error": ...}:
/// 400 bad JSON or options, 413 body too large, 422 input too long, 503 queue full, 504 timeout.
/// Stops gracefully on Ctrl-C / SIGTERM, finishing in-flight requests.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// MODEL_DIR written by `s2s train`.
    #[arg(long)]
    pub model: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Largest request body in bytes (413 above).
    #[arg(long, default_value_t = 64 * 1024)]
    pub max_body_bytes: usize,
    /// Most source tokens per sentence (422 above).
    #[arg(long, default_value_t = 200)]
    pub max_tokens: usize,
    /// Most sentences per request (422 above).
    #[arg(long, default_value_t = 64)]
    pub max_sentences: usize,
    /// Largest beam a request may ask for (400 above).
    #[arg(long, default_value_t = 16)]
    pub max_beam: usize,
    /// Most sentences decoded together in one batched search.
    #[arg(long, default_value_t = 32)]
    pub max_batch: usize,
    /// Longest wait, in ms, for concurrent requests to join a batch.
    #[arg(long, default_value_t = 5)]
    pub max_wait_ms: u64,
    /// Requests that may wait for the model; more get 503.
    #[arg(long, default_value_t = 256)]
    pub queue: usize,
    /// Per-request time limit in ms (504 when exceeded).
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Do not log one JSON line per request on stderr.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: ServeArgs) -> Result<()> {
    s2s_serve::run(ServeConfig {
        model_dir: args.model,
        device: args.device,
        addr: args.addr,
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_tokens: args.max_tokens,
            max_sentences: args.max_sentences,
            max_beam: args.max_beam,
        },
        engine: EngineConfig {
            max_batch: args.max_batch,
            max_wait: Duration::from_millis(args.max_wait_ms),
            queue: args.queue,
            max_tokens: args.max_tokens,
        },
        timeout: Duration::from_millis(args.timeout_ms),
        log: if args.quiet {
            RequestLog::Off
        } else {
            RequestLog::Stderr
        },
    })
}
