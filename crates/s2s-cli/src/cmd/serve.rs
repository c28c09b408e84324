use anyhow::Result;
use s2s_serve::{EngineConfig, Hosts, Limits, NetLimits, RequestLog, ServeConfig};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Start the HTTP API and the web page for a trained model.
///
/// Routes: GET / (web page), GET /health, /health/live, /health/ready, POST /v1/translate.
/// Errors are JSON {"error": ...}: 400 bad JSON or options, 403 another Host or Origin, 408 slow
/// body, 413 body too large, 415 not application/json, 422 input too long, 503 queue full or
/// worker stopped, 504 timeout. Stops on Ctrl-C / SIGTERM, finishing in-flight requests for at
/// most --shutdown-timeout-ms; a second Ctrl-C stops at once.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// MODEL_DIR written by `s2s train`. Given more than once, the models decode every request
    /// as an ensemble (as `s2s translate --model A --model B` does); the first one's tokenizers
    /// and `decoding.toml` serve them all (see --decoding).
    #[arg(long, required = true)]
    pub model: Vec<PathBuf>,
    /// Decoding defaults (beam, alpha) for requests from FILE instead of the first model's
    /// `decoding.toml`: an ensemble's, written by `s2s tune --model A --model B --out FILE`.
    #[arg(long, value_name = "FILE")]
    pub decoding: Option<PathBuf>,
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
    /// Largest WAV upload to a speech model's POST /v1/transcribe, in bytes (413 above).
    #[arg(long, default_value_t = 8 << 20)]
    pub max_audio_bytes: usize,
    /// Longest audio in one upload, in seconds (422 above).
    #[arg(long, default_value_t = 30.0)]
    pub max_audio_seconds: f64,
    /// Most sentences decoded together in one batched search.
    #[arg(long, default_value_t = 32)]
    pub max_batch: usize,
    /// Most work in one batched search: the sum of (source tokens + 1) x beam over its
    /// sentences. Bounds how long one batch keeps other requests waiting.
    #[arg(long, default_value_t = 16384)]
    pub max_batch_tokens: usize,
    /// Requests decoded in rotation at once (a large one is cut into batches between which
    /// the others get their turn); more wait in the queue.
    #[arg(long, default_value_t = 16)]
    pub max_active: usize,
    /// Most attention weights one request may ask for: the sum over its sentences of nbest x
    /// source tokens x (longest output + 1), known before decoding (422 above).
    #[arg(long, default_value_t = 2_000_000)]
    pub max_attention_cells: usize,
    /// Longest wait, in ms, for concurrent requests to join a batch.
    #[arg(long, default_value_t = 5)]
    pub max_wait_ms: u64,
    /// Requests that may wait for the model; more get 503.
    #[arg(long, default_value_t = 256)]
    pub queue: usize,
    /// Per-request time limit in ms (504 when exceeded).
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: u64,
    /// Time in ms for a request's head to arrive, and for an idle kept-alive connection to
    /// send its next request; the connection is closed after it.
    #[arg(long, default_value_t = 10_000)]
    pub header_timeout_ms: u64,
    /// Time in ms for a request's body to arrive once its head has (408 after it).
    #[arg(long, default_value_t = 30_000)]
    pub body_timeout_ms: u64,
    /// Longest a response write may make no progress, in ms (a client that stops reading);
    /// the connection is closed after it.
    #[arg(long, default_value_t = 30_000)]
    pub write_timeout_ms: u64,
    /// Most connections open at once; more wait to be accepted.
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// Longest shutdown waits for in-flight requests, in ms, before dropping them.
    #[arg(long, default_value_t = 10_000)]
    pub shutdown_timeout_ms: u64,
    /// Another name clients may reach the server by, in Host and Origin (repeatable; `*` allows
    /// any). By default a loopback address allows localhost and the loopback addresses, another
    /// address itself, and 0.0.0.0 any name.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// A file holding an access token: POST /v1/translate and GET /metrics then need
    /// `Authorization: Bearer <token>` (401 otherwise). Meant for addresses beyond loopback.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Do not log one JSON line per request on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// The token of `--token-file`: its content without surrounding whitespace.
fn read_token(path: &std::path::Path) -> Result<String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        anyhow::anyhow!(
            "--token-file {}: {e}; give a readable file holding the token",
            path.display()
        )
    })?;
    let token = text.trim();
    if token.is_empty() || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        anyhow::bail!(
            "--token-file {}: the file must hold one token, without spaces (e.g. the output of \
             `openssl rand -hex 32`)",
            path.display()
        );
    }
    Ok(token.to_owned())
}

pub fn run(args: ServeArgs) -> Result<()> {
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    let decoding = args
        .decoding
        .as_deref()
        .map(s2s_infer::Decoding::read_file)
        .transpose()?;
    let mut models = args.model.into_iter();
    s2s_serve::run(ServeConfig {
        model_dir: models.next().expect("clap requires --model"),
        ensemble: models.collect(),
        device: args.device,
        addr: args.addr,
        limits: Limits {
            max_body_bytes: args.max_body_bytes,
            max_tokens: args.max_tokens,
            max_sentences: args.max_sentences,
            max_beam: args.max_beam,
            max_audio_bytes: args.max_audio_bytes,
            max_audio_seconds: args.max_audio_seconds,
        },
        engine: EngineConfig {
            max_batch: args.max_batch,
            max_batch_tokens: args.max_batch_tokens,
            max_active: args.max_active,
            max_attention_cells: args.max_attention_cells,
            max_wait: Duration::from_millis(args.max_wait_ms),
            queue: args.queue,
            decoding,
            max_tokens: args.max_tokens,
        },
        timeout: Duration::from_millis(args.timeout_ms),
        log: if args.quiet {
            RequestLog::Off
        } else {
            RequestLog::Stderr
        },
        net: NetLimits {
            header_timeout: Duration::from_millis(args.header_timeout_ms),
            body_timeout: Duration::from_millis(args.body_timeout_ms),
            write_timeout: Duration::from_millis(args.write_timeout_ms),
            max_connections: args.max_connections,
            shutdown_timeout: Duration::from_millis(args.shutdown_timeout_ms),
        },
        hosts: Hosts::for_addr(args.addr, &args.allow_hosts),
        token,
        exit_when_worker_dies: true,
    })
}
