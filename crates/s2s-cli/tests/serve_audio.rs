//! `s2s serve` with a speech recognition model: `POST /v1/transcribe` takes a WAV file as the
//! body and answers exactly what the translator gives for the same file read from disk (the path
//! of `s2s translate`), attention labelled by time included; every refusal is a clear error.

mod serving;

use s2s_serve::ServeConfig;
use serde_json::Value;
use serving::*;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One tiny recogniser per test binary: its MODEL_DIR and WAV files it was not trained on.
fn speech_model() -> &'static (PathBuf, Vec<PathBuf>) {
    static MODEL: OnceLock<(tempfile::TempDir, (PathBuf, Vec<PathBuf>))> = OnceLock::new();
    &MODEL
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let trained = train_speech_model(dir.path(), 30);
            (dir, trained)
        })
        .1
}

fn speech_config() -> ServeConfig {
    let mut cfg = ServeConfig::new(&speech_model().0);
    cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    cfg
}

fn transcribe(addr: SocketAddr, query: &str, wav: &Path) -> Resp {
    let bytes = std::fs::read(wav).unwrap();
    post_bytes(
        addr,
        &format!("/v1/transcribe?{query}"),
        Some("audio/wav"),
        &bytes,
    )
}

#[test]
fn a_wav_upload_is_transcribed_as_the_translator_transcribes_the_file() {
    let (model, wavs) = speech_model();
    let server = start(speech_config());
    let addr = server.addr();

    let health = get(addr, "/health").json();
    assert_eq!(health["model"]["input"], "audio", "{health}");
    assert_eq!(health["limits"]["max_audio_seconds"], 30.0, "{health}");

    let translator = s2s_infer::Translator::load(model, &burn::tensor::Device::flex()).unwrap();
    let opts = s2s_serve::SearchOptions {
        beam: 3,
        nbest: 2,
        attention: true,
        ..Default::default()
    };
    let search = opts.to_config(translator.specials());
    let expected = translator
        .translate(
            &wavs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
            &search,
            // The server searches each upload as a batch of its own.
            1,
        )
        .unwrap();
    for (wav, want) in wavs.iter().zip(&expected) {
        let r = transcribe(addr, "beam=3&nbest=2&attention=true&name=clip.wav", wav);
        assert_eq!(r.status, 200, "{}", r.body);
        let got: Vec<s2s_infer::Translation> =
            serde_json::from_value(r.json()["translations"].clone()).unwrap();
        assert_eq!(got.len(), 1);
        let got = &got[0];
        assert_eq!(got.src, "clip.wav");
        assert_eq!(got.src_tokens, want.src_tokens, "time labels");
        assert_eq!(got.hyps, want.hyps, "{}", wav.display());
        let att = got.hyps[0]
            .attention
            .as_ref()
            .expect("attention was asked for");
        assert_eq!(att.src[0], "0.00s");
        assert_eq!(att.mean.len(), got.hyps[0].tokens.len() + 1);
        assert!(att.mean.iter().all(|row| row.len() == att.src.len()));
    }
    // The defaults (beam 5, no attention) answer too, and the file's own name is the default.
    let r = transcribe(addr, "", &wavs[0]);
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["translations"][0]["src"], "upload.wav");
    assert!(v["translations"][0]["hyps"][0].get("attention").is_none());
    let stats = get(addr, "/health").json()["stats"].clone();
    assert_eq!(stats["requests"], wavs.len() as u64 + 1, "{stats}");
}

