//! Training options and the complete run description written to `MODEL_DIR/config.toml`.

use s2s_data::Task;
use s2s_models::ModelConfig;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    Adam,
    AdamW,
}

/// Learning-rate schedule; `lr` is the peak rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LrSchedule {
    /// Linear warmup, then constant.
    Constant,
    /// Linear warmup, then `lr * sqrt(warmup / step)` (fairseq's inverse_sqrt).
    InverseSqrt,
    /// Linear warmup, then linear decay to zero at `max_steps`, or when `max_minutes` runs out
    /// (estimated from the measured time per step, and re-estimated at every checkpoint).
    Linear,
    /// As `Linear`, along half a cosine (Loshchilov & Hutter 2017, without restarts).
    Cosine,
}

/// How the teacher-forcing ratio changes with the step (scheduled sampling, Bengio 2015).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TeacherForcingSchedule {
    /// Always `teacher_forcing`.
    Constant,
    /// From 1.0 down to `teacher_forcing` linearly over `tf_decay_steps`.
    Linear,
    /// `k / (k + exp(step / k))`, floored at `teacher_forcing`, with `k = tf_decay_steps / 10`.
    InverseSigmoid,
}

/// Which validation number picks the best model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BestBy {
    /// Validation BLEU (translation).
    Bleu,
    /// Validation label accuracy (tagging, classification).
    Accuracy,
    /// Validation loss (the only score of generation, whose outputs have no one right answer).
    Loss,
    /// Validation word error rate, lower is better (speech recognition).
    Wer,
    /// Validation ROUGE of greedy outputs: the mean of the ROUGE-1, -2 and -L F-measures with
    /// the stemmer (summaries, whose 4-gram BLEU is often 0 for short outputs such as subject
    /// lines, and then cannot tell checkpoints apart).
    Rouge,
}

impl BestBy {
    /// The default for a task: its own score.
    pub fn for_task(task: Task) -> Self {
        match task {
            Task::Translation => BestBy::Bleu,
            Task::Tagging | Task::Classification => BestBy::Accuracy,
            Task::Generation => BestBy::Loss,
            Task::Asr => BestBy::Wer,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Token budget of a batch (padding included, on the longer side).
    pub max_tokens: usize,
    /// Most sentences in a batch.
    pub max_sentences: usize,
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub beta1: f32,
    pub beta2: f32,
    pub weight_decay: f32,
    pub warmup_steps: usize,
    pub schedule: LrSchedule,
    /// The part of a linear or cosine schedule (after warmup) over which the rate decays to
    /// zero; before it the rate stays at its peak (warmup-stable-decay, as in MiniCPM and
    /// Hägele et al. 2024). 1 = the whole run.
    pub decay_fraction: f64,
    /// Per-parameter gradient-norm clipping (burn clips each tensor); 0 = off.
    pub clip_norm: f32,
    pub label_smoothing: f64,
    /// Word dropout: the probability that a training source token becomes `<unk>`
    /// (`s2s_data::Batch::drop_source_words`); 0 = off.
    #[serde(skip_serializing_if = "is_off")]
    pub word_dropout: f64,
    /// Probability of feeding the gold previous token (1.0 = full teacher forcing).
    pub teacher_forcing: f64,
    pub tf_schedule: TeacherForcingSchedule,
    pub tf_decay_steps: usize,
    pub max_epochs: usize,
    /// 0 = no limit.
    pub max_steps: usize,
    /// 0 = no limit. With a linear or cosine schedule the rate reaches zero as it runs out.
    pub max_minutes: f64,
    /// Validations without improvement before stopping; 0 = never stop early.
    pub patience: usize,
    /// Validate every N steps; 0 = at the end of every epoch.
    pub valid_every: usize,
    /// Also write a checkpoint every N steps between validations (fairseq's
    /// `--save-interval-updates`); 0 = only at validations. With `keep_last`, this keeps closely
    /// spaced checkpoints for `s2s average` without the cost of validating each one.
    pub save_every: usize,
    /// Validation sentences decoded for BLEU (0 = all).
    pub valid_bleu_sentences: usize,
    pub best_by: BestBy,
    /// sacreBLEU tokenizer for validation BLEU (`zh` for Chinese targets).
    pub bleu_tokenize: String,
    /// Consecutive non-finite losses or gradient norms tolerated before training stops.
    pub max_bad_steps: usize,
    /// Checkpoints kept: the newest in `checkpoint/`, older ones in `checkpoints/step-N/`.
    pub keep_last: usize,
    /// In a time-budgeted run (`max_minutes` with a linear or cosine schedule) with
    /// `keep_last = N > 1` and `save_every = 0`: the last N checkpoints are spread evenly over
    /// this fraction of the run's steps, at its end, for `s2s average`.
    pub average_span: f64,
    pub seed: u64,
    /// Speech: SpecAugment's time and frequency masks on the training batches (off by
    /// default; `[train.spec_augment]`).
    #[serde(skip_serializing_if = "s2s_data::audio::SpecAugment::is_off")]
    pub spec_augment: s2s_data::audio::SpecAugment,
}

impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            max_tokens: 4096,
            max_sentences: 128,
            optimizer: OptimizerKind::Adam,
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.98,
            weight_decay: 0.0,
            warmup_steps: 100,
            schedule: LrSchedule::Constant,
            decay_fraction: 1.0,
            clip_norm: 1.0,
            label_smoothing: 0.1,
            word_dropout: 0.0,
            teacher_forcing: 1.0,
            tf_schedule: TeacherForcingSchedule::Constant,
            tf_decay_steps: 10_000,
            max_epochs: 20,
            max_steps: 0,
            max_minutes: 0.0,
            patience: 5,
            valid_every: 0,
            save_every: 0,
            valid_bleu_sentences: 500,
            best_by: BestBy::Bleu,
            bleu_tokenize: "13a".into(),
            max_bad_steps: 5,
            keep_last: 1,
            average_span: 0.2,
            seed: 1,
            spec_augment: s2s_data::audio::SpecAugment::default(),
        }
    }
}

