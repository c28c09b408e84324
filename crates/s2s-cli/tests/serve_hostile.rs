//! `s2s serve` against clients that misbehave: half-sent requests, abandoned and overlong
//! searches, a dead model worker, requests from other sites, clients stuck at shutdown, and a
//! second Ctrl-C.

mod common;
mod serving;

use serde_json::{Value, json};
use serving::{config, get, post_bytes, raw_request, start, translate, wait_for_stats};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A connection that has sent a request's head and 1 of its 100 body bytes, and then waits.
fn send_half_a_body(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /v1/translate HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{"
    );
    s.write_all(head.as_bytes()).unwrap();
    s
}

/// Whether the server closed `s`: a read returns end of file (or a reset) within 30 s.
fn closed_by_server(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// How many sentences [`slow_request`] sends: enough that the test model, one sentence per
/// batch, takes seconds even on a fast CPU (128 took 0.16 s on a 2026 Xeon, and the tests that
/// hang up or time out then raced the answer).
const SLOW_SENTENCES: usize = 2048;

/// A request whose search takes seconds: [`SLOW_SENTENCES`] sentences of 20 tokens, one per
/// batch, beam 16.
fn slow_request() -> Value {
    json!({
        "text": vec!["1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0"; SLOW_SENTENCES],
        "beam": 16,
    })
}

fn slow_config() -> s2s_serve::ServeConfig {
    let mut cfg = config();
    cfg.engine.max_batch = 1;
    cfg.engine.max_wait = Duration::ZERO;
    cfg.limits.max_sentences = SLOW_SENTENCES;
    cfg.limits.max_body_bytes = 1 << 20;
    cfg
}

#[test]
fn half_sent_and_idle_connections_are_closed_after_the_header_timeout() {
    let mut cfg = config();
    cfg.net.header_timeout = Duration::from_millis(300);
    let server = start(cfg);
    let addr = server.addr();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(b"POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        .unwrap();
    let idle = TcpStream::connect(addr).unwrap();
    // A kept-alive connection that answered once and then says nothing.
    let mut kept = TcpStream::connect(addr).unwrap();
    kept.write_all(format!("GET /health/live HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    assert!(closed_by_server(half), "a half-sent head stays open");
    assert!(closed_by_server(idle), "a silent connection stays open");
    assert!(
        closed_by_server(kept),
        "an idle kept-alive connection stays open"
    );
    assert_eq!(get(addr, "/health/live").status, 200);
}

#[test]
fn a_request_past_its_deadline_stops_its_search_and_frees_the_worker() {
    let mut cfg = slow_config();
    cfg.timeout = Duration::from_millis(300);
    let server = start(cfg);
    let addr = server.addr();
    let r = translate(addr, &slow_request());
    assert_eq!(r.status, 504, "{}", r.body);
    // The search stops at its next step (or, if the deadline falls between two of its batches,
    // the request leaves the rotation): the worker's sentence count stops short of them all.
    let sentences = |addr| get(addr, "/health").json()["stats"]["sentences"].as_u64();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let before = sentences(addr);
        std::thread::sleep(Duration::from_millis(500));
        if before == sentences(addr) {
            assert!(
                before < Some(SLOW_SENTENCES as u64),
                "the request was decoded to the end"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the search never stopped"
        );
    }
    let r = translate(addr, &json!({ "text": "1 2 3" }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["translations"][0]["hyps"][0]["text"], "3 2 1");
}

#[test]
fn a_small_request_is_served_while_a_large_one_decodes() {
    let server = start(slow_config());
    let addr = server.addr();
    let large = std::thread::spawn(move || translate(addr, &slow_request()));
    wait_for_stats(addr, "the worker to take the large request", |s| {
        s["requests"] == 1
    });
    let small = translate(addr, &json!({ "text": "7 8 9" }));
    assert_eq!(small.status, 200, "{}", small.body);
    assert_eq!(small.json()["translations"][0]["hyps"][0]["text"], "9 8 7");
    // Sentences decoded so far: the small one, and the large one's first few, not all of them.
    let decoded = get(addr, "/health").json()["stats"]["sentences"]
        .as_u64()
        .unwrap();
    assert!(
        decoded < 1 + 64,
        "the small request waited for {decoded} sentences of the large one"
    );
    let large = large.join().unwrap();
    assert_eq!(large.status, 200, "{}", large.body);
    assert_eq!(
        large.json()["translations"].as_array().unwrap().len(),
        SLOW_SENTENCES
    );
}

#[test]
fn a_client_that_hangs_up_stops_its_search() {
    let server = start(slow_config());
    let addr = server.addr();
    let body = slow_request().to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /v1/translate HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    wait_for_stats(addr, "the worker to take the request", |s| {
        s["requests"] == 1
    });
    drop(s);
    wait_for_stats(addr, "the search to stop", |s| s["interrupted"] == 1);
    assert_eq!(translate(addr, &json!({ "text": "4 5" })).status, 200);
}

#[test]
fn a_dead_worker_fails_readiness_and_requests_but_not_liveness() {
    let mut cfg = config();
    cfg.exit_when_worker_dies = false;
    let server = start(cfg);
    let addr = server.addr();
    assert_eq!(get(addr, "/health/ready").json()["status"], "ready");
    server.inject_worker_panic();
    let deadline = Instant::now() + Duration::from_secs(60);
    let ready = loop {
        let r = get(addr, "/health/ready");
        if r.status != 200 || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert!(ready.error().contains("worker has stopped"));
    assert_eq!(ready.header("retry-after").as_deref(), Some("1"));
    assert_eq!(get(addr, "/health").status, 503);
    assert_eq!(get(addr, "/health/live").status, 200);
    let r = translate(addr, &json!({ "text": "1 2" }));
    assert_eq!(r.status, 503, "{}", r.body);
}

#[test]
fn the_server_stops_with_an_error_when_its_worker_dies() {
    let server = start(config());
    server.inject_worker_panic();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tx.send(server.wait().map_err(|e| format!("{e:#}")))
            .unwrap()
    });
    let ended = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server stops by itself");
    let err = ended.expect_err("serving ends with an error");
    assert!(err.contains("worker died"), "{err}");
}

#[test]
fn only_json_from_this_host_is_accepted() {
    let server = start(config());
    let addr = server.addr();
    let body = br#"{"text":"1 2"}"#;
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let r = post_bytes(addr, "/v1/translate", ct, body);
        assert_eq!(r.status, 415, "{ct:?}: {}", r.body);
        assert!(r.error().contains("application/json"));
    }
    let r = post_bytes(
        addr,
        "/v1/translate",
        Some("Application/JSON; charset=utf-8"),
        body,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );

    let json_post = |extra: &str| {
        raw_request(
            addr,
            "POST",
            "/v1/translate",
            &format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n{extra}",
                body.len()
            ),
            body,
        )
    };
    let port = addr.port();
    for ok in [
        format!("Origin: http://localhost:{port}\r\n"),
        format!("Origin: http://127.0.0.1:{port}\r\n"),
    ] {
        assert_eq!(json_post(&ok).status, 200, "{ok}");
    }
    for bad in [
        "Origin: http://evil.example\r\n",
        "Origin: null\r\n",
        "Origin: http://localhost.evil.example\r\n",
    ] {
        let r = json_post(bad);
        assert_eq!(r.status, 403, "{bad}: {}", r.body);
        assert!(r.error().contains("--allow-host"));
    }
    // Another name in Host (DNS rebinding), on any route.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");

    // The page may load only its own script and style.
    let page = get(addr, "/");
    let csp = page.header("content-security-policy").expect("a CSP");
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
}

#[test]
fn allowed_hosts_widen_the_check() {
    let mut cfg = config();
    cfg.hosts = s2s_serve::Hosts::for_addr(cfg.addr, &["translate.example".into()]);
    let server = start(cfg);
    let addr = server.addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        b"GET /health/live HTTP/1.1\r\nHost: translate.example:80\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let any = s2s_serve::Hosts::for_addr(addr, &["*".into()]);
    assert_eq!(any, s2s_serve::Hosts::Any);
}

#[test]
fn a_slow_body_gets_408() {
    let mut cfg = config();
    cfg.net.body_timeout = Duration::from_millis(300);
    let server = start(cfg);
    let addr = server.addr();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(
        format!(
            "POST /v1/translate HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: 100\r\nConnection: close\r\n\r\n{{\"text\""
        )
        .as_bytes(),
    )
    .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reply = Vec::new();
    let _ = s.read_to_end(&mut reply);
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.starts_with("HTTP/1.1 408"), "{reply}");
}

#[test]
fn shutdown_drops_a_stuck_client_after_its_deadline() {
    let mut cfg = config();
    cfg.net.shutdown_timeout = Duration::from_millis(300);
    cfg.net.body_timeout = Duration::from_secs(600);
    let mut server = start(cfg);
    let addr = server.addr();
    let stuck = send_half_a_body(addr);
    // Let the server read the head, so the request is in flight.
    std::thread::sleep(Duration::from_millis(100));
    server.begin_shutdown();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(server.shutdown().is_ok()).unwrap());
    let stopped = rx.recv_timeout(Duration::from_secs(60));
    assert_eq!(stopped, Ok(true), "the server waited for the stuck client");
    assert!(closed_by_server(stuck));
}

