//! The audio front end against definitions computed here: WAV files written with `hound`
//! directly, filterbanks from a plain DFT, pooled statistics, masks and feature files.

use s2s_data::audio::digits::{ConnectedDigits, DIGIT_WORDS, connected_digits, list_recordings};
use s2s_data::audio::*;
use std::f64::consts::PI;
use std::path::Path;

fn sine(freq: f64, rate: u32, len: usize, amp: f64) -> Vec<f64> {
    (0..len)
        .map(|t| amp * (2.0 * PI * freq * t as f64 / f64::from(rate)).sin())
        .collect()
}

/// A deterministic noise in [-1, 1].
fn noise(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f32 / (1u64 << 53) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn write_hound(path: &Path, spec: hound::WavSpec, frames: &[Vec<f64>]) {
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for frame in frames {
        for &x in frame {
            match (spec.sample_format, spec.bits_per_sample) {
                (hound::SampleFormat::Float, _) => w.write_sample(x as f32).unwrap(),
                (_, 8) => w.write_sample((x * 127.0).round() as i8).unwrap(),
                (_, 16) => w.write_sample((x * 32767.0).round() as i16).unwrap(),
                (_, 24) => w.write_sample((x * 8_388_607.0).round() as i32).unwrap(),
                _ => w
                    .write_sample((x * 2_147_483_647.0).round() as i32)
                    .unwrap(),
            }
        }
    }
    w.finalize().unwrap();
}

#[test]
fn wav_files_of_every_format_read_back_as_their_signal() {
    let dir = tempfile::tempdir().unwrap();
    let signal = sine(440.0, 8000, 800, 0.5);
    for (bits, format, tolerance) in [
        (8, hound::SampleFormat::Int, 1.0 / 100.0),
        (16, hound::SampleFormat::Int, 1e-4),
        (24, hound::SampleFormat::Int, 1e-6),
        (32, hound::SampleFormat::Int, 1e-6),
        (32, hound::SampleFormat::Float, 1e-7),
    ] {
        for channels in [1u16, 2] {
            let path = dir.path().join(format!("{bits}-{format:?}-{channels}.wav"));
            let spec = hound::WavSpec {
                channels,
                sample_rate: 8000,
                bits_per_sample: bits,
                sample_format: format,
            };
            // Stereo: the second channel is the negated signal plus 0.2, so the mono mix is 0.1.
            let frames: Vec<Vec<f64>> = signal
                .iter()
                .map(|&x| {
                    if channels == 1 {
                        vec![x]
                    } else {
                        vec![x, 0.2 - x]
                    }
                })
                .collect();
            write_hound(&path, spec, &frames);
            let audio = read_wav(&path).unwrap();
            assert_eq!(audio.sample_rate, 8000);
            assert_eq!(audio.samples.len(), signal.len(), "{bits} {format:?}");
            for (&got, &want) in audio.samples.iter().zip(&signal) {
                let want = if channels == 1 { want } else { 0.1 };
                assert!(
                    (f64::from(got) - want).abs() <= tolerance,
                    "{bits}-bit {format:?} x{channels}: {got} against {want}"
                );
            }
        }
    }
}

#[test]
fn bad_wav_files_are_refused_with_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.wav");
    std::fs::write(&garbage, b"this is not a RIFF file at all").unwrap();
    let e = read_wav(&garbage).unwrap_err().to_string();
    assert!(e.contains("garbage.wav") && e.contains("fix"), "{e}");

    let good = dir.path().join("good.wav");
    let audio = Audio {
        sample_rate: 8000,
        samples: noise(4000, 1),
    };
    write_wav(&good, &audio, WavFormat::Pcm16).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let cut = dir.path().join("cut.wav");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 1]).unwrap();
    let e = read_wav(&cut).unwrap_err().to_string();
    assert!(e.contains("cut.wav"), "{e}");
    let e = decode_wav(&bytes[..20], "upload.wav")
        .unwrap_err()
        .to_string();
    assert!(e.contains("upload.wav"), "{e}");
    let missing = read_wav(&dir.path().join("none.wav"))
        .unwrap_err()
        .to_string();
    assert!(missing.contains("none.wav"), "{missing}");
}

