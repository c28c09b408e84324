//! The HTTP server: routes, JSON errors, request logging, timeouts and graceful shutdown.

use crate::api::{ApiError, Limits, TranslateRequest, TranslateResponse};
use crate::engine::{Engine, EngineConfig, WorkerHandle};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything `s2s serve` can be told.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub model_dir: PathBuf,
    pub device: String,
    pub addr: SocketAddr,
    pub limits: Limits,
    pub engine: EngineConfig,
    /// How long a request may wait for its translation before it gets 504.
    pub timeout: Duration,
    /// Where the one JSON line per request goes.
    pub log: RequestLog,
}

/// Where request log lines go.
#[derive(Clone, Debug, Default)]
pub enum RequestLog {
    Off,
    /// One JSON line per request on stderr.
    #[default]
    Stderr,
    /// Kept in memory (for tests).
    Capture(Arc<std::sync::Mutex<Vec<String>>>),
}

impl ServeConfig {
    pub fn new(model_dir: impl Into<PathBuf>) -> Self {
        ServeConfig {
            model_dir: model_dir.into(),
            device: "cpu".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            limits: Limits::default(),
            engine: EngineConfig::default(),
            timeout: Duration::from_secs(30),
            log: RequestLog::Stderr,
        }
    }

    /// The worker's configuration, with the token limit of `limits`.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            max_tokens: self.limits.max_tokens,
            ..self.engine.clone()
        }
    }
}

#[derive(Clone)]
struct AppState {
    engine: Engine,
    limits: Arc<Limits>,
    timeout: Duration,
}

/// The number of sentences a response answered, for the request log.
#[derive(Clone, Copy)]
struct Sentences(usize);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::json!({ "error": self.message });
        (status, axum::Json(body)).into_response()
    }
}

fn router(state: AppState, log: RequestLog) -> Router {
    let body_limit = state.limits.max_body_bytes;
    let app = Router::new()
        .route("/", get(page_index))
        .route("/app.js", get(page_js))
        .route("/style.css", get(page_css))
        .route("/health", get(health))
        .route("/v1/translate", post(translate))
        .fallback(|| async { ApiError::new(404, "no such endpoint; see GET / and /health") })
        .method_not_allowed_fallback(|| async { ApiError::new(405, "method not allowed") })
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state);
    match log {
        RequestLog::Off => app,
        log => app.layer(axum::middleware::from_fn(move |req, next| {
            log_request(log.clone(), req, next)
        })),
    }
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}

async fn page_index() -> Response {
    asset("text/html; charset=utf-8", crate::page::INDEX_HTML)
}
async fn page_js() -> Response {
    asset("text/javascript; charset=utf-8", crate::page::APP_JS)
}
async fn page_css() -> Response {
    asset("text/css; charset=utf-8", crate::page::STYLE_CSS)
}

async fn health(State(s): State<AppState>) -> Response {
    let l = &s.limits;
    axum::Json(serde_json::json!({
        "status": "ok",
        "model": s.engine.info(),
        "stats": s.engine.stats().to_json(),
        "limits": {
            "max_body_bytes": l.max_body_bytes,
            "max_tokens": l.max_tokens,
            "max_sentences": l.max_sentences,
            "max_beam": l.max_beam,
            "timeout_ms": s.timeout.as_millis() as u64,
        },
    }))
    .into_response()
}

async fn translate(State(s): State<AppState>, body: Result<Bytes, BytesRejection>) -> Response {
    match translate_inner(&s, body).await {
        Ok(resp) => {
            let n = resp.translations.len();
            let mut r = axum::Json(resp).into_response();
            r.extensions_mut().insert(Sentences(n));
            r
        }
        Err(e) => e.into_response(),
    }
}

