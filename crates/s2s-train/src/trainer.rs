//! The training loop: teacher-forced steps over token-budget batches, periodic validation (loss,
//! perplexity, greedy BLEU or label accuracy), best-model tracking, early stopping and exact resume.

use crate::TrainError;
use crate::checkpoint::{self, OPTIMIZER, STATE, TrainerState, WEIGHTS};
use crate::data_parallel::{Pending, batch_gradients, forward_backward};
use crate::schedule::{DecayPlan, budget_end_step, is_timed, learning_rate, teacher_forcing_ratio};
use burn::grad_clipping::GradientClippingConfig;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamConfig, AdamWConfig, GradientsParams};
use burn::optim::{ModuleOptimizer, OptimizerRecord};
use burn::tensor::{Device, Tensor};
use burn::train::Interrupter;
use indicatif::{ProgressBar, ProgressStyle};
use s2s_data::{BatchConfig, EncodedSplit, TextTokenizer, epoch_batches, sorted_batches};
use s2s_eval::{BleuConfig, Metric, corpus_bleu, ranking_score};
use s2s_infer::config::{BestBy, OptimizerKind, RunConfig, TrainConfig};
use s2s_infer::metrics::{self, MetricsRecord};
use s2s_infer::model_dir::METRICS;
use s2s_models::Seq2SeqModel;
use s2s_models::decoder::TextSource;
use s2s_models::speech::Frames;
use s2s_search::Strategy;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The data a run trains and validates on.
pub struct Corpus<'a> {
    pub train: &'a EncodedSplit,
    pub valid: Option<&'a EncodedSplit>,
    /// Cleaned target lines of the validation split (BLEU references, or the gold labels).
    pub valid_refs: &'a [String],
    pub tgt_tokenizer: &'a TextTokenizer,
}

/// A split encoded as `model` reads it: a copy model's unknown source pieces get ids past the
/// vocabulary ([`s2s_data::copy`]); a character-aware labeller gets each token's spelling too.
pub fn encode_split(
    model: &s2s_models::ModelConfig,
    data: &s2s_data::DataDir,
    text: &s2s_data::ParallelText,
) -> Result<EncodedSplit, s2s_data::DataError> {
    if model.copies() {
        data.encode_copy(text)
    } else if model.reads_characters() {
        Ok(data.encode_spelled(text))
    } else {
        Ok(data.encode(text))
    }
}

