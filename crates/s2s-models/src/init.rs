//! Parameter initialisers shared by the Transformer and ConvS2S, which follow fairseq's schemes
//! rather than burn's defaults (Kaiming-uniform weights *and* biases).

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::nn::{Embedding, Initializer, Linear};
use burn::tensor::{Device, Distribution, Shape, Tensor, TensorData};

/// A linear layer `[d_in, d_out]` whose weight comes from `init` and whose bias (if any) is zero,
/// as in fairseq's `Linear` helpers.
pub fn linear(d_in: usize, d_out: usize, init: Initializer, bias: bool, device: &Device) -> Linear {
    Linear {
        weight: init.init_with([d_in, d_out], Some(d_in), Some(d_out), device),
        bias: bias.then(|| Initializer::Zeros.init([d_out], device)),
    }
}

/// Xavier-uniform weight, zero bias: fairseq's Transformer layers.
pub fn xavier_linear(d_in: usize, d_out: usize, bias: bool, device: &Device) -> Linear {
    linear(
        d_in,
        d_out,
        Initializer::XavierUniform { gain: 1.0 },
        bias,
        device,
    )
}

/// Normal weight with standard deviation `std`, zero bias: fairseq's ConvS2S layers.
pub fn normal_linear(d_in: usize, d_out: usize, std: f64, device: &Device) -> Linear {
    linear(
        d_in,
        d_out,
        Initializer::Normal { mean: 0.0, std },
        true,
        device,
    )
}

/// An embedding table drawn from `N(0, std)` whose row `pad` is zero (fairseq's `padding_idx`), so
/// padding starts out contributing nothing. Drawn lazily, at its first read, like burn's own
/// initialisers: a model whose weights are loaded never draws it ([`draw_now`] draws it first
/// for training, in the same order as an eager draw, since embeddings lead their models).
pub fn embedding(n: usize, d: usize, std: f64, pad: Option<u32>, device: &Device) -> Embedding {
    let pad = pad.filter(|&p| (p as usize) < n);
    let draw = move |device: &Device, require_grad: bool| {
        let mut weight: Tensor<2> = Tensor::random([n, d], Distribution::Normal(0.0, std), device);
        if let Some(pad) = pad {
            let keep: Vec<f32> = (0..n)
                .map(|i| if i == pad as usize { 0.0 } else { 1.0 })
                .collect();
            weight = weight * Tensor::<2>::from_data(TensorData::new(keep, [n, 1]), device);
        }
        if require_grad {
            weight = weight.require_grad();
        }
        weight
    };
    Embedding {
        weight: Param::uninitialized(
            ParamId::new(),
            draw,
            device.clone(),
            true,
            Shape::new([n, d]),
        ),
    }
}

/// Draws every parameter's initial value now, on this thread. burn initialises parameters
/// lazily, at their first read, from the generator of the thread that reads them; a model
/// whose first reads happen in worker threads (batches split over the cores, or several devices)
/// would take its initial values from whichever worker got there first. Drawn here, they come
/// from the generator the caller just seeded.
pub fn draw_now<M: Module>(model: &M) {
    struct Touch;
    impl ModuleVisitor for Touch {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let _ = param.val();
        }
    }
    model.visit(&mut Touch);
}
