//! The model worker and dynamic batching.
//!
//! One std thread owns the [`Translator`] (burn modules need not be `Sync`) and is fed through a
//! bounded channel of [`Job`]s; each HTTP handler awaits its job's [`Ticket`]. The worker takes
//! up to `max_active` requests off the queue (when idle it waits up to `max_wait` for company),
//! encodes them, and decodes them batch by batch in rotation: each batch starts with the request
//! at the front and is filled, in arrival order, with sentences of requests that have the same
//! [`SearchOptions`], up to `max_batch` sentences and `max_batch_tokens` of work; the front
//! request then goes to the back. A large request is so cut into bounded batches, between which
//! small ones are served. Search is batch-invariant, so a sentence gets the same result alone
//! or batched with others.
//!
//! A handler holds its request's [`Ticket`]; when the handler is dropped (its client went away or
//! its time ran out) the search of a batch whose every ticket is gone stops at the next step,
//! and the request leaves the rotation. A panic fails the requests being decoded, not the
//! worker; if the worker thread dies all the same, [`Engine::is_alive`] says so.
//!
//! A speech model's requests are WAV uploads ([`Engine::submit_audio`]): each is decoded,
//! checked and searched as a batch of its own when the worker takes it off the queue, between
//! the text batches of the rotation (its length is bounded by `max_audio_seconds`). A generator
//! conditioned on vectors takes `POST /v1/translate` requests whose texts are vectors; each such
//! request is decoded alone in the same way (a vector is one source position, and a request
//! holds at most `max_sentences` of them).

use crate::api::{ApiError, SearchOptions, Translation};
use crate::metrics::Metrics;
use s2s_infer::{TextSource, Translator};
use s2s_search::Interrupt;
use s2s_search::{Hypothesis, SearchConfig, SearchError};
use serde::Serialize;
use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Batching and queueing parameters.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Most sentences decoded in one batched search.
    pub max_batch: usize,
    /// Most work in one batched search, as the sum over its sentences of
    /// `(source tokens + 1) * beam` (a single sentence may exceed it). This bounds how long one
    /// batch keeps the others waiting.
    pub max_batch_tokens: usize,
    /// Requests decoded in rotation at once; more wait in the queue.
    pub max_active: usize,
    /// Most attention weights a request asking for attention may get back: the sum over its
    /// sentences of `nbest * source tokens * (longest output + 1)`, known before decoding
    /// (422 above). Bounds the reply (about 10 bytes of JSON per weight).
    pub max_attention_cells: usize,
    /// Longest time the first job of a batch waits for company.
    pub max_wait: Duration,
    /// Requests that may wait in the queue; more get 503.
    pub queue: usize,
    /// Most source tokens in one sentence; longer ones get 422.
    pub max_tokens: usize,
    /// The beam and alpha requests get unless they ask otherwise, in place of the first
    /// model's `decoding.toml` (an ensemble's own: `s2s serve --decoding FILE`).
    pub decoding: Option<s2s_infer::Decoding>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_batch: 32,
            max_batch_tokens: 16384,
            max_active: 16,
            max_attention_cells: 2_000_000,
            max_wait: Duration::from_millis(5),
            queue: 256,
            max_tokens: 200,
            decoding: None,
        }
    }
}

/// What `GET /health` says about the model.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct ModelInfo {
    /// The MODEL_DIR; an ensemble's, joined by ` + `.
    pub dir: String,
    pub arch: String,
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    pub params: usize,
    pub device: String,
    /// What the model reads: `text` (`POST /v1/translate`), `vectors` (`POST /v1/translate`,
    /// each text a line of `vector_dim` numbers) or `audio` (`POST /v1/transcribe`).
    #[serde(default)]
    pub input: String,
    /// A vector-conditioned generator's vector dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_dim: Option<usize>,
    /// The beam and alpha a request gets unless it asks otherwise: the model's
    /// `decoding.toml`, or the built-in defaults.
    #[serde(default = "s2s_infer::decoding::default_beam")]
    pub beam: usize,
    #[serde(default = "s2s_infer::decoding::default_alpha")]
    pub alpha: f32,
}

