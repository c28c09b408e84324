//! The position-wise feed-forward network `W_2 relu(W_1 x + b_1) + b_2` (Vaswani 2017, 3.3).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Tensor};

use crate::init::xavier_linear;

#[derive(Module, Debug)]
pub struct FeedForward {
    pub inner: Linear,
    pub outer: Linear,
    /// Dropout after the ReLU (fairseq's `activation_dropout`).
    pub dropout: Dropout,
}

impl FeedForward {
    pub fn new(d_model: usize, ffn_dim: usize, dropout: f64, device: &Device) -> Self {
        Self {
            inner: xavier_linear(d_model, ffn_dim, true, device),
            outer: xavier_linear(ffn_dim, d_model, true, device),
            dropout: DropoutConfig::new(dropout).init(),
        }
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.outer
            .forward(self.dropout.forward(relu(self.inner.forward(x))))
    }
}