#[test]
fn written_wavs_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let audio = Audio {
        sample_rate: 22_050,
        samples: noise(1001, 2).into_iter().map(|x| 0.9 * x).collect(),
    };
    for (format, tolerance) in [
        (WavFormat::Pcm8, 1.0 / 255.0),
        (WavFormat::Pcm16, 1e-4),
        (WavFormat::Pcm24, 1e-6),
        (WavFormat::Float32, 0.0),
    ] {
        let path = dir.path().join(format!("{format:?}.wav"));
        write_wav(&path, &audio, format).unwrap();
        let back = read_wav(&path).unwrap();
        assert_eq!(back.sample_rate, 22_050);
        assert_eq!(back.samples.len(), 1001);
        let worst = back
            .samples
            .iter()
            .zip(&audio.samples)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= tolerance, "{format:?}: {worst}");
    }
}

/// The frequency of the largest DFT bin of `x` (plain DFT).
fn dominant(x: &[f32], rate: u32) -> f64 {
    let n = x.len();
    (1..n / 2)
        .map(|k| {
            let (mut re, mut im) = (0.0, 0.0);
            for (t, &v) in x.iter().enumerate() {
                let a = 2.0 * PI * (k * t) as f64 / n as f64;
                re += f64::from(v) * a.cos();
                im -= f64::from(v) * a.sin();
            }
            (k, re * re + im * im)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(k, _)| k as f64 * f64::from(rate) / n as f64)
        .unwrap()
}

#[test]
fn resampling_keeps_the_length_and_the_pitch() {
    for (from, to, len) in [
        (8000, 16_000, 4000),
        (16_000, 8000, 8001),
        (44_100, 16_000, 9000),
    ] {
        let x: Vec<f32> = sine(500.0, from, len, 0.5)
            .into_iter()
            .map(|v| v as f32)
            .collect();
        let audio = Audio {
            sample_rate: from,
            samples: x,
        };
        let out = resample(&audio, to).unwrap();
        assert_eq!(out.sample_rate, to);
        let want = (len as f64 * f64::from(to) / f64::from(from)).round() as usize;
        assert_eq!(out.samples.len(), want, "{from} -> {to}");
        let f = dominant(&out.samples, to);
        assert!((f - 500.0).abs() < 10.0, "{from} -> {to}: {f} Hz");
        // Aligned: the middle of the output follows the sine at the new rate.
        let mid = want / 2;
        let reference = sine(500.0, to, want, 0.5);
        let err = (mid - 20..mid + 20)
            .map(|t| (f64::from(out.samples[t]) - reference[t]).abs())
            .fold(0.0, f64::max);
        assert!(err < 0.05, "{from} -> {to}: off by {err}");
    }
    let same = Audio {
        sample_rate: 8000,
        samples: noise(100, 3),
    };
    assert_eq!(resample(&same, 8000).unwrap(), same);
}

/// Log-mel features from the module's definition, written independently: a plain DFT in f64.
fn reference_fbank(x: &[f32], cfg: &FbankConfig) -> Vec<Vec<f64>> {
    let rate = f64::from(cfg.sample_rate);
    let win = (rate * f64::from(cfg.window_ms) / 1000.0).round() as usize;
    let hop = (rate * f64::from(cfg.hop_ms) / 1000.0).round() as usize;
    let n_fft = win.next_power_of_two();
    let frames = match x.len() {
        0 => 0,
        n if n < win => 1,
        n => 1 + (n - win) / hop,
    };
    let mel = |f: f64| 2595.0 * (1.0 + f / 700.0).log10();
    let f_max = if cfg.f_max > 0.0 {
        f64::from(cfg.f_max)
    } else {
        rate / 2.0
    };
    let (lo, hi) = (mel(f64::from(cfg.f_min)), mel(f_max));
    let corners: Vec<f64> = (0..cfg.n_mels + 2)
        .map(|i| lo + i as f64 * (hi - lo) / (cfg.n_mels + 1) as f64)
        .collect();
    let p = f64::from(cfg.preemphasis);
    (0..frames)
        .map(|t| {
            let mut f: Vec<f64> = (0..win)
                .map(|i| x.get(t * hop + i).map_or(0.0, |&v| f64::from(v)))
                .collect();
            let mean = f.iter().sum::<f64>() / win as f64;
            f.iter_mut().for_each(|v| *v -= mean);
            let pre: Vec<f64> = (0..win)
                .map(|i| f[i] - p * f[i.saturating_sub(1)])
                .collect();
            let windowed: Vec<f64> = pre
                .iter()
                .enumerate()
                .map(|(i, v)| v * (0.5 - 0.5 * (2.0 * PI * i as f64 / (win - 1) as f64).cos()))
                .collect();
            let power: Vec<f64> = (0..=n_fft / 2)
                .map(|k| {
                    let (mut re, mut im) = (0.0, 0.0);
                    for (i, v) in windowed.iter().enumerate() {
                        let a = 2.0 * PI * (k * i) as f64 / n_fft as f64;
                        re += v * a.cos();
                        im -= v * a.sin();
                    }
                    re * re + im * im
                })
                .collect();
            (0..cfg.n_mels)
                .map(|m| {
                    let (l, c, r) = (corners[m], corners[m + 1], corners[m + 2]);
                    let e: f64 = power
                        .iter()
                        .enumerate()
                        .map(|(k, pw)| {
                            let z = mel(k as f64 * rate / n_fft as f64);
                            let w = if z <= l || z >= r {
                                0.0
                            } else if z <= c {
                                (z - l) / (c - l)
                            } else {
                                (r - z) / (r - c)
                            };
                            w * pw
                        })
                        .sum();
                    e.max(1e-10).ln()
                })
                .collect()
        })
        .collect()
}

#[test]
fn filterbanks_match_their_definition() {
    let cfg = FbankConfig {
        sample_rate: 8000,
        n_mels: 23,
        dither: 0.0,
        ..FbankConfig::default()
    };
    let fbank = Fbank::new(&cfg).unwrap();
    let tone: Vec<f32> = sine(1000.0, 8000, 1203, 0.3)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    for (what, x) in [
        ("noise", noise(2001, 5)),
        ("tone", tone),
        ("shorter than a window", noise(150, 6)),
        ("empty", Vec::new()),
    ] {
        let got = fbank.features(&x);
        let want = reference_fbank(&x, &cfg);
        assert_eq!((got.frames, got.bins), (want.len(), 23), "{what}");
        for (t, row) in want.iter().enumerate() {
            for (m, &w) in row.iter().enumerate() {
                let g = f64::from(got.row(t)[m]);
                // f32 sums lose the digits of energies far below the frame's largest.
                let tolerance = if w > -12.0 { 2e-3 } else { 5e-2 };
                assert!(
                    (g - w).abs() < tolerance,
                    "{what}: frame {t} bin {m}: {g} against {w}"
                );
            }
        }
    }
    // A 1 kHz tone peaks in the mel bin whose centre is nearest 1 kHz.
    let tone: Vec<f32> = sine(1000.0, 8000, 4000, 0.5)
        .into_iter()
        .map(|v| v as f32)
        .collect();
    let f = fbank.features(&tone);
    let row = f.row(f.frames / 2);
    let peak = (0..23).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
    let mel = |f: f64| 2595.0 * (1.0 + f / 700.0).log10();
    let (lo, hi) = (mel(20.0), mel(4000.0));
    let centre = |m: usize| lo + (m + 1) as f64 * (hi - lo) / 24.0;
    let nearest = (0..23)
        .min_by(|&a, &b| {
            (centre(a) - mel(1000.0))
                .abs()
                .total_cmp(&(centre(b) - mel(1000.0)).abs())
        })
        .unwrap();
    assert_eq!(peak, nearest);
}

#[test]
fn bad_feature_configs_are_refused() {
    for (cfg, needle) in [
        (
            FbankConfig {
                n_mels: 500,
                ..FbankConfig::default()
            },
            "n_mels",
        ),
        (
            FbankConfig {
                f_max: 9000.0,
                ..FbankConfig::default()
            },
            "Nyquist",
        ),
        (
            FbankConfig {
                hop_ms: 0.0,
                ..FbankConfig::default()
            },
            "hop",
        ),
    ] {
        let e = Fbank::new(&cfg).err().unwrap().to_string();
        assert!(e.contains(needle), "{e}");
    }
}

fn random_features(frames: usize, bins: usize, seed: u64) -> Features {
    Features {
        frames,
        bins,
        data: noise(frames * bins, seed)
            .into_iter()
            .map(|x| 3.0 * x + 1.5)
            .collect(),
    }
}

#[test]
fn normalisation_gives_zero_mean_and_unit_deviation() {
    let mut f = random_features(50, 7, 8);
    normalize_utterance(&mut f);
    for m in 0..7 {
        let col: Vec<f64> = (0..50).map(|t| f64::from(f.row(t)[m])).collect();
        let mean = col.iter().sum::<f64>() / 50.0;
        let var = col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 50.0;
        assert!(
            mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4,
            "bin {m}: {mean} {var}"
        );
    }
    let parts = [
        random_features(10, 3, 1),
        random_features(0, 3, 2),
        random_features(25, 3, 3),
    ];
    let stats = GlobalCmvn::from_features(parts.iter()).unwrap();
    for m in 0..3 {
        let pooled: Vec<f64> = parts
            .iter()
            .flat_map(|f| (0..f.frames).map(move |t| f64::from(f.row(t)[m])))
            .collect();
        let mean = pooled.iter().sum::<f64>() / pooled.len() as f64;
        let std =
            (pooled.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / pooled.len() as f64).sqrt();
        assert!((f64::from(stats.mean[m]) - mean).abs() < 1e-5);
        assert!((f64::from(stats.std[m]) - std).abs() < 1e-5);
    }
}

#[test]
fn spec_augment_is_seeded_and_bounded() {
    let spec = SpecAugment {
        freq_masks: 2,
        freq_width: 5,
        time_masks: 3,
        time_width: 20,
        time_ratio: 0.1,
    };
    let f = random_features(100, 40, 9);
    let masked = |seed| {
        let mut g = f.clone();
        spec.apply(&mut g, seed);
        g
    };
    assert_eq!(masked(1), masked(1));
    assert_ne!(masked(1), masked(2));
    for seed in 0..50 {
        let g = masked(seed);
        let zero_rows = (0..100)
            .filter(|&t| g.row(t).iter().all(|&x| x == 0.0))
            .count();
        let zero_cols = (0..40)
            .filter(|&m| (0..100).all(|t| g.row(t)[m] == 0.0))
            .count();
        // Time masks of at most 10 frames (10% of 100), three of them; two bands of <= 5 bins.
        assert!(zero_rows <= 30, "seed {seed}: {zero_rows} frames masked");
        assert!(zero_cols <= 10, "seed {seed}: {zero_cols} bins masked");
        // Nothing outside the masks changes.
        for (a, b) in g.data.iter().zip(&f.data) {
            assert!(*a == 0.0 || a == b);
        }
    }
    let mut g = f.clone();
    SpecAugment::default().apply(&mut g, 3);
    assert_eq!(g, f);
}

#[test]
fn feature_files_round_trip_and_refuse_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.feats");
    let utterances = vec![
        random_features(5, 4, 1),
        random_features(0, 4, 2),
        random_features(9, 4, 3),
    ];
    write_features(&path, &utterances).unwrap();
    assert_eq!(read_features(&path).unwrap(), utterances);
    write_features(&path, &[]).unwrap();
    assert!(read_features(&path).unwrap().is_empty());
    std::fs::write(&path, b"\x10\x00\x00\x00\x00\x00\x00\x00{broken").unwrap();
    let e = read_features(&path).unwrap_err().to_string();
    assert!(
        e.contains("train.feats") && e.contains("s2s prepare"),
        "{e}"
    );
}

