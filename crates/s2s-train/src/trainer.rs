//! The training loop: teacher-forced steps over token-budget batches, periodic validation (loss,
//! perplexity, greedy BLEU), best-model tracking, early stopping and exact resume.

use crate::TrainError;
use crate::checkpoint::{self, OPTIMIZER, STATE, TrainerState, WEIGHTS};
use crate::data_parallel::{Pending, batch_gradients, forward_backward};
use crate::loss::label_smoothed_nll;
use crate::schedule::{learning_rate, teacher_forcing_ratio};
use burn::grad_clipping::GradientClippingConfig;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamConfig, AdamWConfig, GradientsParams};
use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::tensor::{Device, Int, Tensor, TensorData};
use burn::train::Interrupter;
use indicatif::{ProgressBar, ProgressStyle};
use s2s_data::{BatchConfig, EncodedSplit, TextTokenizer, epoch_batches, sorted_batches};
use s2s_eval::{BleuConfig, corpus_bleu};
use s2s_infer::config::{BestBy, OptimizerKind, RunConfig};
use s2s_infer::metrics::{self, MetricsRecord};
use s2s_models::{PaddedIds, Seq2SeqModel};
use s2s_search::Strategy;
use std::path::Path;
use std::time::Instant;

/// The data a run trains and validates on.
pub struct Corpus<'a> {
    pub train: &'a EncodedSplit,
    pub valid: Option<&'a EncodedSplit>,
    /// Cleaned target sentences of the validation split (BLEU references).
    pub valid_refs: &'a [String],
    pub tgt_tokenizer: &'a TextTokenizer,
}

pub struct TrainOptions {
    pub resume: bool,
    pub progress: bool,
    /// Stops the loop at the next step boundary (e.g. on SIGINT), after a checkpoint.
    pub interrupter: Interrupter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    MaxEpochs,
    MaxSteps,
    MaxMinutes,
    EarlyStopping,
    Interrupted,
}

#[derive(Clone, Debug)]
pub struct TrainOutcome {
    pub reason: StopReason,
    pub state: TrainerState,
    pub last: Option<MetricsRecord>,
}

pub(crate) fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub(crate) fn int_tensor(ids: &[u32], shape: [usize; 2], device: &Device) -> Tensor<2, Int> {
    let v: Vec<i64> = ids.iter().map(|&t| t as i64).collect();
    Tensor::from_data(TensorData::new(v, shape), device)
}

pub fn make_optimizer(cfg: &s2s_infer::TrainConfig) -> ModuleOptimizer {
    let clip = (cfg.clip_norm > 0.0).then_some(GradientClippingConfig::Norm(cfg.clip_norm));
    match cfg.optimizer {
        OptimizerKind::Adam => AdamConfig::new()
            .with_beta_1(cfg.beta1)
            .with_beta_2(cfg.beta2)
            .with_epsilon(1e-8)
            .with_grad_clipping(clip)
            .init(),
        OptimizerKind::AdamW => AdamWConfig::new()
            .with_beta_1(cfg.beta1)
            .with_beta_2(cfg.beta2)
            .with_epsilon(1e-8)
            .with_weight_decay(cfg.weight_decay)
            .with_grad_clipping(clip)
            .init(),
    }
}

/// Sums the squares of every parameter's gradient.
struct SquaredGradSum<'a> {
    grads: &'a GradientsParams,
    sum: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredGradSum<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(g) = self.grads.get::<D>(param.id) {
            let sq = (g.clone() * g).sum();
            self.sum = Some(match self.sum.take() {
                Some(acc) => acc + sq,
                None => sq,
            });
        }
    }
}

/// The global L2 norm of the gradients (before clipping); non-finite when any gradient is.
pub fn grad_norm(model: &Seq2SeqModel, grads: &GradientsParams) -> f64 {
    let mut v = SquaredGradSum { grads, sum: None };
    model.visit(&mut v);
    v.sum
        .map_or(0.0, |s| (s.into_scalar::<f32>() as f64).sqrt())
}

