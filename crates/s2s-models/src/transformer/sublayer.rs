//! The residual connection around every sublayer, with its layer normalisation either after the
//! sum (post-norm, Vaswani 2017) or on the sublayer's input (pre-norm, which trains deep stacks
//! without warmup tricks and then needs a final normalisation after the last layer).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, LayerNorm, LayerNormConfig};
use burn::tensor::{Device, Tensor};

#[derive(Module, Debug)]
pub struct Sublayer {
    pub norm: LayerNorm,
    /// Dropout on the sublayer's output before it is added to the residual.
    pub dropout: Dropout,
    pub pre_norm: bool,
}

impl Sublayer {
    pub fn new(d_model: usize, dropout: f64, pre_norm: bool, device: &Device) -> Self {
        Self {
            norm: LayerNormConfig::new(d_model).init(device),
            dropout: DropoutConfig::new(dropout).init(),
            pre_norm,
        }
    }

    /// `x + f(x)` with normalisation placed by `pre_norm`; `f` may return something besides its
    /// output (attention weights, keys and values to cache), passed through untouched.
    pub fn forward<T>(
        &self,
        x: Tensor<3>,
        f: impl FnOnce(Tensor<3>) -> (Tensor<3>, T),
    ) -> (Tensor<3>, T) {
        if self.pre_norm {
            let (y, extra) = f(self.norm.forward(x.clone()));
            (x + self.dropout.forward(y), extra)
        } else {
            let (y, extra) = f(x.clone());
            (self.norm.forward(x + self.dropout.forward(y)), extra)
        }
    }
}
