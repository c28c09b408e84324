//! Connected-digit utterances from the Free Spoken Digit Dataset (FSDD): recordings
//! `{digit}_{speaker}_{index}.wav` of one spoken digit each, joined per speaker with short random
//! silences into utterances of several digits, transcribed as digit words.

use std::path::{Path, PathBuf};

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use super::wav::{Audio, WavFormat, read_wav, write_wav};
use crate::error::{DataError, Result};

/// The words of the digits 0-9.
pub const DIGIT_WORDS: [&str; 10] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// One FSDD recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    pub path: PathBuf,
    pub digit: u8,
    pub speaker: String,
    pub index: u32,
}

/// The recordings in `dir`, sorted by speaker, digit and index. A `.wav` file not named
/// `{digit}_{speaker}_{index}.wav` is an error.
pub fn list_recordings(dir: &Path) -> Result<Vec<Recording>> {
    let entries = std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let mut out = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| DataError::io(dir, e))?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("wav") {
            continue;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let parts: Vec<&str> = stem.split('_').collect();
        let parsed = match parts.as_slice() {
            [d, s, i] if !s.is_empty() => d
                .parse::<u8>()
                .ok()
                .filter(|&d| d < 10)
                .zip(i.parse::<u32>().ok())
                .map(|(digit, index)| (digit, s.to_string(), index)),
            _ => None,
        };
        let Some((digit, speaker, index)) = parsed else {
            return Err(DataError::Audio {
                path,
                message: "not an FSDD recording name; fix: name it {digit}_{speaker}_{index}.wav, \
                          or move it out of the folder"
                    .into(),
            });
        };
        out.push(Recording {
            path,
            digit,
            speaker,
            index,
        });
    }
    out.sort_by(|a, b| (&a.speaker, a.digit, a.index).cmp(&(&b.speaker, b.digit, b.index)));
    Ok(out)
}

/// How utterances are built.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectedDigits {
    pub utterances: usize,
    pub min_digits: usize,
    pub max_digits: usize,
    pub min_silence_ms: f32,
    pub max_silence_ms: f32,
    pub seed: u64,
}

impl ConnectedDigits {
    /// 1-7 digits with 50-300 ms silences, as bench/fsdd.sh uses.
    pub fn new(utterances: usize, seed: u64) -> Self {
        Self {
            utterances,
            min_digits: 1,
            max_digits: 7,
            min_silence_ms: 50.0,
            max_silence_ms: 300.0,
            seed,
        }
    }
}

/// A uniform draw in `lo..=hi`.
fn between(rng: &mut ChaCha8Rng, lo: usize, hi: usize) -> usize {
    lo + ((rng.next_u64() as u128 * (hi - lo + 1) as u128) >> 64) as usize
}

/// Builds `cfg.utterances` utterances from `recs`: each picks a speaker, a number of digits, and
/// for each digit one of that speaker's recordings, joined by silences (exact zeros; one before
/// and one after too). Returns each utterance with its transcript (digit words). All recordings
/// must share one sample rate.
pub fn connected_digits(recs: &[Recording], cfg: &ConnectedDigits) -> Result<Vec<(Audio, String)>> {
    if recs.is_empty() {
        return Err(DataError::Config(
            "no FSDD recordings to build utterances from; fix: pass the folder of \
             {digit}_{speaker}_{index}.wav files"
                .into(),
        ));
    }
    if cfg.min_digits == 0 || cfg.min_digits > cfg.max_digits {
        return Err(DataError::Config(format!(
            "digits per utterance {}..={} is empty; fix: 1 <= min_digits <= max_digits",
            cfg.min_digits, cfg.max_digits
        )));
    }
    let mut speakers: Vec<&str> = recs.iter().map(|r| r.speaker.as_str()).collect();
    speakers.dedup();
    let mut audio: Vec<Audio> = Vec::with_capacity(recs.len());
    for r in recs {
        let a = read_wav(&r.path)?;
        if let Some(first) = audio.first()
            && first.sample_rate != a.sample_rate
        {
            return Err(DataError::Audio {
                path: r.path.clone(),
                message: format!(
                    "{} Hz, but {} is at {} Hz; fix: resample the recordings to one rate",
                    a.sample_rate,
                    recs[0].path.display(),
                    first.sample_rate
                ),
            });
        }
        audio.push(a);
    }
    let rate = audio[0].sample_rate;
    let silence = |rng: &mut ChaCha8Rng| {
        let lo = (cfg.min_silence_ms * rate as f32 / 1000.0) as usize;
        let hi = (cfg.max_silence_ms * rate as f32 / 1000.0) as usize;
        vec![0.0f32; between(rng, lo, hi.max(lo))]
    };
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut out = Vec::with_capacity(cfg.utterances);
    for _ in 0..cfg.utterances {
        let speaker = speakers[between(&mut rng, 0, speakers.len() - 1)];
        let own: Vec<usize> = (0..recs.len())
            .filter(|&i| recs[i].speaker == speaker)
            .collect();
        let n = between(&mut rng, cfg.min_digits, cfg.max_digits);
        let mut samples = silence(&mut rng);
        let mut words = Vec::with_capacity(n);
        for k in 0..n {
            let i = own[between(&mut rng, 0, own.len() - 1)];
            if k > 0 {
                samples.extend(silence(&mut rng));
            }
            samples.extend_from_slice(&audio[i].samples);
            words.push(DIGIT_WORDS[usize::from(recs[i].digit)]);
        }
        samples.extend(silence(&mut rng));
        out.push((
            Audio {
                sample_rate: rate,
                samples,
            },
            words.join(" "),
        ));
    }
    Ok(out)
}

