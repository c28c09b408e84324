//! Weights packed once per search. gemm packs a matrix product's weight into panels for its
//! micro-kernel at every product; a decoding step multiplies a few dozen to a few hundred rows by
//! each weight, so that packing was a full pass over the model per step. The packed panels hold
//! the same values, so the products are unchanged, bit for bit (`tests/packed_weights.rs`).

/// Runs `f` with every weight it multiplies by packed at its first product and reused by every
/// later one, on this thread and the other workers' (burn-flex's `with_packed_weights`, a patch
/// of the vendored copy, with the `fast-path` feature). Without the feature `f` just runs.
pub fn with_packed_weights<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(feature = "fast-path")]
    return burn_flex::ops::matmul::with_packed_weights(f);
    #[cfg(not(feature = "fast-path"))]
    f()
}
