//! The recurrent family as one model type with options, in the style of fairseq's presets:
//! the basic encoder-decoder (Sutskever 2014, Cho 2014), RNNsearch (Bahdanau 2015) and Luong 2015.

pub mod cell;
pub mod encoder;
pub mod model;

pub use cell::CellKind;
pub use model::{
    ContextMode, DecState, EncCtx, Projected, RnnAttention, RnnConfig, RnnSeq2Seq, StepFeatures,
};