/// Loss and greedy BLEU on the validation split, with the model in inference mode.
fn validate(
    model: &Seq2SeqModel,
    device: &Device,
    run: &RunConfig,
    corpus: &Corpus,
) -> Result<(f64, f64), TrainError> {
    let Some(valid) = corpus.valid else {
        return Ok((f64::NAN, 0.0));
    };
    let cfg = &run.train;
    let bcfg = BatchConfig {
        max_tokens: cfg.max_tokens,
        max_sentences: cfg.max_sentences,
    };
    let (mut nll, mut tokens) = (0.0f64, 0usize);
    for idx in sorted_batches(&valid.lengths(), &bcfg) {
        let b = valid.batch(&idx);
        let src = PaddedIds::from_flat(&b.src, b.batch_size, b.src_len, s2s_data::PAD, device);
        let tgt_in = int_tensor(&b.tgt_in, [b.batch_size, b.tgt_len], device);
        let tgt_out = int_tensor(&b.tgt_out, [b.batch_size, b.tgt_len], device);
        let logits = model.forward_teacher(&src, tgt_in, None);
        let out = label_smoothed_nll(logits, tgt_out, s2s_data::PAD, 0.0, b.num_tgt_tokens());
        nll += out.nll_sum.into_scalar::<f32>() as f64;
        tokens += b.num_tgt_tokens();
    }
    let n = if cfg.valid_bleu_sentences == 0 {
        valid.len()
    } else {
        cfg.valid_bleu_sentences.min(valid.len())
    };
    let search = s2s_infer::defaults::search(Strategy::Greedy);
    let hyps = s2s_models::decoder::translate_all(
        model,
        device,
        run.tgt_vocab,
        &valid.src[..n],
        &search,
        64,
    )?;
    let texts: Vec<String> = hyps
        .iter()
        .map(|h| corpus.tgt_tokenizer.decode(&h[0].tokens))
        .collect();
    let refs = [&corpus.valid_refs[..n]];
    let bleu_cfg = BleuConfig {
        tokenize: cfg
            .bleu_tokenize
            .parse()
            .map_err(|e| TrainError::Config(format!("bleu_tokenize: {e}")))?,
        ..BleuConfig::default()
    };
    let bleu = corpus_bleu(&texts, &refs, &bleu_cfg)
        .map_err(|e| TrainError::Config(format!("validation BLEU: {e}")))?
        .score;
    Ok((nll / tokens.max(1) as f64, bleu))
}

/// Trains (or resumes) the run in `model_dir`, which must already hold `config.toml` and the
/// tokenizers. Returns why it stopped.
pub fn train(
    model_dir: &Path,
    run: &RunConfig,
    corpus: &Corpus,
    device: &Device,
    opts: &TrainOptions,
) -> Result<TrainOutcome, TrainError> {
    train_on(model_dir, run, corpus, std::slice::from_ref(device), opts)
}

