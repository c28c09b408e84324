//! Fused recurrent cells. Input projections are computed outside the cell (for all timesteps in
//! one matmul where possible); the cell only adds the hidden-to-hidden projection and applies the
//! gates, with all gates of a step in one matmul.

use burn::module::Module;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

/// Which recurrence a layer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellKind {
    Lstm,
    Gru,
}

impl CellKind {
    /// Number of gate blocks in the fused projection.
    pub fn gates(self) -> usize {
        match self {
            CellKind::Lstm => 4,
            CellKind::Gru => 3,
        }
    }
}

/// Hidden state of one layer: `h`, plus the memory cell `c` for an LSTM.
#[derive(Clone, Debug)]
pub struct CellState {
    pub h: Tensor<2>,
    pub c: Option<Tensor<2>>,
}

impl CellState {
    pub fn zeros(kind: CellKind, batch: usize, hidden: usize, device: &Device) -> Self {
        let z = Tensor::zeros([batch, hidden], device);
        Self {
            c: (kind == CellKind::Lstm).then(|| z.clone()),
            h: z,
        }
    }

    /// Keeps `new` where `keep_new` is 1 and `self` where it is 0 (`keep_new`: `[batch, 1]`).
    pub fn masked_update(self, new: CellState, keep_new: &Tensor<2>) -> CellState {
        let mix = |old: Tensor<2>, new: Tensor<2>| old.clone() + (new - old) * keep_new.clone();
        CellState {
            h: mix(self.h, new.h),
            c: match (self.c, new.c) {
                (Some(o), Some(n)) => Some(mix(o, n)),
                _ => None,
            },
        }
    }

    pub fn select_rows(self, idx: &Tensor<1, burn::tensor::Int>) -> CellState {
        CellState {
            h: self.h.select(0, idx.clone()),
            c: self.c.map(|c| c.select(0, idx.clone())),
        }
    }
}

/// The hidden-to-hidden half of an LSTM or GRU layer (PyTorch's gate layout and equations).
#[derive(Module, Debug)]
pub struct Cell {
    /// `[hidden, gates * hidden]`, with the recurrent bias (GRU needs it apart from the input bias).
    pub hh: Linear,
    pub hidden: usize,
    pub kind_is_lstm: bool,
}

impl Cell {
    pub fn new(kind: CellKind, hidden: usize, device: &Device) -> Self {
        let bound = 1.0 / (hidden as f64).sqrt();
        Self {
            hh: LinearConfig::new(hidden, kind.gates() * hidden)
                .with_initializer(Initializer::Uniform {
                    min: -bound,
                    max: bound,
                })
                .init(device),
            hidden,
            kind_is_lstm: kind == CellKind::Lstm,
        }
    }

    pub fn kind(&self) -> CellKind {
        if self.kind_is_lstm {
            CellKind::Lstm
        } else {
            CellKind::Gru
        }
    }

    /// One step. `x_proj` is the input projection `W_ih x + b_ih`, shape `[batch, gates*hidden]`.
    pub fn step(&self, x_proj: Tensor<2>, state: CellState) -> CellState {
        let h_proj = self.hh.forward(state.h.clone());
        let hs = self.hidden;
        if self.kind_is_lstm {
            let gates = x_proj + h_proj;
            let mut parts = gates.chunk(4, 1).into_iter();
            let (i, f, g, o) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let c_prev = state.c.expect("LSTM state carries a memory cell");
            let c = sigmoid(f) * c_prev + sigmoid(i) * g.tanh();
            let h = sigmoid(o) * c.clone().tanh();
            CellState { h, c: Some(c) }
        } else {
            let [b, _] = x_proj.dims();
            let rz =
                sigmoid(x_proj.clone().narrow(1, 0, 2 * hs) + h_proj.clone().narrow(1, 0, 2 * hs));
            let r = rz.clone().narrow(1, 0, hs);
            let z = rz.narrow(1, hs, hs);
            let n = (x_proj.narrow(1, 2 * hs, hs) + r * h_proj.narrow(1, 2 * hs, hs)).tanh();
            debug_assert_eq!(n.dims(), [b, hs]);
            let h = n.clone() + z * (state.h - n);
            CellState { h, c: None }
        }
    }
}

/// An input projection for a recurrent layer: `W_ih x + b`, shared init with [`Cell`].
pub fn input_projection(
    kind: CellKind,
    input: usize,
    hidden: usize,
    bias: bool,
    device: &Device,
) -> Linear {
    let bound = 1.0 / (hidden as f64).sqrt();
    LinearConfig::new(input, kind.gates() * hidden)
        .with_bias(bias)
        .with_initializer(Initializer::Uniform {
            min: -bound,
            max: bound,
        })
        .init(device)
}
