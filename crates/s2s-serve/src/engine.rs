//! The model worker and dynamic batching.
//!
//! One std thread owns the [`Translator`] (burn modules need not be `Sync`) and is fed through a
//! bounded channel of [`Job`]s; each HTTP handler awaits its job's oneshot reply. The worker
//! blocks for a first job, then keeps collecting for at most `max_wait` or until `max_batch`
//! sentences are pending. It drops jobs whose client already gave up, encodes the sentences,
//! groups the jobs by [`SearchOptions`] (in arrival order) and decodes each group with one
//! [`Translator::search`] call in batches of at most `max_batch` sentences. Search is
//! batch-invariant, so a sentence gets the same result alone or batched with others.

use crate::api::{ApiError, SearchOptions, Translation};
use s2s_infer::Translator;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Batching and queueing parameters.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Most sentences decoded in one batched search.
    pub max_batch: usize,
    /// Longest time the first job of a batch waits for company.
    pub max_wait: Duration,
    /// Requests that may wait in the queue; more get 503.
    pub queue: usize,
    /// Most source tokens in one sentence; longer ones get 422.
    pub max_tokens: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_batch: 32,
            max_wait: Duration::from_millis(5),
            queue: 256,
            max_tokens: 200,
        }
    }
}

/// What `GET /health` says about the model.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct ModelInfo {
    pub dir: String,
    pub arch: String,
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    pub params: usize,
    pub device: String,
}

/// Counters of the worker's work, reported by `GET /health`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests decoded.
    pub requests: AtomicU64,
    /// Sentences decoded.
    pub sentences: AtomicU64,
    /// Batched searches run (one per group of equal options per collection round and
    /// `max_batch` sentences).
    pub batches: AtomicU64,
    /// Largest number of requests decoded together (one group of equal options).
    pub max_group_requests: AtomicU64,
    /// Requests accepted but not yet taken by the worker (the queue's depth now).
    pub queued: AtomicU64,
    /// Requests accepted into the queue so far (those turned away with 503 not counted).
    pub accepted: AtomicU64,
}