/// The real binary: Ctrl-C waits for a stuck client (up to the shutdown deadline), a second
/// Ctrl-C exits at once with 130.
#[test]
fn a_second_sigint_stops_the_server_at_once() {
    let model = serving::model_dir();
    let mut c = common::s2s();
    c.args([
        "serve",
        "--quiet",
        "--addr",
        "127.0.0.1:0",
        "--shutdown-timeout-ms",
        "600000",
    ])
    .arg("--model")
    .arg(model);
    let mut p = common::spawn(c);
    p.wait_for_line("s2s serve: ");
    let line = p.seen.last().unwrap().clone();
    let addr: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|a| a.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let stuck = send_half_a_body(addr);
    std::thread::sleep(Duration::from_millis(200));
    p.signal(libc::SIGINT);
    p.wait_for_line("s2s serve: shutting down");
    assert!(
        p.child.try_wait().unwrap().is_none(),
        "the first Ctrl-C waits for the stuck client"
    );
    p.signal(libc::SIGINT);
    let (code, err) = p.finish();
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("stopped at once"), "{err}");
    drop(stuck);
}

#[test]
fn metrics_count_requests_by_route_and_status() {
    let server = start(config());
    let addr = server.addr();
    assert_eq!(
        translate(addr, &json!({ "text": ["1 2", "3 4 5"] })).status,
        200
    );
    assert_eq!(
        post_bytes(addr, "/v1/translate", Some("text/plain"), b"{}").status,
        415
    );
    assert_eq!(get(addr, "/no/such/page").status, 404);
    let m = get(addr, "/metrics");
    assert_eq!(m.status, 200);
    assert!(
        m.header("content-type")
            .is_some_and(|c| c.starts_with("application/openmetrics-text")),
        "{}",
        m.headers
    );
    let value = |name: &str| -> f64 {
        m.body
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{}", m.body))
    };
    assert_eq!(
        value("s2s_http_requests_total{route=\"/v1/translate\",status=\"200\"}"),
        1.0
    );
    assert_eq!(
        value("s2s_http_requests_total{route=\"/v1/translate\",status=\"415\"}"),
        1.0
    );
    assert_eq!(
        value("s2s_http_requests_total{route=\"other\",status=\"404\"}"),
        1.0
    );
    assert_eq!(value("s2s_batch_sentences_sum"), 2.0);
    assert_eq!(value("s2s_queue_wait_seconds_count"), 1.0);
    assert_eq!(value("s2s_queue_depth"), 0.0);
}