/// What [`write_connected_digits`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct DigitsSummary {
    /// Per split (`train`, `valid`, `test`, `isolated-train`, `isolated-valid`, `isolated`):
    /// utterances and seconds of audio.
    pub splits: Vec<(String, usize, f64)>,
    pub out: PathBuf,
}

impl std::fmt::Display for DigitsSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .splits
            .iter()
            .map(|(name, n, secs)| format!("{name} {n} utterances ({:.1} min)", secs / 60.0))
            .collect();
        write!(f, "{}: {}", self.out.display(), parts.join(", "))
    }
}

/// Copies `recs` to `out/name/` (16-bit PCM) with the manifest `out/name.tsv`, each labelled
/// with its digit's word; returns their seconds of audio.
fn write_isolated(out: &Path, name: &str, recs: &[Recording]) -> Result<f64> {
    let folder = out.join(name);
    std::fs::create_dir_all(&folder).map_err(|e| DataError::io(&folder, e))?;
    let mut manifest = String::new();
    let mut seconds = 0.0;
    for r in recs {
        let audio = read_wav(&r.path)?;
        let file = format!("{name}/{}_{}_{}.wav", r.digit, r.speaker, r.index);
        write_wav(&out.join(&file), &audio, WavFormat::Pcm16)?;
        manifest.push_str(&format!("{file}\t{}\n", DIGIT_WORDS[usize::from(r.digit)]));
        seconds += audio.seconds();
    }
    let path = out.join(format!("{name}.tsv"));
    crate::io::atomic_write(&path, manifest.as_bytes()).map_err(|e| DataError::io(&path, e))?;
    Ok(seconds)
}

/// Writes connected-digit utterances built from the FSDD recordings in `recordings` into
/// `out/{train,valid,test}/NNNNNN.wav` (16-bit PCM) with manifests `out/{split}.tsv`. Training
/// and validation utterances use the recordings of index 5-49, test utterances those of index
/// 0-4 (FSDD's official split); each split has its own seed. The recordings themselves, one
/// digit each, labelled with its word, make the isolated-digit sets of spoken-word
/// classification: `out/isolated.tsv` (the test: recordings 0-4), `out/isolated-valid.tsv`
/// (5-9) and `out/isolated-train.tsv` (10-49), each with its folder. `out` must be absent or
/// empty.
pub fn write_connected_digits(
    recordings: &Path,
    out: &Path,
    train: usize,
    valid: usize,
    test: usize,
    seed: u64,
) -> Result<DigitsSummary> {
    if let Ok(mut entries) = std::fs::read_dir(out)
        && entries.next().is_some()
    {
        return Err(DataError::OutDirNotEmpty {
            path: out.to_path_buf(),
        });
    }
    let all = list_recordings(recordings)?;
    let (held_out, rest): (Vec<Recording>, Vec<Recording>) =
        all.into_iter().partition(|r| r.index < 5);
    let mut splits = Vec::new();
    for (name, recs, n, salt) in [
        ("train", &rest, train, 1u64),
        ("valid", &rest, valid, 2),
        ("test", &held_out, test, 3),
    ] {
        let cfg = ConnectedDigits::new(n, seed.wrapping_mul(0x9E37_79B9).wrapping_add(salt));
        let utterances = connected_digits(recs, &cfg)?;
        let folder = out.join(name);
        std::fs::create_dir_all(&folder).map_err(|e| DataError::io(&folder, e))?;
        let mut manifest = String::new();
        let mut seconds = 0.0;
        for (i, (audio, text)) in utterances.iter().enumerate() {
            let file = format!("{name}/{i:06}.wav");
            write_wav(&out.join(&file), audio, WavFormat::Pcm16)?;
            manifest.push_str(&format!("{file}\t{text}\n"));
            seconds += audio.seconds();
        }
        let path = out.join(format!("{name}.tsv"));
        crate::io::atomic_write(&path, manifest.as_bytes()).map_err(|e| DataError::io(&path, e))?;
        splits.push((name.to_owned(), utterances.len(), seconds));
    }
    // The recordings as they are, one digit each: the isolated-digit sets (classification).
    let (valid_recs, train_recs): (Vec<Recording>, Vec<Recording>) =
        rest.into_iter().partition(|r| r.index < 10);
    for (name, recs) in [
        ("isolated-train", &train_recs),
        ("isolated-valid", &valid_recs),
        ("isolated", &held_out),
    ] {
        let seconds = write_isolated(out, name, recs)?;
        splits.push((name.to_owned(), recs.len(), seconds));
    }
    Ok(DigitsSummary {
        splits,
        out: out.to_path_buf(),
    })
}