/// Counters of the worker's work, reported by `GET /health`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests taken off the queue and encoded for decoding.
    pub requests: AtomicU64,
    /// Sentences decoded.
    pub sentences: AtomicU64,
    /// Batched searches run.
    pub batches: AtomicU64,
    /// Largest number of requests with sentences in one batch.
    pub max_group_requests: AtomicU64,
    /// Requests accepted but not yet taken by the worker (the queue's depth now).
    pub queued: AtomicU64,
    /// Requests accepted into the queue so far (those turned away with 503 not counted).
    pub accepted: AtomicU64,
    /// Requests whose client went away while the worker was decoding them: their search
    /// stopped at its next step, or they left the rotation before their next batch.
    pub interrupted: AtomicU64,
}

impl Stats {
    /// Counts one batched search of `sentences` sentences from `requests` requests.
    fn batch(&self, metrics: &Metrics, sentences: usize, requests: usize) {
        self.sentences
            .fetch_add(sentences as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        self.max_group_requests
            .fetch_max(requests as u64, Ordering::Relaxed);
        metrics.batch(sentences);
    }

    /// Counts `requests` whose clients went away while they were being decoded.
    fn interrupted(&self, metrics: &Metrics, requests: usize) {
        self.interrupted
            .fetch_add(requests as u64, Ordering::Relaxed);
        for _ in 0..requests {
            metrics.interrupted();
        }
    }

    /// Counts a message taken off the queue; whether its client still waits for it.
    fn dequeued(&self, metrics: &Metrics, queued_at: Instant, waiting: &Weak<()>) -> bool {
        self.queued.fetch_sub(1, Ordering::Relaxed);
        metrics.dequeued(queued_at.elapsed());
        waiting.strong_count() > 0
    }

    pub fn to_json(&self) -> serde_json::Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        serde_json::json!({
            "requests": g(&self.requests),
            "sentences": g(&self.sentences),
            "batches": g(&self.batches),
            "max_group_requests": g(&self.max_group_requests),
            "queued": g(&self.queued),
            "accepted": g(&self.accepted),
            "interrupted": g(&self.interrupted),
        })
    }
}

type Reply = Result<Vec<Translation>, ApiError>;

/// One request's sentences waiting for the worker.
pub struct Job {
    pub texts: Vec<String>,
    pub opts: SearchOptions,
    /// The target language tag to put in front of every text (multilingual Marian models).
    pub target_lang: Option<String>,
    pub reply: oneshot::Sender<Reply>,
    /// Gone once the request's [`Ticket`] is dropped.
    waiting: Weak<()>,
    queued_at: Instant,
}

impl Job {
    fn abandoned(&self) -> bool {
        self.waiting.strong_count() == 0
    }
}

/// One WAV upload waiting for the worker.
pub struct AudioJob {
    pub bytes: Vec<u8>,
    /// Names the upload in the reply and in errors.
    pub name: String,
    /// Longer audio is refused (422).
    pub max_seconds: f64,
    pub opts: SearchOptions,
    reply: oneshot::Sender<Reply>,
    waiting: Weak<()>,
    queued_at: Instant,
}

/// What the worker is told.
enum Message {
    Job(Job),
    Audio(AudioJob),
    /// Fault injection for tests: the worker panics outside its guards, as a bug would.
    Panic,
}

/// A queued request's reply. Dropping it tells the worker that nobody waits for the result.
pub struct Ticket {
    reply: oneshot::Receiver<Reply>,
    _waiting: Arc<()>,
}

impl Future for Ticket {
    type Output = Result<Reply, oneshot::error::RecvError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.reply).poll(cx)
    }
}

