use anyhow::{Context, Result, bail};
use s2s_data::{CorpusSource, PrepareConfig};
use std::path::PathBuf;

/// The embedded English->Chinese corpus (Tatoeba via ManyThings, CC-BY 2.0 FR; see
/// data/tatoeba-cmn-eng/README.md for sources and attribution).
const CORPUS: [(&str, &[u8]); 6] = [
    (
        "train.en",
        include_bytes!("../../../../data/tatoeba-cmn-eng/train.en"),
    ),
    (
        "train.zh",
        include_bytes!("../../../../data/tatoeba-cmn-eng/train.zh"),
    ),
    (
        "valid.en",
        include_bytes!("../../../../data/tatoeba-cmn-eng/valid.en"),
    ),
    (
        "valid.zh",
        include_bytes!("../../../../data/tatoeba-cmn-eng/valid.zh"),
    ),
    (
        "test.en",
        include_bytes!("../../../../data/tatoeba-cmn-eng/test.en"),
    ),
    (
        "test.zh",
        include_bytes!("../../../../data/tatoeba-cmn-eng/test.zh"),
    ),
];
const ATTRIBUTION: &str = include_str!("../../../../data/tatoeba-cmn-eng/_about.txt");
const CONFIG: &str = include_str!("../../../../configs/quickstart.toml");

/// The textbook examples the quickstart shows.
pub const EXAMPLES: [&str; 6] = [
    "I love China.",
    "Tom chases Jerry.",
    "Knowledge is power.",
    "I want to run.",
    "Where is the station?",
    "It is raining today.",
];

/// Train the default English->Chinese model on the embedded corpus and show what it does.
#[derive(clap::Args)]
pub struct QuickstartArgs {
    /// Total time budget in minutes (training gets most of it; choosing alpha and test decoding
    /// the rest).
    #[arg(long, default_value_t = 10.0)]
    pub minutes: f64,
    /// Where to write the corpus, data directory and model.
    #[arg(long, default_value = "runs/quickstart")]
    pub out: PathBuf,
    /// Replace a model already in --out (without it, an existing model is never touched).
    #[arg(long)]
    pub force: bool,
    #[arg(long, default_value = "cpu")]
    pub device: String,
}

