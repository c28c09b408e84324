//! The criterion: cross-entropy with label smoothing, masked at padding.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

/// Loss of one batch.
pub struct LossOutput {
    /// Mean smoothed loss per target token (what is backpropagated).
    pub loss: Tensor<1>,
    /// Summed plain negative log-likelihood over target tokens (for perplexity), detached.
    pub nll_sum: Tensor<1>,
}

/// `logits: [batch, len, vocab]`, `target: [batch, len]`; `tokens` = number of non-pad targets.
///
/// Smoothed loss per token: `(1 - eps) * nll + eps * mean_v(-log p_v)`, the uniform-prior form
/// of Szegedy et al. used by fairseq.
pub fn label_smoothed_nll(
    logits: Tensor<3>,
    target: Tensor<2, Int>,
    pad_id: u32,
    eps: f64,
    tokens: usize,
) -> LossOutput {
    let [b, t, v] = logits.dims();
    let lp = log_softmax(logits.reshape([b * t, v]), 1);
    let target = target.reshape([b * t, 1]);
    let mask = target.clone().not_equal_elem(pad_id as i64).float();
    let nll = lp.clone().gather(1, target).neg() * mask.clone();
    let nll_sum: Tensor<1> = nll.clone().sum().detach();
    let denom = tokens.max(1) as f64;
    let loss = if eps > 0.0 {
        let smooth = lp.mean_dim(1).neg() * mask;
        (nll.sum() * (1.0 - eps) + smooth.sum() * eps) / denom
    } else {
        nll.sum() / denom
    };
    LossOutput { loss, nll_sum }
}