/// The handle handlers use to reach the worker. Dropping every clone of it stops the worker once
/// the queue is drained.
#[derive(Clone)]
pub struct Engine {
    tx: SyncSender<Message>,
    info: ModelInfo,
    stats: Arc<Stats>,
    metrics: Arc<Metrics>,
    alive: Arc<AtomicBool>,
    queue: usize,
}

/// Clears the worker's liveness flag when the worker thread ends, by return or by panic.
struct AliveGuard(Arc<AtomicBool>);

impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// Joins the worker thread.
pub struct WorkerHandle(JoinHandle<()>);

impl WorkerHandle {
    /// Waits up to `timeout` for the worker to finish (it does once every [`Engine`] is dropped
    /// and the queue is drained); returns whether it did.
    pub fn join_timeout(self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.0.is_finished() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.0.join();
        true
    }
}

impl Engine {
    /// Loads the model in each of `model_dirs` (more than one decode as an ensemble) on a new
    /// worker thread and starts it.
    pub fn start(
        model_dirs: &[PathBuf],
        device: &str,
        cfg: EngineConfig,
    ) -> anyhow::Result<(Engine, WorkerHandle)> {
        let (tx, rx) = mpsc::sync_channel::<Message>(cfg.queue.max(1));
        let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<ModelInfo>>();
        let dirs = model_dirs.to_vec();
        let device_name = device.to_owned();
        let stats = Arc::new(Stats::default());
        let worker_stats = stats.clone();
        let metrics = Arc::new(Metrics::default());
        let worker_metrics = metrics.clone();
        let alive = Arc::new(AtomicBool::new(true));
        let guard = AliveGuard(alive.clone());
        let queue = cfg.queue.max(1);
        let thread = std::thread::Builder::new()
            .name("s2s-model".into())
            .spawn(move || {
                let _guard = guard;
                let translator = s2s_models::backend::parse_device(&device_name)
                    .map_err(anyhow::Error::msg)
                    .and_then(|d| Ok(Translator::ensemble(&dirs, &d)?));
                let mut translator = match translator {
                    Ok(t) => t,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                if let Some(decoding) = cfg.decoding.clone() {
                    translator.set_decoding(decoding);
                }
                let run = &translator.loaded().run;
                let info = ModelInfo {
                    dir: dirs
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" + "),
                    arch: translator.arch_name(),
                    src_vocab: run.src_vocab,
                    tgt_vocab: run.tgt_vocab,
                    params: translator.parameters(),
                    device: device_name,
                    input: if translator.reads_audio() {
                        "audio"
                    } else if translator.vector_dim().is_some() {
                        "vectors"
                    } else {
                        "text"
                    }
                    .to_owned(),
                    vector_dim: translator.vector_dim(),
                    beam: translator.decoding().beam,
                    alpha: translator.decoding().alpha,
                };
                let _ = ready_tx.send(Ok(info));
                translator.keep_packed_weights(|| {
                    worker_loop(&translator, &rx, &cfg, &worker_stats, &worker_metrics)
                });
            })?;
        let info = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the model worker died while loading"))??;
        let engine = Engine {
            tx,
            info,
            stats,
            metrics,
            alive,
            queue,
        };
        Ok((engine, WorkerHandle(thread)))
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The search options a request gets for what it leaves out: the model's decoding defaults.
    pub fn default_options(&self) -> SearchOptions {
        SearchOptions::model_defaults(self.info.beam, self.info.alpha)
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Whether the model worker thread is still running.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    /// Why the engine cannot take a request now (the worker died, or the queue is full), if so.
    pub fn unready(&self) -> Option<&'static str> {
        if !self.is_alive() {
            Some("the model worker has stopped")
        } else if self.stats.queued.load(Ordering::Relaxed) >= self.queue as u64 {
            Some("the request queue is full")
        } else {
            None
        }
    }

    /// Makes the worker thread panic outside its guards, as a bug would (for tests of what a
    /// dead worker looks like from outside).
    #[doc(hidden)]
    pub fn inject_worker_panic(&self) {
        let _ = self.tx.try_send(Message::Panic);
    }

    /// Queues a job without waiting; 503 if the queue is full.
    pub fn submit(
        &self,
        texts: Vec<String>,
        opts: SearchOptions,
        target_lang: Option<String>,
    ) -> Result<Ticket, ApiError> {
        self.enqueue(|reply, waiting| {
            Message::Job(Job {
                texts,
                opts,
                target_lang,
                reply,
                waiting,
                queued_at: Instant::now(),
            })
        })
    }

    /// Queues a WAV upload for a speech model without waiting; 503 if the queue is full.
    pub fn submit_audio(
        &self,
        bytes: Vec<u8>,
        name: String,
        max_seconds: f64,
        opts: SearchOptions,
    ) -> Result<Ticket, ApiError> {
        self.enqueue(|reply, waiting| {
            Message::Audio(AudioJob {
                bytes,
                name,
                max_seconds,
                opts,
                reply,
                waiting,
                queued_at: Instant::now(),
            })
        })
    }

    fn enqueue(
        &self,
        message: impl FnOnce(oneshot::Sender<Reply>, Weak<()>) -> Message,
    ) -> Result<Ticket, ApiError> {
        let (reply, rx) = oneshot::channel();
        let waiting = Arc::new(());
        // Counted before the send so that the worker's decrement can never come first.
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.tx.try_send(message(reply, Arc::downgrade(&waiting)));
        if sent.is_err() {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => Ok(Ticket {
                reply: rx,
                _waiting: waiting,
            }),
            Err(TrySendError::Full(_)) => Err(ApiError::new(
                503,
                "the server is busy: the request queue is full; retry shortly",
            )),
            Err(TrySendError::Disconnected(_)) => {
                Err(ApiError::new(503, "the model worker has stopped"))
            }
        }
    }
}

/// A request being decoded: its sources, and the n-best of those decoded so far.
struct Active {
    job: Job,
    sources: Vec<TextSource>,
    done: Vec<Vec<Hypothesis>>,
}

impl Active {
    fn left(&self) -> &[TextSource] {
        &self.sources[self.done.len()..]
    }
}

/// The worker: admits requests (up to `max_active` at once), then decodes them batch by batch.
/// Each batch starts with the request at the front of the rotation and is filled with sentences
/// of requests with the same options, up to `max_batch` sentences and `max_batch_tokens`; the
/// front request then goes to the back if it is not finished. A request's sentences are
/// decoded in order, so a large request is cut into batches between which others get their
/// turn.
fn worker_loop(
    translator: &Translator,
    rx: &Receiver<Message>,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
) {
    let mut active: VecDeque<Active> = VecDeque::new();
    let max_active = cfg.max_active.max(1);
    loop {
        if active.is_empty() {
            // Idle: wait for a request, then for company during `max_wait`.
            let Ok(first) = rx.recv() else { break };
            admit(translator, first, cfg, stats, metrics, &mut active);
            let deadline = Instant::now() + cfg.max_wait;
            while active.len() < max_active
                && active.iter().map(|a| a.sources.len()).sum::<usize>() < cfg.max_batch
            {
                let left = deadline.saturating_duration_since(Instant::now());
                match rx.recv_timeout(left) {
                    Ok(m) => admit(translator, m, cfg, stats, metrics, &mut active),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        } else {
            while active.len() < max_active {
                match rx.try_recv() {
                    Ok(m) => admit(translator, m, cfg, stats, metrics, &mut active),
                    Err(_) => break,
                }
            }
        }
        // Requests whose clients left, inside a search (stopped at its next step) or between
        // two of their batches, leave the rotation here and are counted once.
        let before = active.len();
        active.retain(|a| !a.job.abandoned());
        stats.interrupted(metrics, before - active.len());
        if active.is_empty() {
            continue;
        }
        let round = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decode_one_batch(translator, &mut active, cfg, stats, metrics)
        }));
        if round.is_err() {
            // Dropping the requests drops their reply senders: each client gets a 500.
            active.clear();
            eprintln!("s2s serve: a batch panicked; its requests failed, the worker goes on");
        }
    }
}