#[test]
fn bad_uploads_are_refused_clearly() {
    let (_, wavs) = speech_model();
    let mut cfg = speech_config();
    cfg.limits.max_audio_bytes = 100_000;
    cfg.limits.max_audio_seconds = 0.5;
    let server = start(cfg);
    let addr = server.addr();
    let bytes = std::fs::read(&wavs[0]).unwrap();
    let err = |r: Resp, status: u16, needles: &[&str]| {
        assert_eq!(r.status, status, "{}", r.body);
        let e = r.error();
        for n in needles {
            assert!(e.contains(n), "{n:?} not in {e:?}");
        }
    };

    err(
        post_bytes(addr, "/v1/transcribe", Some("text/plain"), &bytes),
        415,
        &["audio/wav"],
    );
    err(
        post_bytes(
            addr,
            "/v1/transcribe?name=x.wav",
            Some("audio/wav"),
            b"RIFF not a wave file",
        ),
        400,
        &["x.wav"],
    );
    err(transcribe(addr, "beam=0", &wavs[0]), 400, &["beam"]);
    err(
        transcribe(addr, "nonsense=1", &wavs[0]),
        400,
        &["query string"],
    );
    err(
        post_bytes(
            addr,
            "/v1/transcribe",
            Some("audio/wav"),
            &vec![0u8; 100_001],
        ),
        413,
        &["--max-audio-bytes"],
    );
    // One second of 8 kHz silence, over the 0.5 s limit.
    let long = std::env::temp_dir().join(format!("s2s-long-{}.wav", std::process::id()));
    let audio = s2s_data::audio::Audio {
        sample_rate: 8_000,
        samples: vec![0.0; 8_000],
    };
    s2s_data::audio::write_wav(&long, &audio, s2s_data::audio::WavFormat::Pcm16).unwrap();
    err(
        transcribe(addr, "", &long),
        422,
        &["1.0 s", "--max-audio-seconds"],
    );
    std::fs::remove_file(&long).unwrap();
    // Text to a speech model.
    err(
        translate(addr, &serde_json::json!({"text": "low mid"})),
        400,
        &["speech recognition model", "/v1/transcribe"],
    );
    // The server still works.
    assert_eq!(get(addr, "/health/ready").status, 200);
    let stats = get(addr, "/health").json()["stats"].clone();
    assert_eq!(
        stats["requests"], 0,
        "nothing refused reached the model: {stats}"
    );
}

#[test]
fn a_text_model_refuses_audio() {
    let (_, wavs) = speech_model();
    let server = start(config());
    let addr = server.addr();
    let health: Value = get(addr, "/health").json();
    assert_eq!(health["model"]["input"], "text");
    let r = transcribe(addr, "", &wavs[0]);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.error().contains("/v1/translate"), "{}", r.body);
}

#[test]
fn a_spoken_word_classifier_labels_uploads_as_the_translator_labels_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (model, wavs) = train_audio_model(dir.path(), s2s_data::Task::Classification, 30);
    let mut cfg = ServeConfig::new(&model);
    cfg.addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = start(cfg);
    let addr = server.addr();
    let health = get(addr, "/health").json();
    assert_eq!(health["model"]["input"], "audio", "{health}");

    let translator = s2s_infer::Translator::load(&model, &burn::tensor::Device::flex()).unwrap();
    let search = s2s_serve::SearchOptions::default().to_config(translator.specials());
    let paths: Vec<String> = wavs.iter().map(|p| p.display().to_string()).collect();
    let expected = translator.translate(&paths, &search, 1).unwrap();
    let labels: Vec<&str> = s2s_data::audio::TONE_WORDS.iter().map(|w| w.0).collect();
    for (wav, want) in wavs.iter().zip(&expected) {
        let r = transcribe(addr, "name=clip.wav", wav);
        assert_eq!(r.status, 200, "{}", r.body);
        let got: Vec<s2s_infer::Translation> =
            serde_json::from_value(r.json()["translations"].clone()).unwrap();
        assert_eq!(got[0].hyps, want.hyps, "{}", wav.display());
        // One label, a word of the corpus, and no attention: a classifier pools.
        let hyp = &got[0].hyps[0];
        assert!(labels.contains(&hyp.text.as_str()), "{:?}", hyp.text);
        assert_eq!(hyp.tokens.len(), 1);
        assert!(hyp.attention.is_none());
    }
    // An empty recording has nothing to label: no label, as the recogniser writes no word.
    let blank = dir.path().join("blank.wav");
    let audio = s2s_data::audio::Audio {
        sample_rate: 8_000,
        samples: Vec::new(),
    };
    s2s_data::audio::write_wav(&blank, &audio, s2s_data::audio::WavFormat::Pcm16).unwrap();
    let r = transcribe(addr, "", &blank);
    assert_eq!(r.status, 200, "{}", r.body);
    let got: Vec<s2s_infer::Translation> =
        serde_json::from_value(r.json()["translations"].clone()).unwrap();
    assert_eq!(got[0].hyps.len(), 1);
    assert_eq!(got[0].hyps[0].text, "");
    assert!(got[0].hyps[0].tokens.is_empty());
    let both = translator
        .translate(&[blank.display().to_string(), paths[0].clone()], &search, 2)
        .unwrap();
    assert_eq!(both[0].hyps, got[0].hyps);
    assert_eq!(
        both[1].hyps, expected[0].hyps,
        "a blank beside it changes nothing"
    );
}
