//! `GET /metrics`: what the server did, in the Prometheus text format (OpenMetrics flavour,
//! through the Prometheus project's `prometheus-client` crate).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `s2s_http_requests_total` | counter | `route`, `status` |
//! | `s2s_http_request_duration_seconds` | histogram | `route` |
//! | `s2s_queue_wait_seconds` | histogram | |
//! | `s2s_queue_depth` | gauge | |
//! | `s2s_batch_sentences` | histogram | |
//! | `s2s_searches_interrupted_total` | counter | |
//!
//! `route` is the route a request matched, or `other` (so that random paths cannot grow the
//! label set).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

/// The routes counted by name; anything else is `other`.
const ROUTES: [&str; 8] = [
    "/",
    "/app.js",
    "/style.css",
    "/health",
    "/health/live",
    "/health/ready",
    "/metrics",
    "/v1/translate",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabel {
    route: &'static str,
}

type Buckets = fn() -> Histogram;

/// Latency buckets: 1 ms to about 65 s, doubling.
fn seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The server's metrics; cheap to update from any thread.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabel, Histogram, Buckets>,
    queue_wait: Histogram,
    queue_depth: Gauge,
    batch_sentences: Histogram,
    interrupted: Counter,
}

impl Default for Metrics {
    fn default() -> Self {
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<RouteLabel, Histogram, Buckets>::new_with_constructor(seconds);
        let queue_wait = seconds();
        let queue_depth = Gauge::default();
        let batch_sentences = Histogram::new(exponential_buckets(1.0, 2.0, 10));
        let interrupted = Counter::default();
        let mut registry = Registry::with_prefix("s2s");
        registry.register(
            "http_requests",
            "HTTP requests answered, by route and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's head to its response, by route",
            latency.clone(),
        );
        registry.register(
            "queue_wait_seconds",
            "Time a translation request waited for the model worker",
            queue_wait.clone(),
        );
        registry.register(
            "queue_depth",
            "Translation requests waiting for the model worker",
            queue_depth.clone(),
        );
        registry.register(
            "batch_sentences",
            "Sentences decoded together in one batched search",
            batch_sentences.clone(),
        );
        registry.register(
            "searches_interrupted",
            "Requests whose client went away while they were being decoded",
            interrupted.clone(),
        );
        Metrics {
            registry,
            requests,
            latency,
            queue_wait,
            queue_depth,
            batch_sentences,
            interrupted,
        }
    }
}

impl Metrics {
    /// One answered request.
    pub fn request(&self, path: &str, status: u16, took: Duration) {
        let route = ROUTES
            .iter()
            .find(|r| **r == path)
            .copied()
            .unwrap_or("other");
        self.requests
            .get_or_create(&RequestLabels { route, status })
            .inc();
        self.latency
            .get_or_create(&RouteLabel { route })
            .observe(took.as_secs_f64());
    }

    /// A request taken by the worker after waiting `waited` in the queue.
    pub fn dequeued(&self, waited: Duration) {
        self.queue_wait.observe(waited.as_secs_f64());
    }

    /// One batched search of `sentences` sentences.
    pub fn batch(&self, sentences: usize) {
        self.batch_sentences.observe(sentences as f64);
    }

    pub fn interrupted(&self) {
        self.interrupted.inc();
    }

    /// The text exposition, with the queue depth as it is now.
    pub fn encode(&self, queued: u64) -> String {
        self.queue_depth.set(queued as i64);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_counts_what_was_recorded() {
        let m = Metrics::default();
        m.request("/v1/translate", 200, Duration::from_millis(3));
        m.request("/v1/translate", 200, Duration::from_millis(5));
        m.request("/no/such/path", 404, Duration::from_millis(1));
        m.dequeued(Duration::from_millis(2));
        m.batch(12);
        m.interrupted();
        let text = m.encode(4);
        for line in [
            "s2s_http_requests_total{route=\"/v1/translate\",status=\"200\"} 2",
            "s2s_http_requests_total{route=\"other\",status=\"404\"} 1",
            "s2s_http_request_duration_seconds_count{route=\"/v1/translate\"} 2",
            "s2s_queue_wait_seconds_count 1",
            "s2s_queue_depth 4",
            "s2s_batch_sentences_sum 12.0",
            "s2s_searches_interrupted_total 1",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{line} missing from:\n{text}"
            );
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