/// Takes a message off the queue: a request is encoded and checked (422 past `max_tokens`, 400
/// for an unknown target language), then joins the rotation.
fn admit(
    translator: &Translator,
    m: Message,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
    active: &mut VecDeque<Active>,
) {
    let job = match m {
        Message::Job(job) => job,
        Message::Audio(job) => return transcribe(translator, job, cfg, stats, metrics),
        Message::Panic => panic!("fault injected into the model worker"),
    };
    if !stats.dequeued(metrics, job.queued_at, &job.waiting) {
        return;
    }
    if translator.vector_dim().is_some() {
        return generate(translator, job, cfg, stats, metrics);
    }
    if translator.reads_audio() {
        let _ = job.reply.send(Err(ApiError::bad_request(
            "this is a speech recognition model: POST a WAV file to /v1/transcribe \
             (Content-Type: audio/wav)",
        )));
        return;
    }
    let encoded =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job.target_lang {
            None => Ok(translator.encode_all(&job.texts)),
            Some(lang) => translator
                .with_target_lang(&job.texts, lang)
                .map(|tagged| translator.encode_all(&tagged)),
        }));
    let sources = match encoded {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            let _ = job.reply.send(Err(ApiError::bad_request(e.to_string())));
            return;
        }
        Err(_) => {
            let _ = job.reply.send(Err(ApiError::new(
                500,
                "encoding the request panicked; see the server log",
            )));
            return;
        }
    };
    if let Some((i, s)) = sources
        .iter()
        .enumerate()
        .find(|(_, s)| s.ids.len() > cfg.max_tokens)
    {
        let _ = job.reply.send(Err(ApiError::new(
            422,
            format!(
                "sentence {i} has {} tokens; the limit is {} (--max-tokens)",
                s.ids.len(),
                cfg.max_tokens
            ),
        )));
        return;
    }
    if let Err(e) = check_attention(
        translator,
        job.opts,
        sources.iter().map(|s| s.ids.len()),
        cfg,
        "fewer or shorter sentences",
    ) {
        let _ = job.reply.send(Err(e));
        return;
    }
    stats.requests.fetch_add(1, Ordering::Relaxed);
    active.push_back(Active {
        done: Vec::with_capacity(sources.len()),
        sources,
        job,
    });
}