#[test]
fn manifests_resolve_paths_and_name_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    let wav = dir.path().join("a/x.wav");
    write_wav(
        &wav,
        &Audio {
            sample_rate: 8000,
            samples: noise(10, 1),
        },
        WavFormat::Pcm16,
    )
    .unwrap();
    let m = dir.path().join("m.tsv");
    std::fs::write(&m, "# comment\na/x.wav\thello world\n\n").unwrap();
    assert_eq!(
        read_manifest(&m).unwrap(),
        vec![(wav.clone(), "hello world".to_owned())]
    );
    for (text, needle) in [
        ("a/x.wav hello\n", "m.tsv:1: no tab"),
        ("a/x.wav\tok\nb/y.wav\tgone\n", "m.tsv:2"),
        ("\tempty\n", "empty audio path"),
    ] {
        std::fs::write(&m, text).unwrap();
        let e = read_manifest(&m).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
    let kaldi = dir.path().join("kaldi");
    std::fs::create_dir(&kaldi).unwrap();
    std::fs::write(
        kaldi.join("wav.scp"),
        format!("u2 {}\nu1 {}\n", wav.display(), wav.display()),
    )
    .unwrap();
    std::fs::write(kaldi.join("text"), "u1 first one\nu2 second\n").unwrap();
    let got = read_kaldi_dir(&kaldi).unwrap();
    assert_eq!(got[0].1, "first one");
    assert_eq!(got[1].1, "second");
    std::fs::write(kaldi.join("text"), "u1 first one\n").unwrap();
    assert!(
        read_kaldi_dir(&kaldi)
            .unwrap_err()
            .to_string()
            .contains("`u2`")
    );
    std::fs::write(kaldi.join("wav.scp"), "u1 sox in.flac -t wav - |\n").unwrap();
    assert!(
        read_kaldi_dir(&kaldi)
            .unwrap_err()
            .to_string()
            .contains("command")
    );
}

