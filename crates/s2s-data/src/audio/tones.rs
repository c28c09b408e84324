//! A synthetic "spoken" corpus for tests and smoke runs, with no recordings: each word is a tone
//! of its own pitch and length, utterances are 1-4 words with short silences between them, at
//! two sample rates (every third file at 16 kHz, the others at 8 kHz), written as 16-bit WAV
//! files with a manifest that `prepare --task asr` reads ([`write_tone_corpus`]), or labelled
//! with their first word for classification ([`write_first_tone_labels`]).

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::wav::{Audio, WavFormat, write_wav};
use crate::error::{DataError, Result};

/// The words: word, pitch (Hz), duration (s).
pub const TONE_WORDS: [(&str, f32, f32); 4] = [
    ("low", 300.0, 0.20),
    ("mid", 700.0, 0.12),
    ("high", 1500.0, 0.16),
    ("top", 2600.0, 0.10),
];

/// Writes `n` utterances as `dir/name/NNNN.wav` and their manifest `dir/name.tsv` (paths
/// relative to `dir`), drawn from `seed`; returns the manifest's path.
pub fn write_tone_corpus(
    dir: &Path,
    name: &str,
    n: usize,
    seed: u64,
) -> Result<std::path::PathBuf> {
    write_tones(dir, name, n, seed, |words| words.join(" "))
}

/// [`write_tone_corpus`] for N vs 1 classification: the manifest labels each utterance with its
/// first word only.
pub fn write_first_tone_labels(
    dir: &Path,
    name: &str,
    n: usize,
    seed: u64,
) -> Result<std::path::PathBuf> {
    write_tones(dir, name, n, seed, |words| words[0].to_owned())
}

/// The utterances of [`write_tone_corpus`], each written to the manifest with `label(words)`.
fn write_tones(
    dir: &Path,
    name: &str,
    n: usize,
    seed: u64,
    label: impl Fn(&[&str]) -> String,
) -> Result<std::path::PathBuf> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).map_err(|e| DataError::io(&folder, e))?;
    let mut lines = String::new();
    for i in 0..n {
        let rate = if i % 3 == 0 { 16_000 } else { 8_000 };
        let mut samples = vec![0.0f32; rng.random_range(0..400) * rate / 8_000];
        let mut words = Vec::new();
        for _ in 0..rng.random_range(1..=4) {
            let (word, pitch, secs) = TONE_WORDS[rng.random_range(0..TONE_WORDS.len())];
            let amp = rng.random_range(0.2..0.6);
            let len = (secs * rate as f32) as usize;
            samples.extend((0..len).map(|t| {
                amp * (2.0 * std::f32::consts::PI * pitch * t as f32 / rate as f32).sin()
            }));
            samples.extend(std::iter::repeat_n(
                0.0,
                rng.random_range(240..640) * rate / 8_000,
            ));
            words.push(word);
        }
        let file = format!("{name}/{i:04}.wav");
        let audio = Audio {
            sample_rate: rate as u32,
            samples,
        };
        write_wav(&dir.join(&file), &audio, WavFormat::Pcm16)?;
        lines.push_str(&format!("{file}\t{}\n", label(&words)));
    }
    let path = dir.join(format!("{name}.tsv"));
    std::fs::write(&path, lines).map_err(|e| DataError::io(&path, e))?;
    Ok(path)
}