/// [`train`] with data parallelism over `devices` (see [`crate::data_parallel`]): each step
/// takes one batch per device; `devices[0]` holds the model, validates and checkpoints.
pub fn train_on(
    model_dir: &Path,
    run: &RunConfig,
    corpus: &Corpus,
    devices: &[Device],
    opts: &TrainOptions,
) -> Result<TrainOutcome, TrainError> {
    let device = &devices[0];
    let cfg = &run.train;
    let ad = device.clone().autodiff();
    ad.seed(cfg.seed);
    let mut model = Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &ad);
    let parameters = model.num_params();
    s2s_infer::model_dir::write_model_info(model_dir, run, parameters)?;
    if opts.progress {
        eprintln!("model: {parameters} parameters");
    }
    let mut optim = make_optimizer(cfg);
    let mut st = TrainerState::default();
    let metrics_path = model_dir.join("metrics.jsonl");
    let mut records = metrics::read(&metrics_path)?;
    if opts.resume {
        let dir = checkpoint::locate(model_dir)?;
        model = s2s_models::io::load_checkpoint(model, &dir.join(WEIGHTS))?;
        let opt_path = dir.join(OPTIMIZER);
        let bytes = std::fs::read(&opt_path).map_err(|e| TrainError::io(&opt_path, e))?;
        let record = OptimizerRecord::from_bytes(burn::tensor::Bytes::from_bytes_vec(bytes))
            .map_err(|e| TrainError::Corrupt(format!("{}: {e:?}", opt_path.display())))?;
        optim = optim.load_record(record);
        let state_path = dir.join(STATE);
        let text = std::fs::read(&state_path).map_err(|e| TrainError::io(&state_path, e))?;
        st = serde_json::from_slice(&text)
            .map_err(|e| TrainError::Corrupt(format!("{}: {e}", state_path.display())))?;
        // Validations after the checkpoint will be redone identically.
        records.retain(|r| r.step <= st.step);
        metrics::write(&metrics_path, &records)?;
        // A finished run continues when its limits were raised; otherwise the loop stops at once.
        st.finished = false;
    } else {
        records.clear();
        metrics::write(&metrics_path, &records)?;
    }

    let lengths = corpus.train.lengths();
    let bcfg = BatchConfig {
        max_tokens: cfg.max_tokens,
        max_sentences: cfg.max_sentences,
    };
    let bar = if opts.progress {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg} (eta {eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let started = Instant::now();
    let elapsed_before = st.elapsed_sec;
    let elapsed = |st_start: f64| st_start + started.elapsed().as_secs_f64();
    let mut since_valid = Instant::now();

    let save_checkpoint = |model: &Seq2SeqModel,
                           optim: &ModuleOptimizer,
                           st: &TrainerState|
     -> Result<(), TrainError> {
        let weights = s2s_models::io::checkpoint_to_bytes(model)?;
        let opt = optim
            .to_record()
            .into_bytes()
            .map_err(|e| TrainError::Corrupt(format!("cannot serialise optimiser state: {e:?}")))?;
        let state = serde_json::to_vec_pretty(st).expect("state serialises");
        checkpoint::save(
            model_dir,
            &[
                (WEIGHTS, weights),
                (OPTIMIZER, opt.to_vec()),
                (STATE, state),
            ],
            cfg.keep_last,
        )
    };

    // Validate, log, keep the best model, then checkpoint: the checkpoint includes the result.
    let checkpointed_validation = |model: &Seq2SeqModel,
                                   optim: &ModuleOptimizer,
                                   st: &mut TrainerState,
                                   records: &mut Vec<MetricsRecord>|
     -> Result<Option<StopReason>, TrainError> {
        st.elapsed_sec = elapsed(elapsed_before);
        let stop = validation_point(model, device, run, corpus, model_dir, st, records, &bar)?;
        save_checkpoint(model, optim, st)?;
        Ok(stop)
    };

    let reason = 'outer: loop {
        if st.epoch >= cfg.max_epochs {
            break StopReason::MaxEpochs;
        }
        let batches = epoch_batches(&lengths, &bcfg, cfg.seed, st.epoch as u64);
        bar.set_length(batches.len() as u64);
        bar.set_position(st.batch_in_epoch as u64);
        bar.set_prefix(format!("epoch {}", st.epoch + 1));
        while st.batch_in_epoch < batches.len() {
            if cfg.max_steps > 0 && st.step >= cfg.max_steps {
                break 'outer StopReason::MaxSteps;
            }
            if cfg.max_minutes > 0.0 && elapsed(elapsed_before) >= cfg.max_minutes * 60.0 {
                break 'outer StopReason::MaxMinutes;
            }
            if opts.interrupter.should_stop() {
                st.elapsed_sec = elapsed(elapsed_before);
                save_checkpoint(&model, &optim, &st)?;
                bar.finish_and_clear();
                return Ok(TrainOutcome {
                    reason: StopReason::Interrupted,
                    state: st,
                    last: records.last().cloned(),
                });
            }
            let step_start = Instant::now();
            // Several devices: one batch each, averaged gradients; one CPU: the batch's rows split
            // over its cores (data_parallel.rs).
            let (loss_value, tokens, pending) = if devices.len() > 1 {
                let rest = &batches[st.batch_in_epoch..];
                let p = forward_backward(&model, devices, corpus.train, rest, cfg, st.step)?;
                st.batch_in_epoch += p.batches;
                (p.loss, p.tokens, Pending::Grads(p.grads))
            } else {
                let b = corpus.train.batch(&batches[st.batch_in_epoch]);
                st.batch_in_epoch += 1;
                batch_gradients(&model, device, &b, cfg, st.step)
            };
            // A non-finite loss or gradient norm skips the step (no update, no optimiser state
            // change); `max_bad_steps` of them in a row stop training with an error, leaving the
            // last checkpoint (written before them) as it was.
            let grads = if loss_value.is_finite() {
                let grads = pending.grads(&model);
                let norm = grad_norm(&model, &grads);
                norm.is_finite()
                    .then_some(grads)
                    .ok_or(("gradient norm", norm))
            } else {
                Err(("loss", loss_value))
            };
            let grads = match grads {
                Ok(g) => g,
                Err((what, value)) => {
                    st.bad_steps += 1;
                    bar.suspend(|| {
                        eprintln!(
                            "warning: non-finite {what} ({value}) at step {}; the step is skipped ({} in a row, stopping at {})",
                            st.step + 1,
                            st.bad_steps,
                            cfg.max_bad_steps.max(1)
                        )
                    });
                    if st.bad_steps >= cfg.max_bad_steps.max(1) {
                        return Err(TrainError::Diverged(st.bad_steps, st.step + 1));
                    }
                    continue;
                }
            };
            st.bad_steps = 0;
            st.step += 1;
            let lr = learning_rate(cfg, st.step);
            model = optim.step(
                burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate::from(lr),
                model,
                grads,
            );
            st.loss_sum += loss_value * tokens as f64;
            st.loss_tokens += tokens;
            st.train_sec_since_valid += step_start.elapsed().as_secs_f64();
            bar.set_position(st.batch_in_epoch as u64);
            bar.set_message(format!(
                "loss {:.3} | {:.0} tok/s | lr {:.2e}",
                st.loss_sum / st.loss_tokens.max(1) as f64,
                st.loss_tokens as f64 / since_valid.elapsed().as_secs_f64().max(1e-9),
                lr
            ));
            if cfg.valid_every > 0 && st.step % cfg.valid_every == 0 {
                if let Some(stop) = checkpointed_validation(&model, &optim, &mut st, &mut records)?
                {
                    break 'outer stop;
                }
                since_valid = Instant::now();
            } else if cfg.save_every > 0 && st.step % cfg.save_every == 0 {
                st.elapsed_sec = elapsed(elapsed_before);
                save_checkpoint(&model, &optim, &st)?;
            }
        }
        st.epoch += 1;
        st.batch_in_epoch = 0;
        if cfg.valid_every == 0 {
            if let Some(stop) = checkpointed_validation(&model, &optim, &mut st, &mut records)? {
                break stop;
            }
            since_valid = Instant::now();
        }
    };
    // A final validation if steps were taken since the last one, so the best model reflects them.
    if st.loss_tokens > 0 && reason != StopReason::EarlyStopping {
        st.elapsed_sec = elapsed(elapsed_before);
        validation_point(
            &model,
            device,
            run,
            corpus,
            model_dir,
            &mut st,
            &mut records,
            &bar,
        )?;
    }
    st.finished = true;
    st.elapsed_sec = elapsed(elapsed_before);
    save_checkpoint(&model, &optim, &st)?;
    bar.finish_and_clear();
    Ok(TrainOutcome {
        reason,
        state: st,
        last: records.last().cloned(),
    })
}

