//! The CPU engine: what s2s adds to burn to decode and train fast on the CPU, in one place, so
//! that the model files state the models' equations and call an op where a kernel can stand in
//! for tensor ops (docs/design.md, "The CPU engine").
//!
//! One convention: an engine op ([`additive_attention`], [`select_rows_then_cat`], ...) runs its
//! CPU kernel ([`kernels`]) when it can and otherwise its own default body in plain tensor ops, so
//! a call site never chooses. Decoding state records beam reorders as [`RowMap`]s, which the
//! kernels read through and the default bodies gather; the Transformer's [`PrefixCache`] is built
//! on them. Around the ops: sentence-parallel [`workers`], the process's [`allocator`] policy and
//! the [`packed`]-weight scope of a search, and the [`int8`] weights and product of int8 inference.

pub mod allocator;
pub mod gemv;
pub mod int8;
pub mod kernels;
mod ops;
pub mod packed;
mod prefix_cache;
pub mod row_map;
pub mod workers;

pub use ops::{
    additive_attention, dot_attention, dot_attention_seq, int8_embedding, int8_feed_forward,
    int8_linear, linear, multi_head_attention, prefix_attention, select_rows_then_cat,
};
pub use prefix_cache::{CacheFormat, CachedKeyValue, KeyValue, PrefixCache};
pub use row_map::{RowMap, row_ids};

/// Large negative score for masked keys: `exp` of it underflows to exactly zero, so masked keys
/// contribute nothing (not merely little) and padding cannot change a sentence's results.
pub(crate) const MASKED: f32 = -1.0e9;
