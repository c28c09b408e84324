//! A 1-D convolution followed by a gated linear unit (Gehring 2017, 3.2; Dauphin 2017).
//!
//! The convolution is written as "gather the `k` neighbouring inputs of every position, then one
//! matmul" (`[k * c_in] -> [2 * c_out]`, laid out like fairseq's `ConvTBC` weight `[k, c_in,
//! c_out]`). That is one large GEMM on the CPU, and it makes incremental decoding the very same
//! computation: a decoding step multiplies the window of the last `k` inputs by the same matrix.

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor};

use crate::init::normal_linear;

/// `GLU(a; b) = a * sigmoid(b)` over the last axis split in halves.
pub fn glu(x: Tensor<3>) -> Tensor<3> {
    let c = x.dims()[2] / 2;
    x.clone().narrow(2, 0, c) * sigmoid(x.narrow(2, c, c))
}

#[derive(Module, Debug)]
pub struct ConvGlu {
    /// `[kernel * c_in, 2 * c_out]`: the convolution's taps, oldest input first.
    pub proj: Linear,
    pub kernel: usize,
    /// Causal (decoder): position `t` sees inputs `t-k+1..=t`, zeros before the start. Otherwise
    /// (encoder, odd `k`): inputs `t-(k-1)/2..=t+(k-1)/2`, zeros beyond both ends.
    pub causal: bool,
}

impl ConvGlu {
    pub fn new(
        c_in: usize,
        c_out: usize,
        kernel: usize,
        dropout: f64,
        causal: bool,
        device: &Device,
    ) -> Self {
        // Gehring 2017, 3.5 / fairseq: the GLU halves the variance it receives, so the layers
        // before it start with N(0, sqrt(4 (1 - p) / (k c_in))) to keep activations' variance
        // constant through the stack (the (1 - p) compensates for dropout on the input).
        let std = (4.0 * (1.0 - dropout) / (kernel * c_in) as f64).sqrt();
        Self {
            proj: normal_linear(kernel * c_in, 2 * c_out, std, device),
            kernel,
            causal,
        }
    }

    /// Over a whole sequence `x: [batch, len, c_in]` to `[batch, len, c_out]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [b, len, c] = x.dims();
        let device = x.device();
        let k = self.kernel;
        let (left, right) = if self.causal {
            (k - 1, 0)
        } else {
            ((k - 1) / 2, k - 1 - (k - 1) / 2)
        };
        let mut parts = Vec::with_capacity(3);
        if left > 0 {
            parts.push(Tensor::zeros([b, left, c], &device));
        }
        parts.push(x);
        if right > 0 {
            parts.push(Tensor::zeros([b, right, c], &device));
        }
        let padded = Tensor::cat(parts, 1);
        let windows: Vec<Tensor<3>> = (0..k).map(|j| padded.clone().narrow(1, j, len)).collect();
        glu(self.proj.forward(Tensor::cat(windows, 2)))
    }

    /// One causal step over `window: [rows, kernel, c_in]` (the last `k` inputs, oldest first):
    /// `[rows, 1, c_out]`.
    pub fn step(&self, window: Tensor<3>) -> Tensor<3> {
        let [rows, k, c] = window.dims();
        glu(self.proj.forward(window.reshape([rows, 1, k * c])))
    }
}
