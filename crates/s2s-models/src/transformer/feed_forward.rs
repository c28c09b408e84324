//! The position-wise feed-forward network `W_2 act(W_1 x + b_1) + b_2` (Vaswani 2017, 3.3).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::activation::{gelu, relu, silu};
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::engine;
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
        if let (Some(w1), Some(w2)) = (&self.inner.int8, &self.outer.int8) {
            // An int8 model only decodes, so there is no dropout to apply.
            let (b1, b2) = (self.inner.bias_val(), self.outer.bias_val());
            return engine::int8_feed_forward(
                x,
                (w1, b1.as_ref()),
                |h| self.activate(h),
                (w2, b2.as_ref()),
            );
        }
        let h = self.activate(self.inner.forward(x));
        self.outer.forward(self.dropout.forward(h))
    }

    fn activate<const D: usize>(&self, h: Tensor<D>) -> Tensor<D> {
        match self.activation {
            Activation::Relu => relu(h),
            Activation::Swish => silu(h),
            Activation::Gelu => gelu(h),
        }
    }
}
