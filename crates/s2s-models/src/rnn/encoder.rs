//! A multi-layer, optionally bidirectional recurrent encoder that respects padding: a padded
//! position leaves the state unchanged, so a sentence's states do not depend on how much padding
//! its batch needed.

use super::cell::{Cell, CellKind, CellState, input_projection};
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Device, Tensor};

#[derive(Module, Debug)]
pub struct RnnLayer {
    pub ih: Linear,
    pub cell: Cell,
}

impl RnnLayer {
    pub fn new(kind: CellKind, input: usize, hidden: usize, device: &Device) -> Self {
        Self {
            ih: input_projection(kind, input, hidden, true, device),
            cell: Cell::new(kind, hidden, device),
        }
    }

    /// Runs over `x: [batch, len, input]` with `mask: [batch, len]` (1 = real token), forwards or
    /// backwards. Returns per-position outputs `[batch, len, hidden]` and the final state.
    pub fn run(&self, x: Tensor<3>, mask: &Tensor<2>, reverse: bool) -> (Tensor<3>, CellState) {
        let [b, len, _] = x.dims();
        let device = x.device();
        let proj = self.ih.forward(x); // all timesteps in one matmul
        let gh = proj.dims()[2];
        let mut state = CellState::zeros(self.cell.kind(), b, self.cell.hidden, &device);
        let mut outs = vec![None; len];
        for step in 0..len {
            let t = if reverse { len - 1 - step } else { step };
            let xp = proj.clone().slice([0..b, t..t + 1, 0..gh]).reshape([b, gh]);
            let keep = mask.clone().slice([0..b, t..t + 1]);
            let new = self.cell.step(xp, state.clone());
            state = state.masked_update(new, &keep);
            outs[t] = Some(state.h.clone() * keep);
        }
        let outs: Vec<Tensor<2>> = outs.into_iter().map(|o| o.unwrap()).collect();
        (Tensor::stack(outs, 1), state)
    }
}

/// Final states of every layer: forward, and backward when bidirectional.
pub struct EncoderFinal {
    pub forward: Vec<CellState>,
    pub backward: Vec<CellState>,
}

#[derive(Module, Debug)]
pub struct RnnEncoder {
    pub forward: Vec<RnnLayer>,
    pub backward: Vec<RnnLayer>,
    pub dropout: Dropout,
}

impl RnnEncoder {
    pub fn new(
        kind: CellKind,
        input: usize,
        hidden: usize,
        layers: usize,
        bidirectional: bool,
        dropout: f64,
        device: &Device,
    ) -> Self {
        let dirs = if bidirectional { 2 } else { 1 };
        let layer_input = |l: usize| if l == 0 { input } else { hidden * dirs };
        Self {
            forward: (0..layers)
                .map(|l| RnnLayer::new(kind, layer_input(l), hidden, device))
                .collect(),
            backward: if bidirectional {
                (0..layers)
                    .map(|l| RnnLayer::new(kind, layer_input(l), hidden, device))
                    .collect()
            } else {
                Vec::new()
            },
            dropout: DropoutConfig::new(dropout).init(),
        }
    }

    pub fn output_size(&self) -> usize {
        let h = self.forward[0].cell.hidden;
        if self.backward.is_empty() { h } else { 2 * h }
    }

    /// `x: [batch, len, input]`, `mask: [batch, len]` as floats (1 = token, 0 = padding).
    /// `reverse_source` runs the forward-direction layers from the last token to the first
    /// (Sutskever's source reversal); padding is skipped either way, so each sentence starts at
    /// its own last token.
    pub fn forward(
        &self,
        x: Tensor<3>,
        mask: &Tensor<2>,
        reverse_source: bool,
    ) -> (Tensor<3>, EncoderFinal) {
        let mut input = x;
        let mut finals = EncoderFinal {
            forward: Vec::new(),
            backward: Vec::new(),
        };
        for l in 0..self.forward.len() {
            if l > 0 {
                input = self.dropout.forward(input);
            }
            let (fwd, f_state) = self.forward[l].run(input.clone(), mask, reverse_source);
            finals.forward.push(f_state);
            input = if let Some(bwd_layer) = self.backward.get(l) {
                let (bwd, b_state) = bwd_layer.run(input, mask, true);
                finals.backward.push(b_state);
                Tensor::cat(vec![fwd, bwd], 2)
            } else {
                fwd
            };
        }
        (input, finals)
    }
}
