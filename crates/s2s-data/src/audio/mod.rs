//! Audio for speech recognition, as data (no tensors): WAV files in, normalised log-mel
//! filterbank frames out.
//!
//! - [`wav`]: reading (PCM 8/16/24/32-bit and 32-bit float, any channels, any rate) and writing
//!   WAV files, and resampling with `rubato`;
//! - [`fbank`]: log-mel filterbank features with `realfft` (the definition is in its docs);
//! - [`cmvn`]: mean and variance normalisation, per utterance or with a training split's stats;
//! - [`augment`]: SpecAugment's time and frequency masks, seeded;
//! - [`store`]: a split's features in one safetensors file;
//! - [`manifest`]: the listings `s2s prepare --task asr` reads (a manifest, a Kaldi folder);
//! - [`digits`]: connected-digit utterances built from the Free Spoken Digit Dataset.

pub mod augment;
pub mod cmvn;
pub mod digits;
pub mod fbank;
pub mod manifest;
pub mod store;
pub mod tones;
pub mod wav;

pub use augment::SpecAugment;
pub use cmvn::{GlobalCmvn, normalize_utterance};
pub use digits::{DigitsSummary, write_connected_digits};
pub use fbank::{Fbank, FbankConfig, Features};
pub use manifest::{read_kaldi_dir, read_manifest};
pub use store::{read_features, write_features};
pub use tones::{TONE_WORDS, write_first_tone_labels, write_tone_corpus};
pub use wav::{Audio, WavFormat, decode_wav, read_wav, resample, write_wav};
