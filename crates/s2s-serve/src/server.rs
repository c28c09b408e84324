//! The HTTP server: routes, JSON errors, request checks, logging and shutdown.

use crate::api::{ApiError, Limits, TranscribeQuery, TranslateRequest, TranslateResponse};
use crate::engine::{Engine, EngineConfig, WorkerHandle};
use crate::net::{self, Drained, NetLimits};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
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
    /// More MODEL_DIRs that decode together with `model_dir` as an ensemble (the mean of their
    /// probabilities; `model_dir`'s tokenizers and decoding defaults serve all); empty for one.
    pub ensemble: Vec<PathBuf>,
    pub device: String,
    pub addr: SocketAddr,
    pub limits: Limits,
    pub engine: EngineConfig,
    /// How long a request may wait for its translation before it gets 504.
    pub timeout: Duration,
    /// Where the one JSON line per request goes.
    pub log: RequestLog,
    /// Connection timeouts, the connection cap and the shutdown deadline.
    pub net: NetLimits,
    /// The `Host` (and `Origin`) names requests may carry.
    pub hosts: Hosts,
    /// When set, `POST /v1/translate` and `GET /metrics` need `Authorization: Bearer <token>`
    /// (401 otherwise); the page and the health routes stay open.
    pub token: Option<String>,
    /// Stop serving, with an error, when the model worker thread dies (so that a supervisor
    /// restarts the process); otherwise keep answering 503.
    pub exit_when_worker_dies: bool,
}

/// Which host names requests may address the server by, in `Host` and (when sent) `Origin`.
///
/// A web page on another site can make the operator's browser send requests to a server on
/// loopback, directly or by pointing its own name at 127.0.0.1 (DNS rebinding); such requests
/// carry the other site's name in `Origin` or `Host`, and are refused with 403.
#[derive(Clone, Debug, PartialEq)]
pub enum Hosts {
    Any,
    /// Lower-case names and addresses, IPv6 without brackets.
    Only(Vec<String>),
}

impl Hosts {
    /// The default for a bind address, widened by `extra` names (`*` allows any): loopback
    /// allows `localhost` and the loopback addresses, another specific address allows itself,
    /// and the unspecified address (0.0.0.0, ::) allows any name.
    pub fn for_addr(addr: SocketAddr, extra: &[String]) -> Hosts {
        let ip = addr.ip();
        if ip.is_unspecified() || extra.iter().any(|h| h == "*") {
            return Hosts::Any;
        }
        let mut names: Vec<String> = if ip.is_loopback() {
            vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
        } else {
            vec![ip.to_string()]
        };
        names.extend(
            extra
                .iter()
                .map(|h| h.trim_matches(['[', ']']).to_lowercase()),
        );
        Hosts::Only(names)
    }

    fn allows(&self, host: &str) -> bool {
        match self {
            Hosts::Any => true,
            Hosts::Only(names) => {
                let host = host.trim_matches(['[', ']']).to_lowercase();
                names.contains(&host)
            }
        }
    }

    /// `Err` with the reason when the request's `Host` or `Origin` names another host.
    fn check(&self, headers: &HeaderMap) -> Result<(), String> {
        if *self == Hosts::Any {
            return Ok(());
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.parse::<axum::http::uri::Authority>().ok());
        match host {
            Some(h) if self.allows(h.host()) => {}
            Some(h) => {
                return Err(format!(
                    "Host {h} is not this server's name (see --allow-host)"
                ));
            }
            None => return Err("a request must carry a valid Host header".into()),
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let host = origin
                .to_str()
                .ok()
                .and_then(|o| o.parse::<Uri>().ok())
                .and_then(|u| u.host().map(str::to_owned));
            if !host.is_some_and(|h| self.allows(&h)) {
                return Err(format!(
                    "requests from the page at Origin {} are not accepted (see --allow-host)",
                    String::from_utf8_lossy(origin.as_bytes())
                ));
            }
        }
        Ok(())
    }
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
            ensemble: Vec::new(),
            device: "cpu".into(),
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            limits: Limits::default(),
            engine: EngineConfig::default(),
            timeout: Duration::from_secs(30),
            log: RequestLog::Stderr,
            net: NetLimits::default(),
            hosts: Hosts::for_addr(SocketAddr::from(([127, 0, 0, 1], 8080)), &[]),
            token: None,
            exit_when_worker_dies: true,
        }
    }

    /// Every model that decodes: `model_dir`, then the ensemble's others.
    pub fn model_dirs(&self) -> Vec<PathBuf> {
        std::iter::once(self.model_dir.clone())
            .chain(self.ensemble.iter().cloned())
            .collect()
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
    body_timeout: Duration,
    hosts: Arc<Hosts>,
    engine_cfg: Arc<EngineConfig>,
    token: Option<Arc<str>>,
}