pub struct TrainOptions {
    pub resume: bool,
    /// Weights to start from instead of random ones (fine-tuning); unused when resuming, since
    /// the checkpoint holds the weights.
    pub init: Option<std::path::PathBuf>,
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

pub fn make_optimizer(cfg: &TrainConfig) -> ModuleOptimizer {
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

/// What one validation measured; NaN where it measured nothing (no validation split, or a score
/// of another task).
struct Validation {
    loss: f64,
    /// Greedy BLEU (translation).
    bleu: f64,
    /// Percent of labels right (tagging, classification).
    accuracy: f64,
    /// Percent word error rate of greedy transcripts (speech).
    wer: f64,
    /// Mean ROUGE-1, -2 and -L F of the greedy outputs (translation, for `best_by = "rouge"`).
    rouge: f64,
}

/// Validation utterances as the search and the labeller read them.
fn searchable(frames: &[s2s_data::audio::Features]) -> Vec<Frames> {
    frames.iter().map(|f| Frames(Arc::new(f.clone()))).collect()
}

/// A text split's sources as a model reads them: ids, with spellings where the split has them.
fn text_sources(split: &EncodedSplit) -> Vec<TextSource> {
    split
        .src
        .iter()
        .enumerate()
        .map(|(i, ids)| TextSource {
            ids: ids.clone(),
            spellings: split.src_spellings.get(i).cloned(),
        })
        .collect()
}

/// Whether a validation with `score` (higher is better) and `loss` beats the best so far. A tie
/// in the score goes to the lower validation loss: a score that has not moved yet (BLEU is 0 on
/// short outputs until 4-grams match) would otherwise keep the first model for good.
fn improves(best: Option<f64>, best_loss: Option<f64>, score: f64, loss: f64) -> bool {
    if !score.is_finite() {
        return true;
    }
    match best {
        None => true,
        Some(b) => score > b || (score == b && best_loss.is_some_and(|l| loss < l)),
    }
}

/// Loss and the task's score on the validation split, with the model in inference mode: greedy
/// BLEU for a translation model, label accuracy for a labeller.
fn validate(
    model: &Seq2SeqModel,
    device: &Device,
    run: &RunConfig,
    corpus: &Corpus,
) -> Result<Validation, TrainError> {
    let mut out = Validation {
        loss: f64::NAN,
        bleu: f64::NAN,
        accuracy: f64::NAN,
        wer: f64::NAN,
        rouge: f64::NAN,
    };
    let Some(valid) = corpus.valid else {
        return Ok(out);
    };
    let cfg = &run.train;
    let bcfg = BatchConfig {
        max_tokens: cfg.max_tokens,
        max_sentences: cfg.max_sentences,
    };
    // The loss is the references' teacher-forced score, as `s2s score` measures it.
    let (mut logprob, mut tokens) = (0.0f64, 0usize);
    for idx in sorted_batches(&valid.lengths(), &bcfg) {
        for score in s2s_models::scoring::score_batch(model, device, &valid.batch(&idx)) {
            logprob += score.logprob;
            tokens += score.tokens;
        }
    }
    out.loss = -logprob / tokens.max(1) as f64;
    if run.task() == s2s_data::Task::Generation {
        // A generated sentence has no one right answer to score against: the loss is the score.
        return Ok(out);
    }
    if let Some(labeller) = model.as_labeller() {
        let labels = match &valid.frames {
            Some(frames) => {
                let sources = searchable(frames);
                s2s_models::labeller::label_all(labeller, device, &sources, valid.specials, 64)
            }
            None => {
                let sources = text_sources(valid);
                s2s_models::labeller::label_all(labeller, device, &sources, valid.specials, 64)
            }
        };
        let hyps: Vec<String> = labels
            .iter()
            .map(|l| {
                let ids: Vec<u32> = l.iter().map(|&(id, _)| id).collect();
                corpus.tgt_tokenizer.decode(&ids)
            })
            .collect();
        out.accuracy = s2s_eval::labels::label_scores(&hyps, corpus.valid_refs)
            .map_err(|e| TrainError::Config(format!("validation accuracy: {e}")))?
            .accuracy;
        return Ok(out);
    }
    let n = if cfg.valid_bleu_sentences == 0 {
        valid.len()
    } else {
        cfg.valid_bleu_sentences.min(valid.len())
    };
    let search = s2s_infer::defaults::search(Strategy::Greedy, valid.specials);
    let hyps = match &valid.frames {
        Some(frames) => {
            let sources = searchable(&frames[..n]);
            s2s_models::decoder::translate_all(model, device, run.tgt_vocab, &sources, &search, 64)?
        }
        None => s2s_models::decoder::translate_all(
            model,
            device,
            run.tgt_vocab,
            &valid.src[..n],
            &search,
            64,
        )?,
    };
    let texts: Vec<String> = hyps
        .iter()
        .enumerate()
        .map(|(i, h)| {
            corpus
                .tgt_tokenizer
                .decode_copied(&h[0].tokens, valid.words(i))
        })
        .collect();
    let refs = [&corpus.valid_refs[..n]];
    if run.task() == s2s_data::Task::Asr {
        out.wer = s2s_eval::corpus_error_counts(&texts, &refs, s2s_eval::Units::Tokens, false)
            .map_err(|e| TrainError::Config(format!("validation WER: {e}")))?
            .rate();
        return Ok(out);
    }
    let bleu_cfg = BleuConfig {
        tokenize: cfg
            .bleu_tokenize
            .parse()
            .map_err(|e| TrainError::Config(format!("bleu_tokenize: {e}")))?,
        ..BleuConfig::default()
    };
    out.bleu = corpus_bleu(&texts, &refs, &bleu_cfg)
        .map_err(|e| TrainError::Config(format!("validation BLEU: {e}")))?
        .score;
    if cfg.best_by == BestBy::Rouge {
        out.rouge = ranking_score(&texts, &refs, Metric::Rouge, bleu_cfg.tokenize)
            .map_err(|e| TrainError::Config(format!("validation ROUGE: {e}")))?;
    }
    Ok(out)
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
    let mut trainer = Trainer::start(model_dir, run, corpus, devices, opts)?;
    let reason = loop {
        if let Some(reason) = trainer.epoch()? {
            break reason;
        }
    };
    trainer.finish(reason)
}

/// One run in progress: the model, its optimiser, the counters an exact resume restores, and
/// the validation history. Each method is one part of the loop; `train_on` strings them together.
struct Trainer<'a> {
    model_dir: &'a Path,
    run: &'a RunConfig,
    cfg: &'a TrainConfig,
    corpus: &'a Corpus<'a>,
    devices: &'a [Device],
    opts: &'a TrainOptions,
    /// `None` only while the optimiser step owns it.
    model: Option<Seq2SeqModel>,
    optim: ModuleOptimizer,
    st: TrainerState,
    records: Vec<MetricsRecord>,
    lengths: Vec<(usize, usize)>,
    bar: ProgressBar,
    /// Training time of earlier runs (resumed), and when this one started.
    elapsed_before: f64,
    started: Instant,
    since_valid: Instant,
    /// Training seconds (as [`Self::elapsed`]) and step at the last checkpoint written.
    checkpointed_at: (f64, usize),
}

impl<'a> Trainer<'a> {
    /// Builds the model (drawing its weights from the run's seed) and either restores the
    /// checkpoint (`opts.resume`) or starts a fresh history.
    fn start(
        model_dir: &'a Path,
        run: &'a RunConfig,
        corpus: &'a Corpus<'a>,
        devices: &'a [Device],
        opts: &'a TrainOptions,
    ) -> Result<Self, TrainError> {
        let cfg = &run.train;
        let ad = devices[0].clone().autodiff();
        ad.seed(cfg.seed);
        let mut model = Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &ad);
        if let (Some(weights), false) = (&opts.init, opts.resume) {
            model = s2s_models::io::load_weights(model, weights)?;
        }
        let parameters = model.num_params();
        s2s_infer::model_dir::write_model_info(model_dir, run, parameters)?;
        if opts.progress {
            eprintln!("model: {parameters} parameters");
        }
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
        let mut trainer = Trainer {
            model_dir,
            run,
            cfg,
            corpus,
            devices,
            opts,
            model: Some(model),
            optim: make_optimizer(cfg),
            st: TrainerState::default(),
            // A fresh run (--force included) never reads the old run's file: it starts afresh.
            records: if opts.resume {
                metrics::read(&model_dir.join(METRICS))?
            } else {
                Vec::new()
            },
            lengths: corpus.train.lengths(),
            bar,
            elapsed_before: 0.0,
            started: Instant::now(),
            since_valid: Instant::now(),
            checkpointed_at: (0.0, 0),
        };
        let was_finished = if opts.resume {
            trainer.restore()?
        } else {
            metrics::write(&model_dir.join(METRICS), &trainer.records)?;
            false
        };
        trainer.elapsed_before = trainer.st.elapsed_sec;
        trainer.checkpointed_at = (trainer.st.elapsed_sec, trainer.st.step);
        trainer.started = Instant::now();
        trainer.since_valid = Instant::now();
        if is_timed(cfg) && (trainer.st.decay.is_none() || was_finished) {
            // A fresh timed run decays towards max_steps (if set) until its first estimate; a
            // finished one continued with a larger budget plans its remaining decay at once.
            trainer.st.decay = Some(DecayPlan::by_steps(cfg));
            if was_finished {
                trainer.replan();
            }
        }
        Ok(trainer)
    }

