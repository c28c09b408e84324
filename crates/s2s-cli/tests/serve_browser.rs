//! The web page in a real headless Chromium, driven through chromedriver (WebDriver): type
//! sentences, press Translate, check the translations and that the heatmap has one cell per
//! (output token, source token); for a speech model, transcribe a chosen WAV file and a
//! recording from Chromium's fake microphone; for a generator conditioned on vectors, generate
//! from typed vectors.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`.ci/run` installs them). Without
//! chromedriver the test fails, unless `S2S_SKIP_BROWSER=1`. With `S2S_SCREENSHOT=FILE.png` it
//! saves a screenshot of the page (that is how `docs/screenshot-serve.png` is made).

mod serving;

use fantoccini::{ClientBuilder, Locator};
use serde_json::{Value, json};
use serving::*;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// chromedriver, killed (by its own pid) when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_driver(bin: &Path, log: &Path) -> (Driver, u16) {
    let port = free_port();
    let child = Command::new(bin)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let driver = Driver(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not listen on port {port} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (driver, port)
}

async fn text_of(c: &fantoccini::Client, css: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in c.find_all(Locator::Css(css)).await.unwrap() {
        out.push(e.text().await.unwrap());
    }
    out
}

async fn text_by_id(c: &fantoccini::Client, id: &str) -> String {
    c.find(Locator::Id(id)).await.unwrap().text().await.unwrap()
}

async fn cells(c: &fantoccini::Client) -> usize {
    c.find_all(Locator::Css("#heatmap td.heat-cell"))
        .await
        .unwrap()
        .len()
}

