//! `s2s serve`: an HTTP API and a web page for a trained model, with dynamic batching. The model
//! itself is reached through `s2s-infer`'s translator.
//!
//! - [`api`]: the JSON shapes and request validation;
//! - [`engine`]: the model worker thread and dynamic batching;
//! - [`server`]: routes, JSON errors, limits, logging, graceful shutdown;
//! - [`page`]: the embedded web page.
//!
//! # HTTP
//! | route | |
//! |---|---|
//! | `GET /` | the web page (HTML, with `/app.js` and `/style.css`) |
//! | `GET /health` | `{"status": "ok", "model": {arch, src_vocab, tgt_vocab, params, ...}, "limits": {...}, "stats": {requests, sentences, batches, max_group_requests, queued}}` (`queued`: requests waiting for the worker now) |
//! | `POST /v1/translate` | see [`api`] |
//!
//! Every error is `{"error": "..."}`: 400 malformed JSON, wrong types, unknown fields or options
//! out of range; 413 body over `--max-body-bytes`; 422 a sentence over `--max-tokens` or more
//! than `--max-sentences` sentences; 503 the queue is full (`--queue`); 504 no result within
//! `--timeout-ms`.

pub mod api;
pub mod engine;
pub mod page;
pub mod server;

pub use api::{Limits, SearchOptions, TranslateRequest, TranslateResponse};
pub use engine::{Engine, EngineConfig, ModelInfo};
pub use server::{RequestLog, ServeConfig, Server, run};