/// Everything needed to rebuild and continue a run: `MODEL_DIR/config.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The preset the model started from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The data's task; absent in older runs, whose task is the model's own
    /// ([`ModelConfig::task`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// The source's width: its vocabulary, a speech model's feature bins, or a
    /// vector-conditioned model's vector dimension (see `src_vectors`).
    pub src_vocab: usize,
    pub tgt_vocab: usize,
    /// The source is a vector of `src_vocab` numbers ([`s2s_data::vectors`]), not tokens.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub src_vectors: bool,
    pub model: ModelConfig,
    pub train: TrainConfig,
}

impl RunConfig {
    /// A new run of `model` on `data`: the data's task, and vocabularies of its sizes (a speech
    /// source's width is its feature bins).
    pub fn for_data(
        arch: Option<String>,
        model: ModelConfig,
        train: TrainConfig,
        data: &s2s_data::DataDir,
    ) -> Self {
        Self {
            arch,
            task: Some(data.meta.options.task),
            src_vocab: data.source_width(),
            tgt_vocab: data.tgt_tokenizer.vocab_size(),
            src_vectors: data.meta.vectors.is_some(),
            model,
            train,
        }
    }

    /// What the model was trained to do.
    pub fn task(&self) -> Task {
        self.task.unwrap_or_else(|| self.model.task())
    }
}

fn is_off(p: &f64) -> bool {
    *p == 0.0
}