/// Recording `{d}_{speaker}_{i}`: a tone of 200 (d + 1) Hz lasting (d + 2) / 50 s.
fn write_recordings(dir: &Path) {
    for speaker in ["ann", "bob"] {
        for d in 0..10u32 {
            for i in 0..12 {
                let len = (d as usize + 2) * 8000 / 50;
                let samples = sine(200.0 * f64::from(d + 1), 8000, len, 0.5)
                    .into_iter()
                    .map(|v| v as f32 + 1e-3)
                    .collect();
                let audio = Audio {
                    sample_rate: 8000,
                    samples,
                };
                write_wav(
                    &dir.join(format!("{d}_{speaker}_{i}.wav")),
                    &audio,
                    WavFormat::Float32,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn connected_digits_say_what_they_join() {
    let dir = tempfile::tempdir().unwrap();
    write_recordings(dir.path());
    let recs = list_recordings(dir.path()).unwrap();
    assert_eq!(recs.len(), 240);
    let cfg = ConnectedDigits::new(40, 7);
    let utterances = connected_digits(&recs, &cfg).unwrap();
    assert_eq!(utterances, connected_digits(&recs, &cfg).unwrap());
    assert_ne!(
        utterances,
        connected_digits(&recs, &ConnectedDigits::new(40, 8)).unwrap()
    );
    for (audio, text) in &utterances {
        // The non-zero runs are the digits, in order; their lengths say which.
        let mut runs = Vec::new();
        let mut len = 0;
        for &x in audio.samples.iter().chain([&0.0]) {
            if x != 0.0 {
                len += 1;
            } else if len > 0 {
                runs.push(len);
                len = 0;
            }
        }
        let heard: Vec<&str> = runs
            .iter()
            .map(|&n| DIGIT_WORDS[n * 50 / 8000 - 2])
            .collect();
        assert_eq!(heard.join(" "), *text);
        assert!((1..=7).contains(&runs.len()));
        let silence = audio.samples.len() - runs.iter().sum::<usize>();
        let gaps = runs.len() + 1;
        assert!(
            silence >= gaps * 400 && silence <= gaps * 2400,
            "{silence} samples of silence"
        );
    }
    std::fs::write(dir.path().join("seven.wav"), b"x").unwrap();
    let e = list_recordings(dir.path()).unwrap_err().to_string();
    assert!(e.contains("seven.wav"), "{e}");
}

#[test]
fn the_digit_builder_writes_manifests_from_the_official_split() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("recordings");
    std::fs::create_dir(&recordings).unwrap();
    write_recordings(&recordings);
    let out = dir.path().join("digits");
    let summary = write_connected_digits(&recordings, &out, 12, 3, 4, 1).unwrap();
    assert_eq!(
        summary.splits.iter().map(|s| s.1).collect::<Vec<_>>(),
        vec![12, 3, 4, 40, 100, 100]
    );
    for name in ["train", "valid", "test"] {
        let lines = read_manifest(&out.join(format!("{name}.tsv"))).unwrap();
        assert!(lines.iter().all(|(p, t)| p.is_file() && !t.is_empty()));
    }
    // The isolated sets: every recording, as it was, labelled with its digit; the test has
    // those of index 0-4, validation 5-9, training the rest.
    for (set, indices) in [
        ("isolated", 0..5),
        ("isolated-valid", 5..10),
        ("isolated-train", 10..50),
    ] {
        let lines = read_manifest(&out.join(format!("{set}.tsv"))).unwrap();
        assert_eq!(
            lines.len(),
            2 * 10 * indices.clone().filter(|&i| i < 12).count()
        );
        for (path, _) in &lines {
            let name = path.file_stem().unwrap().to_str().unwrap();
            let index: u32 = name.rsplit('_').next().unwrap().parse().unwrap();
            assert!(indices.contains(&index), "{set}: {name}");
        }
    }
    let isolated = read_manifest(&out.join("isolated.tsv")).unwrap();
    for (path, text) in &isolated {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let parts: Vec<&str> = name.split('_').collect();
        let digit: usize = parts[0].parse().unwrap();
        assert_eq!(text, DIGIT_WORDS[digit]);
        let copy = read_wav(path).unwrap();
        let original = read_wav(&recordings.join(format!("{name}.wav"))).unwrap();
        assert_eq!(copy.samples.len(), original.samples.len());
        let worst = copy
            .samples
            .iter()
            .zip(&original.samples)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(worst <= 1.0 / 32768.0, "{name}: {worst}");
    }
    let e = write_connected_digits(&recordings, &out, 1, 1, 1, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not empty"), "{e}");
}

#[test]
fn real_fsdd_recordings_read_as_8khz_speech() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/fsdd/recordings");
    if !dir.is_dir() {
        return;
    }
    for name in ["0_jackson_0.wav", "7_theo_12.wav", "9_nicolas_49.wav"] {
        let audio = read_wav(&dir.join(name)).unwrap();
        assert_eq!(audio.sample_rate, 8000);
        assert!(audio.seconds() > 0.1 && audio.seconds() < 2.5, "{name}");
        let f = Fbank::new(&FbankConfig {
            sample_rate: 8000,
            n_mels: 40,
            ..Default::default()
        })
        .unwrap()
        .features(&audio.samples);
        assert!(f.frames > 5 && f.data.iter().all(|x| x.is_finite()));
    }
}
