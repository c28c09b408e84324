//! `s2s serve`: an HTTP API and a web page for a trained model, with dynamic batching. The model
//! itself is reached through `s2s-infer`'s translator.
//!
//! - [`api`]: the JSON shapes and request validation;
//! - [`engine`]: the model worker thread and dynamic batching;
//! - [`server`]: routes, JSON errors, request checks, logging;
//! - [`metrics`]: `GET /metrics`, the Prometheus text format;
//! - [`net`]: connections: timeouts, the connection cap, shutdown with a deadline;
//! - [`page`]: the embedded web page.
//!
//! # HTTP
//! | route | |
//! |---|---|
//! | `GET /` | the web page (HTML, with `/app.js` and `/style.css`) |
//! | `GET /health` | `{"status": "ok", "model": {arch, src_vocab, tgt_vocab, params, ...}, "limits": {...}, "stats": {requests, sentences, batches, max_group_requests, queued, accepted, interrupted}}` (`queued`: requests waiting for the worker now); 503 once the model worker has died |
//! | `GET /health/live` | 200 `{"status": "live"}` while the HTTP loop answers |
//! | `GET /health/ready` | 200 `{"status": "ready"}`, or 503 when the model worker has died or the queue is full |
//! | `GET /metrics` | counters and histograms in the Prometheus text format (see [`metrics`]) |
//! | `POST /v1/translate` | see [`api`] |
//!
//! Every error is `{"error": "..."}`: 400 malformed JSON, wrong types, unknown fields or options
//! out of range; 401 the API or `/metrics` without the `--token-file` token (`Authorization:
//! Bearer`); 403 a `Host` or `Origin` naming another host (`--allow-host`); 408 a body that
//! did not arrive within `--body-timeout-ms`; 413 body over `--max-body-bytes`; 415 a body not
//! sent as `Content-Type: application/json`; 422 a sentence over `--max-tokens`, more than
//! `--max-sentences` sentences, or attention that could outgrow `--max-attention-cells`; 503 the queue is full (`--queue`) or the worker has stopped, with
//! `Retry-After`; 504 no result within `--timeout-ms` (its search then stops at the next step).
//! Every response carries `X-Content-Type-Options: nosniff`; the page a Content-Security-Policy.

pub mod api;
pub mod engine;
pub mod metrics;
pub mod net;
pub mod page;
pub mod server;

pub use api::{Limits, SearchOptions, TranslateRequest, TranslateResponse};
pub use engine::{Engine, EngineConfig, ModelInfo};
pub use net::NetLimits;
pub use server::{Hosts, RequestLog, ServeConfig, Server, run};