impl TrainConfig {
    /// Checks the options whose bad values would otherwise fail deep inside training (an
    /// empty batch, a NaN learning rate, an unknown BLEU tokenizer).
    pub fn validate(&self) -> Result<(), String> {
        if self.max_tokens == 0 || self.max_sentences == 0 {
            return Err("[train] max_tokens and max_sentences must be at least 1".into());
        }
        if !(self.lr.is_finite() && self.lr > 0.0) {
            return Err(format!(
                "[train] lr = {} must be a positive number",
                self.lr
            ));
        }
        for (name, v) in [("beta1", self.beta1), ("beta2", self.beta2)] {
            if !(0.0..1.0).contains(&v) {
                return Err(format!("[train] {name} = {v} must be in [0, 1)"));
            }
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return Err(format!(
                "[train] weight_decay = {} must be 0 or more",
                self.weight_decay
            ));
        }
        if !(self.clip_norm.is_finite() && self.clip_norm >= 0.0) {
            return Err(format!(
                "[train] clip_norm = {} must be 0 (off) or more",
                self.clip_norm
            ));
        }
        if !(0.0..1.0).contains(&self.word_dropout) {
            return Err(format!(
                "[train] word_dropout = {} must be in [0, 1)",
                self.word_dropout
            ));
        }
        if !(0.0..1.0).contains(&self.label_smoothing) {
            return Err(format!(
                "[train] label_smoothing = {} must be in [0, 1)",
                self.label_smoothing
            ));
        }
        if !(0.0..=1.0).contains(&self.teacher_forcing) {
            return Err(format!(
                "[train] teacher_forcing = {} must be in [0, 1]",
                self.teacher_forcing
            ));
        }
        if !(self.max_minutes.is_finite() && self.max_minutes >= 0.0) {
            return Err(format!(
                "[train] max_minutes = {} must be 0 (no limit) or more",
                self.max_minutes
            ));
        }
        if matches!(self.schedule, LrSchedule::Linear | LrSchedule::Cosine)
            && self.max_steps == 0
            && self.max_minutes == 0.0
        {
            return Err(format!(
                "[train] schedule = \"{}\" decays to zero at the end of training, so it needs max_steps or max_minutes (or --max-steps / --max-minutes)",
                if self.schedule == LrSchedule::Linear {
                    "linear"
                } else {
                    "cosine"
                }
            ));
        }
        if !(self.decay_fraction > 0.0 && self.decay_fraction <= 1.0) {
            return Err(format!(
                "[train] decay_fraction = {} must be in (0, 1]",
                self.decay_fraction
            ));
        }
        if !(self.average_span > 0.0 && self.average_span <= 1.0) {
            return Err(format!(
                "[train] average_span = {} must be in (0, 1]",
                self.average_span
            ));
        }
        self.bleu_tokenize
            .parse::<s2s_eval::Tokenize>()
            .map_err(|e| format!("[train] bleu_tokenize: {e}"))?;
        Ok(())
    }
}

impl RunConfig {
    /// Checks everything `config.toml` says: the model's shape, that it fits the vocabularies,
    /// and the training options.
    pub fn validate(&self) -> Result<(), String> {
        let specials = s2s_data::SPECIAL_TOKENS.len();
        if self.src_vectors && self.src_vocab == 0 {
            return Err("src_vocab = 0: a vector condition has at least one number".into());
        }
        let vocabularies = [("src_vocab", self.src_vocab), ("tgt_vocab", self.tgt_vocab)];
        // A vector's width is its dimension, not a vocabulary.
        for (name, v) in vocabularies.into_iter().skip(usize::from(self.src_vectors)) {
            if v <= specials {
                return Err(format!(
                    "{name} = {v}: a vocabulary holds the {specials} special tokens and at least one more"
                ));
            }
        }
        self.model.validate().map_err(|e| format!("[model] {e}"))?;
        let task = self.task();
        if !self.model.fits(task) {
            return Err(format!(
                "task = \"{task}\", but the model is for {}",
                self.model.task()
            ));
        }
        let kept_by = match task {
            Task::Translation => "\"bleu\", \"rouge\" or \"loss\"",
            Task::Tagging | Task::Classification => "\"accuracy\" or \"loss\"",
            Task::Generation => "\"loss\"",
            Task::Asr => "\"wer\" or \"loss\"",
        };
        let fits = match self.train.best_by {
            BestBy::Bleu | BestBy::Rouge => task == Task::Translation,
            BestBy::Accuracy => task.labels_input(),
            BestBy::Wer => task == Task::Asr,
            BestBy::Loss => true,
        };
        if !fits {
            let best_by = toml::Value::try_from(self.train.best_by).map_err(|e| e.to_string())?;
            return Err(format!(
                "[train] best_by = {best_by} does not score {task}; a {task} model is kept by {kept_by}"
            ));
        }
        self.model
            .check_vocab(self.src_vocab, self.tgt_vocab)
            .map_err(|e| format!("[model] {e}"))?;
        if self.model.copies() && self.train.teacher_forcing < 1.0 {
            return Err(format!(
                "[train] teacher_forcing = {} feeds the model its own predictions, which a copy \
                 model does not support; set teacher_forcing = 1.0 or [model] copy = false",
                self.train.teacher_forcing
            ));
        }
        self.train.validate()
    }
}

/// A `--config FILE.toml`: an optional preset to start from, then overrides.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub arch: Option<String>,
    pub model: Option<toml::Table>,
    pub train: Option<toml::Table>,
}

