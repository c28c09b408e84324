//! The position-wise feed-forward network `W_2 act(W_1 x + b_1) + b_2` (Vaswani 2017, 3.3).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::activation::{gelu, relu, silu};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::init::xavier_linear;
use crate::layers::Linear;

/// The nonlinearity between the two projections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `max(0, x)` (Vaswani 2017).
    #[default]
    Relu,
    /// `x * sigmoid(x)`, also called SiLU (Marian's `swish`).
    Swish,
    /// `x * Phi(x)` with the exact normal CDF.
    Gelu,
}

#[derive(Module, Debug)]
pub struct FeedForward {
    pub inner: Linear,
    pub outer: Linear,
    /// Dropout after the activation (fairseq's `activation_dropout`).
    pub dropout: Dropout,
    #[module(skip)]
    pub activation: Activation,
}

impl FeedForward {
    pub fn new(
        d_model: usize,
        ffn_dim: usize,
        activation: Activation,
        dropout: f64,
        device: &Device,
    ) -> Self {
        Self {
            inner: xavier_linear(d_model, ffn_dim, true, device).into(),
            outer: xavier_linear(ffn_dim, d_model, true, device).into(),
            dropout: DropoutConfig::new(dropout).init(),
            activation,
        }
    }

    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = self.inner.forward(x);
        let h = match self.activation {
            Activation::Relu => relu(h),
            Activation::Swish => silu(h),
            Activation::Gelu => gelu(h),
        };
        self.outer.forward(self.dropout.forward(h))
    }
}
