//! Row maps: beam search reorders the rows of its decoding state at every step, and most of that
//! state (a sentence's encoder side, the prefix decoded so far) is the same for many rows. A state
//! that records the reorder as a row map instead of copying rows lets the beams of one sentence
//! read one copy of its encoder side and the step kernels read a prefix cache in place.

use burn::tensor::kind::Basic;
use burn::tensor::{Device, Int, Tensor, TensorData};

/// Row `i` of a batch reads row `get(i)` of a shared tensor. The identity, what a state starts
/// with, allocates nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowMap(Option<Vec<usize>>);

impl RowMap {
    /// Row `i` reads row `i`.
    pub const fn identity() -> Self {
        Self(None)
    }

    pub fn is_identity(&self) -> bool {
        self.0.is_none()
    }

    /// This map after a reorder that makes row `i` of row `idx[i]` (see [`crate::decoder`]'s
    /// reorder): row `i` then reads `self.get(idx[i])`.
    pub fn compose(&self, idx: &[usize]) -> RowMap {
        Self(Some(match &self.0 {
            Some(rows) => idx.iter().map(|&i| rows[i]).collect(),
            None => idx.to_vec(),
        }))
    }

    /// The row that row `i` reads.
    #[inline(always)]
    pub fn get(&self, i: usize) -> usize {
        self.0.as_ref().map_or(i, |m| m[i])
    }

    /// The recorded rows; `None` for the identity.
    pub fn as_slice(&self) -> Option<&[usize]> {
        self.0.as_deref()
    }

    /// Whether this map takes `rows` rows to rows of a tensor with `n` (the identity: `n` is
    /// `rows`).
    pub fn fits(&self, rows: usize, n: usize) -> bool {
        match &self.0 {
            Some(m) => m.len() == rows && m.iter().all(|&r| r < n),
            None => n == rows,
        }
    }

    /// `t` with one row per batch row, as the tensor ops need it: `t` itself for the identity,
    /// otherwise its rows gathered (`select` along the first axis).
    pub fn gather<const D: usize, K: Basic>(&self, t: Tensor<D, K>) -> Tensor<D, K> {
        match self.ids(&t.device()) {
            None => t,
            Some(idx) => t.select(0, idx),
        }
    }

    /// The recorded rows as a device tensor for `select` (one for several gathers); `None` for
    /// the identity.
    pub fn ids(&self, device: &Device) -> Option<Tensor<1, Int>> {
        self.0.as_ref().map(|rows| row_ids(rows, device))
    }
}

impl From<Vec<usize>> for RowMap {
    fn from(rows: Vec<usize>) -> Self {
        Self(Some(rows))
    }
}

impl From<&[usize]> for RowMap {
    fn from(rows: &[usize]) -> Self {
        Self(Some(rows.to_vec()))
    }
}

/// Row indices (a beam reorder, a row map) as a 1-D device tensor for `select`.
pub fn row_ids(rows: &[usize], device: &Device) -> Tensor<1, Int> {
    let v: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
    Tensor::from_data(TensorData::new(v, [rows.len()]), device)
}