/// 422 when a request asking for attention could get more weights back than
/// `max_attention_cells`: nbest x source length x (longest output + 1) per source, known before
/// decoding. `shorter` says what to send instead.
fn check_attention(
    translator: &Translator,
    opts: SearchOptions,
    source_lens: impl Iterator<Item = usize>,
    cfg: &EngineConfig,
    shorter: &str,
) -> Result<(), ApiError> {
    if !opts.attention {
        return Ok(());
    }
    let search = opts.to_config(translator.specials());
    let cells: usize = source_lens
        .map(|len| search.nbest * len * (search.max_len_for(len) + 1))
        .sum();
    if cells > cfg.max_attention_cells {
        return Err(ApiError::new(
            422,
            format!(
                "the attention of this request could reach {cells} weights; the limit is {} \
                 (--max-attention-cells): send {shorter}, a smaller nbest, or no attention",
                cfg.max_attention_cells
            ),
        ));
    }
    Ok(())
}

/// Generates from a vector-conditioned model's request, as a batch of its own (each vector is
/// one source position, so the rotation's token budget says nothing about it): 400 for a text
/// that is not a vector of the model's dimension or a target language, 422 past the attention
/// limit.
fn generate(
    translator: &Translator,
    job: Job,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
) {
    let reply = decode_alone(&job.waiting, "generating", |interrupt| {
        generate_request(translator, &job, cfg, stats, metrics, interrupt)
    });
    let _ = job.reply.send(reply);
}

