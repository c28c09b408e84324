//! The keys and values a Transformer decoder has projected so far, kept so that beam reorders
//! never copy them (see [`PrefixCache`]), and the encoder side's, in f32 or, for an int8 model,
//! in int8 ([`CacheFormat`]).

use std::sync::Arc;

use burn::tensor::{Bool, Int, Tensor};

use super::RowMap;
use super::int8::Int8Vectors;
use super::kernels::{self, Segment, Vectors};

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

/// How decoding keeps projected keys and values ([`CachedKeyValue`]): the encoder side's for
/// cross-attention, and the self-attention prefix ([`PrefixCache`]).
///
/// They are most of a large beam search's memory: five hypotheses of 64 sentences hold 3 layers
/// x 2 x 256 f32 per decoded position each, and every source position of every sentence the same
/// again. [`CacheFormat::Int8`] keeps every key and value vector (one head's `d_k` values) as
/// int8 with its own scale, a quarter of the bytes; attention then reads the int8 values and
/// applies the scale to each score and weight. The first decoding step's own keys and values,
/// which that step attended over in f32, stay f32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheFormat {
    #[default]
    F32,
    Int8,
}

impl CacheFormat {
    pub fn name(self) -> &'static str {
        match self {
            CacheFormat::F32 => "f32",
            CacheFormat::Int8 => "int8",
        }
    }

    pub fn parse(s: &str) -> Option<CacheFormat> {
        match s {
            "f32" => Some(CacheFormat::F32),
            "int8" => Some(CacheFormat::Int8),
            _ => None,
        }
    }
}

/// Keys and values in int8 ([`CacheFormat::Int8`]).
#[derive(Debug)]
pub struct Int8KeyValue {
    key: Int8Vectors,
    value: Int8Vectors,
}

/// Keys and values as decoding keeps them ([`CacheFormat`]).
// The f32 variant holds two tensors by value, as a cache block always did; boxing them would add
// an allocation per block for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum CachedKeyValue {
    F32(KeyValue),
    /// Shared: reorders and state clones copy the handle only.
    Int8(Arc<Int8KeyValue>),
}

impl From<KeyValue> for CachedKeyValue {
    fn from(kv: KeyValue) -> Self {
        CachedKeyValue::F32(kv)
    }
}

impl CachedKeyValue {
    /// `kv` in `format`: int8 only on the CPU backend, where the step kernel reads it; f32
    /// elsewhere.
    pub fn new(kv: KeyValue, format: CacheFormat) -> Self {
        if format == CacheFormat::Int8
            && let (Some(key), Some(value)) = (
                kernels::quantize_vectors(&kv.key),
                kernels::quantize_vectors(&kv.value),
            )
        {
            return CachedKeyValue::Int8(Arc::new(Int8KeyValue { key, value }));
        }
        CachedKeyValue::F32(kv)
    }

    /// The keys and values as the step kernel reads them, with `pad` (`[n, len]`, true at
    /// padded keys) and query row `i` reading row `rows.get(i)`.
    pub fn segment<'a>(
        &'a self,
        pad: Option<&'a Tensor<2, Bool>>,
        rows: &'a RowMap,
    ) -> Segment<'a> {
        let (key, value) = match self {
            CachedKeyValue::F32(kv) => (Vectors::F32(&kv.key), Vectors::F32(&kv.value)),
            CachedKeyValue::Int8(kv) => (Vectors::Int8(&kv.key), Vectors::Int8(&kv.value)),
        };
        Segment {
            key,
            value,
            pad,
            rows,
        }
    }

    /// In f32, as the tensor ops take them (int8 dequantised).
    pub fn to_f32(&self) -> KeyValue {
        match self {
            CachedKeyValue::F32(kv) => kv.clone(),
            CachedKeyValue::Int8(kv) => KeyValue {
                key: kernels::dequantize_vectors(&kv.key),
                value: kernels::dequantize_vectors(&kv.value),
            },
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
    blocks: Vec<(CachedKeyValue, RowMap)>,
    format: CacheFormat,
}

impl PrefixCache {
    /// A cache holding `kv` (in f32 whatever the format: the step that made it attended over it
    /// so), to which [`PrefixCache::append`] adds blocks in `format`.
    pub fn new(kv: KeyValue, format: CacheFormat) -> Self {
        Self {
            blocks: vec![(CachedKeyValue::F32(kv), RowMap::identity())],
            format,
        }
    }

    /// Row `i` becomes row `idx[i]` (see [`crate::decoder`]'s reorder).
    pub fn select_rows(&self, idx: &[usize]) -> Self {
        Self {
            blocks: self
                .blocks
                .iter()
                .map(|(block, rows)| (block.clone(), rows.compose(idx)))
                .collect(),
            format: self.format,
        }
    }

    /// Adds the live rows' next positions, in the cache's format.
    pub fn append(&mut self, new: KeyValue) {
        self.blocks
            .push((CachedKeyValue::new(new, self.format), RowMap::identity()));
    }

    /// The blocks as the step kernel reads them.
    pub fn segments(&self) -> Vec<Segment<'_>> {
        self.blocks
            .iter()
            .map(|(kv, rows)| kv.segment(None, rows))
            .collect()
    }

    /// The prefix of the live rows as one f32 tensor, which then replaces the blocks: each call
    /// copies only what came since the last.
    pub fn collapse(&mut self) -> KeyValue {
        if let [(CachedKeyValue::F32(kv), rows)] = &self.blocks[..]
            && rows.is_identity()
        {
            return kv.clone();
        }
        let (keys, values): (Vec<_>, Vec<_>) = self
            .blocks
            .drain(..)
            .map(|(kv, rows)| {
                let kv = kv.to_f32();
                match rows.ids(&kv.key.device()) {
                    Some(idx) => kv.select_rows(&idx),
                    None => kv,
                }
            })
            .map(|kv| (kv.key, kv.value))
            .unzip();
        let kv = KeyValue {
            key: Tensor::cat(keys, 2),
            value: Tensor::cat(values, 2),
        };
        self.blocks = vec![(CachedKeyValue::F32(kv.clone()), RowMap::identity())];
        kv
    }
}
