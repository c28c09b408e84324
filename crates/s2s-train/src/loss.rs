//! The criterion: cross-entropy with label smoothing, masked at padding. [`label_smoothed_nll`]
//! is its definition on logits; [`projected_label_smoothed_nll`] is the same loss with the same
//! gradients, fused with the output projection, and is what training runs.

use burn::tensor::activation::log_softmax;
use burn::tensor::{IndexingUpdateOp, Int, Tensor};
use s2s_models::OutputLayer;

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
    let v = logits.dims()[2];
    log_prob_label_smoothed_nll(log_softmax(logits, 2), target, pad_id, eps, tokens, v)
}

/// [`label_smoothed_nll`] on log-probabilities `[batch, len, width]` already formed (a copy
/// model's mixture over its extended vocabulary). The smoothing spreads over the first `vocab`
/// entries only: the slots past them change from batch to batch.
pub fn log_prob_label_smoothed_nll(
    log_probs: Tensor<3>,
    target: Tensor<2, Int>,
    pad_id: u32,
    eps: f64,
    tokens: usize,
    vocab: usize,
) -> LossOutput {
    let [b, t, width] = log_probs.dims();
    let lp = log_probs.reshape([b * t, width]);
    let target = target.reshape([b * t, 1]);
    let mask = target.clone().not_equal_elem(pad_id as i64).float();
    let nll = lp.clone().gather(1, target).neg() * mask.clone();
    let nll_sum: Tensor<1> = nll.clone().sum().detach();
    let denom = tokens.max(1) as f64;
    let loss = if eps > 0.0 {
        let lp = if vocab < width {
            lp.slice([0..b * t, 0..vocab])
        } else {
            lp
        };
        let smooth = lp.mean_dim(1).neg() * mask;
        (nll.sum() * (1.0 - eps) + smooth.sum() * eps) / denom
    } else {
        nll.sum() / denom
    };
    LossOutput { loss, nll_sum }
}

/// [`label_smoothed_nll`] of `output.logits(hidden)`, with the same value and gradients, for
/// `hidden: [batch, len, d]`.
///
/// Why: batch x length x vocabulary logits are large (41 MB at 64 x 20 x 8000), and in the
/// autodiff graph every element-wise op of the log-softmax, the loss and their backward passes
/// is another pass over them. Here the logits never enter the graph. Their gradient has a closed
/// form, `w_r (softmax_r - eps / V - (1 - eps) onehot(target_r))` with `w_r = mask_r / tokens`,
/// which is formed in a few passes and multiplied straight into the gradients of the hidden
/// states (`dH = G W^T`), the weight (`dW = H^T G`) and the bias (`db = sum_r G_r`). The graph
/// then holds `sum(H * dH) + sum(W * dW) + sum(b * db)`, whose gradients are exactly those, shifted
/// by a constant so that its value is the loss.
pub fn projected_label_smoothed_nll(
    hidden: Tensor<3>,
    output: &OutputLayer,
    target: Tensor<2, Int>,
    pad_id: u32,
    eps: f64,
    tokens: usize,
) -> LossOutput {
    let [b, t, d] = hidden.dims();
    let n = b * t;
    let h = hidden.reshape([n, d]);
    let [_, v] = output.weight.dims();
    // Constants from here on: nothing below the next line is recorded for backpropagation.
    let (hc, wc) = (constant(h.clone()), constant(output.weight.clone()));
    let logits =
        burn::tensor::module::linear(hc.clone(), wc.clone(), output.bias.clone().map(constant));
    let target = target.reshape([n, 1]);
    let denom = tokens.max(1) as f64;
    let mask = target.clone().not_equal_elem(pad_id as i64).float();

    let max = logits.clone().max_dim(1);
    let exp = (logits.clone() - max.clone()).exp();
    let sum = exp.clone().sum_dim(1);
    let lse = max + sum.clone().log();
    let nll = (lse.clone() - logits.clone().gather(1, target.clone())) * mask.clone();
    let nll_sum = nll.clone().sum();
    let loss_value = if eps > 0.0 {
        let smooth = (lse - logits.mean_dim(1)) * mask.clone();
        (nll_sum.clone() * (1.0 - eps) + smooth.sum() * eps) / denom
    } else {
        nll_sum.clone() / denom
    };

    // G = w_r softmax_r - w_r eps / V, then - w_r (1 - eps) at each row's target.
    let row_w = mask / denom;
    let mut grad = exp * (row_w.clone() / sum);
    if eps > 0.0 {
        grad = grad - row_w.clone().mul_scalar(eps / v as f64);
    }
    let grad = grad.scatter(
        1,
        target,
        row_w.mul_scalar(-(1.0 - eps)),
        IndexingUpdateOp::Add,
    );
    let d_hidden = grad.clone().matmul(wc.transpose());
    let d_weight = hc.transpose().matmul(grad.clone());

    let mut surrogate = (h * d_hidden).sum() + (output.weight.clone() * d_weight).sum();
    if let Some(bias) = &output.bias {
        // The column sums as a product with a row of ones: one pass, where a reduction over
        // rows walks the big matrix column by column.
        let ones = Tensor::<2>::ones([1, n], &grad.device());
        surrogate = surrogate + (bias.clone() * ones.matmul(grad).reshape([v])).sum();
    }
    // `s - s` is exactly zero, so the value is `loss_value` and the gradients are the surrogate's.
    let loss = surrogate.clone() - surrogate.detach() + loss_value;
    LossOutput { loss, nll_sum }
}

/// Joint CTC's term for speech batch `b`: the CTC loss of its transcripts (the target rows
/// without `<eos>`; the blank is the padding id, never a target) under the encoder's
/// log-probabilities `log_probs: [positions, batch, vocab]`, each row spanning the positions its
/// frames subsample to, summed over the batch and divided by `tokens` like the cross-entropy.
pub fn ctc_per_token(log_probs: Tensor<3>, b: &s2s_data::Batch, tokens: usize) -> Tensor<1> {
    let device = log_probs.device();
    let lengths: Vec<u32> = b.tgt_lens.iter().map(|&n| n as u32 - 1).collect();
    let frames = b.frames.as_ref().expect("a CTC loss needs a speech batch");
    let positions: Vec<u32> = frames
        .lens
        .iter()
        .map(|&n| s2s_models::speech::subsampled_len(n) as u32)
        .collect();
    burn::tensor::module::ctc_loss(
        log_probs,
        s2s_models::ids_2d(&b.tgt_out, [b.batch_size, b.tgt_len], &device),
        s2s_models::ids_1d(&positions, &device),
        s2s_models::ids_1d(&lengths, &device),
        b.specials.pad as usize,
    )
    .sum()
        / tokens.max(1) as f64
}

/// The same values with no autodiff tracking. `detach` alone is not enough: on a parameter (a leaf
/// that requires gradients) it keeps `require_grad`, and every op on the result would be recorded.
fn constant<const D: usize>(t: Tensor<D>) -> Tensor<D> {
    t.detach().set_require_grad(false)
}
