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
//! seed mixed with `i` ([`replica_seed`]). The CPU backend's generator is per thread (s2s's
//! burn-flex patch), but cubecl's is process-wide, so the seed-then-forward of a device replica
//! runs under a process lock; the backward passes, which draw nothing, run concurrently. Dropout
//! masks are therefore a function of `(seed, step, replica)` and not of thread timing. The data
//! position advances by k batches per step, so `state.json`'s `batch_in_epoch` stays exact and
//! resume continues bit for bit, as long as it resumes with the same number of devices (another
//! N changes which batches share a step).
//!
//! **One CPU, several cores** ([`split_over_cores`]). On the CPU, `s2s train` splits each batch's
//! rows over the cores instead: core `i` trains a replica on its share with single-threaded ops
//! and replica `i`'s streams, drawn from its own thread's generator (no lock), and the shares'
//! losses are weighted by their target tokens, so the summed gradient is the batch's. This is
//! Marian's CPU training (one graph per `--cpu-threads` worker). Why: split op by op, a recurrent
//! step's 64-row products and small element-wise ops leave a core idle for a third of the time;
//! measured numbers are in docs/performance.md. The split depends on the number of cores
//! (`RAYON_NUM_THREADS`), so an exact resume needs the same number.

use crate::TrainError;
use crate::loss::{
    LossOutput, ctc_per_token, log_prob_label_smoothed_nll, projected_label_smoothed_nll,
};
use crate::schedule::teacher_forcing_ratio;
use crate::trainer::mix;
use burn::module::Module;
use burn::optim::{GradientsAccumulator, GradientsParams};
use burn::tensor::{Bool, Device, Tensor, TensorData};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use s2s_data::{Batch, EncodedSplit};
use s2s_infer::config::TrainConfig;
use s2s_models::ids_2d;
use s2s_models::{PaddedSource, Seq2SeqModel};
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
    let src = match &b.frames {
        // SpecAugment: masks drawn from (seed, step, replica) like dropout, so resume needs no
        // RNG state either.
        Some(frames) if !cfg.spec_augment.is_off() => {
            let mut frames = frames.clone();
            frames.augment(
                &cfg.spec_augment,
                replica_seed(mix(cfg.seed ^ 0x05EC_A06D, step as u64), replica),
            );
            PaddedSource::from_frames(frames.data, &frames.lens, frames.len, frames.bins, device)
        }
        // Word dropout, drawn the same way.
        None if cfg.word_dropout > 0.0 => {
            let mut dropped = b.clone();
            dropped.drop_source_words(
                cfg.word_dropout,
                replica_seed(mix(cfg.seed ^ 0x0D_0B0D, step as u64), replica),
            );
            PaddedSource::from_batch(&dropped, device)
        }
        _ => PaddedSource::from_batch(b, device),
    };
    let tgt_in = ids_2d(&b.tgt_in, [b.batch_size, b.tgt_len], device);
    let targets = model.loss_targets(b);
    let tgt_out = ids_2d(&targets.ids, targets.shape, device);
    // Every random stream of this step comes from (seed, step): dropout via the device seed,
    // scheduled sampling via its own generator. Resume therefore needs no RNG state.
    device.seed(replica_seed(mix(cfg.seed, step as u64), replica));
    let tf = teacher_forcing_ratio(cfg, step);
    if let Some(copy) = model.copy_gate() {
        // A copy model's output is a mixture, not a projection: no fused criterion.
        let log_probs = model.teacher_log_probs(&src, tgt_in, None);
        return log_prob_label_smoothed_nll(
            log_probs,
            tgt_out,
            b.specials.pad,
            cfg.label_smoothing,
            targets.tokens,
            copy.vocab,
        );
    }
    // Joint CTC: the encoder's CTC log-probabilities beside the decoder's features.
    let mut ctc = None;
    let hidden = if let (Some(w), Seq2SeqModel::Transformer(m)) = (model.ctc_weight(), model) {
        let (hidden, log_probs) = m.teacher_hidden_ctc(&src, tgt_in);
        ctc = Some((
            w,
            log_probs.expect("a model with a CTC weight has a CTC projection"),
        ));
        hidden
    } else if tf >= 1.0 {
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
    let ce = projected_label_smoothed_nll(
        hidden,
        &model.output_layer(),
        tgt_out,
        b.specials.pad,
        cfg.label_smoothing,
        targets.tokens,
    );
    match ctc {
        Some((w, log_probs)) => LossOutput {
            loss: ce.loss * (1.0 - w) + ctc_per_token(log_probs, b, targets.tokens) * w,
            nll_sum: ce.nll_sum,
        },
        None => ce,
    }
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

/// What one replica's forward and backward produced.
struct ReplicaResult {
    /// Its (unweighted) mean loss, for logging.
    loss: f64,
    tokens: usize,
    grads: GradientsParams,
}

/// Forward and backward of batch `b` by a fork of `model` on `device` (autodiff), as replica
/// `replica` of the step, with the loss scaled by `weight` before backward. Under
/// `serial_forward`, the seed-then-forward holds the process lock (see the module docs).
#[allow(clippy::too_many_arguments)]
fn replica_step(
    model: Seq2SeqModel,
    device: &Device,
    b: &Batch,
    cfg: &TrainConfig,
    step: usize,
    replica: usize,
    weight: f64,
    serial_forward: bool,
) -> ReplicaResult {
    let replica_model = model.fork(device);
    let out = {
        let _rng = serial_forward.then(|| FORWARD.lock().unwrap_or_else(|e| e.into_inner()));
        batch_loss(&replica_model, device, b, cfg, step, replica)
    };
    let loss = out.loss.clone().into_scalar::<f32>() as f64;
    // A weight of 1 (one device) multiplies exactly, so it needs no case of its own.
    let scaled = out.loss * weight;
    ReplicaResult {
        loss,
        tokens: replica_model.loss_tokens(b),
        grads: GradientsParams::from_grads(scaled.backward(), &replica_model),
    }
}

/// Sums the replicas' (already weighted) gradients on `main`, and their losses weighted by
/// target tokens.
fn sum_replicas(model: &Seq2SeqModel, main: &Device, results: Vec<ReplicaResult>) -> ParallelStep {
    let batches = results.len();
    let mut accumulator = GradientsAccumulator::<Seq2SeqModel>::new();
    let (mut loss_sum, mut tokens) = (0.0f64, 0usize);
    for r in results {
        loss_sum += r.loss * r.tokens as f64;
        tokens += r.tokens;
        accumulator.accumulate(model, r.grads.to_device(main, model));
    }
    ParallelStep {
        batches,
        tokens,
        loss: loss_sum / tokens.max(1) as f64,
        grads: accumulator.grads(),
    }
}

/// The gradients of one batch on one device (`device`: the plain one; `model` lives on its
/// autodiff version): on a CPU with several cores and enough rows, its rows split over the
/// cores ([`split_over_cores`]), else one forward and one backward.
pub fn batch_gradients(
    model: &Seq2SeqModel,
    device: &Device,
    b: &Batch,
    cfg: &TrainConfig,
    step: usize,
) -> (f64, usize, Pending) {
    let workers = s2s_models::workers::worker_count(device, b.batch_size);
    if workers > 1 {
        let p = split_over_cores(model, device, b, cfg, step, workers);
        return (p.loss, p.tokens, Pending::Grads(p.grads));
    }
    let out = batch_loss(model, &device.clone().autodiff(), b, cfg, step, 0);
    let v = out.loss.clone().into_scalar::<f32>() as f64;
    (v, model.loss_tokens(b), Pending::Loss(out.loss))
}

/// One batch's forward and backward with its rows split into `workers` contiguous shares, one
/// per core: each core trains a fork of `model` on its share with single-threaded tensor ops
/// (`s2s_models::workers`), and the gradients are summed. Each share's mean loss is weighted by
/// its share of the batch's target tokens, so the sum is the batch's mean loss and the summed
/// gradient is the batch's gradient (up to the order of floating-point additions). Share `i`
/// draws dropout from replica `i`'s streams, on its worker thread's own generator.
pub fn split_over_cores(
    model: &Seq2SeqModel,
    device: &Device,
    b: &Batch,
    cfg: &TrainConfig,
    step: usize,
    workers: usize,
) -> ParallelStep {
    let ad = device.clone().autodiff();
    let total = model.loss_tokens(b).max(1) as f64;
    let shares: Vec<(usize, Batch, Seq2SeqModel)> = (0..workers)
        .map(|i| {
            (
                i,
                b.rows(share_rows(b.batch_size, workers, i)),
                model.clone(),
            )
        })
        .collect();
    let results = s2s_models::workers::run_each(shares, |(i, share, replica)| {
        let weight = replica.loss_tokens(&share) as f64 / total;
        replica_step(replica, &ad, &share, cfg, step, i, weight, false)
    });
    sum_replicas(model, &ad, results)
}

/// The rows of share `i` when `rows` rows are split into `workers` contiguous shares.
pub fn share_rows(rows: usize, workers: usize, i: usize) -> std::ops::Range<usize> {
    i * rows / workers..(i + 1) * rows / workers
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
    let results: Vec<Result<ReplicaResult, String>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..k)
            .map(|i| {
                let device = devices[i].clone().autodiff();
                let replica = model.clone();
                let indices = &batches[i];
                s.spawn(move || {
                    let b = train.batch(indices);
                    replica_step(replica, &device, &b, cfg, step, i, scale, true)
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
    let results = results
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(TrainError::Config)?;
    Ok(sum_replicas(model, &main, results))
}