    /// Loads the newest intact checkpoint: weights, optimiser moments and counters; returns
    /// whether that run had finished.
    fn restore(&mut self) -> Result<bool, TrainError> {
        let dir = checkpoint::locate(self.model_dir)?;
        let model = self.model.take().expect("the model is in place");
        self.model = Some(s2s_models::io::load_checkpoint(model, &dir.join(WEIGHTS))?);
        let opt_path = dir.join(OPTIMIZER);
        let bytes = std::fs::read(&opt_path).map_err(|e| TrainError::io(&opt_path, e))?;
        let record = OptimizerRecord::from_bytes(burn::tensor::Bytes::from_bytes_vec(bytes))
            .map_err(|e| TrainError::Corrupt(format!("{}: {e:?}", opt_path.display())))?;
        self.optim = make_optimizer(self.cfg).load_record(record);
        let state_path = dir.join(STATE);
        let text = std::fs::read(&state_path).map_err(|e| TrainError::io(&state_path, e))?;
        self.st = serde_json::from_slice(&text)
            .map_err(|e| TrainError::Corrupt(format!("{}: {e}", state_path.display())))?;
        // Validations after the checkpoint will be redone identically.
        let step = self.st.step;
        self.records.retain(|r| r.step <= step);
        metrics::write(&self.model_dir.join(METRICS), &self.records)?;
        // A finished run continues when its limits were raised; otherwise the loop stops at once.
        Ok(std::mem::take(&mut self.st.finished))
    }