/// Runs `decode`, a request decoded as a batch of its own (an upload, a request of vectors),
/// with an interrupt that fires once its client has gone; a panic is a 500 naming `what`.
fn decode_alone(waiting: &Weak<()>, what: &str, decode: impl FnOnce(Interrupt) -> Reply) -> Reply {
    let waiting = waiting.clone();
    let interrupt = Interrupt::new(move || waiting.strong_count() == 0);
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decode(interrupt))).unwrap_or_else(
        |_| {
            Err(ApiError::new(
                500,
                format!("{what} panicked; see the server log"),
            ))
        },
    )
}

/// A request's search, as its reply: 499 (counted) when its client went away during it.
fn reply_of(
    found: Result<Vec<Translation>, s2s_infer::InferError>,
    stats: &Stats,
    metrics: &Metrics,
) -> Reply {
    match found {
        Ok(found) => Ok(found),
        Err(s2s_infer::InferError::Search(SearchError::Interrupted)) => {
            stats.interrupted(metrics, 1);
            // Nobody waits for this reply any more (nginx's code for a client gone).
            Err(ApiError::new(499, "the client went away"))
        }
        Err(e) => Err(ApiError::new(500, format!("search failed: {e}"))),
    }
}

fn generate_request(
    translator: &Translator,
    job: &Job,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
    interrupt: Interrupt,
) -> Reply {
    if job.target_lang.is_some() {
        return Err(ApiError::bad_request(
            "this model generates from vectors and has no target languages: leave out \
             target_lang",
        ));
    }
    let vectors = match translator.vector_sources(&job.texts) {
        Ok(Some(v)) => v,
        Ok(None) => unreachable!("generate is only called for a vector-conditioned model"),
        Err(e) => return Err(ApiError::bad_request(e.to_string())),
    };
    check_attention(
        translator,
        job.opts,
        vectors.iter().map(|_| 1),
        cfg,
        "fewer vectors",
    )?;
    stats.requests.fetch_add(1, Ordering::Relaxed);
    for chunk in vectors.chunks(cfg.max_batch.max(1)) {
        stats.batch(metrics, chunk.len(), 1);
    }
    let search = SearchConfig {
        interrupt: Some(interrupt),
        ..job.opts.to_config(translator.specials())
    };
    let found = translator.generate_from_vectors(&job.texts, &vectors, &search, cfg.max_batch);
    reply_of(found, stats, metrics)
}

/// Decodes, checks and transcribes one WAV upload, as a batch of its own, and replies: 400 for a
/// text model or a file that is not WAV, 422 past `max_seconds` or the attention limit.
fn transcribe(
    translator: &Translator,
    job: AudioJob,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
) {
    if !stats.dequeued(metrics, job.queued_at, &job.waiting) {
        return;
    }
    let reply = decode_alone(&job.waiting, "transcribing", |interrupt| {
        transcribe_upload(translator, &job, cfg, stats, metrics, interrupt)
    });
    let _ = job.reply.send(reply);
}

fn transcribe_upload(
    translator: &Translator,
    job: &AudioJob,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
    interrupt: Interrupt,
) -> Reply {
    if !translator.reads_audio() {
        return Err(ApiError::bad_request(
            "this model reads text: POST JSON to /v1/translate",
        ));
    }
    let audio = translator
        .decode_wav(&job.bytes, &job.name)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    if audio.seconds() > job.max_seconds {
        return Err(ApiError::new(
            422,
            format!(
                "{} is {:.1} s long; the limit is {} s (--max-audio-seconds)",
                job.name,
                audio.seconds(),
                job.max_seconds
            ),
        ));
    }
    let frames = translator
        .frames_of(&audio)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let positions = s2s_search::Source::len(&frames);
    check_attention(
        translator,
        job.opts,
        [positions].into_iter(),
        cfg,
        "shorter audio",
    )?;
    stats.requests.fetch_add(1, Ordering::Relaxed);
    stats.batch(metrics, 1, 1);
    let search = SearchConfig {
        interrupt: Some(interrupt),
        ..job.opts.to_config(translator.specials())
    };
    let frames = [frames];
    let found = translator
        .search_frames(&frames, &search, 1)
        .map(|found| vec![translator.describe_frames(&job.name, &frames[0], &found[0])]);
    reply_of(found, stats, metrics)
}