#[test]
fn attention_that_could_outgrow_the_cap_is_refused_before_decoding() {
    let mut cfg = config();
    // One sentence of 3 tokens, nbest 2: 2 * 3 * (max_len(3) + 1) = 2 * 3 * 17 = 102 weights.
    cfg.engine.max_attention_cells = 101;
    let server = start(cfg);
    let addr = server.addr();
    let ask = |attention: bool| {
        translate(
            addr,
            &json!({ "text": "1 2 3", "beam": 2, "nbest": 2, "attention": attention }),
        )
    };
    let r = ask(true);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.error().contains("102 weights"), "{}", r.body);
    assert_eq!(ask(false).status, 200);
    let stats = get(addr, "/health").json()["stats"].clone();
    assert_eq!(
        stats["requests"], 1,
        "the refused one was not decoded: {stats}"
    );
}

#[test]
fn with_a_token_the_api_needs_it_and_the_health_routes_do_not() {
    let mut cfg = config();
    cfg.token = Some("s3cret-token".into());
    let server = start(cfg);
    let addr = server.addr();
    let body = br#"{"text":"1 2"}"#;
    let with = |auth: &str| {
        raw_request(
            addr,
            "POST",
            "/v1/translate",
            &format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n{auth}",
                body.len()
            ),
            body,
        )
    };
    for bad in [
        "",
        "Authorization: Bearer wrong-token!\r\n",
        "Authorization: Bearer s3cret-toke\r\n",
        "Authorization: Basic s3cret-token\r\n",
    ] {
        let r = with(bad);
        assert_eq!(r.status, 401, "{bad:?}: {}", r.body);
        assert_eq!(r.header("www-authenticate").as_deref(), Some("Bearer"));
    }
    assert_eq!(with("Authorization: Bearer s3cret-token\r\n").status, 200);
    assert_eq!(get(addr, "/metrics").status, 401);
    assert_eq!(get(addr, "/health").status, 200);
    assert_eq!(get(addr, "/health/ready").status, 200);
    assert_eq!(get(addr, "/").status, 200);
}

#[test]
fn a_token_file_that_holds_no_token_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.token");
    let blank = tmp.path().join("blank.token");
    std::fs::write(&blank, " \n").unwrap();
    for (file, why) in [(&missing, "No such file"), (&blank, "one token")] {
        let mut c = common::s2s();
        c.args(["serve", "--addr", "127.0.0.1:0", "--model"])
            .arg(serving::model_dir())
            .arg("--token-file")
            .arg(file);
        let o = common::run(c);
        let err = common::stderr(&o);
        assert!(!o.status.success());
        assert!(
            err.contains(&file.display().to_string()) && err.contains(why),
            "{err}"
        );
    }
}