/// The number of sentences a response answered, for the request log.
#[derive(Clone, Copy)]
struct Sentences(usize);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::json!({ "error": self.message });
        let mut r = (status, axum::Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
    }
}

fn router(state: AppState, log: RequestLog) -> Router {
    let body_limit = state.limits.max_body_bytes;
    let audio_limit = state.limits.max_audio_bytes;
    let hosts = state.hosts.clone();
    let token: Option<Arc<str>> = state.token.clone();
    let app = Router::new()
        .route("/", get(page_index))
        .route("/app.js", get(page_js))
        .route("/style.css", get(page_css))
        .route("/health", get(health))
        .route("/health/live", get(live))
        .route("/health/ready", get(ready))
        .route("/metrics", get(metrics))
        .route("/v1/translate", post(translate))
        .route(
            "/v1/transcribe",
            post(transcribe).layer(DefaultBodyLimit::max(audio_limit)),
        )
        .fallback(|| async { ApiError::new(404, "no such endpoint; see GET / and /health") })
        .method_not_allowed_fallback(|| async { ApiError::new(405, "method not allowed") })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn(move |req, next| {
            guard(hosts.clone(), token.clone(), req, next)
        }))
        .with_state(state.clone());
    app.layer(axum::middleware::from_fn(move |req, next| {
        observe(state.engine.clone(), log.clone(), req, next)
    }))
}

