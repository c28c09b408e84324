use anyhow::{Context, Result, bail};
use s2s_infer::{Translator, defaults};
use s2s_search::{LengthPenalty, SearchConfig, Strategy};
use std::io::{Read, Write};
use std::path::PathBuf;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchKind {
    Greedy,
    Beam,
    Exhaustive,
    Sample,
    /// A speech model's CTC head (trained with joint CTC): its best path, without the decoder.
    Ctc,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PenaltyKind {
    /// score = logprob / L^alpha
    Alpha,
    /// score = logprob / ((5 + L) / 6)^alpha (GNMT)
    Gnmt,
    /// score = logprob
    None,
}

/// Search options shared by `translate` and `quickstart`.
#[derive(clap::Args, Clone, Debug)]
pub struct SearchArgs {
    #[arg(long, value_enum, default_value = "beam")]
    pub search: SearchKind,
    /// Beam width [default: the model's `decoding.toml`, else 5].
    #[arg(long)]
    pub beam: Option<usize>,
    /// Length-normalisation exponent [default: the model's `decoding.toml` (`s2s tune`), else
    /// 0.75].
    #[arg(long)]
    pub alpha: Option<f32>,
    #[arg(long, value_enum, default_value = "alpha")]
    pub length_penalty: PenaltyKind,
    /// Hypotheses to output per sentence (<= --beam).
    #[arg(long, default_value_t = defaults::NBEST)]
    pub nbest: usize,
    #[arg(long, default_value_t = 0)]
    pub min_len: usize,
    /// Absolute maximum output length in tokens.
    #[arg(long, default_value_t = defaults::MAX_LEN)]
    pub max_len: usize,
    /// Maximum output length as a multiple of the source length (plus 10 tokens); not applied
    /// to a generation model, whose source is its condition.
    #[arg(long, default_value_t = defaults::MAX_LEN_RATIO)]
    pub max_len_ratio: f32,
    /// Never repeat an n-gram of this order (0 = off).
    #[arg(long, default_value_t = 0)]
    pub no_repeat_ngram: usize,
    /// Never output <unk>.
    #[arg(long)]
    pub ban_unk: bool,
    /// Beam and greedy search: also end a sentence once round(beam * P) hypotheses have
    /// finished (CTranslate2's patience; 1 is its and fairseq's default rule). Faster, and may
    /// differ from the default, which searches until no open hypothesis can still win.
    #[arg(long, value_name = "P")]
    pub patience: Option<f32>,
    /// Sampling temperature.
    #[arg(long, default_value_t = 1.0)]
    pub temperature: f32,
    /// Sampling: keep the k most likely tokens (0 = all).
    #[arg(long, default_value_t = 0)]
    pub top_k: usize,
    /// Sampling: nucleus probability mass (1 = off).
    #[arg(long, default_value_t = 1.0)]
    pub top_p: f32,
    /// Sampling seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl SearchArgs {
    /// The search these options ask for, over a vocabulary with `specials`, with `model`'s
    /// decoding defaults where they leave beam or alpha open.
    pub fn to_config(
        &self,
        model: &s2s_infer::Decoding,
        specials: s2s_data::Specials,
    ) -> Result<SearchConfig> {
        let beam = self.beam.unwrap_or(model.beam);
        let alpha = self.alpha.unwrap_or(model.alpha);
        let strategy = match self.search {
            SearchKind::Greedy => Strategy::Greedy,
            SearchKind::Beam => Strategy::Beam { k: beam },
            SearchKind::Exhaustive => Strategy::Exhaustive,
            SearchKind::Ctc => Strategy::Ctc,
            SearchKind::Sample => Strategy::Sample {
                temperature: self.temperature,
                top_k: self.top_k,
                top_p: self.top_p,
                seed: self.seed,
            },
        };
        if self.search == SearchKind::Beam && self.nbest > beam {
            bail!(
                "--nbest {} is larger than --beam {beam}: ask for at most as many hypotheses as the beam keeps",
                self.nbest,
            );
        }
        Ok(SearchConfig {
            nbest: self.nbest,
            length_penalty: match self.length_penalty {
                PenaltyKind::Alpha => LengthPenalty::Alpha(alpha),
                PenaltyKind::Gnmt => LengthPenalty::Gnmt(alpha),
                PenaltyKind::None => LengthPenalty::None,
            },
            min_len: self.min_len,
            max_len: self.max_len,
            max_len_ratio: Some(defaults::len_ratio(self.max_len_ratio)),
            no_repeat_ngram: self.no_repeat_ngram,
            ban_unk: self.ban_unk,
            patience: self.patience,
            ..defaults::search(strategy, specials)
        })
    }
}

/// Translate one sentence per line, from stdin by default.
#[derive(clap::Args)]
pub struct TranslateArgs {
    /// MODEL_DIR written by `s2s train`. Given more than once, the models decode as an ensemble
    /// (the mean of their probabilities at every step); they must have been trained on one
    /// prepared DATA_DIR, and the first one's tokenizers and `decoding.toml` serve them all
    /// (see --decoding).
    #[arg(long, required = true)]
    pub model: Vec<PathBuf>,
    /// Decoding defaults (beam, alpha) from FILE instead of the first model's `decoding.toml`:
    /// an ensemble's, written by `s2s tune --model A --model B --out FILE`.
    #[arg(long, value_name = "FILE")]
    pub decoding: Option<PathBuf>,
    /// Input file (default: stdin).
    #[arg(long)]
    pub input: Option<PathBuf>,
    /// Output file (default: stdout).
    #[arg(long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub search: SearchArgs,
    /// The target language of a multilingual Marian model (`cmn_Hans`, or the tag
    /// `>>cmn_Hans<<`): its tag goes in front of every line.
    #[arg(long, value_name = "LANG")]
    pub target_lang: Option<String>,
    /// Write one JSON object per line with the n-best, scores and tokens.
    #[arg(long)]
    pub json: bool,
    /// Sentences decoded together.
    #[arg(long, default_value_t = defaults::BATCH_SIZE)]
    pub batch_size: usize,
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Write an attention heatmap (SVG) of each sentence's best translation. With one input line
    /// it goes to FILE itself; with several, to FILE numbered by line: out.svg becomes out.1.svg,
    /// out.2.svg, ...
    #[arg(long, value_name = "FILE.svg")]
    pub attention_plot: Option<PathBuf>,
}

pub fn run(args: TranslateArgs) -> Result<()> {
    let device = s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
    let mut translator = Translator::ensemble(&args.model, &device)?;
    if let Some(path) = &args.decoding {
        translator.set_decoding(s2s_infer::Decoding::read_file(path)?);
    }
    let mut cfg = args
        .search
        .to_config(translator.decoding(), translator.specials())?;
    cfg.return_attention = args.attention_plot.is_some();
    let (bytes, name) = match &args.input {
        Some(p) => (
            std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?,
            p.clone(),
        ),
        None => {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .context("cannot read stdin")?;
            (b, PathBuf::from("<stdin>"))
        }
    };
    let lines = s2s_data::io::split_lines(&bytes, &name)?;
    let translated = match &args.target_lang {
        None => translator.translate(&lines, &cfg, args.batch_size),
        Some(lang) => translator
            .with_target_lang(&lines, lang)
            .and_then(|tagged| translator.translate(&tagged, &cfg, args.batch_size)),
    };
    // A vector-conditioned model's input errors name the input line: say which file.
    let mut translations = match translator.vector_dim() {
        Some(_) => translated.with_context(|| name.display().to_string())?,
        None => translated?,
    };
    for (t, line) in translations.iter_mut().zip(&lines) {
        t.src.clone_from(line);
    }
    // A file is written whole and atomically (no half-written output if decoding fails);
    // stdout streams.
    let mut buffer = Vec::new();
    let mut out: Box<dyn Write> = match &args.output {
        Some(_) => Box::new(&mut buffer),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    for t in &translations {
        if args.json {
            writeln!(out, "{}", serde_json::to_string(t)?)?;
        } else if cfg.nbest > 1 {
            for h in &t.hyps {
                writeln!(out, "{:.4}\t{}", h.score, h.text)?;
            }
        } else {
            writeln!(
                out,
                "{}",
                t.hyps.first().map(|h| h.text.as_str()).unwrap_or_default()
            )?;
        }
    }
    out.flush()?;
    drop(out);
    if let Some(p) = &args.output {
        s2s_data::atomic_write(p, &buffer)
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(path) = &args.attention_plot {
        for p in
            s2s_infer::plot::write_attention_plots(path, &translations, &translator.arch_name())?
        {
            eprintln!("wrote {}", p.display());
        }
    }
    Ok(())
}
