//! WAV files: reading any PCM or float WAV as mono samples in [-1, 1], writing them, and
//! resampling.

use std::path::Path;

use crate::error::{DataError, Result};

/// Mono audio: `samples` in [-1, 1] at `sample_rate` per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    pub sample_rate: u32,
    pub samples: Vec<f32>,
}

impl Audio {
    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.sample_rate.max(1))
    }
}

/// The sample formats [`write_wav`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WavFormat {
    /// Unsigned 8-bit PCM.
    Pcm8,
    Pcm16,
    Pcm24,
    Float32,
}

fn audio_error(path: &Path, message: impl Into<String>) -> DataError {
    DataError::Audio {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

const CONVERT: &str = "convert it to 16-bit PCM WAV, e.g. `sox IN -b 16 OUT.wav` or `ffmpeg -i IN -c:a pcm_s16le OUT.wav`";

/// Reads a WAV file (see [`decode_wav`]).
pub fn read_wav(path: &Path) -> Result<Audio> {
    let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    decode_wav(&bytes, &path.display().to_string())
}

/// Decodes the bytes of a WAV file named `name` (for messages): PCM of 8 (unsigned), 16, 24 or
/// 32 bits, or 32-bit float, any number of channels (averaged into one) at any rate.
pub fn decode_wav(bytes: &[u8], name: &str) -> Result<Audio> {
    let path = Path::new(name);
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).map_err(|e| {
        audio_error(
            path,
            format!("not a WAV file s2s can read ({e}); fix: {CONVERT}"),
        )
    })?;
    let spec = reader.spec();
    if spec.channels == 0 || spec.sample_rate == 0 {
        return Err(audio_error(
            path,
            format!(
                "the header says {} channel(s) at {} Hz; fix: {CONVERT}",
                spec.channels, spec.sample_rate
            ),
        ));
    }
    let truncated = |e: hound::Error| {
        audio_error(
            path,
            format!(
                "cannot read the samples ({e}): the file is damaged or cut short; fix: {CONVERT}"
            ),
        )
    };
    let interleaved: Vec<f32> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Float, 32) => reader
            .into_samples::<f32>()
            .collect::<std::result::Result<_, _>>()
            .map_err(truncated)?,
        (hound::SampleFormat::Int, bits @ (8 | 16 | 24 | 32)) => {
            let scale = 1.0 / (1u64 << (bits - 1)) as f64;
            reader
                .into_samples::<i32>()
                .map(|s| s.map(|v| (f64::from(v) * scale) as f32))
                .collect::<std::result::Result<_, _>>()
                .map_err(truncated)?
        }
        (format, bits) => {
            return Err(audio_error(
                path,
                format!(
                    "{bits}-bit {} samples are not supported; fix: {CONVERT}",
                    if format == hound::SampleFormat::Float {
                        "float"
                    } else {
                        "integer"
                    }
                ),
            ));
        }
    };
    let channels = usize::from(spec.channels);
    let samples = if channels == 1 {
        interleaved
    } else {
        interleaved
            .chunks_exact(channels)
            .map(|frame| frame.iter().sum::<f32>() / channels as f32)
            .collect()
    };
    Ok(Audio {
        sample_rate: spec.sample_rate,
        samples,
    })
}

/// Writes mono `audio` as a WAV file, atomically.
pub fn write_wav(path: &Path, audio: &Audio, format: WavFormat) -> Result<()> {
    let (bits, sample_format) = match format {
        WavFormat::Pcm8 => (8, hound::SampleFormat::Int),
        WavFormat::Pcm16 => (16, hound::SampleFormat::Int),
        WavFormat::Pcm24 => (24, hound::SampleFormat::Int),
        WavFormat::Float32 => (32, hound::SampleFormat::Float),
    };
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: audio.sample_rate,
        bits_per_sample: bits,
        sample_format,
    };
    let mut buf = std::io::Cursor::new(Vec::new());
    let write = |buf: &mut std::io::Cursor<Vec<u8>>| -> std::result::Result<(), hound::Error> {
        let mut w = hound::WavWriter::new(buf, spec)?;
        for &x in &audio.samples {
            let x = x.clamp(-1.0, 1.0);
            match format {
                WavFormat::Float32 => w.write_sample(x)?,
                // The scale reading divides by (2^(bits-1)); hound takes 8-bit samples signed
                // and stores them offset (unsigned).
                WavFormat::Pcm8 => w.write_sample(quantise(x, 8) as i8)?,
                WavFormat::Pcm16 => w.write_sample(quantise(x, 16) as i16)?,
                WavFormat::Pcm24 => w.write_sample(quantise(x, 24))?,
            }
        }
        w.finalize()
    };
    write(&mut buf).map_err(|e| audio_error(path, format!("cannot encode the WAV file: {e}")))?;
    crate::io::atomic_write(path, buf.get_ref()).map_err(|e| DataError::io(path, e))
}

/// `x` in [-1, 1] as a `bits`-bit integer sample: `round(x * 2^(bits-1))`, clamped to the
/// format's range.
fn quantise(x: f32, bits: u32) -> i32 {
    let full = f64::from(1u32 << (bits - 1));
    (f64::from(x) * full).round().clamp(-full, full - 1.0) as i32
}

/// `audio` at `to` samples per second, with rubato's FFT resampler (anti-aliased, delay
/// removed): `round(len * to / from)` samples. At its own rate it is returned unchanged.
pub fn resample(audio: &Audio, to: u32) -> Result<Audio> {
    use rubato::Resampler;
    use rubato::audioadapter_buffers::direct::InterleavedSlice;
    if audio.sample_rate == to || audio.samples.is_empty() {
        return Ok(Audio {
            sample_rate: to,
            samples: audio.samples.clone(),
        });
    }
    let fail = |e: String| {
        DataError::Config(format!(
            "cannot resample audio from {} Hz to {to} Hz: {e}",
            audio.sample_rate
        ))
    };
    let mut resampler = rubato::Fft::<f32>::new(
        audio.sample_rate as usize,
        to as usize,
        1024,
        1,
        rubato::FixedSync::Input,
    )
    .map_err(|e| fail(e.to_string()))?;
    let input = InterleavedSlice::new(&audio.samples, 1, audio.samples.len())
        .map_err(|e| fail(e.to_string()))?;
    let out = resampler
        .process_all(&input, audio.samples.len(), None)
        .map_err(|e| fail(e.to_string()))?;
    let mut samples = out.take_data();
    let want = (audio.samples.len() as f64 * f64::from(to) / f64::from(audio.sample_rate)).round()
        as usize;
    samples.resize(want, 0.0);
    Ok(Audio {
        sample_rate: to,
        samples,
    })
}
