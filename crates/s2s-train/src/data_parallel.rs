//! Data parallelism over several devices of one machine, with burn's own primitives.
//!
//! One optimiser step consumes N consecutive batches of the epoch's batch list, one per device
//! (`devices[0]` is the main device and holds the model and the optimiser state). This is what
//! burn-train 0.22's `MultiDeviceTrainEpoch` does with `MultiDeviceOptim::OptimMainDevice`:
//!
//! 1. every device gets a fork of the model (`Module::fork`: same parameter ids, its own autodiff
//!    graph) and runs forward and backward on its batch in its own thread, as burn-train's
//!    `MultiDevicesTrainStep` workers do;
//! 2. each device's `GradientsParams` are moved to the main device (`GradientsParams::to_device`)
//!    and summed with burn-optim's `GradientsAccumulator`;
//! 3. the trainer applies one `ModuleOptimizer::step` on the main device.
//!
//! **Averaging.** burn's accumulator *sums*: with burn-train's convention the update of N devices
//! follows the sum of N per-batch mean losses, i.e. N times the gradient of one batch. s2s scales
//! each device's loss by `1/k` before backward (`k` = batches in this step, N except at the end of
//! an epoch), so the gradient is the mean of the per-batch gradients and a learning rate tuned on
//! one device means the same per-batch step size on N. Token-budget batches hold about the same
//! number of target tokens, so this is close to the token-weighted mean over all k batches.
//!
//! **Random streams and exact resume.** Batch `i` of the step is computed with the streams of
//! replica `i`: replica 0 uses exactly the single-device seeds of the step, replica `i > 0` a
//! seed mixed with `i` ([`replica_seed`]). burn's random generator is process-wide (flex and
//! cubecl alike), so the seed-then-forward of a replica runs under a process lock; the backward
//! passes, which draw nothing, run concurrently. Dropout masks are therefore a function of
//! `(seed, step, replica)` and not of thread timing. The data position advances by k batches per
//! step, so `state.json`'s `batch_in_epoch` stays exact and resume continues bit for bit, as long
//! as it resumes with the same number of devices (another N changes which batches share a step).

use crate::TrainError;
use crate::config::TrainConfig;
use crate::loss::{LossOutput, projected_label_smoothed_nll};
use crate::schedule::teacher_forcing_ratio;
use crate::trainer::{int_tensor, mix};
use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Bool, Device, Tensor, TensorData};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use s2s_data::{Batch, EncodedSplit};
use s2s_models::{PaddedIds, Seq2SeqModel};
use std::sync::Mutex;

/// Held while a replica seeds burn's process-wide generator and runs its forward pass.
static FORWARD: Mutex<()> = Mutex::new(());

/// Seed of replica `replica`'s random streams at `step`; replica 0 has the single-device seed.
pub fn replica_seed(seed: u64, replica: usize) -> u64 {
    if replica == 0 {
        seed
    } else {
        mix(seed, 0xD1CE ^ replica as u64)
    }
}

/// The forward pass of one training batch on `device` (autodiff): dropout seeded from
/// `(seed, step, replica)`, scheduled sampling from its own generator seeded the same way, then
/// the label-smoothed loss. With `replica = 0` this is the single-device step of [`crate::train`].
pub fn batch_loss(
    model: &Seq2SeqModel,
    device: &Device,
    b: &Batch,
    cfg: &TrainConfig,
    step: usize,
    replica: usize,
) -> LossOutput {
    let src = PaddedIds::from_flat(&b.src, b.batch_size, b.src_len, s2s_data::PAD, device);
    let tgt_in = int_tensor(&b.tgt_in, [b.batch_size, b.tgt_len], device);
    let tgt_out = int_tensor(&b.tgt_out, [b.batch_size, b.tgt_len], device);
    // Every random stream of this step comes from (seed, step): dropout via the device seed,
    // scheduled sampling via its own generator. Resume therefore needs no RNG state.
    device.seed(replica_seed(mix(cfg.seed, step as u64), replica));
    let tf = teacher_forcing_ratio(cfg, step);
    let hidden = if tf >= 1.0 {
        model.teacher_hidden(&src, tgt_in, None)
    } else {
        let mut rng =
            ChaCha8Rng::seed_from_u64(replica_seed(mix(cfg.seed ^ 0x5EED, step as u64), replica));
        let rows = b.batch_size;
        let dev = device.clone();
        let mut choose = move |_t: usize| -> Tensor<1, Bool> {
            let v: Vec<bool> = (0..rows).map(|_| rng.random::<f64>() < tf).collect();
            Tensor::from_data(TensorData::new(v, [rows]), &dev)
        };
        model.teacher_hidden(&src, tgt_in, Some(&mut choose))
    };
    projected_label_smoothed_nll(
        hidden,
        &model.output_layer(),
        tgt_out,
        s2s_data::PAD,
        cfg.label_smoothing,
        b.num_tgt_tokens(),
    )
}

