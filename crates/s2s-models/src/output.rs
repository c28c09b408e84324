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

    /// The same layer for decoding: the same weights, out of any autodiff graph, so that steps
    /// record nothing. No copy: a tied weight stays a transposed view of the embedding table,
    /// which the matrix kernels pack once per search (`decoder::translate_all`).
    pub fn for_inference(&self) -> Self {
        // `detach` alone keeps a parameter (a leaf) tracked; see s2s-train's loss.
        Self {
            weight: self.weight.clone().detach().set_require_grad(false),
            bias: self
                .bias
                .clone()
                .map(|b| b.detach().set_require_grad(false)),
        }
    }

    /// Hidden states `[.., hidden]` to logits `[.., vocab]`.
    pub fn logits<const D: usize>(&self, hidden: Tensor<D>) -> Tensor<D> {
        crate::engine::linear(hidden, self.weight.clone(), self.bias.clone())
    }
}