pub fn run(args: QuickstartArgs) -> Result<()> {
    let started = std::time::Instant::now();
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    // Held until training ends, so no other s2s process writes here meanwhile.
    let lock = s2s_infer::model_dir::lock(out)?;
    if out.join(s2s_infer::model_dir::CONFIG).exists() && !args.force {
        bail!(
            "{} already holds a model; pass --force to replace it, or choose another --out",
            out.display()
        );
    }
    let corpus_dir = out.join("corpus");
    std::fs::create_dir_all(&corpus_dir)
        .with_context(|| format!("cannot create {}", corpus_dir.display()))?;
    for dir in [out.as_path(), &corpus_dir, &out.join("data")] {
        super::train::sweep_temporaries(dir)?;
    }
    for (name, bytes) in CORPUS {
        s2s_data::atomic_write(corpus_dir.join(name), bytes)?;
    }
    s2s_data::atomic_write(corpus_dir.join("_about.txt"), ATTRIBUTION.as_bytes())?;
    let f = |n: &str| corpus_dir.join(n);
    let data_dir = out.join("data");
    let mut prep = PrepareConfig::new(
        CorpusSource::Parallel {
            src: f("train.en"),
            tgt: f("train.zh"),
        },
        &data_dir,
    );
    prep.valid = Some(CorpusSource::Parallel {
        src: f("valid.en"),
        tgt: f("valid.zh"),
    });
    prep.test = Some(CorpusSource::Parallel {
        src: f("test.en"),
        tgt: f("test.zh"),
    });
    prep.vocab_size = 4000;
    prep.src_lang = Some("en".into());
    prep.tgt_lang = Some("zh".into());
    prep.force = true;
    // Tatoeba mixes Traditional and Simplified Chinese (about 8k lines each); a model trained on
    // both mixes them within one sentence. One script gives cleaner output.
    prep.clean.zh_script = Some(s2s_data::ZhScript::Simplified);
    eprintln!("[1/4] preparing the corpus in {}", data_dir.display());
    s2s_data::prepare(&prep, &|msg: &str| eprintln!("      {msg}"))?;

    let config_path = out.join("quickstart.toml");
    s2s_data::atomic_write(&config_path, CONFIG.as_bytes())?;
    let model_dir = out.clone();
    let spent = started.elapsed().as_secs_f64() / 60.0;
    // Leave about a tenth of the budget (at least a minute) for choosing alpha on the validation
    // set and decoding the test set.
    let train_minutes = (args.minutes - spent - (args.minutes * 0.1).max(1.0)).max(0.5);
    eprintln!(
        "[2/4] training for {train_minutes:.1} minutes into {}",
        model_dir.display()
    );
    super::train::run_holding(
        super::train::TrainArgs {
            data: data_dir.clone(),
            arch: None,
            config: Some(config_path),
            out: model_dir.clone(),
            max_epochs: Some(1000),
            max_steps: None,
            max_minutes: Some(train_minutes),
            seed: None,
            keep_last: None,
            save_every: None,
            resume: false,
            init: None,
            force: args.force,
            device: args.device.clone(),
            devices: None,
            quiet: false,
        },
        Some(lock),
    )?;

    let device = s2s_models::backend::parse_device(&args.device).map_err(anyhow::Error::msg)?;
    let translator = s2s_infer::Translator::load(&model_dir, &device)?;
    let data = s2s_data::load_data_dir(&data_dir)?;
    let (valid, test) = match (&data.valid, &data.test) {
        (Some(v), Some(t)) => (v, t),
        _ => anyhow::bail!("the prepared corpus lacks its validation or test split"),
    };
    let bleu_zh = s2s_eval::BleuConfig::with_tokenize(s2s_eval::Tokenize::Zh);
    eprintln!("[3/4] choosing beam search's length penalty on the validation set");
    let base = s2s_search::SearchConfig {
        ban_unk: true,
        ..translator.beam_defaults()
    };
    let tuned = s2s_infer::decoding::tune_alpha(
        &translator,
        &valid.src,
        &valid.tgt,
        "valid",
        &base,
        &s2s_infer::decoding::ALPHAS,
        s2s_eval::Metric::Bleu,
        s2s_eval::Tokenize::Zh,
        s2s_infer::defaults::BATCH_SIZE,
        |alpha, score| eprintln!("      alpha {alpha}: valid BLEU {score:.2}"),
    )?;
    {
        let _lock = s2s_infer::model_dir::lock(&model_dir)?;
        tuned.write(&model_dir)?;
    }
    eprintln!(
        "      alpha {} kept in {}",
        tuned.alpha,
        model_dir.join(s2s_infer::decoding::DECODING).display()
    );
    eprintln!("[4/4] translating the test set");
    let search = s2s_search::SearchConfig {
        length_penalty: s2s_search::LengthPenalty::Alpha(tuned.alpha),
        ..base
    };
    let translate = |lines: &[String]| -> Result<Vec<String>> {
        Ok(translator.translate_best(lines, &search, s2s_infer::defaults::BATCH_SIZE)?)
    };
    let hyps = translate(&test.src)?;
    let refs = [&test.tgt];
    let bleu = s2s_eval::corpus_bleu(&hyps, &refs, &bleu_zh)?;
    let chrf = s2s_eval::corpus_chrf(&hyps, &refs, &s2s_eval::ChrfConfig::default())?;
    // The same output against the references as shipped (mixed scripts), for comparison with
    // systems that did not convert.
    let original_refs = s2s_data::io::split_lines(CORPUS[5].1, &corpus_dir.join(CORPUS[5].0))?;
    let bleu_original = if original_refs.len() == hyps.len() {
        let refs = [&original_refs];
        Some(
            s2s_eval::corpus_bleu(
                &hyps,
                &refs,
                &s2s_eval::BleuConfig::with_tokenize(s2s_eval::Tokenize::Zh),
            )?
            .score,
        )
    } else {
        None
    };
    s2s_data::atomic_write(out.join("test.hyp.zh"), (hyps.join("\n") + "\n").as_bytes())?;
    let examples: Vec<String> = EXAMPLES.iter().map(|s| s.to_string()).collect();
    let shown = translate(&examples)?;
    println!();
    for (en, zh) in examples.iter().zip(&shown) {
        println!("  {en:<24} {zh}");
    }
    println!();
    println!(
        "test BLEU (beam 5, alpha {}, tok:zh) = {:.2}   chrF = {:.2}   ({} sentences)",
        tuned.alpha,
        bleu.score,
        chrf.score,
        hyps.len()
    );
    println!("{}", bleu.signature);
    if let Some(b) = bleu_original {
        println!(
            "test BLEU against the original mixed-script references = {b:.2} (the references above are converted to Simplified, as the training data)"
        );
    }
    println!(
        "total time {:.1} min; model in {}",
        started.elapsed().as_secs_f64() / 60.0,
        model_dir.display()
    );
    println!(
        "try: echo 'I love China.' | cargo run --release -- translate --model {}",
        model_dir.display()
    );
    Ok(())
}