async fn translate_inner(
    s: &AppState,
    body: Result<Bytes, BytesRejection>,
) -> Result<TranslateResponse, ApiError> {
    let body = body.map_err(|r| {
        let status = r.status().as_u16();
        if status == 413 {
            ApiError::new(
                413,
                format!(
                    "request body is larger than {} bytes (--max-body-bytes)",
                    s.limits.max_body_bytes
                ),
            )
        } else {
            ApiError::new(status, r.body_text())
        }
    })?;
    let req: TranslateRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid request JSON: {e}")))?;
    let target_lang = req.target_lang.clone();
    let (texts, opts) = req.validate(&s.limits)?;
    let rx = s.engine.submit(texts, opts, target_lang)?;
    match tokio::time::timeout(s.timeout, rx).await {
        Ok(Ok(reply)) => Ok(TranslateResponse {
            translations: reply?,
        }),
        Ok(Err(_)) => Err(ApiError::new(500, "the model worker dropped the request")),
        Err(_) => Err(ApiError::new(
            504,
            format!(
                "translation took longer than {} ms (--timeout-ms)",
                s.timeout.as_millis()
            ),
        )),
    }
}

async fn log_request(log: RequestLog, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let resp = next.run(req).await;
    let n = resp.extensions().get::<Sentences>().map_or(0, |s| s.0);
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let line = serde_json::json!({
        "ts": (ts * 1000.0).round() / 1000.0,
        "method": method,
        "path": path,
        "status": resp.status().as_u16(),
        "ms": (start.elapsed().as_secs_f64() * 1e4).round() / 10.0,
        "n": n,
    })
    .to_string();
    match log {
        RequestLog::Off => {}
        RequestLog::Stderr => eprintln!("{line}"),
        RequestLog::Capture(lines) => lines.lock().unwrap_or_else(|e| e.into_inner()).push(line),
    }
    resp
}

/// Serves on `listener` until `shutdown` completes, then lets in-flight requests finish, stops
/// the model worker and returns.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    engine: Engine,
    worker: WorkerHandle,
    cfg: &ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = AppState {
        engine,
        limits: Arc::new(cfg.limits.clone()),
        timeout: cfg.timeout,
    };
    let app = router(state, cfg.log.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    // Every handler (and so every Engine clone) is gone: the worker drains and stops.
    tokio::task::spawn_blocking(move || worker.join_timeout(Duration::from_secs(60)))
        .await
        .ok();
    Ok(())
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("s2s-http")
        .build()
}

/// `s2s serve`: loads the model, listens on `cfg.addr` and serves until SIGINT/SIGTERM.
pub fn run(cfg: ServeConfig) -> anyhow::Result<()> {
    let (engine, worker) = Engine::start(&cfg.model_dir, &cfg.device, cfg.engine_config())?;
    let rt = runtime()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", cfg.addr))?;
        let addr = listener.local_addr()?;
        let info = engine.info();
        eprintln!(
            "s2s serve: {} ({} parameters) from {}; listening on http://{addr}/ (Ctrl-C to stop)",
            info.arch, info.params, info.dir
        );
        serve_on(listener, engine, worker, &cfg, async {
            shutdown_signal().await;
            eprintln!("s2s serve: shutting down; finishing in-flight requests");
        })
        .await?;
        eprintln!("s2s serve: stopped");
        Ok(())
    })
}

/// A server running on its own thread, for tests and embedding: started with [`Server::start`],
/// stopped gracefully with [`Server::shutdown`].
pub struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Loads the model, binds `cfg.addr` (port 0 picks a free one) and serves in the background.
    pub fn start(cfg: ServeConfig) -> anyhow::Result<Server> {
        let (engine, worker) = Engine::start(&cfg.model_dir, &cfg.device, cfg.engine_config())?;
        let rt = runtime()?;
        let listener = rt.block_on(tokio::net::TcpListener::bind(cfg.addr))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("s2s-serve".into())
            .spawn(move || {
                rt.block_on(serve_on(listener, engine, worker, &cfg, async {
                    let _ = stopped.await;
                }))
            })?;
        Ok(Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Asks the server to stop without waiting.
    pub fn begin_shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Stops accepting connections, waits for in-flight requests and the worker, and returns.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        self.begin_shutdown();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => Ok(r?),
            Some(Err(_)) => anyhow::bail!("the server thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.begin_shutdown();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