    /// The decay plan the learning rate follows now.
    fn plan(&self) -> DecayPlan {
        self.st
            .decay
            .unwrap_or_else(|| DecayPlan::by_steps(self.cfg))
    }

    /// In a time-budgeted run, re-estimates where the decay ends from the seconds per step so
    /// far. Only [`Self::replan_and_save`] calls it during training, so that the plan every later
    /// step follows is in `state.json`; besides, a finished run continued with a larger budget
    /// plans once at its start.
    fn replan(&mut self) {
        if is_timed(self.cfg) {
            let end = budget_end_step(self.cfg, self.st.step, self.elapsed());
            self.st.decay = Some(self.plan().replan(self.st.step, end));
        }
    }

    fn model(&self) -> &Seq2SeqModel {
        self.model.as_ref().expect("the model is in place")
    }

    /// Training seconds over all runs, this one up to now.
    fn elapsed(&self) -> f64 {
        self.elapsed_before + self.started.elapsed().as_secs_f64()
    }

    /// Runs the rest of the current epoch; `Some` when training must stop.
    fn epoch(&mut self) -> Result<Option<StopReason>, TrainError> {
        let cfg = self.cfg;
        if self.st.epoch >= cfg.max_epochs {
            return Ok(Some(StopReason::MaxEpochs));
        }
        let batches = epoch_batches(
            &self.lengths,
            &self.batch_config(),
            cfg.seed,
            self.st.epoch as u64,
        );
        self.bar.set_length(batches.len() as u64);
        self.bar.set_position(self.st.batch_in_epoch as u64);
        self.bar.set_prefix(format!("epoch {}", self.st.epoch + 1));
        while self.st.batch_in_epoch < batches.len() {
            if let Some(stop) = self.limit_reached() {
                return Ok(Some(stop));
            }
            if !self.step(&batches)? {
                continue;
            }
            if cfg.valid_every > 0 && self.st.step.is_multiple_of(cfg.valid_every) {
                if let Some(stop) = self.validate_and_checkpoint()? {
                    return Ok(Some(stop));
                }
                self.since_valid = Instant::now();
            } else if self.checkpoint_due() {
                self.st.elapsed_sec = self.elapsed();
                self.replan_and_save()?;
            }
        }
        self.st.epoch += 1;
        self.st.batch_in_epoch = 0;
        if cfg.valid_every == 0 {
            if let Some(stop) = self.validate_and_checkpoint()? {
                return Ok(Some(stop));
            }
            self.since_valid = Instant::now();
        }
        Ok(None)
    }