/// Merges `overrides` into `base` (tables recursively).
pub fn merge_toml(base: &mut toml::Table, overrides: &toml::Table) {
    for (k, v) in overrides {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_toml(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The model options a fine-tuning run may change: regularisation, not shape.
const FINE_TUNABLE: [&str; 4] = [
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "alignment_layer",
];

/// Resolves a fine-tuning run (`--init MODEL_DIR`, with an optional `--config`): the model of
/// `init`, with the file's `[model]` allowed to change only [`FINE_TUNABLE`] options, and the
/// default training options under the file's `[train]`.
pub fn resolve_init(
    init: &RunConfig,
    file: Option<(&str, &str)>,
    task: Option<Task>,
) -> Result<(Option<String>, ModelConfig, TrainConfig), String> {
    let parsed = parse_file(file)?;
    let where_ = file.map(|f| f.0).unwrap_or("--init");
    if parsed.arch.is_some() {
        return Err(format!(
            "{where_}: `arch` has no place in a fine-tuning config (--init keeps the model's)"
        ));
    }
    let base = toml::Table::try_from(&init.model).map_err(|e| e.to_string())?;
    let mut model = base.clone();
    if let Some(m) = &parsed.model {
        merge_toml(&mut model, m);
    }
    let shape = |t: &toml::Table| {
        let mut t = t.clone();
        t.retain(|k, _| !FINE_TUNABLE.contains(&k));
        t
    };
    if shape(&model) != shape(&base) {
        return Err(format!(
            "{where_}: [model] may change only {} when fine-tuning (--init keeps the model's shape)",
            FINE_TUNABLE.join(", ")
        ));
    }
    let (model, train) = build(model, parsed.train.as_ref(), where_, task)?;
    Ok((init.arch.clone(), model, train))
}

/// A config file's text parsed, or an empty one.
fn parse_file(file: Option<(&str, &str)>) -> Result<ConfigFile, String> {
    match file {
        Some((name, text)) => toml::from_str(text).map_err(|e| format!("{name}: {e}")),
        None => Ok(ConfigFile::default()),
    }
}

/// The merged `[model]` table as a validated config, and the default training options of
/// `task` (`None`: the model's own) under `train` overrides; `where_` names the source in errors.
fn build(
    model: toml::Table,
    train_overrides: Option<&toml::Table>,
    where_: &str,
    task: Option<Task>,
) -> Result<(ModelConfig, TrainConfig), String> {
    let model: ModelConfig = toml::Value::Table(model)
        .try_into()
        .map_err(|e| format!("{where_}: invalid [model]: {e}"))?;
    model.validate().map_err(|e| format!("{where_}: {e}"))?;
    let defaults = TrainConfig {
        best_by: BestBy::for_task(task.unwrap_or_else(|| model.task())),
        ..TrainConfig::default()
    };
    let mut train = toml::Table::try_from(defaults).map_err(|e| e.to_string())?;
    if let Some(t) = train_overrides {
        merge_toml(&mut train, t);
    }
    let train: TrainConfig = toml::Value::Table(train)
        .try_into()
        .map_err(|e| format!("{where_}: invalid [train]: {e}"))?;
    Ok((model, train))
}

/// Resolves `--arch` and/or `--config` into a model and the training config for `task` (the
/// data's; `None`: the model's own).
pub fn resolve(
    arch: Option<&str>,
    file: Option<(&str, &str)>,
    task: Option<Task>,
) -> Result<(Option<String>, ModelConfig, TrainConfig), String> {
    let parsed = parse_file(file)?;
    let arch = arch.map(str::to_string).or(parsed.arch.clone());
    let mut model = match &arch {
        Some(a) => {
            let cfg = s2s_models::preset(a).ok_or_else(|| {
                format!(
                    "unknown --arch `{a}`; choose one of: {}",
                    s2s_models::preset_names().join(", ")
                )
            })?;
            toml::Table::try_from(&cfg).map_err(|e| e.to_string())?
        }
        None => toml::Table::new(),
    };
    if let Some(m) = &parsed.model {
        merge_toml(&mut model, m);
    }
    if model.is_empty() {
        return Err("no model given: pass --arch PRESET, or a --config with `arch = ...` or a [model] table".into());
    }
    let where_ = file.map(|f| f.0).unwrap_or("--arch");
    let (model, train) = build(model, parsed.train.as_ref(), where_, task)?;
    Ok((arch, model, train))
}