impl Stats {
    pub fn to_json(&self) -> serde_json::Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        serde_json::json!({
            "requests": g(&self.requests),
            "sentences": g(&self.sentences),
            "batches": g(&self.batches),
            "max_group_requests": g(&self.max_group_requests),
            "queued": g(&self.queued),
            "accepted": g(&self.accepted),
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
}

/// The handle handlers use to reach the worker. Dropping every clone of it stops the worker once
/// the queue is drained.
#[derive(Clone)]
pub struct Engine {
    tx: SyncSender<Job>,
    info: ModelInfo,
    stats: Arc<Stats>,
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
    /// Loads the model in `model_dir` on a new worker thread and starts it.
    pub fn start(
        model_dir: &Path,
        device: &str,
        cfg: EngineConfig,
    ) -> anyhow::Result<(Engine, WorkerHandle)> {
        let (tx, rx) = mpsc::sync_channel::<Job>(cfg.queue.max(1));
        let (ready_tx, ready_rx) = mpsc::channel::<anyhow::Result<ModelInfo>>();
        let dir: PathBuf = model_dir.to_owned();
        let device_name = device.to_owned();
        let stats = Arc::new(Stats::default());
        let worker_stats = stats.clone();
        let thread = std::thread::Builder::new()
            .name("s2s-model".into())
            .spawn(move || {
                let translator = s2s_models::backend::parse_device(&device_name)
                    .map_err(anyhow::Error::msg)
                    .and_then(|d| Ok(Translator::load(&dir, &d)?));
                let translator = match translator {
                    Ok(t) => t,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let run = &translator.loaded().run;
                let info = ModelInfo {
                    dir: dir.display().to_string(),
                    arch: translator.arch_name(),
                    src_vocab: run.src_vocab,
                    tgt_vocab: run.tgt_vocab,
                    params: translator.parameters(),
                    device: device_name,
                };
                let _ = ready_tx.send(Ok(info));
                worker_loop(&translator, &rx, &cfg, &worker_stats);
            })?;
        let info = ready_rx
            .recv()
            .map_err(|_| anyhow::anyhow!("the model worker died while loading"))??;
        Ok((Engine { tx, info, stats }, WorkerHandle(thread)))
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Queues a job without waiting; 503 if the queue is full.
    pub fn submit(
        &self,
        texts: Vec<String>,
        opts: SearchOptions,
        target_lang: Option<String>,
    ) -> Result<oneshot::Receiver<Reply>, ApiError> {
        let (reply, rx) = oneshot::channel();
        // Counted before the send so that the worker's decrement can never come first.
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.tx.try_send(Job {
            texts,
            opts,
            target_lang,
            reply,
        });
        if sent.is_err() {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
        } else {
            self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => Ok(rx),
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

fn worker_loop(translator: &Translator, rx: &Receiver<Job>, cfg: &EngineConfig, stats: &Stats) {
    while let Ok(first) = rx.recv() {
        stats.queued.fetch_sub(1, Ordering::Relaxed);
        let mut pending = first.texts.len();
        let mut jobs = vec![first];
        let deadline = Instant::now() + cfg.max_wait;
        while pending < cfg.max_batch {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(job) => {
                    stats.queued.fetch_sub(1, Ordering::Relaxed);
                    pending += job.texts.len();
                    jobs.push(job);
                }
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        run_jobs(translator, jobs, cfg, stats);
    }
}

struct Prepared {
    job: Job,
    sources: Vec<Vec<u32>>,
}

fn run_jobs(translator: &Translator, jobs: Vec<Job>, cfg: &EngineConfig, stats: &Stats) {
    // Group by options, in arrival order; skip clients that already gave up (timeouts).
    let mut groups: Vec<(SearchOptions, Vec<Prepared>)> = Vec::new();
    for job in jobs {
        if job.reply.is_closed() {
            continue;
        }
        let sources = match &job.target_lang {
            None => translator.encode_all(&job.texts),
            Some(lang) => match translator.with_target_lang(&job.texts, lang) {
                Ok(tagged) => translator.encode_all(&tagged),
                Err(e) => {
                    let _ = job.reply.send(Err(ApiError::bad_request(e.to_string())));
                    continue;
                }
            },
        };
        if let Some((i, s)) = sources
            .iter()
            .enumerate()
            .find(|(_, s)| s.len() > cfg.max_tokens)
        {
            let _ = job.reply.send(Err(ApiError::new(
                422,
                format!(
                    "sentence {i} has {} tokens; the limit is {} (--max-tokens)",
                    s.len(),
                    cfg.max_tokens
                ),
            )));
            continue;
        }
        let p = Prepared { job, sources };
        match groups.iter_mut().find(|(o, _)| *o == p.job.opts) {
            Some((_, g)) => g.push(p),
            None => groups.push((p.job.opts, vec![p])),
        }
    }
    for (opts, group) in groups {
        let sources: Vec<Vec<u32>> = group.iter().flat_map(|p| p.sources.clone()).collect();
        stats
            .requests
            .fetch_add(group.len() as u64, Ordering::Relaxed);
        stats
            .sentences
            .fetch_add(sources.len() as u64, Ordering::Relaxed);
        stats.batches.fetch_add(
            sources.len().div_ceil(cfg.max_batch.max(1)) as u64,
            Ordering::Relaxed,
        );
        stats
            .max_group_requests
            .fetch_max(group.len() as u64, Ordering::Relaxed);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            translator.search(
                &sources,
                &opts.to_config(translator.specials()),
                cfg.max_batch,
            )
        }));
        let mut results = match result {
            Ok(Ok(r)) => r.into_iter(),
            Ok(Err(e)) => {
                reply_all(group, ApiError::new(500, format!("search failed: {e}")));
                continue;
            }
            Err(_) => {
                reply_all(
                    group,
                    ApiError::new(500, "decoding panicked; see the server log"),
                );
                continue;
            }
        };
        for p in group {
            let translations = p
                .job
                .texts
                .iter()
                .zip(&p.sources)
                .map(|(text, src)| {
                    let hyps = results.next().unwrap_or_default();
                    translator.describe(text, src, &hyps)
                })
                .collect();
            let _ = p.job.reply.send(Ok(translations));
        }
    }
}

fn reply_all(group: Vec<Prepared>, err: ApiError) {
    for p in group {
        let _ = p.job.reply.send(Err(err.clone()));
    }
}
