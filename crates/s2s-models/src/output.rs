//! The vocabulary projection every decoder ends with, handed out as plain tensors so the training
//! criterion can fuse it with the softmax and the loss (`s2s-train`'s `projected_label_smoothed_nll`)
//! instead of keeping batch x length x vocabulary logits in the autodiff graph.

use burn::tensor::Tensor;

/// `logits = hidden @ weight + bias`, with `weight: [hidden, vocab]`, `bias: [vocab]`. For a tied
/// projection `weight` is the transposed embedding table, so gradients reach the embeddings.
#[derive(Clone, Debug)]
pub struct OutputLayer {
    pub weight: Tensor<2>,
    pub bias: Option<Tensor<1>>,
}

impl OutputLayer {
    /// Of a burn `Linear` (whose weight is already `[d_in, d_out]`).
    pub fn of_linear(linear: &burn::nn::Linear) -> Self {
        Self {
            weight: linear.weight.val(),
            bias: linear.bias.as_ref().map(|b| b.val()),
        }
    }

    /// The same layer with its weight copied into a fresh row-major buffer, outside autodiff:
    /// for decoding, which multiplies by it once per step. A tied weight is a transposed view of
    /// the embedding table, and the matrix product would repack (transpose) that view on every
    /// call: 15-18% of a greedy Transformer batch, measured with `perf` (docs/performance.md).
    pub fn contiguous_for_inference(&self) -> Self {
        let device = self.weight.device();
        Self {
            weight: Tensor::from_data(self.weight.clone().into_data(), &device),
            bias: self.bias.clone(),
        }
    }

    /// Hidden states `[.., hidden]` to logits `[.., vocab]`.
    pub fn logits<const D: usize>(&self, hidden: Tensor<D>) -> Tensor<D> {
        burn::tensor::module::linear(hidden, self.weight.clone(), self.bias.clone())
    }
}