/// Refuses requests addressed to another host (403) and, with a token, requests to the API
/// without it (401); marks every response `nosniff`.
async fn guard(hosts: Arc<Hosts>, token: Option<Arc<str>>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let needs_token = path.starts_with("/v1/") || path == "/metrics";
    let mut resp = match hosts.check(req.headers()) {
        Err(why) => ApiError::new(403, why).into_response(),
        Ok(()) if needs_token && !token.as_deref().is_none_or(|t| bearer_is(req.headers(), t)) => {
            let mut r = ApiError::new(
                401,
                "this server needs its access token: send Authorization: Bearer <token>",
            )
            .into_response();
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        Ok(()) => next.run(req).await,
    };
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Whether the request carries `Authorization: Bearer <token>`, compared in constant time.
fn bearer_is(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

/// The page loads only its own script and style sheet and may not be framed.
const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
                        connect-src 'self'; img-src 'self'; base-uri 'none'; \
                        form-action 'none'; frame-ancestors 'none'";

async fn page_index() -> Response {
    let mut r = asset("text/html; charset=utf-8", crate::page::INDEX_HTML);
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(PAGE_CSP),
    );
    r
}
async fn page_js() -> Response {
    asset("text/javascript; charset=utf-8", crate::page::APP_JS)
}
async fn page_css() -> Response {
    asset("text/css; charset=utf-8", crate::page::STYLE_CSS)
}

/// The HTTP loop answers: nothing else is checked.
async fn live() -> Response {
    axum::Json(serde_json::json!({ "status": "live" })).into_response()
}

async fn metrics(State(s): State<AppState>) -> Response {
    let queued = s
        .engine
        .stats()
        .queued
        .load(std::sync::atomic::Ordering::Relaxed);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        s.engine.metrics().encode(queued),
    )
        .into_response()
}

/// The model worker is alive and the queue has room: 200, else 503 with the reason.
async fn ready(State(s): State<AppState>) -> Response {
    match s.engine.unready() {
        None => axum::Json(serde_json::json!({ "status": "ready" })).into_response(),
        Some(why) => ApiError::new(503, why).into_response(),
    }
}

async fn health(State(s): State<AppState>) -> Response {
    let l = &s.limits;
    let alive = s.engine.is_alive();
    let status = if alive {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = axum::Json(serde_json::json!({
        "status": if alive { "ok" } else { "the model worker has stopped" },
        "model": s.engine.info(),
        "stats": s.engine.stats().to_json(),
        "limits": {
            "max_body_bytes": l.max_body_bytes,
            "max_tokens": l.max_tokens,
            "max_sentences": l.max_sentences,
            "max_beam": l.max_beam,
            "max_audio_bytes": l.max_audio_bytes,
            "max_audio_seconds": l.max_audio_seconds,
            "timeout_ms": s.timeout.as_millis() as u64,
            "max_batch": s.engine_cfg.max_batch,
            "max_batch_tokens": s.engine_cfg.max_batch_tokens,
            "max_active": s.engine_cfg.max_active,
            "max_attention_cells": s.engine_cfg.max_attention_cells,
            "queue": s.engine_cfg.queue,
        },
    }));
    (status, body).into_response()
}

async fn translate(State(s): State<AppState>, req: Request) -> Response {
    match translate_inner(&s, req).await {
        Ok(resp) => {
            let n = resp.translations.len();
            let mut r = axum::Json(resp).into_response();
            r.extensions_mut().insert(Sentences(n));
            r
        }
        Err(e) => e.into_response(),
    }
}

/// Whether a `Content-Type` value names JSON (`application/json`, parameters allowed).
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

async fn translate_inner(s: &AppState, req: Request) -> Result<TranslateResponse, ApiError> {
    // A JSON body cannot be sent cross-site without the browser asking first (CORS preflight,
    // which this server never grants), unlike text/plain or a form.
    if !is_json(req.headers().get(header::CONTENT_TYPE)) {
        return Err(ApiError::new(
            415,
            "the request body must be JSON sent with Content-Type: application/json",
        ));
    }
    let body = read_body(s, req, s.limits.max_body_bytes, "--max-body-bytes").await?;
    let req: TranslateRequest = serde_json::from_slice(&body)
        .map_err(|e| ApiError::bad_request(format!("invalid request JSON: {e}")))?;
    let target_lang = req.target_lang.clone();
    let (texts, opts) = req.validate(&s.limits, &s.engine.default_options())?;
    let ticket = s.engine.submit(texts, opts, target_lang)?;
    await_reply(s, ticket).await
}

/// The body, within `s.body_timeout` (408) and `limit` bytes (413, naming `flag`).
async fn read_body(
    s: &AppState,
    req: Request,
    limit: usize,
    flag: &str,
) -> Result<Bytes, ApiError> {
    let body = tokio::time::timeout(s.body_timeout, Bytes::from_request(req, &()))
        .await
        .map_err(|_| {
            ApiError::new(
                408,
                format!(
                    "the request body did not arrive within {} ms",
                    s.body_timeout.as_millis()
                ),
            )
        })?;
    body.map_err(|r| {
        let status = r.status().as_u16();
        if status == 413 {
            ApiError::new(
                413,
                format!("request body is larger than {limit} bytes ({flag})"),
            )
        } else {
            ApiError::new(status, r.body_text())
        }
    })
}

/// The worker's reply, or 504 after `s.timeout`.
async fn await_reply(
    s: &AppState,
    ticket: crate::engine::Ticket,
) -> Result<TranslateResponse, ApiError> {
    match tokio::time::timeout(s.timeout, ticket).await {
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

async fn transcribe(State(s): State<AppState>, req: Request) -> Response {
    match transcribe_inner(&s, req).await {
        Ok(resp) => {
            let mut r = axum::Json(resp).into_response();
            r.extensions_mut().insert(Sentences(1));
            r
        }
        Err(e) => e.into_response(),
    }
}

/// Whether a `Content-Type` value names a WAV file (`audio/wav`, `audio/x-wav`, `audio/wave`,
/// `audio/vnd.wave`).
fn is_wav(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| {
            let mime = mime.trim().to_ascii_lowercase();
            ["audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave"].contains(&mime.as_str())
        })
}

async fn transcribe_inner(s: &AppState, req: Request) -> Result<TranslateResponse, ApiError> {
    // Like JSON, audio/wav cannot be sent cross-site without a CORS preflight, which this server
    // never grants.
    if !is_wav(req.headers().get(header::CONTENT_TYPE)) {
        return Err(ApiError::new(
            415,
            "the request body must be a WAV file sent with Content-Type: audio/wav",
        ));
    }
    let axum::extract::Query(query) =
        axum::extract::Query::<TranscribeQuery>::try_from_uri(req.uri()).map_err(|e| {
            ApiError::bad_request(format!("invalid query string: {}", e.body_text()))
        })?;
    let (name, opts) = query.validate(&s.limits, &s.engine.default_options())?;
    let body = read_body(s, req, s.limits.max_audio_bytes, "--max-audio-bytes").await?;
    let ticket = s
        .engine
        .submit_audio(body.to_vec(), name, s.limits.max_audio_seconds, opts)?;
    await_reply(s, ticket).await
}

/// Counts every request in the metrics and logs it (unless the log is off).
async fn observe(engine: Engine, log: RequestLog, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let resp = next.run(req).await;
    let status = resp.status().as_u16();
    engine.metrics().request(&path, status, start.elapsed());
    if matches!(log, RequestLog::Off) {
        return resp;
    }
    let n = resp.extensions().get::<Sentences>().map_or(0, |s| s.0);
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let line = serde_json::json!({
        "ts": (ts * 1000.0).round() / 1000.0,
        "method": method,
        "path": path,
        "status": status,
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

/// Serves on `listener` until `shutdown` completes (or, with `exit_when_worker_dies`, the model
/// worker dies), then drains in-flight requests under the shutdown deadline and stops the worker.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    engine: Engine,
    worker: WorkerHandle,
    cfg: &ServeConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let state = AppState {
        engine: engine.clone(),
        limits: Arc::new(cfg.limits.clone()),
        timeout: cfg.timeout,
        body_timeout: cfg.net.body_timeout,
        hosts: Arc::new(cfg.hosts.clone()),
        engine_cfg: Arc::new(cfg.engine_config()),
        token: cfg.token.as_deref().map(Arc::from),
    };
    let app = router(state, cfg.log.clone());
    let watch = cfg.exit_when_worker_dies;
    let mut died = false;
    let stop = async {
        tokio::select! {
            () = shutdown => {}
            () = worker_death(&engine), if watch => died = true,
        }
    };
    let drained = net::serve(listener, app, &cfg.net, stop).await;
    drop(engine);
    if let Drained::Dropped(n) = drained {
        eprintln!(
            "s2s serve: {n} connection(s) still busy after {} ms; dropped",
            cfg.net.shutdown_timeout.as_millis()
        );
    }
    // Every handler (and so every Engine clone) is gone: the worker drains and stops.
    tokio::task::spawn_blocking(move || worker.join_timeout(Duration::from_secs(10)))
        .await
        .ok();
    if died {
        return Err(std::io::Error::other(
            "the model worker died; restart the server (see the log above for the panic)",
        ));
    }
    Ok(())
}

/// Resolves once the model worker thread has ended.
async fn worker_death(engine: &Engine) {
    while engine.is_alive() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGINT (Ctrl-C) and SIGTERM, listened to from the start so that a second one, however soon
/// it follows the first, is not missed.
struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                int: signal(SignalKind::interrupt())?,
                term: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Resolves on the next signal.
    async fn next(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {},
            _ = self.term.recv() => {},
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
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
    let (engine, worker) = Engine::start(&cfg.model_dirs(), &cfg.device, cfg.engine_config())?;
    let rt = runtime()?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(cfg.addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", cfg.addr))?;
        let addr = listener.local_addr()?;
        let mut signals = Signals::new()?;
        if !addr.ip().is_loopback() && cfg.token.is_none() {
            eprintln!(
                "s2s serve: warning: listening on {addr}, beyond this machine, without \
                 --token-file: anyone who can reach it can use it"
            );
        }
        let info = engine.info();
        eprintln!(
            "s2s serve: {} ({} parameters) from {}; listening on http://{addr}/ (Ctrl-C to stop)",
            info.arch, info.params, info.dir
        );
        serve_on(listener, engine, worker, &cfg, async move {
            signals.next().await;
            eprintln!(
                "s2s serve: shutting down; finishing in-flight requests (Ctrl-C again to stop now)"
            );
            tokio::spawn(async move {
                signals.next().await;
                eprintln!("s2s serve: stopped at once");
                std::process::exit(130);
            });
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
    /// Dropped at shutdown, so that the worker can stop.
    engine: Option<Engine>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    /// Loads the model, binds `cfg.addr` (port 0 picks a free one) and serves in the background.
    pub fn start(cfg: ServeConfig) -> anyhow::Result<Server> {
        let (engine, worker) = Engine::start(&cfg.model_dirs(), &cfg.device, cfg.engine_config())?;
        let rt = runtime()?;
        let listener = rt.block_on(tokio::net::TcpListener::bind(cfg.addr))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let handle = engine.clone();
        let thread = std::thread::Builder::new()
            .name("s2s-serve".into())
            .spawn(move || {
                rt.block_on(serve_on(listener, engine, worker, &cfg, async {
                    let _ = stopped.await;
                }))
            })?;
        Ok(Server {
            addr,
            engine: Some(handle),
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Makes the model worker thread panic outside its guards, as a bug would.
    #[doc(hidden)]
    pub fn inject_worker_panic(&self) {
        if let Some(e) = &self.engine {
            e.inject_worker_panic();
        }
    }

    /// Asks the server to stop without waiting.
    pub fn begin_shutdown(&mut self) {
        self.engine = None;
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Stops accepting connections, waits for in-flight requests and the worker, and returns.
    pub fn shutdown(mut self) -> anyhow::Result<()> {
        self.begin_shutdown();
        self.wait()
    }

    /// Waits until the server stops by itself (the model worker died) and returns how it ended.
    pub fn wait(mut self) -> anyhow::Result<()> {
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
