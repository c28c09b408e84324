//! The keys and values a Transformer decoder has projected so far, kept so that beam reorders
//! never copy them (see [`PrefixCache`]).

use burn::tensor::{Int, Tensor};

use super::RowMap;
use super::kernels::Segment;

/// Projected keys and values, split into heads: `[batch, heads, len, d_k]` each.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Tensor<4>,
    pub value: Tensor<4>,
}

impl KeyValue {
    pub fn select_rows(&self, idx: &Tensor<1, Int>) -> KeyValue {
        KeyValue {
            key: self.key.clone().select(0, idx.clone()),
            value: self.value.clone().select(0, idx.clone()),
        }
    }
}

/// Self-attention keys and values of the prefix decoded so far, for all live rows: one block per
/// decoding step, as that step projected them for the rows alive then, each with the row map that
/// takes live rows to the rows they descend from. Beam search reorders rows every step; a reorder
/// only composes the maps and appending a step adds a block, so the step kernel reads the whole
/// prefix in place and nothing is copied. The tensor-op path ([`PrefixCache::collapse`]) gathers
/// the blocks into one tensor first.
#[derive(Clone, Debug)]
pub struct PrefixCache {
    blocks: Vec<(KeyValue, RowMap)>,
}

impl PrefixCache {
    pub fn new(kv: KeyValue) -> Self {
        Self {
            blocks: vec![(kv, RowMap::identity())],
        }
    }

    /// Row `i` becomes row `idx[i]` (see [`crate::decoder`]'s reorder).
    pub fn select_rows(&self, idx: &[usize]) -> Self {
        Self {
            blocks: self
                .blocks
                .iter()
                .map(|(kv, rows)| (kv.clone(), rows.compose(idx)))
                .collect(),
        }
    }

    /// Adds the live rows' next positions.
    pub fn append(&mut self, new: KeyValue) {
        self.blocks.push((new, RowMap::identity()));
    }

    /// The blocks as the step kernel reads them.
    pub fn segments(&self) -> Vec<Segment<'_>> {
        self.blocks
            .iter()
            .map(|(kv, rows)| Segment {
                key: &kv.key,
                value: &kv.value,
                pad: None,
                rows,
            })
            .collect()
    }

    /// The prefix of the live rows as one tensor, which then replaces the blocks: each call
    /// copies only what came since the last.
    pub fn collapse(&mut self) -> KeyValue {
        if let [(kv, rows)] = &self.blocks[..]
            && rows.is_identity()
        {
            return kv.clone();
        }
        let (keys, values): (Vec<_>, Vec<_>) = self
            .blocks
            .drain(..)
            .map(|(kv, rows)| match rows.ids(&kv.key.device()) {
                Some(idx) => kv.select_rows(&idx),
                None => kv,
            })
            .map(|kv| (kv.key, kv.value))
            .unzip();
        let kv = KeyValue {
            key: Tensor::cat(keys, 2),
            value: Tensor::cat(values, 2),
        };
        self.blocks = vec![(kv.clone(), RowMap::identity())];
        kv
    }
}
