//! burn's `Linear` and `Embedding`, each with an optional int8 form of its weight for int8
//! inference (`s2s quantize`, [`crate::engine::int8`]). Their records are burn's (`weight`,
//! `bias`), so models saved with burn's layers load unchanged.
//!
//! Once a layer holds its int8 weight it computes with it alone; its f32 `weight` is never read
//! again. An int8 model loaded from disk leaves that parameter undrawn (burn's lazy
//! initialisation), so its f32 weights never take memory.

use std::sync::Arc;

use burn::module::{Module, Param};
use burn::tensor::{Int, Tensor};

use crate::engine::{self, int8::Int8Matrix};

/// `y = x W + b` with `W: [d_in, d_out]` (burn's layout).
#[derive(Module, Debug)]
pub struct Linear {
    pub weight: Param<Tensor<2>>,
    pub bias: Option<Param<Tensor<1>>>,
    /// `W` transposed (`[d_out, d_in]`, one row per output) and quantised.
    #[module(skip)]
    pub int8: Option<Arc<Int8Matrix>>,
}

impl From<burn::nn::Linear> for Linear {
    fn from(l: burn::nn::Linear) -> Self {
        Self {
            weight: l.weight,
            bias: l.bias,
            int8: None,
        }
    }
}

impl Linear {
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        let bias = self.bias_val();
        match &self.int8 {
            Some(w) => engine::int8_linear(x, w, bias.as_ref()),
            None => engine::linear(x, self.weight.val(), bias),
        }
    }

    /// The bias's value, if the layer has one.
    pub fn bias_val(&self) -> Option<Tensor<1>> {
        self.bias.as_ref().map(|b| b.val())
    }

    /// Quantises the weight (per output row); from now on the layer multiplies in int8.
    pub fn quantize(&mut self) {
        let weight = self.weight.val();
        let [d_in, d_out] = weight.dims();
        self.int8 = Some(Arc::new(quantize_tensor(weight.transpose(), d_out, d_in)));
    }
}

/// A table of `n` vectors of size `d`, looked up by token id.
#[derive(Module, Debug)]
pub struct Embedding {
    pub weight: Param<Tensor<2>>,
    /// The table quantised per row (per token).
    #[module(skip)]
    pub int8: Option<Arc<Int8Matrix>>,
}

impl From<burn::nn::Embedding> for Embedding {
    fn from(e: burn::nn::Embedding) -> Self {
        Self {
            weight: e.weight,
            int8: None,
        }
    }
}

impl Embedding {
    /// `ids: [batch, len]` to `[batch, len, d]`.
    pub fn forward(&self, ids: Tensor<2, Int>) -> Tensor<3> {
        match &self.int8 {
            Some(table) => engine::int8_embedding(table, ids),
            None => burn::tensor::module::embedding(self.weight.val(), ids),
        }
    }

    /// Quantises the table row by row; from now on lookups read the int8 rows.
    pub fn quantize(&mut self) {
        let weight = self.weight.val();
        let [n, d] = weight.dims();
        self.int8 = Some(Arc::new(quantize_tensor(weight, n, d)));
    }
}

fn quantize_tensor(t: Tensor<2>, rows: usize, cols: usize) -> Int8Matrix {
    let values = t
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .expect("f32 weights");
    Int8Matrix::quantize(&values, rows, cols)
}