/// The cost of decoding a sentence of `len` source tokens with beam `beam`, in
/// [`EngineConfig::max_batch_tokens`] units.
fn cost(len: usize, beam: usize) -> usize {
    (len + 1) * beam
}

/// Decodes one batch (see [`worker_loop`]), replies to the requests it finishes and rotates.
fn decode_one_batch(
    translator: &Translator,
    active: &mut VecDeque<Active>,
    cfg: &EngineConfig,
    stats: &Stats,
    metrics: &Metrics,
) {
    let opts = active[0].job.opts;
    // (request, how many of its sentences), in rotation order.
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let mut sources: Vec<TextSource> = Vec::new();
    let mut budget = cfg.max_batch_tokens;
    'fill: for (i, a) in active.iter().enumerate() {
        if a.job.opts != opts {
            continue;
        }
        let mut n = 0;
        for src in a.left() {
            let c = cost(src.ids.len(), opts.beam);
            let first = sources.is_empty();
            if !first && (sources.len() == cfg.max_batch.max(1) || c > budget) {
                if n > 0 {
                    parts.push((i, n));
                }
                break 'fill;
            }
            budget = budget.saturating_sub(c);
            sources.push(src.clone());
            n += 1;
        }
        if n > 0 {
            parts.push((i, n));
        }
    }
    stats.batch(metrics, sources.len(), parts.len());

    let waiting: Vec<Weak<()>> = parts
        .iter()
        .map(|&(i, _)| active[i].job.waiting.clone())
        .collect();
    let search = SearchConfig {
        interrupt: Some(Interrupt::new(move || {
            waiting.iter().all(|w| w.strong_count() == 0)
        })),
        ..opts.to_config(translator.specials())
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        translator.search(&sources, &search, cfg.max_batch)
    }));
    let failure = match result {
        Ok(Ok(found)) => {
            let mut found = found.into_iter();
            for &(i, n) in &parts {
                active[i].done.extend(found.by_ref().take(n));
            }
            None
        }
        Ok(Err(s2s_infer::InferError::Search(SearchError::Interrupted))) => {
            // Every request of the batch is gone; the next round drops and counts them.
            return;
        }
        Ok(Err(e)) => Some(ApiError::new(500, format!("search failed: {e}"))),
        Err(_) => Some(ApiError::new(500, "decoding panicked; see the server log")),
    };
    // Reply to the finished (or failed) requests and take them out; rotate the front one.
    let mut ended: Vec<usize> = parts
        .iter()
        .map(|&(i, _)| i)
        .filter(|&i| failure.is_some() || active[i].left().is_empty())
        .collect();
    ended.sort_unstable();
    for &i in ended.iter().rev() {
        let a = active.remove(i).expect("an active request");
        let reply =
            match &failure {
                Some(e) => Err(e.clone()),
                None => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    describe(translator, &a)
                }))
                .map_err(|_| ApiError::new(500, "building the reply panicked; see the server log")),
            };
        let _ = a.job.reply.send(reply);
    }
    if ended.first() != Some(&0)
        && let Some(front) = active.pop_front()
    {
        active.push_back(front);
    }
}

/// A finished request's reply.
fn describe(translator: &Translator, a: &Active) -> Vec<Translation> {
    a.job
        .texts
        .iter()
        .zip(&a.sources)
        .zip(&a.done)
        .map(|((text, src), hyps)| translator.describe(text, &src.ids, hyps))
        .collect()
}