/// Presses Translate and waits for the heatmap of the first result.
async fn translate_and_wait(c: &fantoccini::Client) {
    c.find(Locator::Id("translate"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("#heatmap td.heat-cell"))
        .await
        .expect("the heatmap appears");
}

/// The best hypothesis of each translation of an API reply.
fn best_texts(expected: &Value) -> Vec<String> {
    expected["translations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["hyps"][0]["text"].as_str().unwrap().to_owned())
        .collect()
}

async fn drive(c: &fantoccini::Client, addr: SocketAddr, expected: &Value) {
    c.set_window_size(1100, 1400).await.unwrap();
    c.goto(&format!("http://{addr}/")).await.unwrap();
    assert_eq!(c.title().await.unwrap(), "s2s — translate");
    // The page reads /health.
    c.wait()
        .at_most(Duration::from_secs(20))
        .for_element(Locator::XPath(
            "//p[@id='model-info' and contains(., 'rnnsearch-tiny')]",
        ))
        .await
        .expect("model information shown");

    let src = c.find(Locator::Id("src")).await.unwrap();
    src.send_keys("1 2 3 4\n9 8 7 6 5").await.unwrap();
    translate_and_wait(c).await;

    let t = expected["translations"].as_array().unwrap();
    assert_eq!(text_of(c, ".translation").await, best_texts(expected));
    let nbest = text_of(c, ".nbest li").await;
    assert_eq!(
        nbest.len(),
        2 * 3,
        "three hypotheses per sentence: {nbest:?}"
    );
    let status = text_by_id(c, "status").await;
    assert!(status.starts_with("Translated 2 sentences"), "{status}");

    // The heatmap of sentence 1's best hypothesis: |tgt| x |src| cells.
    let dims = |i: usize, j: usize| {
        let a = &t[i]["hyps"][j]["attention"];
        (
            a["tgt"].as_array().unwrap().len(),
            a["src"].as_array().unwrap().len(),
        )
    };
    let (rows, cols) = dims(0, 0);
    assert_eq!(rows, 5, "4 3 2 1 <eos>");
    assert!(
        cols == 4 || cols == 5,
        "1 2 3 4, and <eos> if the search returns its column"
    );
    assert_eq!(cells(c).await, rows * cols);
    let table = c.find(Locator::Id("heatmap")).await.unwrap();
    assert_eq!(
        table.attr("data-rows").await.unwrap(),
        Some(rows.to_string())
    );
    assert_eq!(
        table.attr("data-cols").await.unwrap(),
        Some(cols.to_string())
    );
    let headers = text_of(c, "#heatmap thead th").await;
    assert_eq!(headers.len(), cols);
    let first = c.find(Locator::Css("#heatmap td.heat-cell")).await.unwrap();
    let title = first.attr("title").await.unwrap().unwrap();
    let w0 = t[0]["hyps"][0]["attention"]["mean"][0][0].as_f64().unwrap();
    assert!(
        title.ends_with(&format!("{w0:.3}")),
        "{title} shows {w0:.3}"
    );

    // Choosing sentence 2's best hypothesis redraws the heatmap for it.
    c.find(Locator::Css("button[data-sentence='1'][data-hyp='0']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let (rows, cols) = dims(1, 0);
    assert_eq!(cells(c).await, rows * cols);
    let pressed = c
        .find(Locator::Css("button[aria-pressed='true']"))
        .await
        .unwrap();
    assert_eq!(
        pressed.attr("data-sentence").await.unwrap().as_deref(),
        Some("1")
    );

    // Errors are shown, not thrown.
    c.find(Locator::Id("beam"))
        .await
        .unwrap()
        .clear()
        .await
        .unwrap();
    c.find(Locator::Id("beam"))
        .await
        .unwrap()
        .send_keys("40")
        .await
        .unwrap();
    c.execute(
        "document.getElementById('nbest').value = '1'; \
         document.getElementById('form').noValidate = true;",
        vec![],
    )
    .await
    .unwrap();
    c.find(Locator::Id("translate"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    c.wait()
        .at_most(Duration::from_secs(10))
        .for_element(Locator::Css("#status.error"))
        .await
        .expect("an error message");
    let status = text_by_id(c, "status").await;
    assert!(status.contains("beam must be between 1 and 16"), "{status}");

    if let Some(path) = std::env::var_os("S2S_SCREENSHOT") {
        // Back to a successful translation for the picture.
        c.execute(
            "document.getElementById('beam').value = '5'; \
             document.getElementById('nbest').value = '3';",
            vec![],
        )
        .await
        .unwrap();
        c.find(Locator::Id("translate"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::XPath(
                "//p[@id='status' and starts-with(., 'Translated')]",
            ))
            .await
            .unwrap();
        c.find(Locator::Css("button[data-sentence='1'][data-hyp='0']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let png = c.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::write(&path, png).unwrap();
        eprintln!("screenshot saved to {}", Path::new(&path).display());
    }
}

/// chromedriver and Chromium, found on PATH; `None` (the test skips) with `S2S_SKIP_BROWSER=1`.
fn browser() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("S2S_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("S2S_SKIP_BROWSER=1: skipping the browser test");
        return None;
    }
    let Some(driver_bin) = which("chromedriver") else {
        panic!(
            "chromedriver not found on PATH: run .ci/run, which installs Debian's chromium and \
             chromium-driver (or `apt-get install chromium chromium-driver`); set \
             S2S_SKIP_BROWSER=1 to skip this test"
        );
    };
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| which(n))
        .expect("chromium not found on PATH: run .ci/run (it installs Debian's chromium)");
    Some((driver_bin, chromium))
}

/// Runs `drive` in a headless Chromium session (with `extra_args`), then always closes the
/// browser before reporting a failure.
fn in_chromium<F, Fut>(driver_bin: &Path, chromium: &Path, extra_args: &[&str], drive: F)
where
    F: FnOnce(fantoccini::Client) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("profile");
    let log = tmp.path().join("chromedriver.log");
    let (driver, port) = start_driver(driver_bin, &log);
    let mut args = vec![
        "--headless".to_owned(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-quic".into(),
        "--disable-dev-shm-usage".into(),
        "--hide-scrollbars".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    args.extend(extra_args.iter().map(|a| a.to_string()));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let outcome = rt.block_on(async {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium, "args": args }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "cannot open a Chromium session through chromedriver: {e}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        let run = tokio::spawn(drive(client.clone())).await;
        let _ = client.close().await;
        run
    });
    drop(driver);
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

#[test]
fn web_page_translates_and_draws_the_heatmap() {
    let Some((driver_bin, chromium)) = browser() else {
        return;
    };
    let server = start(config());
    let addr = server.addr();
    let expected = translate(
        addr,
        &json!({"text": ["1 2 3 4", "9 8 7 6 5"], "beam": 5, "alpha": 0.75, "nbest": 3, "attention": true}),
    );
    assert_eq!(expected.status, 200, "{}", expected.body);
    let expected = expected.json();
    in_chromium(&driver_bin, &chromium, &[], move |client| async move {
        drive(&client, addr, &expected).await
    });
    server.shutdown().unwrap();
}

/// The page of a speech model: a WAV file chosen in the file input is transcribed as
/// `POST /v1/transcribe` transcribes it, with a heatmap over time; a recording from the
/// (fake) microphone is sent and transcribed too.
#[test]
fn web_page_transcribes_a_file_and_a_recording() {
    let Some((driver_bin, chromium)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (model, wavs) = train_speech_model(tmp.path(), 30);
    let mut cfg = s2s_serve::ServeConfig::new(&model);
    cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = start(cfg);
    let addr = server.addr();
    let wav = wavs[0].clone();
    let expected = post_bytes(
        addr,
        "/v1/transcribe?beam=5&alpha=0.75&nbest=3&attention=true",
        Some("audio/wav"),
        &std::fs::read(&wav).unwrap(),
    );
    assert_eq!(expected.status, 200, "{}", expected.body);
    let expected = expected.json();
    let fake_mic = [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        "--autoplay-policy=no-user-gesture-required",
    ];
    in_chromium(&driver_bin, &chromium, &fake_mic, move |c| async move {
        c.set_window_size(1100, 1400).await.unwrap();
        c.goto(&format!("http://{addr}/")).await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::XPath(
                "//p[@id='model-info' and contains(., 'speech-transformer-tiny')]",
            ))
            .await
            .expect("model information shown");
        assert_eq!(c.title().await.unwrap(), "s2s — transcribe");
        assert!(
            !c.find(Locator::Id("src"))
                .await
                .unwrap()
                .is_displayed()
                .await
                .unwrap()
        );
        let button = c.find(Locator::Id("translate")).await.unwrap();
        assert_eq!(button.text().await.unwrap(), "Transcribe");

        // A file.
        c.find(Locator::Id("wav"))
            .await
            .unwrap()
            .send_keys(&wav.display().to_string())
            .await
            .unwrap();
        button.click().await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::Css("#heatmap td.heat-cell"))
            .await
            .expect("the heatmap appears");
        let t = &expected["translations"][0];
        assert_eq!(
            text_of(&c, ".translation").await,
            vec![t["hyps"][0]["text"].as_str().unwrap().to_owned()]
        );
        let name = wav.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(text_of(&c, ".result .src").await, vec![name.clone()]);
        let a = &t["hyps"][0]["attention"];
        let (rows, cols) = (
            a["tgt"].as_array().unwrap().len(),
            a["src"].as_array().unwrap().len(),
        );
        assert_eq!(cells(&c).await, rows * cols);
        let first = text_of(&c, "#heatmap thead th").await;
        assert_eq!(first[0], "0.00s", "columns are labelled by time");
        let status = text_by_id(&c, "status").await;
        assert!(
            status.starts_with(&format!("Transcribed {name}")),
            "{status}"
        );

        // A recording: Chromium's fake microphone plays a tone.
        let record = c.find(Locator::Id("record")).await.unwrap();
        record.click().await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(10))
            .for_element(Locator::XPath("//button[@id='record' and text()='Stop']"))
            .await
            .expect("recording starts");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        record.click().await.unwrap();
        let recorded = text_by_id(&c, "audio-status").await;
        assert!(recorded.starts_with("Recorded "), "{recorded}");
        let secs: f64 = recorded
            .trim_start_matches("Recorded ")
            .trim_end_matches(" s.")
            .parse()
            .unwrap();
        assert!(secs > 0.5, "{recorded}");
        button.click().await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(30))
            .for_element(Locator::XPath(
                "//p[@id='status' and starts-with(., 'Transcribed recording.wav')]",
            ))
            .await
            .expect("the recording is transcribed");
        assert_eq!(text_of(&c, ".result .src").await, vec!["recording.wav"]);
    });
    server.shutdown().unwrap();
}

/// The page of a generator conditioned on vectors asks for one vector per line (with the
/// dimension from `GET /health`), and writes what `POST /v1/translate` writes for each, with a
/// heatmap of one column: the vector.
#[test]
fn web_page_generates_from_vectors() {
    let Some((driver_bin, chromium)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = train_vector_model(tmp.path(), "rnnsearch-tiny", 60);
    let mut cfg = s2s_serve::ServeConfig::new(&model);
    cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = start(cfg);
    let addr = server.addr();
    let lines: Vec<String> = VECTOR_CENTRES[..2]
        .iter()
        .map(|(v, _)| vector_line(v))
        .collect();
    let expected = translate(
        addr,
        &json!({"text": lines, "beam": 5, "alpha": 0.75, "nbest": 3, "attention": true}),
    );
    assert_eq!(expected.status, 200, "{}", expected.body);
    let expected = expected.json();
    in_chromium(&driver_bin, &chromium, &[], move |c| async move {
        c.goto(&format!("http://{addr}/")).await.unwrap();
        c.wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::XPath(
                "//span[@id='src-hint' and contains(., 'one vector per line: 4 numbers')]",
            ))
            .await
            .expect("the page asks for vectors");
        let src = c.find(Locator::Id("src")).await.unwrap();
        src.send_keys(&lines.join("\n")).await.unwrap();
        translate_and_wait(&c).await;
        assert_eq!(text_of(&c, ".translation").await, best_texts(&expected));
        assert_eq!(text_of(&c, ".result .src").await, lines);
        let best = &expected["translations"][0]["hyps"][0];
        let rows = best["attention"]["tgt"].as_array().unwrap().len();
        assert_eq!(cells(&c).await, rows, "one column: the vector");
    });
    server.shutdown().unwrap();
}