    fn batch_config(&self) -> BatchConfig {
        BatchConfig {
            max_tokens: self.cfg.max_tokens,
            max_sentences: self.cfg.max_sentences,
        }
    }

    /// Whether a checkpoint is due between validations: every `save_every` steps; in a
    /// time-budgeted run also at least every tenth of the budget (each one re-plans the decay),
    /// and, with `keep_last = N > 1` and no `save_every`, N - 1 times over the last
    /// `average_span` of the planned steps, so that the final N checkpoints are spread over the
    /// end of the decay for `s2s average`.
    fn checkpoint_due(&self) -> bool {
        let cfg = self.cfg;
        let step = self.st.step;
        if cfg.save_every > 0 {
            return step.is_multiple_of(cfg.save_every);
        }
        if !is_timed(cfg) {
            return false;
        }
        let end = self.plan().end_step;
        let averaging = cfg.keep_last > 1 && end > step;
        let gap = ((end as f64 * cfg.average_span / cfg.keep_last as f64) as usize).max(1);
        let (last_sec, last_step) = self.checkpointed_at;
        if averaging && step + gap * cfg.keep_last > end {
            // A validation's checkpoint just before takes this one's place.
            return (end - step).is_multiple_of(gap) && step - last_step >= gap.div_ceil(2);
        }
        self.elapsed() - last_sec >= cfg.max_minutes * 60.0 / 10.0
    }

    /// A step, minute or interrupt limit that stops training before the next step.
    fn limit_reached(&self) -> Option<StopReason> {
        let cfg = self.cfg;
        let plan_end = self.plan().end_step;
        if cfg.max_steps > 0 && self.st.step >= cfg.max_steps {
            Some(StopReason::MaxSteps)
        } else if cfg.max_minutes > 0.0 && self.elapsed() >= cfg.max_minutes * 60.0 {
            Some(StopReason::MaxMinutes)
        } else if is_timed(cfg) && plan_end > 0 && self.st.step >= plan_end {
            // The decay planned for the budget has reached zero.
            Some(StopReason::MaxMinutes)
        } else if self.opts.interrupter.should_stop() {
            Some(StopReason::Interrupted)
        } else {
            None
        }
    }