/// A step's gradients before the finiteness check: one device's loss still to backpropagate, or
/// the gradients data parallelism already averaged.
#[allow(clippy::large_enum_variant)] // one value per step; a burn tensor handle is 256 bytes
pub enum Pending {
    Loss(Tensor<1>),
    Grads(GradientsParams),
}

impl Pending {
    pub fn grads(self, model: &Seq2SeqModel) -> GradientsParams {
        match self {
            Pending::Loss(loss) => GradientsParams::from_grads(loss.backward(), model),
            Pending::Grads(grads) => grads,
        }
    }
}

/// The result of one data-parallel forward/backward.
pub struct ParallelStep {
    /// Batches consumed (one per device, fewer at the end of an epoch).
    pub batches: usize,
    /// Target tokens over all of them.
    pub tokens: usize,
    /// Token-weighted mean of the per-batch (unscaled) losses, for logging; non-finite if any
    /// batch's loss was.
    pub loss: f64,
    /// The mean of the per-batch gradients, on the main device.
    pub grads: GradientsParams,
}

/// Forward and backward of `batches[..k]` (k = min(devices, batches)) on one device each, in one
/// thread per device; gradients averaged on `devices[0]`. `model` lives on the autodiff version
/// of `devices[0]`. Worker panics (e.g. out of memory on one GPU) come back as errors naming the
/// device.
pub fn forward_backward(
    model: &Seq2SeqModel,
    devices: &[Device],
    train: &EncodedSplit,
    batches: &[Vec<usize>],
    cfg: &TrainConfig,
    step: usize,
) -> Result<ParallelStep, TrainError> {
    let k = devices.len().min(batches.len());
    assert!(k > 0, "a data-parallel step needs a device and a batch");
    let main = devices[0].clone().autodiff();
    let scale = 1.0 / k as f64;
    let results: Vec<Result<(f64, usize, GradientsParams), String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..k)
            .map(|i| {
                let device = devices[i].clone().autodiff();
                let replica = model.clone();
                let indices = &batches[i];
                s.spawn(move || {
                    let replica = replica.fork(&device);
                    let b = train.batch(indices);
                    let out = {
                        let _rng = FORWARD.lock().unwrap_or_else(|e| e.into_inner());
                        batch_loss(&replica, &device, &b, cfg, step, i)
                    };
                    let value = out.loss.clone().into_scalar::<f32>() as f64;
                    let loss = if k > 1 { out.loss * scale } else { out.loss };
                    let grads = GradientsParams::from_grads(loss.backward(), &replica);
                    (value, b.num_tgt_tokens(), grads)
                })
            })
            .collect();
        workers
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                w.join().map_err(|p| {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    format!(
                        "training worker on device {i} ({:?}) failed: {msg}",
                        devices[i]
                    )
                })
            })
            .collect()
    });
    let mut accumulator = GradientsAccumulator::<Seq2SeqModel>::new();
    let (mut loss_sum, mut tokens) = (0.0f64, 0usize);
    for r in results {
        let (value, n, grads) = r.map_err(TrainError::Config)?;
        loss_sum += value * n as f64;
        tokens += n;
        accumulator.accumulate(model, grads.to_device(&main, model));
    }
    Ok(ParallelStep {
        batches: k,
        tokens,
        loss: loss_sum / tokens.max(1) as f64,
        grads: accumulator.grads(),
    })
}
