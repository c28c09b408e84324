//! Burn modules for s2s: the recurrent family (basic encoder-decoder, RNNsearch, Luong), their
//! configs and named presets, and the adapter that lets `s2s-search` decode any of them.

pub mod attention;
pub mod backend;
pub mod config;
pub mod decoder;
pub mod io;
pub mod rnn;

pub use config::{ModelConfig, preset, preset_names};
pub use decoder::Decoder;

use burn::module::Module;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// Every architecture s2s can train, behind one type so the trainer, the search adapter and the
/// server need no generics over models.
#[derive(Module, Debug)]
pub enum Seq2SeqModel {
    Rnn(rnn::RnnSeq2Seq),
}

impl Seq2SeqModel {
    pub fn new(cfg: &ModelConfig, src_vocab: usize, tgt_vocab: usize, device: &Device) -> Self {
        match cfg {
            ModelConfig::Rnn(c) => {
                Seq2SeqModel::Rnn(rnn::RnnSeq2Seq::new(c, src_vocab, tgt_vocab, device))
            }
        }
    }

    /// Teacher-forced logits `[batch, tgt_len, vocab]` (see [`rnn::RnnSeq2Seq::forward_teacher`]).
    pub fn forward_teacher(
        &self,
        src: &PaddedIds,
        tgt_in: Tensor<2, Int>,
        feed_gold: Option<&mut dyn FnMut(usize) -> Tensor<1, Bool>>,
    ) -> Tensor<3> {
        match self {
            Seq2SeqModel::Rnn(m) => {
                m.forward_teacher(src.ids.clone(), src.pad.clone(), tgt_in, feed_gold)
                    .0
            }
        }
    }
}

/// A padded batch of token ids on a device, with its padding mask (true at padding).
#[derive(Clone, Debug)]
pub struct PaddedIds {
    pub ids: Tensor<2, Int>,
    pub pad: Tensor<2, Bool>,
}

impl PaddedIds {
    /// Pads `rows` with `pad_id` to the longest row.
    pub fn new(rows: &[Vec<u32>], pad_id: u32, device: &Device) -> Self {
        let len = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        Self::from_flat(
            &pad_rows(rows, len, pad_id),
            rows.len(),
            len,
            pad_id,
            device,
        )
    }

    /// From row-major ids `[batch, len]` already padded with `pad_id`.
    pub fn from_flat(flat: &[u32], batch: usize, len: usize, pad_id: u32, device: &Device) -> Self {
        let ids: Vec<i64> = flat.iter().map(|&t| t as i64).collect();
        let pad: Vec<bool> = flat.iter().map(|&t| t == pad_id).collect();
        Self {
            ids: Tensor::from_data(TensorData::new(ids, [batch, len]), device),
            pad: Tensor::from_data(TensorData::new(pad, [batch, len]), device),
        }
    }
}

/// Row-major `[rows, len]` ids, right-padded with `pad_id`.
pub fn pad_rows(rows: &[Vec<u32>], len: usize, pad_id: u32) -> Vec<u32> {
    let mut flat = Vec::with_capacity(rows.len() * len);
    for r in rows {
        flat.extend_from_slice(&r[..r.len().min(len)]);
        flat.extend(std::iter::repeat_n(pad_id, len - r.len().min(len)));
    }
    flat
}

/// Converts an int id tensor to a 1-D device tensor.
pub fn ids_1d(ids: &[u32], device: &Device) -> Tensor<1, Int> {
    let v: Vec<i64> = ids.iter().map(|&t| t as i64).collect();
    Tensor::from_data(TensorData::new(v, [ids.len()]), device)
}