    /// Takes the next batch (one per device) and, unless its loss or gradient norm is not
    /// finite, one optimiser step; returns whether a step was taken.
    fn step(&mut self, batches: &[Vec<usize>]) -> Result<bool, TrainError> {
        let cfg = self.cfg;
        let step_start = Instant::now();
        // Several devices: one batch each, averaged gradients; one CPU: the batch's rows split
        // over its cores (data_parallel.rs).
        let (loss_value, tokens, pending) = if self.devices.len() > 1 {
            let rest = &batches[self.st.batch_in_epoch..];
            let p = forward_backward(
                self.model(),
                self.devices,
                self.corpus.train,
                rest,
                cfg,
                self.st.step,
            )?;
            self.st.batch_in_epoch += p.batches;
            (p.loss, p.tokens, Pending::Grads(p.grads))
        } else {
            let b = self.corpus.train.batch(&batches[self.st.batch_in_epoch]);
            self.st.batch_in_epoch += 1;
            batch_gradients(self.model(), &self.devices[0], &b, cfg, self.st.step)
        };
        // A non-finite loss or gradient norm skips the step (no update, no optimiser state
        // change); `max_bad_steps` of them in a row stop training with an error, leaving the
        // last checkpoint (written before them) as it was.
        let grads = if loss_value.is_finite() {
            let grads = pending.grads(self.model());
            let norm = grad_norm(self.model(), &grads);
            norm.is_finite()
                .then_some(grads)
                .ok_or(("gradient norm", norm))
        } else {
            Err(("loss", loss_value))
        };
        let grads = match grads {
            Ok(g) => g,
            Err((what, value)) => {
                let st = &mut self.st;
                st.bad_steps += 1;
                self.bar.suspend(|| {
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
                return Ok(false);
            }
        };
        let plan = self.plan();
        let st = &mut self.st;
        st.bad_steps = 0;
        st.step += 1;
        let lr = learning_rate(cfg, &plan, st.step);
        let model = self.model.take().expect("the model is in place");
        self.model = Some(self.optim.step(
            burn::optim::lr_scheduler::module_lr_scheduler::ModuleLearningRate::from(lr),
            model,
            grads,
        ));
        st.loss_sum += loss_value * tokens as f64;
        st.loss_tokens += tokens;
        st.train_sec_since_valid += step_start.elapsed().as_secs_f64();
        self.bar.set_position(st.batch_in_epoch as u64);
        self.bar.set_message(format!(
            "loss {:.3} | {:.0} tok/s | lr {:.2e}",
            st.loss_sum / st.loss_tokens.max(1) as f64,
            st.loss_tokens as f64 / self.since_valid.elapsed().as_secs_f64().max(1e-9),
            lr
        ));
        Ok(true)
    }

    /// Re-plans the decay, then writes the checkpoint that records the new plan.
    fn replan_and_save(&mut self) -> Result<(), TrainError> {
        self.replan();
        self.save_checkpoint()
    }

    /// Writes the resumable checkpoint: weights, optimiser state and counters.
    fn save_checkpoint(&mut self) -> Result<(), TrainError> {
        let weights = s2s_models::io::checkpoint_to_bytes(self.model())?;
        let opt =
            self.optim.to_record().into_bytes().map_err(|e| {
                TrainError::Corrupt(format!("cannot serialise optimiser state: {e:?}"))
            })?;
        let state = serde_json::to_vec_pretty(&self.st).expect("state serialises");
        checkpoint::save(
            self.model_dir,
            &[
                (WEIGHTS, weights),
                (OPTIMIZER, opt.to_vec()),
                (STATE, state),
            ],
            self.cfg.keep_last,
        )?;
        self.checkpointed_at = (self.elapsed(), self.st.step);
        Ok(())
    }

    /// Validates, logs, keeps the best model, then checkpoints: the checkpoint includes the
    /// result.
    fn validate_and_checkpoint(&mut self) -> Result<Option<StopReason>, TrainError> {
        self.st.elapsed_sec = self.elapsed();
        let stop = self.validation_point()?;
        self.replan_and_save()?;
        Ok(stop)
    }

    /// Ends the run: an interrupted one is checkpointed as it stands; any other first validates
    /// the steps taken since the last validation (so the best model reflects them), then is
    /// checkpointed as finished.
    fn finish(mut self, reason: StopReason) -> Result<TrainOutcome, TrainError> {
        if reason != StopReason::Interrupted {
            if self.st.loss_tokens > 0 && reason != StopReason::EarlyStopping {
                self.st.elapsed_sec = self.elapsed();
                self.validation_point()?;
            }
            self.st.finished = true;
        }
        self.st.elapsed_sec = self.elapsed();
        self.save_checkpoint()?;
        self.bar.finish_and_clear();
        Ok(TrainOutcome {
            reason,
            last: self.records.last().cloned(),
            state: self.st,
        })
    }

    /// Validates, appends to metrics.jsonl, keeps the best model; returns `Some` to stop early.
    fn validation_point(&mut self) -> Result<Option<StopReason>, TrainError> {
        let cfg = self.cfg;
        let inference = self.model().valid();
        let corpus = self.corpus;
        let measured = validate(&inference, &self.devices[0], self.run, corpus)?;
        let valid_loss = measured.loss;
        let plan = self.plan();
        let st = &mut self.st;
        let records = &mut self.records;
        let bar = &self.bar;
        let model_dir = self.model_dir;
        let record = MetricsRecord {
            step: st.step,
            epoch: st.epoch,
            train_loss: st.loss_sum / st.loss_tokens.max(1) as f64,
            valid_loss,
            valid_ppl: valid_loss.exp(),
            valid_bleu: measured.bleu,
            valid_accuracy: measured.accuracy,
            valid_wer: measured.wer,
            valid_rouge: measured.rouge,
            tokens_per_sec: st.loss_tokens as f64 / st.train_sec_since_valid.max(1e-9),
            elapsed_sec: st.elapsed_sec,
            lr: learning_rate(cfg, &plan, st.step.max(1)),
            teacher_forcing: teacher_forcing_ratio(cfg, st.step),
        };
        let valid = if corpus.valid.is_some() {
            record.validation_summary()
        } else {
            "no validation split".to_owned()
        };
        // `suspend` prints even when the bar is hidden (stderr is not a terminal).
        bar.suspend(|| {
            eprintln!(
                "step {} epoch {}: train loss {:.3}, {valid}, {:.0} tok/s",
                record.step, record.epoch, record.train_loss, record.tokens_per_sec
            )
        });
        if corpus.valid.is_some() && !valid_loss.is_finite() {
            // Weights that give a non-finite validation loss are never saved, neither as the best
            // model nor in a checkpoint.
            return Err(TrainError::DivergedValidation(st.step, valid_loss));
        }
        records.push(record);
        metrics::write(&model_dir.join(METRICS), records)?;
        st.loss_sum = 0.0;
        st.loss_tokens = 0;
        st.train_sec_since_valid = 0.0;
        let score = match cfg.best_by {
            BestBy::Bleu if corpus.valid.is_some() => measured.bleu,
            BestBy::Accuracy if corpus.valid.is_some() => measured.accuracy,
            BestBy::Wer if corpus.valid.is_some() => -measured.wer,
            BestBy::Rouge if corpus.valid.is_some() => measured.rouge,
            _ => -valid_loss,
        };
        if improves(st.best, st.best_loss, score, valid_loss) {
            st.best = Some(score);
            st.best_loss = Some(valid_loss);
            st.bad_validations = 0;
            s2s_models::io::save_weights(&inference, &model_dir.join(s2s_infer::model_dir::BEST))?;
        } else {
            st.bad_validations += 1;
            if cfg.patience > 0 && st.bad_validations >= cfg.patience {
                return Ok(Some(StopReason::EarlyStopping));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::improves;

    #[test]
    fn a_higher_score_wins_and_a_tied_score_goes_to_the_lower_loss() {
        assert!(
            improves(None, None, 0.0, 5.0),
            "the first validation is the best"
        );
        assert!(
            improves(Some(1.0), Some(2.0), 1.5, 9.0),
            "a higher score wins at any loss"
        );
        assert!(
            !improves(Some(1.0), Some(2.0), 0.5, 0.1),
            "a lower score loses at any loss"
        );
        assert!(
            improves(Some(0.0), Some(4.0), 0.0, 3.9),
            "BLEU 0 again, lower loss"
        );
        assert!(
            !improves(Some(0.0), Some(4.0), 0.0, 4.0),
            "an exact tie keeps the older model"
        );
        assert!(!improves(Some(0.0), Some(4.0), 0.0, 4.1));
        assert!(
            !improves(Some(0.0), None, 0.0, 0.1),
            "a state written before losses were kept breaks no tie"
        );
        assert!(
            improves(Some(3.0), Some(1.0), f64::NAN, f64::NAN),
            "no validation split: every model is kept"
        );
    }
}
