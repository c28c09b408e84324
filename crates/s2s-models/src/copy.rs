//! Copying from the source (See et al. 2017's pointer-generator; OpenNMT's copy generator): a
//! gate `p_gen = sigmoid(w . h + b)` on the decoder output mixes the vocabulary distribution
//! with the attention over the source,
//!
//! `P(w) = p_gen * softmax(logits)(w) + (1 - p_gen) * sum over source positions i with id w of a_i`,
//!
//! over the extended vocabulary of `s2s_data::copy`: ids past the vocabulary are the source's
//! unknown pieces, which only copying can output. Everywhere else a model reads those ids as
//! `<unk>` ([`known_ids`]).

use burn::module::Module;
use burn::nn::LinearConfig;
use burn::tensor::activation::{sigmoid, softmax};
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor};

use crate::layers::Linear;

/// The generation gate of a copy model.
#[derive(Module, Debug)]
pub struct CopyGate {
    pub gate: Linear,
    /// The (joint) vocabulary's size: ids from here on are copied source pieces.
    #[module(skip)]
    pub vocab: usize,
}

impl CopyGate {
    /// A gate reading decoder outputs of width `d`, over a vocabulary of `vocab` ids.
    pub fn new(d: usize, vocab: usize, device: &Device) -> Self {
        Self {
            gate: LinearConfig::new(d, 1).init(device).into(),
            vocab,
        }
    }

    /// `ids` as the embeddings read them ([`known_ids`]).
    pub fn known<const D: usize>(&self, ids: Tensor<D, Int>) -> Tensor<D, Int> {
        known_ids(ids, self.vocab)
    }

    /// The probabilities `[batch, len, width]` over the extended vocabulary (`width` at least
    /// the vocabulary), from the decoder output `hidden: [batch, len, d]`, its vocabulary
    /// `logits: [batch, len, V]`, the attention `[batch, len, src_len]` and the source ids
    /// `src: [batch, src_len]` (extended; padding has no attention, so it adds nothing).
    pub fn mix(
        &self,
        hidden: Tensor<3>,
        logits: Tensor<3>,
        attention: Tensor<3>,
        src: Tensor<2, Int>,
        width: usize,
    ) -> Tensor<3> {
        let [b, t, v] = logits.dims();
        let [_, s] = src.dims();
        let p_gen = sigmoid(self.gate.forward(hidden)); // [b, t, 1]
        let mut generate = softmax(logits, 2) * p_gen.clone();
        if width > v {
            let device = generate.device();
            generate = Tensor::cat(vec![generate, Tensor::zeros([b, t, width - v], &device)], 2);
        }
        let copy = attention * p_gen.neg().add_scalar(1.0);
        let at = src.reshape([b, 1, s]).expand([b, t, s]);
        generate.scatter(2, at, copy, IndexingUpdateOp::Add)
    }
}

/// `ids` with every id past the vocabulary (`>= vocab`, a copied source piece) read as `<unk>`.
pub fn known_ids<const D: usize>(ids: Tensor<D, Int>, vocab: usize) -> Tensor<D, Int> {
    let past = ids.clone().greater_equal_elem(vocab as i64);
    ids.mask_fill(past, s2s_data::UNK as i64)
}

/// The extended vocabulary's width for sources `src`: the vocabulary, plus the slots up to the
/// largest id past it.
pub fn extended_width(src: impl IntoIterator<Item = u32>, vocab: usize) -> usize {
    src.into_iter()
        .map(|id| id as usize + 1)
        .max()
        .unwrap_or(0)
        .max(vocab)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    #[test]
    fn the_mixture_is_a_distribution_and_copies_onto_source_ids() {
        let device = Device::flex();
        let gate = CopyGate::new(2, 3, &device);
        let hidden =
            Tensor::<3>::from_data(TensorData::new(vec![0.3f32, -0.2], [1, 1, 2]), &device);
        let logits =
            Tensor::<3>::from_data(TensorData::new(vec![0.0f32, 1.0, 2.0], [1, 1, 3]), &device);
        // Source ids 1, 4 (past the vocabulary of 3), 4 again, then padding (0) with no weight.
        let attention = Tensor::<3>::from_data(
            TensorData::new(vec![0.5f32, 0.3, 0.2, 0.0], [1, 1, 4]),
            &device,
        );
        let src =
            Tensor::<2, Int>::from_data(TensorData::new(vec![1i64, 4, 4, 0], [1, 4]), &device);
        let p: Vec<f32> = gate
            .mix(hidden.clone(), logits.clone(), attention, src, 5)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let p_gen = sigmoid(gate.gate.forward(hidden))
            .into_data()
            .try_to_vec::<f32>()
            .unwrap()[0];
        let soft: Vec<f32> = softmax(logits, 2).into_data().try_to_vec::<f32>().unwrap();
        let close = |a: f32, b: f32| (a - b).abs() < 1e-6;
        assert!(close(p[0], p_gen * soft[0]));
        assert!(close(p[1], p_gen * soft[1] + (1.0 - p_gen) * 0.5));
        assert!(close(p[2], p_gen * soft[2]));
        assert!(close(p[3], 0.0), "an empty slot");
        assert!(close(p[4], (1.0 - p_gen) * 0.5), "both positions of id 4");
        assert!(close(p.iter().sum(), 1.0));
    }

    #[test]
    fn ids_past_the_vocabulary_read_as_unknown() {
        let device = Device::flex();
        let ids =
            Tensor::<2, Int>::from_data(TensorData::new(vec![0i64, 7, 8, 12], [2, 2]), &device);
        let known: Vec<i64> = known_ids(ids, 8)
            .into_data()
            .convert::<i64>()
            .try_to_vec::<i64>()
            .unwrap();
        assert_eq!(known, [0, 7, s2s_data::UNK as i64, s2s_data::UNK as i64]);
        assert_eq!(extended_width([3, 9, 11], 8), 12);
        assert_eq!(extended_width([3], 8), 8);
    }
}
