//! The HTTP API against a real trained model on a loopback port: every endpoint, every error
//! code, dynamic batching under 64 concurrent requests, request logging and graceful shutdown.

mod serving;

use s2s_serve::{RequestLog, SearchOptions};
use serde_json::{Value, json};
use serving::*;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn logged(cfg: &s2s_serve::ServeConfig) -> Vec<Value> {
    match &cfg.log {
        RequestLog::Capture(lines) => lines
            .lock()
            .unwrap()
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect(),
        _ => panic!("not capturing"),
    }
}

#[test]
fn endpoints_and_request_log() {
    let cfg = config();
    let server = start(cfg.clone());
    let addr = server.addr();

    let page = get(addr, "/");
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.body.contains("id=\"heatmap\""));
    assert!(page.body.contains("src=\"/app.js\""));
    assert!(!page.body.contains("http://") && !page.body.contains("https://"));
    let js = get(addr, "/app.js");
    assert_eq!(js.status, 200);
    assert!(js.body.contains("heat-cell"));
    assert_eq!(get(addr, "/style.css").status, 200);

    let health = get(addr, "/health");
    assert_eq!(health.status, 200);
    let h = health.json();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["model"]["arch"], "rnnsearch-tiny");
    assert!(h["model"]["params"].as_u64().unwrap() > 1000);
    assert!(h["model"]["src_vocab"].as_u64().unwrap() >= 14);
    assert_eq!(h["limits"]["max_beam"], 16);

    // One sentence as a string.
    let r = translate(addr, &json!({"text": "1 2 3 4"}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    let v = r.json();
    let t = &v["translations"];
    assert_eq!(t.as_array().unwrap().len(), 1);
    assert_eq!(t[0]["src"], "1 2 3 4");
    assert_eq!(t[0]["src_tokens"], json!(["1", "2", "3", "4"]));
    let hyps = t[0]["hyps"].as_array().unwrap();
    assert_eq!(hyps.len(), 1);
    assert_eq!(hyps[0]["text"], "4 3 2 1", "the model reverses digits");
    assert!(hyps[0]["score"].as_f64().unwrap() <= 0.0);
    assert!(
        hyps[0].get("attention").is_none(),
        "attention only on request"
    );

    // A list, n-best and attention.
    let r = translate(
        addr,
        &json!({"text": ["5 6 7", "8 9"], "beam": 4, "alpha": 0.5, "nbest": 3, "attention": true}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    let t = v["translations"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["src"], "8 9");
    for tr in t {
        let hyps = tr["hyps"].as_array().unwrap();
        assert_eq!(hyps.len(), 3);
        let scores: Vec<f64> = hyps.iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(
            scores.windows(2).all(|w| w[0] >= w[1]),
            "best first: {scores:?}"
        );
        for h in hyps {
            let a = &h["attention"];
            let src: Vec<&str> = a["src"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap())
                .collect();
            let tgt = a["tgt"].as_array().unwrap();
            let n_src = tr["src_tokens"].as_array().unwrap().len();
            // The source's tokens, and its <eos> when the search returns that column.
            assert!(src.len() == n_src || src.len() == n_src + 1, "{src:?}");
            let has_eos = src.len() == n_src + 1;
            if has_eos {
                assert_eq!(*src.last().unwrap(), "<eos>");
            }
            assert_eq!(tgt.len(), h["tokens"].as_array().unwrap().len() + 1);
            let mean = a["mean"].as_array().unwrap();
            assert_eq!(mean.len(), tgt.len());
            for row in mean {
                let row = row.as_array().unwrap();
                assert_eq!(row.len(), src.len());
                let sum: f64 = row.iter().map(|w| w.as_f64().unwrap()).sum();
                assert!(row.iter().all(|w| w.as_f64().unwrap() >= 0.0));
                if has_eos {
                    assert!((sum - 1.0).abs() < 1e-3, "attention rows sum to 1: {sum}");
                } else {
                    assert!(sum <= 1.0 + 1e-3, "{sum}");
                }
            }
        }
    }

    // Unknown routes and methods are JSON errors too.
    let r = get(addr, "/nope");
    assert_eq!(r.status, 404);
    r.error();
    let r = get(addr, "/v1/translate");
    assert_eq!(r.status, 405);
    r.error();

    // Requests without a JSON content type are refused: a web page on another site could send
    // them without the browser asking the server first.
    let r = post_bytes(addr, "/v1/translate", None, br#"{"text":"1 2"}"#);
    assert_eq!(r.status, 415, "{}", r.body);

    server.shutdown().unwrap();
    let log = logged(&cfg);
    assert_eq!(log.len(), 9, "one line per request: {log:?}");
    let t = log
        .iter()
        .find(|l| l["path"] == "/v1/translate" && l["n"] == 2)
        .expect("the two-sentence request is logged");
    assert_eq!(t["method"], "POST");
    assert_eq!(t["status"], 200);
    assert!(t["ms"].as_f64().unwrap() >= 0.0);
    assert!(
        log.iter()
            .any(|l| l["path"] == "/nope" && l["status"] == 404)
    );
}

/// A model with a `decoding.toml` serves with its beam and alpha: `/health` names them, a
/// request that leaves them out gets them (alpha 0: the score is the raw log-probability), and
/// one that sets them keeps its own.
#[test]
fn a_models_decoding_defaults_are_the_servers() {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(model_dir()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    std::fs::write(
        dir.path().join(s2s_infer::decoding::DECODING),
        "beam = 3\nalpha = 0.0\n",
    )
    .unwrap();
    let mut cfg = config();
    cfg.model_dir = dir.path().to_owned();
    let server = start(cfg);
    let addr = server.addr();
    let m = get(addr, "/health").json()["model"].clone();
    assert_eq!(
        (m["beam"].as_u64(), m["alpha"].as_f64()),
        (Some(3), Some(0.0))
    );
    let hyps = |req: &Value| {
        let r = translate(addr, req);
        assert_eq!(r.status, 200, "{}", r.body);
        r.json()["translations"][0]["hyps"].clone()
    };
    let h = hyps(&json!({"text": "1 2 3 4 5", "nbest": 3}));
    assert_eq!(
        h.as_array().unwrap().len(),
        3,
        "nbest 3 fits the model's beam of 3"
    );
    for hyp in h.as_array().unwrap() {
        assert_eq!(hyp["score"], hyp["logprob"], "alpha 0: {hyp}");
    }
    let h = hyps(&json!({"text": "1 2 3 4 5", "alpha": 1.0}));
    let (score, logprob) = (
        h[0]["score"].as_f64().unwrap(),
        h[0]["logprob"].as_f64().unwrap(),
    );
    assert!(
        score > logprob,
        "alpha 1 divides by the length: {score} vs {logprob}"
    );
    let r = translate(addr, &json!({"text": "1 2", "nbest": 4}));
    assert_eq!(r.status, 400, "nbest above the model's beam: {}", r.body);
    server.shutdown().unwrap();

    // Defaults given to the server (`s2s serve --decoding FILE`, an ensemble's) win over the
    // model's file.
    let mut cfg = config();
    cfg.model_dir = dir.path().to_owned();
    cfg.engine.decoding = Some(s2s_infer::Decoding {
        beam: 2,
        alpha: 1.5,
        ..s2s_infer::Decoding::default()
    });
    let server = start(cfg);
    let addr = server.addr();
    let m = get(addr, "/health").json()["model"].clone();
    assert_eq!(
        (m["beam"].as_u64(), m["alpha"].as_f64()),
        (Some(2), Some(1.5))
    );
    let r = translate(addr, &json!({"text": "1 2", "nbest": 3}));
    assert_eq!(r.status, 400, "nbest above the given beam: {}", r.body);
    let r = translate(addr, &json!({"text": "1 2 3 4 5", "nbest": 2}));
    assert_eq!(r.status, 200, "{}", r.body);
    for hyp in r.json()["translations"][0]["hyps"].as_array().unwrap() {
        let len = hyp["tokens"].as_array().unwrap().len() + 1;
        let want = hyp["logprob"].as_f64().unwrap() / (len as f64).powf(1.5);
        assert!(
            (hyp["score"].as_f64().unwrap() - want).abs() < 1e-4,
            "{hyp}"
        );
    }
}

#[test]
fn bad_requests_get_400() {
    let server = start(config());
    let addr = server.addr();
    let bad = [
        ("{", "invalid request JSON"),
        ("", "invalid request JSON"),
        ("[1, 2]", "invalid request JSON"),
        (r#"{"text": 5}"#, "a string or an array of strings"),
        (r#"{"text": [1]}"#, "invalid request JSON"),
        (r#"{"beam": 5}"#, "missing field `text`"),
        (r#"{"text": "1", "beam": "x"}"#, "invalid request JSON"),
        (r#"{"text": "1", "beam": -1}"#, "invalid request JSON"),
        (r#"{"text": "1", "attention": 1}"#, "invalid request JSON"),
        (r#"{"text": "1", "beem": 5}"#, "unknown field `beem`"),
        (
            r#"{"text": "1", "beam": 0}"#,
            "beam must be between 1 and 16",
        ),
        (
            r#"{"text": "1", "beam": 17}"#,
            "beam must be between 1 and 16",
        ),
        (
            r#"{"text": "1", "beam": 2, "nbest": 3}"#,
            "nbest must be between 1 and beam",
        ),
        (r#"{"text": "1", "nbest": 0}"#, "nbest must be between 1"),
        (
            r#"{"text": "1", "alpha": -0.5}"#,
            "alpha must be between 0 and 5",
        ),
        (r#"{"text": []}"#, "empty list"),
        (r#"{"text": "1\n2"}"#, "line break"),
    ];
    for (body, want) in bad {
        let r = post(addr, "/v1/translate", body);
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let e = r.error();
        assert!(e.contains(want), "{body}: {e:?} lacks {want:?}");
    }
    // Invalid UTF-8.
    let r = post_bytes(
        addr,
        "/v1/translate",
        Some("application/json"),
        b"{\"text\":\"\xff\xfe\"}",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    r.error();
}

#[test]
fn limits_413_and_422() {
    let mut cfg = config();
    cfg.limits.max_body_bytes = 1024;
    cfg.limits.max_tokens = 10;
    cfg.limits.max_sentences = 4;
    let server = start(cfg);
    let addr = server.addr();

    // Body over the limit, with a Content-Length...
    let big = json!({ "text": "1 ".repeat(1000) }).to_string();
    let r = post(addr, "/v1/translate", &big);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.error().contains("1024 bytes"));
    // ...and chunked, without one.
    let chunk = format!("{:x}\r\n{big}\r\n0\r\n\r\n", big.len());
    let r = raw_request(
        addr,
        "POST",
        "/v1/translate",
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
        chunk.as_bytes(),
    );
    assert_eq!(r.status, 413, "{}", r.body);
    r.error();

    // A sentence over the token limit (10), in a request under the byte limit.
    let long = "1 2 3 4 5 6 7 8 9 0 1";
    let r = translate(addr, &json!({ "text": ["1 2", long] }));
    assert_eq!(r.status, 422, "{}", r.body);
    let e = r.error();
    assert!(
        e.contains("sentence 1 has 11 tokens") && e.contains("10"),
        "{e}"
    );
    // Exactly at the limit is fine.
    let r = translate(addr, &json!({ "text": "1 2 3 4 5 6 7 8 9 0" }));
    assert_eq!(r.status, 200, "{}", r.body);

    // Too many sentences.
    let r = translate(addr, &json!({ "text": ["1", "2", "3", "4", "5"] }));
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(r.error().contains("5 sentences"));
}

#[test]
fn full_queue_gets_503() {
    let mut cfg = config();
    cfg.engine.queue = 1;
    cfg.engine.max_active = 1;
    cfg.engine.max_batch = 1;
    cfg.engine.max_wait = Duration::ZERO;
    cfg.limits.max_sentences = 128;
    let server = start(cfg);
    let addr = server.addr();
    // A keeps the worker busy (128 sentences decoded one by one with beam 16)...
    let t0 = Instant::now();
    let a = std::thread::spawn(move || {
        let text = vec!["1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0"; 128];
        let r = translate(addr, &json!({ "text": text, "beam": 16 }));
        (r, t0.elapsed())
    });
    wait_for_stats(addr, "the worker to take A", |s| {
        s["requests"] == 1 && s["queued"] == 0
    });
    // ...B waits in the queue of one...
    let b = std::thread::spawn(move || translate(addr, &json!({ "text": "1 2" })));
    wait_for_stats(addr, "B to be queued", |s| s["queued"] == 1);
    // ...so C finds it full.
    let c = translate(addr, &json!({ "text": "3 4" }));
    let c_at = t0.elapsed();
    let (a, a_took) = a.join().unwrap();
    let b = b.join().unwrap();
    eprintln!("A took {a_took:?}; C answered after {c_at:?}");
    assert!(a_took > c_at, "A must still be decoding when C arrives");
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(b.status, 200, "{}", b.body);
    assert_eq!(c.status, 503, "{}", c.body);
    assert!(c.error().contains("queue is full"));
    // The server recovers once the burst is over, and the queue is empty again.
    let r = translate(addr, &json!({ "text": "1 2" }));
    assert_eq!(r.status, 200);
    let stats = get(addr, "/health").json()["stats"].clone();
    assert_eq!(stats["queued"], 0);
    assert_eq!(
        stats["accepted"], 3,
        "A, B and the last one; not C: {stats}"
    );
}

#[test]
fn slow_requests_get_504() {
    let mut cfg = config();
    cfg.timeout = Duration::from_millis(1);
    // The worker waits 200 ms for company, longer than the timeout.
    cfg.engine.max_wait = Duration::from_millis(200);
    let server = start(cfg);
    let addr = server.addr();
    let r = translate(addr, &json!({ "text": "1 2 3" }));
    assert_eq!(r.status, 504, "{}", r.body);
    assert!(r.error().contains("longer than 1 ms"));
    assert_eq!(get(addr, "/health").status, 200);
}

/// 64 requests at once, with three different option sets: all succeed, they are batched (fewer
/// searches than requests), and every result equals decoding its sentence alone.
/// Sends every body to `POST /v1/translate` from a thread of its own, all released at once;
/// the responses in the order of the bodies.
fn translate_at_once(addr: std::net::SocketAddr, bodies: Vec<Value>) -> Vec<Resp> {
    let barrier = Arc::new(Barrier::new(bodies.len()));
    let threads: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let b = barrier.clone();
            std::thread::spawn(move || {
                b.wait();
                translate(addr, &body)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn concurrent_requests_are_batched_and_match_serial_decoding() {
    let mut cfg = config();
    cfg.engine.max_wait = Duration::from_millis(20);
    cfg.engine.max_batch = 16;
    let server = start(cfg);
    let addr = server.addr();
    let opts = [
        SearchOptions::default(),
        SearchOptions {
            beam: 3,
            nbest: 2,
            ..SearchOptions::default()
        },
        SearchOptions {
            beam: 5,
            alpha: 0.0,
            ..SearchOptions::default()
        },
    ];
    let sentences: Vec<String> = reversal_pairs(64, 1, 8, 99)
        .into_iter()
        .map(|p| p.0)
        .collect();
    let n = sentences.len();
    let t0 = Instant::now();
    let bodies = sentences.iter().enumerate().map(|(i, s)| {
        let o = opts[i % opts.len()];
        json!({"text": s, "beam": o.beam, "alpha": o.alpha, "nbest": o.nbest})
    });
    let resps = translate_at_once(addr, bodies.collect());
    eprintln!("{n} concurrent requests in {:?}", t0.elapsed());
    for r in &resps {
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let stats = get(addr, "/health").json()["stats"].clone();
    eprintln!("stats: {stats}");
    assert_eq!(stats["requests"], n);
    assert!(
        stats["batches"].as_u64().unwrap() < n as u64,
        "requests were batched: {stats}"
    );
    assert!(stats["max_group_requests"].as_u64().unwrap() > 1);
    server.shutdown().unwrap();

    // Serial decoding, one sentence at a time, with the library.
    let device = burn::tensor::Device::flex();
    let translator = s2s_infer::Translator::load(model_dir(), &device).unwrap();
    let loaded = translator.loaded();
    for (i, (s, r)) in sentences.iter().zip(&resps).enumerate() {
        let o = opts[i % opts.len()];
        let src = translator.encode(s);
        let want = s2s_models::decoder::translate_all(
            &loaded.model,
            &device,
            loaded.run.tgt_vocab,
            std::slice::from_ref(&src),
            &o.to_config(translator.specials()),
            1,
        )
        .unwrap()
        .remove(0);
        let got = &r.json()["translations"][0];
        assert_eq!(got["src"], s.as_str());
        let hyps = got["hyps"].as_array().unwrap();
        assert_eq!(hyps.len(), want.len(), "{s}");
        for (h, w) in hyps.iter().zip(&want) {
            assert_eq!(h["text"], loaded.tgt_tokenizer.decode(&w.tokens), "{s}");
            assert_eq!(
                h["tokens"],
                json!(loaded.tgt_tokenizer.tokens(&w.tokens)),
                "{s}"
            );
            assert_eq!(h["score"].as_f64().unwrap() as f32, w.score, "{s}: score");
            assert_eq!(
                h["logprob"].as_f64().unwrap() as f32,
                w.logprob,
                "{s}: logprob"
            );
        }
    }
}

/// A tagger that reads spellings, served: requests batched together get the tags, tokens and
/// scores the translator gives each text (the path of `s2s translate`), unseen words included.
#[test]
fn a_served_character_aware_tagger_labels_as_the_translator() {
    let dir = tempfile::tempdir().unwrap();
    let model = train_tagger_model(dir.path(), 60);
    let mut cfg = s2s_serve::ServeConfig::new(&model);
    cfg.addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    cfg.engine.max_wait = Duration::from_millis(50);
    cfg.engine.max_batch = 16;
    let server = start(cfg);
    let addr = server.addr();
    let texts: Vec<String> = vowel_pairs(24, 7).into_iter().map(|p| p.0).collect();
    let resps = translate_at_once(addr, texts.iter().map(|t| json!({ "text": t })).collect());
    let stats = get(addr, "/health").json()["stats"].clone();
    assert!(stats["max_group_requests"].as_u64().unwrap() > 1, "{stats}");
    server.shutdown().unwrap();

    let translator = s2s_infer::Translator::load(&model, &burn::tensor::Device::flex()).unwrap();
    assert!(translator.reads_characters());
    let search = translator.search_defaults(s2s_search::Strategy::Greedy);
    let want = translator.translate(&texts, &search, 64).unwrap();
    for ((text, r), want) in texts.iter().zip(&resps).zip(&want) {
        assert_eq!(r.status, 200, "{}", r.body);
        let got = &r.json()["translations"][0];
        assert_eq!(got["src"], text.as_str());
        assert_eq!(got["src_tokens"], json!(want.src_tokens), "{text}");
        let (h, w) = (&got["hyps"][0], &want.hyps[0]);
        assert_eq!(h["text"], w.text.as_str(), "{text}");
        assert_eq!(
            w.tokens.len(),
            text.split(' ').count(),
            "{text}: one tag per word"
        );
        let score = h["score"].as_f64().unwrap() as f32;
        assert!(
            (score - w.score).abs() < 1e-4,
            "{text}: {score} vs {}",
            w.score
        );
    }
}

/// A generator conditioned on vectors, served: each text of a request is a vector, and the
/// replies are what the translator generates from the same lines; a vector of another dimension
/// or a target language is a 400 naming the fix.
#[test]
fn a_served_vector_generator_writes_as_the_translator() {
    let dir = tempfile::tempdir().unwrap();
    let model = train_vector_model(dir.path(), "rnnsearch-tiny", 60);
    let mut cfg = s2s_serve::ServeConfig::new(&model);
    cfg.addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let server = start(cfg);
    let addr = server.addr();
    let info = get(addr, "/health").json()["model"].clone();
    assert_eq!(
        (&info["input"], &info["vector_dim"]),
        (&json!("vectors"), &json!(4)),
        "{info}"
    );

    let texts: Vec<String> = VECTOR_CENTRES
        .iter()
        .map(|(v, _)| vector_line(v))
        .chain(["0.5 0.5 0 0".to_owned()])
        .collect();
    let opts = SearchOptions {
        beam: 3,
        nbest: 2,
        attention: true,
        ..SearchOptions::default()
    };
    let body = json!({ "text": texts, "beam": 3, "nbest": 2, "attention": true });
    let r = translate(addr, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let translator = s2s_infer::Translator::load(&model, &burn::tensor::Device::flex()).unwrap();
    let search = opts.to_config(translator.specials());
    let want = translator.translate(&texts, &search, 64).unwrap();
    let got = r.json()["translations"].as_array().unwrap().clone();
    assert_eq!(got.len(), texts.len());
    for ((g, w), text) in got.iter().zip(&want).zip(&texts) {
        assert_eq!(g["src"], text.as_str());
        assert_eq!(g["src_tokens"], json!(["<vector>"]), "{text}");
        assert_eq!(g["hyps"].as_array().unwrap().len(), w.hyps.len(), "{text}");
        for (h, wh) in g["hyps"].as_array().unwrap().iter().zip(&w.hyps) {
            assert_eq!(h["text"], wh.text.as_str(), "{text}");
            assert!(
                (h["score"].as_f64().unwrap() as f32 - wh.score).abs() < 1e-4,
                "{text}"
            );
            assert_eq!(h["attention"]["src"], json!(["<vector>"]), "{text}");
        }
    }

    let r = translate(addr, &json!({ "text": [texts[0].clone(), "1 2 3"] }));
    assert_eq!(r.status, 400, "{}", r.body);
    let e = r.error();
    assert!(
        e.contains("input 2: has 3 numbers where 4 are expected") && e.contains("fix:"),
        "{e}"
    );
    let r = translate(
        addr,
        &json!({ "text": texts[0].clone(), "target_lang": "de" }),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("target_lang"), "{}", r.body);
    server.shutdown().unwrap();
}

/// Two models served together decode every request as the ensemble `s2s translate` makes of
/// them: the same text and scores as the translator's, which differ from the first model's.
#[test]
fn an_ensemble_serves_what_the_translator_decodes() {
    let first = model_dir();
    let root = first.parent().unwrap();
    let dir = tempfile::tempdir_in(root).unwrap();
    let name = dir.path().file_name().unwrap().to_str().unwrap();
    let second = train_reversal_member(root, &format!("{name}/member"), Some(2), 120);
    let mut cfg = config();
    cfg.ensemble = vec![second.clone()];
    let server = start(cfg);
    let addr = server.addr();
    let health = get(addr, "/health").json();
    assert!(
        health["model"]["arch"]
            .as_str()
            .unwrap()
            .starts_with("ensemble of 2"),
        "{health}"
    );
    let texts: Vec<String> = reversal_pairs(12, 2, 6, 9)
        .into_iter()
        .map(|p| p.0)
        .collect();
    let o = SearchOptions {
        beam: 3,
        ..SearchOptions::default()
    };
    let bodies = texts
        .iter()
        .map(|t| json!({"text": t, "beam": o.beam, "alpha": o.alpha, "nbest": o.nbest}));
    let resps = translate_at_once(addr, bodies.collect());
    server.shutdown().unwrap();

    let device = burn::tensor::Device::flex();
    let both = s2s_infer::Translator::ensemble(&[first.to_owned(), second], &device).unwrap();
    let alone = s2s_infer::Translator::load(first, &device).unwrap();
    let search = o.to_config(both.specials());
    let (want, solo) = (
        both.translate(&texts, &search, 64).unwrap(),
        alone.translate(&texts, &search, 64).unwrap(),
    );
    let mut apart = 0;
    for (((text, r), want), solo) in texts.iter().zip(&resps).zip(&want).zip(&solo) {
        assert_eq!(r.status, 200, "{}", r.body);
        let h = &r.json()["translations"][0]["hyps"][0];
        assert_eq!(h["text"], want.hyps[0].text.as_str(), "{text}");
        let score = h["score"].as_f64().unwrap() as f32;
        assert!((score - want.hyps[0].score).abs() < 1e-4, "{text}");
        apart += usize::from((solo.hyps[0].score - want.hyps[0].score).abs() > 1e-4);
    }
    assert!(
        apart > 0,
        "the served ensemble decodes like its first model"
    );
}

/// Shutdown lets an in-flight request finish, then stops accepting connections.
#[test]
fn graceful_shutdown_finishes_in_flight_requests() {
    let mut cfg = config();
    cfg.engine.max_wait = Duration::from_millis(1000);
    let mut server = start(cfg);
    let addr = server.addr();
    let inflight = std::thread::spawn(move || translate(addr, &json!({ "text": "3 1 4 1 5" })));
    // The request waits in the batching window (up to `max_wait`) while the server is told to
    // stop: shut down as soon as the engine has accepted it.
    wait_for_stats(addr, "the request to be accepted", |s| s["accepted"] == 1);
    server.begin_shutdown();
    let r = inflight.join().unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["translations"][0]["hyps"][0]["text"], "5 1 4 1 3");
    server.shutdown().unwrap();
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "no longer listening"
    );
}

/// An imported multilingual Marian model: `target_lang` puts the language tag in front of every
/// sentence (`src` stays as sent), and a language the model lacks is a 400 naming the ones it has.
#[test]
fn target_language_of_an_imported_marian_model() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("m");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/marian/model");
    s2s_interop::marian::import(&fixture, &model, false).unwrap();
    let mut cfg = s2s_serve::ServeConfig::new(&model);
    cfg.addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let server = start(cfg);
    let texts = ["I am Japanese.", "I want to cry."];
    let r = translate(
        server.addr(),
        &json!({"text": texts, "target_lang": "cmn_Hant", "beam": 2}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let got = r.json();

    let device = burn::tensor::Device::flex();
    let translator = s2s_infer::Translator::load(&model, &device).unwrap();
    let owned: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    let tagged = translator.with_target_lang(&owned, "cmn_Hant").unwrap();
    let opts = SearchOptions {
        beam: 2,
        ..SearchOptions::default()
    };
    let want = translator
        .translate(&tagged, &opts.to_config(translator.specials()), 64)
        .unwrap();
    for (i, w) in want.iter().enumerate() {
        let g = &got["translations"][i];
        assert_eq!(g["src"], texts[i]);
        assert_eq!(g["hyps"][0]["text"], w.hyps[0].text.as_str());
        assert_eq!(g["src_tokens"][0], ">>cmn_Hant<<");
    }
    let bad = translate(server.addr(), &json!({"text": "x", "target_lang": "deu"}));
    assert_eq!(bad.status, 400);
    assert!(bad.error().contains(">>cmn_Hans<<"), "{}", bad.body);
}
