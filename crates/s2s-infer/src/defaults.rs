//! The search defaults every front end starts from (`s2s translate`, `s2s serve`, the trainer's
//! validation BLEU), so that the CLI, the API and validation decode alike unless asked otherwise.

use s2s_data::Specials;
use s2s_search::{LenRatio, LengthPenalty, SearchConfig, Strategy};

/// Beam width.
pub const BEAM: usize = 5;
/// Length-normalisation exponent: `score = logprob / L^ALPHA`.
pub const ALPHA: f32 = 0.75;
/// Hypotheses returned per sentence.
pub const NBEST: usize = 1;
/// Absolute maximum output length in tokens (without `<eos>`).
pub const MAX_LEN: usize = 200;
/// Maximum output length relative to the source: `MAX_LEN_RATIO * source_len + MAX_LEN_OFFSET`.
pub const MAX_LEN_RATIO: f32 = 2.0;
pub const MAX_LEN_OFFSET: usize = 10;
/// Sentences decoded together by `s2s translate`.
pub const BATCH_SIZE: usize = 64;

pub use s2s_models::decoder::special_tokens;

/// The length limit relative to the source.
pub fn len_ratio(ratio: f32) -> LenRatio {
    LenRatio {
        ratio,
        offset: MAX_LEN_OFFSET,
    }
}

/// `strategy` with every other option at its default: the alpha length penalty, the length
/// limits above, and the vocabulary's special ids.
pub fn search(strategy: Strategy, specials: Specials) -> SearchConfig {
    SearchConfig {
        strategy,
        nbest: NBEST,
        length_penalty: LengthPenalty::Alpha(ALPHA),
        max_len: MAX_LEN,
        max_len_ratio: Some(len_ratio(MAX_LEN_RATIO)),
        special: special_tokens(specials),
        ..SearchConfig::default()
    }
}

/// Beam search with [`BEAM`] and the defaults above.
pub fn beam(specials: Specials) -> SearchConfig {
    search(Strategy::Beam { k: BEAM }, specials)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_a_valid_search() {
        let cfg = beam(Specials::S2S);
        assert!(cfg.validate(16).is_ok());
        assert_eq!(cfg.special.eos, s2s_data::EOS);
        // The relative limit binds before the absolute one for sources under 95 tokens.
        assert_eq!(cfg.max_len_for(3), 16);
        assert_eq!(cfg.max_len_for(1000), MAX_LEN);
    }
}
