use anyhow::{Context, Result, bail};
use s2s_infer::RunConfig;
use s2s_infer::config::{resolve, resolve_init};
use s2s_infer::model_dir::{self, CONFIG};
use s2s_train::{Corpus, StopReason, TrainOptions};
use std::path::{Path, PathBuf};

/// Train a model, with validation, checkpoints and early stopping.
#[derive(clap::Args, Clone)]
pub struct TrainArgs {
    /// DATA_DIR written by `s2s prepare`.
    #[arg(long)]
    pub data: PathBuf,
    /// Architecture preset: the RNN family, the Transformer and ConvS2S (`-tiny` ones are for
    /// smoke runs).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(s2s_models::preset_names()))]
    pub arch: Option<String>,
    /// TOML config: `arch = "preset"` plus `[model]` and `[train]` overrides.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// MODEL_DIR to write.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub max_epochs: Option<usize>,
    #[arg(long)]
    pub max_steps: Option<usize>,
    /// Training time budget; a linear or cosine learning rate decays to zero as it runs out
    /// (the end re-estimated from the measured time per step at every checkpoint).
    #[arg(long)]
    pub max_minutes: Option<f64>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// Keep the last N checkpoints (older ones in MODEL_DIR/checkpoints/step-NNNNNNNN/); 1 keeps
    /// only MODEL_DIR/checkpoint. Overrides `[train] keep_last`. In a time-budgeted run without
    /// `--save-every`, the last N are spread over the end of the run (`[train] average_span`).
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,
    /// Also write a checkpoint every N steps between validations (0: only at validations), so
    /// that `--keep-last` keeps closely spaced ones to average. Overrides `[train] save_every`.
    #[arg(long, value_name = "N")]
    pub save_every: Option<usize>,
    /// Continue from MODEL_DIR/checkpoint exactly where it stopped.
    #[arg(long)]
    pub resume: bool,
    /// Fine-tune: start from the weights of this MODEL_DIR (imported or trained) instead of
    /// random ones. Its architecture is kept (a --config may change dropout and [train]); the
    /// data must be encoded with its tokenizers (`s2s prepare --tokenizers-from MODEL_DIR`).
    #[arg(long, value_name = "MODEL_DIR", conflicts_with_all = ["arch", "resume"])]
    pub init: Option<PathBuf>,
    /// Overwrite an existing model in --out (without it, an existing model is never touched).
    #[arg(long)]
    pub force: bool,
    /// Device: cpu (default), or cuda:N / wgpu when compiled in.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Data parallelism: comma-separated devices (`cuda:0,cuda:1`; `cpu,cpu` exercises the path),
    /// one batch each per step, gradients averaged on the first. See docs/scaling.md.
    #[arg(long, conflicts_with = "device")]
    pub devices: Option<String>,
    /// Hide the progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// A path as one shell word: quoted when it holds anything but safe characters.
fn shell_word(p: &Path) -> String {
    let s = p.display().to_string();
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if safe {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command that continues this run exactly (limits and seed are in config.toml).
fn resume_command(args: &TrainArgs) -> String {
    let mut cmd = format!(
        "s2s train --data {} --out {} --resume",
        shell_word(&args.data),
        shell_word(&args.out)
    );
    if args.device != "cpu" {
        cmd.push_str(&format!(" --device {}", args.device));
    }
    cmd
}

pub fn run(args: TrainArgs) -> Result<()> {
    run_holding(args, None)
}

/// Whether process `pid` still runs (or may: a pid we may not signal belongs to a live process).
fn process_running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that the process exists.
    let signalled = unsafe { libc::kill(pid, 0) } == 0;
    signalled || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes the temporary files that killed s2s processes left in `dir` (atomic writes cut short;
/// never any other file, nor one a running process is still writing), saying so on stderr.
pub fn sweep_temporaries(dir: &Path) -> Result<()> {
    let removed = s2s_data::io::sweep_temporaries(dir, process_running)
        .with_context(|| format!("cannot sweep stale temporary files in {}", dir.display()))?;
    for path in removed {
        eprintln!(
            "removed {}: a temporary file left by an s2s process that was killed",
            path.display()
        );
    }
    Ok(())
}

/// `out`'s lock, taken now unless the caller `held` it already, then its stale temporary files
/// swept (no other s2s process writes `out` while the lock is held).
fn lock_and_sweep(
    out: &Path,
    held: Option<model_dir::ModelDirLock>,
) -> Result<model_dir::ModelDirLock> {
    let lock = match held {
        Some(lock) => lock,
        None => model_dir::lock(out)?,
    };
    sweep_temporaries(out)?;
    Ok(lock)
}

/// [`run`] for a caller that holds `args.out`'s lock already (`s2s quickstart`, which writes its
/// corpus there first).
pub fn run_holding(args: TrainArgs, held: Option<model_dir::ModelDirLock>) -> Result<()> {
    let devices = match &args.devices {
        Some(list) => s2s_models::backend::parse_devices(list),
        None => s2s_models::backend::parse_device(&args.device).map(|d| vec![d]),
    }
    .map_err(anyhow::Error::msg)?;
    let data = s2s_data::load_data_dir(&args.data)?;
    let data_task = data.meta.options.task;
    let out = &args.out;
    // Held until training ends (or the process does): a second trainer on `out` is refused.
    let _lock;
    let run = if args.resume {
        if args.arch.is_some() || args.config.is_some() {
            bail!(
                "--resume continues with {}/{CONFIG}; drop --arch/--config",
                out.display()
            );
        }
        let mut run = model_dir::read_run_config(out)?;
        _lock = lock_and_sweep(out, held)?;
        // Limits may be raised when resuming; nothing else changes.
        apply_limits(&mut run, &args);
        run
    } else {
        if out.join(CONFIG).exists() && !args.force {
            bail!(
                "{} already holds a model; pass --resume to continue it, --force to overwrite it, or choose another --out",
                out.display()
            );
        }
        let text = match &args.config {
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .with_context(|| format!("cannot read config {}", p.display()))?,
            ),
            None => None,
        };
        let name = args
            .config
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let file = text.as_deref().map(|t| (name.as_str(), t));
        let (arch, model, mut train) = match &args.init {
            Some(init) => {
                check_init_tokenizers(init, &data)?;
                let base = model_dir::read_run_config(init)?;
                resolve_init(&base, file, Some(data_task)).map_err(anyhow::Error::msg)?
            }
            None => {
                resolve(args.arch.as_deref(), file, Some(data_task)).map_err(anyhow::Error::msg)?
            }
        };
        if train.bleu_tokenize == "13a" && data.meta.options.tgt_is_chinese {
            train.bleu_tokenize = "zh".into();
        }
        let audio = data.meta.audio.is_some();
        if !model.fits(data_task) {
            bail!(
                "{} holds {data_task} data but the model is for {}; fix: choose a {data_task} model ({}), or prepare the data with --task {}",
                args.data.display(),
                model.task(),
                task_presets(data_task, audio),
                model.task()
            );
        }
        if model.reads_audio() != audio {
            let (data_reads, model_reads) = if audio {
                ("audio", "text")
            } else {
                ("text", "audio")
            };
            bail!(
                "{} holds {data_task} data of {data_reads}, but the model reads {model_reads}; fix: choose a model for {data_reads} ({})",
                args.data.display(),
                task_presets(data_task, audio)
            );
        }
        if data.meta.vectors.is_some() && !model.reads_vectors() {
            bail!(
                "{} holds generation data conditioned on vectors, which only the recurrent \
                 encoder-decoders and the Transformer read (embedding each vector through their \
                 own source table); fix: choose one, e.g. --arch rnn-gru-cho or --arch \
                 transformer-small (without copy = true or share_embeddings = true)",
                args.data.display()
            );
        }
        let mut run = RunConfig::for_data(arch, model, train, &data);
        apply_limits(&mut run, &args);
        run.model
            .check_vocab(run.src_vocab, run.tgt_vocab)
            .map_err(|e| {
                anyhow::anyhow!("{e} (prepare the data with --joint to share embeddings)")
            })?;
        run.validate().map_err(|e| {
            anyhow::anyhow!(
                "{}: {e}",
                args.config
                    .as_deref()
                    .map_or("--arch".into(), |p| p.display().to_string())
            )
        })?;
        std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
        _lock = lock_and_sweep(out, held)?;
        if args.force {
            // The old run's checkpoints must not be resumed with the new config.
            for name in [
                "checkpoint",
                "checkpoint.old",
                "checkpoint.new",
                "checkpoints",
            ] {
                let p = out.join(name);
                if p.exists() {
                    std::fs::remove_dir_all(&p)
                        .with_context(|| format!("--force: cannot remove {}", p.display()))?;
                }
            }
            let best = out.join(model_dir::BEST);
            if best.exists() {
                std::fs::remove_file(&best)
                    .with_context(|| format!("--force: cannot remove {}", best.display()))?;
            }
        }
        model_dir::create(out, &run, &data)?;
        if let Some(init) = &args.init {
            // An imported model's SentencePiece files go along, for `s2s export`.
            for name in [model_dir::SRC_SPM, model_dir::TGT_SPM] {
                let from = init.join(name);
                if from.exists() {
                    let bytes = std::fs::read(&from)
                        .with_context(|| format!("cannot read {}", from.display()))?;
                    s2s_data::atomic_write(out.join(name), &bytes)
                        .with_context(|| format!("cannot write {}", out.join(name).display()))?;
                }
            }
        }
        run
    };
    if run.task() != data_task {
        bail!(
            "{} holds {data_task} data but the model in {} was trained for {}: resume with the DATA_DIR it was trained on",
            args.data.display(),
            out.display(),
            run.task()
        );
    }
    if run.src_vocab != data.source_width() || run.tgt_vocab != data.tgt_tokenizer.vocab_size() {
        bail!(
            "{} has vocabularies of {}/{} tokens but the model in {} was built for {}/{}: resume with the DATA_DIR it was trained on",
            args.data.display(),
            data.source_width(),
            data.tgt_tokenizer.vocab_size(),
            out.display(),
            run.src_vocab,
            run.tgt_vocab
        );
    }
    let encode = |text: &s2s_data::ParallelText| s2s_train::encode_split(&run.model, &data, text);
    let train_split = encode(&data.train)?;
    let valid_split = data.valid.as_ref().map(encode).transpose()?;
    let refs: Vec<String> = data
        .valid
        .as_ref()
        .map(|v| v.tgt.clone())
        .unwrap_or_default();
    let corpus = Corpus {
        train: &train_split,
        valid: valid_split.as_ref(),
        valid_refs: &refs,
        tgt_tokenizer: &data.tgt_tokenizer,
    };
    let interrupter = s2s_train::Interrupter::new();
    crate::signals::install(interrupter.clone()).context("cannot install signal handlers")?;
    let outcome = s2s_train::train_on(
        out,
        &run,
        &corpus,
        &devices,
        &TrainOptions {
            resume: args.resume,
            init: args
                .init
                .as_ref()
                .map(|d| model_dir::float_weights(d, "fine-tuning (--init)"))
                .transpose()?,
            progress: !args.quiet,
            interrupter,
        },
    )?;
    if let Some(m) = &outcome.last {
        let minutes = (outcome.state.elapsed_sec / 60.0 * 10.0).round() / 10.0;
        if corpus.valid.is_some() {
            println!(
                "step {} epoch {}: {} ({minutes} min)",
                m.step,
                m.epoch,
                m.validation_summary()
            );
        } else {
            println!(
                "step {} epoch {}: train loss {:.3}, no validation split ({minutes} min)",
                m.step, m.epoch, m.train_loss
            );
        }
    }
    match outcome.reason {
        StopReason::Interrupted => {
            let signal = crate::signals::received().unwrap_or(libc::SIGINT);
            eprintln!(
                "stopped by {} at step {}; checkpoint written to {}. Resume with: {}",
                crate::signals::name(signal),
                outcome.state.step,
                out.join("checkpoint").display(),
                resume_command(&args)
            );
            std::process::exit(crate::signals::exit_code(signal));
        }
        r => eprintln!(
            "training finished ({r:?}); best model in {}",
            out.join(model_dir::BEST).display()
        ),
    }
    Ok(())
}

/// The presets of models for `task` over audio or text, for an error message.
fn task_presets(task: s2s_data::Task, audio: bool) -> String {
    let names: Vec<&str> = s2s_models::preset_names()
        .into_iter()
        .filter(|n| s2s_models::preset(n).is_some_and(|c| c.fits(task) && c.reads_audio() == audio))
        .collect();
    format!("--arch {}", names.join(", "))
}

/// A fine-tuning run's data must be encoded with the initial model's tokenizers: the same ids
/// for the same pieces.
fn check_init_tokenizers(init: &Path, data: &s2s_data::DataDir) -> Result<()> {
    let sides = [
        (&data.meta.tokenizers.src.file, model_dir::SRC_TOKENIZER),
        (&data.meta.tokenizers.tgt.file, model_dir::TGT_TOKENIZER),
    ];
    for (data_file, model_file) in sides {
        let (a, b) = (data.path.join(data_file), init.join(model_file));
        let read =
            |p: &Path| std::fs::read(p).with_context(|| format!("cannot read {}", p.display()));
        if read(&a)? != read(&b)? {
            bail!(
                "{} was not encoded with the tokenizers of {}: {} differs from {}; prepare the \
                 corpus with `s2s prepare ... --tokenizers-from {}`",
                data.path.display(),
                init.display(),
                a.display(),
                b.display(),
                init.display()
            );
        }
    }
    Ok(())
}

fn apply_limits(run: &mut RunConfig, args: &TrainArgs) {
    let t = &mut run.train;
    if let Some(v) = args.max_epochs {
        t.max_epochs = v;
    }
    if let Some(v) = args.max_steps {
        t.max_steps = v;
    }
    if let Some(v) = args.max_minutes {
        t.max_minutes = v;
    }
    if let Some(v) = args.keep_last {
        t.keep_last = v;
    }
    if let Some(v) = args.save_every {
        t.save_every = v;
    }
    if let Some(v) = args.seed {
        t.seed = v;
    }
}