/// Validates, appends to metrics.jsonl, keeps the best model; returns `Some` to stop early.
#[allow(clippy::too_many_arguments)]
fn validation_point(
    model: &Seq2SeqModel,
    device: &Device,
    run: &RunConfig,
    corpus: &Corpus,
    model_dir: &Path,
    st: &mut TrainerState,
    records: &mut Vec<MetricsRecord>,
    bar: &ProgressBar,
) -> Result<Option<StopReason>, TrainError> {
    let cfg = &run.train;
    let inference = model.valid();
    let (valid_loss, valid_bleu) = validate(&inference, device, run, corpus)?;
    let record = MetricsRecord {
        step: st.step,
        epoch: st.epoch,
        train_loss: st.loss_sum / st.loss_tokens.max(1) as f64,
        valid_loss,
        valid_ppl: valid_loss.exp(),
        valid_bleu,
        tokens_per_sec: st.loss_tokens as f64 / st.train_sec_since_valid.max(1e-9),
        elapsed_sec: st.elapsed_sec,
        lr: learning_rate(cfg, st.step.max(1)),
        teacher_forcing: teacher_forcing_ratio(cfg, st.step),
    };
    // `suspend` prints even when the bar is hidden (stderr is not a terminal).
    bar.suspend(|| eprintln!(
        "step {} epoch {}: train loss {:.3}, valid loss {:.3}, ppl {:.2}, BLEU {:.2}, {:.0} tok/s",
        record.step,
        record.epoch,
        record.train_loss,
        record.valid_loss,
        record.valid_ppl,
        record.valid_bleu,
        record.tokens_per_sec
    ));
    if corpus.valid.is_some() && !valid_loss.is_finite() {
        // Weights that give a non-finite validation loss are never saved, neither as the best
        // model nor in a checkpoint.
        return Err(TrainError::DivergedValidation(st.step, valid_loss));
    }
    records.push(record);
    metrics::write(&model_dir.join("metrics.jsonl"), records)?;
    st.loss_sum = 0.0;
    st.loss_tokens = 0;
    st.train_sec_since_valid = 0.0;
    let score = match cfg.best_by {
        BestBy::Bleu if corpus.valid.is_some() => valid_bleu,
        _ => -valid_loss,
    };
    let improved = st.best.is_none_or(|b| score > b) || !score.is_finite();
    if improved {
        st.best = Some(score);
        st.bad_validations = 0;
        s2s_models::io::save_weights(&inference, &model_dir.join("model.safetensors"))?;
    } else {
        st.bad_validations += 1;
        if cfg.patience > 0 && st.bad_validations >= cfg.patience {
            return Ok(Some(StopReason::EarlyStopping));
        }
    }
    Ok(None)
}
