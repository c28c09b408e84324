//! Position information added to the (scaled) token embeddings: the fixed sinusoids of Vaswani
//! 2017 (3.5), which need no parameters and extend to any length, or a learned table.

use burn::module::Module;
use burn::nn::Embedding;
use burn::tensor::{Device, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::init::embedding;

/// How positions are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Positions {
    /// `PE(p, 2i) = sin(p / 10000^(2i/d))`, `PE(p, 2i+1) = cos(p / 10000^(2i/d))`.
    Sinusoidal,
    /// The same angles laid out as all sines, then all cosines: `PE(p, i) = sin(..)` and
    /// `PE(p, d/2 + i) = cos(..)` (Marian, tensor2tensor and fairseq's layout).
    SinusoidalConcat,
    /// A trained `[max_positions, d]` table.
    Learned,
}

impl Positions {
    pub fn is_sinusoidal(self) -> bool {
        matches!(self, Positions::Sinusoidal | Positions::SinusoidalConcat)
    }
}

/// The sinusoids of positions `start..start+len` in `layout` (one of the sinusoidal kinds),
/// `[len, d]` (`d` even).
pub fn sinusoids(
    layout: Positions,
    start: usize,
    len: usize,
    d: usize,
    device: &Device,
) -> Tensor<2> {
    let half = d / 2;
    let mut v = vec![0f32; len * d];
    for (row, p) in (start..start + len).enumerate() {
        let out = &mut v[row * d..(row + 1) * d];
        for i in 0..half {
            let angle = p as f64 / 10_000f64.powf(2.0 * i as f64 / d as f64);
            let (sin, cos) = (angle.sin() as f32, angle.cos() as f32);
            if layout == Positions::SinusoidalConcat {
                (out[i], out[half + i]) = (sin, cos);
            } else {
                (out[2 * i], out[2 * i + 1]) = (sin, cos);
            }
        }
    }
    Tensor::from_data(TensorData::new(v, [len, d]), device)
}

#[derive(Module, Debug)]
pub struct PositionEncoding {
    /// The learned table; `None` for sinusoids.
    pub table: Option<Embedding>,
    pub d_model: usize,
    #[module(skip)]
    pub kind: Positions,
}

impl PositionEncoding {
    pub fn new(kind: Positions, d_model: usize, max_positions: usize, device: &Device) -> Self {
        Self {
            table: (kind == Positions::Learned).then(|| {
                embedding(
                    max_positions,
                    d_model,
                    (d_model as f64).powf(-0.5),
                    None,
                    device,
                )
            }),
            d_model,
            kind,
        }
    }

    /// Encodings of positions `start..start+len`, `[1, len, d_model]`, to be broadcast over a
    /// batch. A learned table repeats its last row past `max_positions` rather than failing.
    pub fn forward(&self, start: usize, len: usize, device: &Device) -> Tensor<3> {
        match &self.table {
            None => sinusoids(self.kind, start, len, self.d_model, device).unsqueeze_dim(0),
            Some(table) => {
                let max = table.weight.dims()[0];
                let ids: Vec<i64> = (start..start + len)
                    .map(|p| p.min(max - 1) as i64)
                    .collect();
                let ids: Tensor<2, Int> = Tensor::from_data(TensorData::new(ids, [1, len]), device);
                table.forward(ids)
            }
        }
    }
}
