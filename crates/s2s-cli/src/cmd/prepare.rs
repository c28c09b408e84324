//! `s2s prepare`: validate and clean a parallel corpus (or, for tagging, classification and
//! generation, a labelled one), train the tokenizers and write a data directory. Argument parsing and
//! reporting only; the work is `s2s_data::prepare`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use indicatif::{ProgressBar, ProgressStyle};
use s2s_data::{
    CleanConfig, CorpusSource, DEFAULT_MAX_LEN, DEFAULT_VOCAB_SIZE, DataToml, PrepareConfig,
    SplitName, TagColumn, Task, TokenizerKind, ZhScript,
};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum KindArg {
    /// Byte-pair encoding (SentencePiece-style `▁` word marker).
    Bpe,
    /// One token per character (the default for Chinese).
    Char,
    /// One token per word; punctuation and CJK characters are split off.
    Word,
    /// A SentencePiece-style unigram model (exportable to MarianMT with `--joint`).
    Unigram,
    /// One token per whitespace-separated item, nothing split further (labels, tagged words).
    Split,
}

impl From<KindArg> for TokenizerKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Bpe => TokenizerKind::Bpe,
            KindArg::Char => TokenizerKind::Char,
            KindArg::Word => TokenizerKind::Word,
            KindArg::Unigram => TokenizerKind::Unigram,
            KindArg::Split => TokenizerKind::Split,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TaskArg {
    /// A target sentence of its own length (parallel text or TSV).
    Translation,
    /// One tag per source token (CoNLL-U or token/TAG files).
    Tagging,
    /// One label per sentence (LABEL text files).
    Classification,
    /// A sentence from its label (LABEL text files, read the other way round).
    Generation,
    /// A transcript from audio (manifests of WAV files, or Kaldi data folders).
    Asr,
}

impl From<TaskArg> for Task {
    fn from(t: TaskArg) -> Self {
        match t {
            TaskArg::Translation => Task::Translation,
            TaskArg::Tagging => Task::Tagging,
            TaskArg::Classification => Task::Classification,
            TaskArg::Generation => Task::Generation,
            TaskArg::Asr => Task::Asr,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// CoNLL-U: the FORM column and a tag column (--tag-column), sentences between blank lines.
    Conllu,
    /// One sentence per line of token/TAG items (the tag follows the last `/`).
    Tagged,
    /// One example per line: the label, a space or tab, the text.
    Labelled,
    /// Speech: one utterance per line, `AUDIO.wav<TAB>transcript` (paths relative to the file).
    Manifest,
    /// Speech: a Kaldi data folder (`wav.scp` and `text`).
    Kaldi,
    /// Generation conditioned on vectors: --train-src (and --valid-src, --test-src) hold one
    /// vector per line, its numbers separated by spaces; --train-tgt the texts.
    Vectors,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum TagColumnArg {
    /// Column 4, the universal part-of-speech tag.
    Upos,
    /// Column 5, the language-specific tag.
    Xpos,
}

impl From<TagColumnArg> for TagColumn {
    fn from(c: TagColumnArg) -> Self {
        match c {
            TagColumnArg::Upos => TagColumn::Upos,
            TagColumnArg::Xpos => TagColumn::Xpos,
        }
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum ZhScriptArg {
    Simplified,
    Traditional,
}

impl From<ZhScriptArg> for ZhScript {
    fn from(s: ZhScriptArg) -> Self {
        match s {
            ZhScriptArg::Simplified => ZhScript::Simplified,
            ZhScriptArg::Traditional => ZhScript::Traditional,
        }
    }
}

/// Validate and clean a parallel corpus (or a labelled one for tagging, classification and
/// generation),
/// train the tokenizers and write DATA_DIR.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Cleaning: zero-width characters are removed, whitespace runs collapsed and trimmed (and NFKC \
applied with --nfkc). Pairs with an empty side are dropped from every split. Pairs longer than \
--max-len tokens on either side are dropped from the training split only: validation and test \
are kept complete so that scores stay comparable. Every count is printed and recorded in \
DATA_DIR/data.toml.

Tokenizers: by default bpe for a language written with spaces and char for Chinese/Japanese \
(detected from the text, or from --src-lang/--tgt-lang). --tokenizer sets both sides.

Tasks: translation (the default) reads --train-src/--train-tgt or --tsv. Speech recognition \
(asr) reads manifests of `AUDIO.wav<TAB>transcript` lines (--format manifest, the default) or \
Kaldi data folders (--format kaldi), computes log-mel features (--sample-rate, --n-mels, \
--window-ms, --hop-ms) into {train,valid,test}.feats and tokenizes the transcripts. Tagging and \
classification read one labelled file per split (--train, --valid, --test; --format). Tagging \
uses split tokenizers on both sides (one token per word, one per tag) and checks that every \
sentence has one tag per token; its unknown words get the token of their shape \
(--unk-signatures: <unk-Cap-ing>, <unk-num>, ...), learned from the words rarer than --min-freq \
(2); classification uses a split tokenizer for the labels and word \
for the text by default (--src-tokenizer to change it). Every label of the training split is \
kept (--min-freq does not apply to labels); labels of --valid/--test that training never had \
become <unk> and are counted. Generation reads the same LABEL text files the other way round: \
the label is the condition (the source, a split tokenizer) and the text the target to write \
(bpe by default, --tgt-tokenizer to change it); with --format vectors its conditions are vectors \
instead: --train-src holds one vector per line (numbers separated by spaces, all of one \
dimension) and --train-tgt the texts (likewise --valid-src/--valid-tgt, --test-src/--test-tgt).

Examples:
  # translation (the embedded corpus)
  s2s prepare --train-src data/tatoeba-cmn-eng/train.en --train-tgt data/tatoeba-cmn-eng/train.zh \\
    --valid-src data/tatoeba-cmn-eng/valid.en --valid-tgt data/tatoeba-cmn-eng/valid.zh \\
    --test-src data/tatoeba-cmn-eng/test.en --test-tgt data/tatoeba-cmn-eng/test.zh --out data/cmn-eng
  # tagging: UPOS tags of UD English-EWT
  s2s prepare --task tagging --train en_ewt-ud-train.conllu --valid en_ewt-ud-dev.conllu \\
    --test en_ewt-ud-test.conllu --out data/ewt-upos
  # classification: SST-2 (`0 text` / `1 text` lines)
  s2s prepare --task classification --train stsa.binary.train --valid stsa.binary.dev \\
    --test stsa.binary.test --out data/sst2
  # generation: TREC questions from their type
  s2s prepare --task generation --train TREC.train.all --test TREC.test.all --out data/trec-gen
  # speech recognition: manifests of `AUDIO.wav<TAB>transcript` lines (see `s2s data digits`)
  s2s prepare --task asr --train digits/train.tsv --valid digits/valid.tsv \\
    --test digits/test.tsv --sample-rate 8000 --n-mels 40 --tokenizer word --out data/digits")]
pub struct PrepareArgs {
    /// What the data is for: translation (parallel text), tagging (one tag per token),
    /// classification (one label per sentence), generation (a sentence from a label) or asr
    /// (a transcript from audio).
    #[arg(long, value_enum, default_value = "translation")]
    task: TaskArg,
    /// Tagging, classification, generation, asr: the training file (see --format).
    #[arg(long, value_name = "FILE")]
    train: Option<PathBuf>,
    /// Tagging, classification, generation: the validation file.
    #[arg(long, value_name = "FILE")]
    valid: Option<PathBuf>,
    /// Tagging, classification, generation: the test file.
    #[arg(long, value_name = "FILE")]
    test: Option<PathBuf>,
    /// Format of --train/--valid/--test [default: conllu for tagging, manifest for asr,
    /// labelled for classification and generation].
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// The CoNLL-U column of the tags [default: upos].
    #[arg(long, value_enum)]
    tag_column: Option<TagColumnArg>,
    /// Training source sentences, one per line.
    #[arg(
        long,
        value_name = "FILE",
        requires = "train_tgt",
        required_unless_present_any = ["tsv", "train"]
    )]
    train_src: Option<PathBuf>,
    /// Training target sentences, aligned with --train-src.
    #[arg(long, value_name = "FILE", requires = "train_src")]
    train_tgt: Option<PathBuf>,
    /// Validation source sentences.
    #[arg(long, value_name = "FILE", requires = "valid_tgt")]
    valid_src: Option<PathBuf>,
    /// Validation target sentences.
    #[arg(long, value_name = "FILE", requires = "valid_src")]
    valid_tgt: Option<PathBuf>,
    /// Test source sentences.
    #[arg(long, value_name = "FILE", requires = "test_tgt")]
    test_src: Option<PathBuf>,
    /// Test target sentences.
    #[arg(long, value_name = "FILE", requires = "test_src")]
    test_tgt: Option<PathBuf>,
    /// Training pairs from one tab-separated file instead (e.g. cmn.txt); see --src-col/--tgt-col.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["train_src", "train_tgt"])]
    tsv: Option<PathBuf>,
    /// Validation pairs from a tab-separated file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["valid_src", "valid_tgt"])]
    valid_tsv: Option<PathBuf>,
    /// Test pairs from a tab-separated file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["test_src", "test_tgt"])]
    test_tsv: Option<PathBuf>,
    /// Source column of the TSV files (1-based).
    #[arg(long, value_name = "N", default_value_t = 1)]
    src_col: usize,
    /// Target column of the TSV files (1-based).
    #[arg(long, value_name = "N", default_value_t = 2)]
    tgt_col: usize,
    /// The data directory to write.
    #[arg(long, value_name = "DATA_DIR")]
    out: PathBuf,
    /// Overwrite a non-empty DATA_DIR.
    #[arg(long)]
    force: bool,
    /// Tokenizer for both sides [default: bpe, or char for Chinese/Japanese].
    #[arg(long, value_enum)]
    tokenizer: Option<KindArg>,
    /// Tokenizer for the source side (overrides --tokenizer).
    #[arg(long, value_enum)]
    src_tokenizer: Option<KindArg>,
    /// Tokenizer for the target side (overrides --tokenizer).
    #[arg(long, value_enum)]
    tgt_tokenizer: Option<KindArg>,
    /// Maximum vocabulary size of each tokenizer, special tokens included.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_VOCAB_SIZE)]
    vocab_size: usize,
    /// Train one tokenizer on both sides (saved as both tokenizer files).
    #[arg(long)]
    joint: bool,
    /// Encode with the tokenizers of this MODEL_DIR instead of training new ones: the corpus to
    /// fine-tune that model on (`s2s train --init MODEL_DIR`).
    #[arg(
        long,
        value_name = "MODEL_DIR",
        conflicts_with_all = ["tokenizer", "src_tokenizer", "tgt_tokenizer", "joint", "min_freq",
            "unk_signatures", "no_unk_signatures"]
    )]
    tokenizers_from: Option<PathBuf>,
    /// Drop training pairs with more tokens than this on either side (0: no limit).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_LEN)]
    max_len: usize,
    /// Keep the first N tokens of every source, in every split and later in `translate`,
    /// `score` and `serve` (recorded in data.toml): for inputs far longer than the outputs
    /// (emails, abstracts, dialogue histories). The files keep the whole text; --max-len then
    /// measures the cut source. Translation and classification only (0: keep every token).
    #[arg(long, value_name = "N", default_value_t = 0)]
    max_src_tokens: usize,
    /// Minimum frequency of a bpe merge / char / word [default: 2 for bpe and for a source with
    /// --unk-signatures, 1 otherwise].
    #[arg(long, value_name = "N")]
    min_freq: Option<u64>,
    /// Give unknown source words the token of their shape (capitals, digits, dash, suffix)
    /// instead of <unk>, trained on the training words rarer than --min-freq; needs a split
    /// source [default for --task tagging].
    #[arg(long, conflicts_with = "no_unk_signatures")]
    unk_signatures: bool,
    /// Map every unknown source word to <unk> (the default but for tagging).
    #[arg(long)]
    no_unk_signatures: bool,
    /// Apply Unicode NFKC normalisation (full-width forms, ligatures, ...).
    #[arg(long)]
    nfkc: bool,
    /// Convert the Chinese side to one script.
    #[arg(long, value_enum)]
    zh_script: Option<ZhScriptArg>,
    /// Source language code (recorded; `zh`/`ja` select the char tokenizer).
    #[arg(long, value_name = "CODE")]
    src_lang: Option<String>,
    /// Target language code (recorded; `zh`/`ja` select the char tokenizer).
    #[arg(long, value_name = "CODE")]
    tgt_lang: Option<String>,
    /// asr: the features' sample rate; audio at another rate is resampled [default: 16000].
    #[arg(long, value_name = "HZ")]
    sample_rate: Option<u32>,
    /// asr: mel filterbank bins per frame [default: 80].
    #[arg(long, value_name = "N")]
    n_mels: Option<usize>,
    /// asr: analysis window in milliseconds [default: 25].
    #[arg(long, value_name = "MS")]
    window_ms: Option<f32>,
    /// asr: frame shift in milliseconds [default: 10].
    #[arg(long, value_name = "MS")]
    hop_ms: Option<f32>,
}

fn source(
    src: Option<PathBuf>,
    tgt: Option<PathBuf>,
    tsv: Option<PathBuf>,
    args: &PrepareArgs,
) -> Option<CorpusSource> {
    match (src, tgt, tsv) {
        (Some(src), Some(tgt), _) => Some(CorpusSource::Parallel { src, tgt }),
        (_, _, Some(path)) => Some(CorpusSource::Tsv {
            path,
            src_col: args.src_col,
            tgt_col: args.tgt_col,
        }),
        _ => None,
    }
}

/// The sources of a tagging, classification or generation run: one file per split, in the
/// task's format.
fn labelled_sources(
    args: &PrepareArgs,
    task: Task,
) -> anyhow::Result<(CorpusSource, Option<CorpusSource>, Option<CorpusSource>)> {
    let parallel = [
        ("--train-src", args.train_src.is_some()),
        ("--train-tgt", args.train_tgt.is_some()),
        ("--valid-src", args.valid_src.is_some()),
        ("--valid-tgt", args.valid_tgt.is_some()),
        ("--test-src", args.test_src.is_some()),
        ("--test-tgt", args.test_tgt.is_some()),
        ("--tsv", args.tsv.is_some()),
        ("--valid-tsv", args.valid_tsv.is_some()),
        ("--test-tsv", args.test_tsv.is_some()),
    ];
    if let Some((flag, _)) = parallel.iter().find(|(_, given)| *given) {
        anyhow::bail!(
            "{flag} is for translation data; fix: for --task {task} pass one labelled file per \
             split: --train FILE (and --valid FILE, --test FILE), with --format"
        );
    }
    let format = args.format.unwrap_or(match task {
        Task::Tagging => FormatArg::Conllu,
        Task::Asr => FormatArg::Manifest,
        _ => FormatArg::Labelled,
    });
    if args.tag_column.is_some() && format != FormatArg::Conllu {
        anyhow::bail!(
            "--tag-column chooses a CoNLL-U column, but the format is {format:?}; fix: drop \
             --tag-column, or pass --format conllu"
        );
    }
    let column: TagColumn = args.tag_column.map_or(TagColumn::Upos, Into::into);
    let source = |path: &PathBuf| match format {
        FormatArg::Conllu => CorpusSource::Conllu {
            path: path.clone(),
            column,
        },
        FormatArg::Tagged => CorpusSource::Tagged { path: path.clone() },
        FormatArg::Labelled => CorpusSource::Labelled { path: path.clone() },
        FormatArg::Manifest => CorpusSource::Manifest { path: path.clone() },
        FormatArg::Kaldi => CorpusSource::KaldiDir { path: path.clone() },
        FormatArg::Vectors => unreachable!("vectors are read by vector_sources"),
    };
    let train = args.train.as_ref().map(source).ok_or_else(|| {
        anyhow::anyhow!(
            "no training data; fix: pass --train FILE (and --valid FILE, --test FILE) for \
             --task {task}"
        )
    })?;
    Ok((
        train,
        args.valid.as_ref().map(source),
        args.test.as_ref().map(source),
    ))
}

/// The sources of generation conditioned on vectors: a vectors file and a text file per split.
fn vector_sources(
    args: &PrepareArgs,
    task: Task,
) -> anyhow::Result<(CorpusSource, Option<CorpusSource>, Option<CorpusSource>)> {
    if task != Task::Generation {
        anyhow::bail!(
            "--format vectors gives generation its conditions, but the task is {task}; fix: pass \
             --task generation"
        );
    }
    let labelled = [
        ("--train", args.train.is_some()),
        ("--valid", args.valid.is_some()),
        ("--test", args.test.is_some()),
        ("--tsv", args.tsv.is_some()),
        ("--valid-tsv", args.valid_tsv.is_some()),
        ("--test-tsv", args.test_tsv.is_some()),
        ("--tag-column", args.tag_column.is_some()),
    ];
    if let Some((flag, _)) = labelled.iter().find(|(_, given)| *given) {
        anyhow::bail!(
            "{flag} does not go with --format vectors; fix: give each split as a vectors file \
             and a text file: --train-src VECTORS --train-tgt TEXT (and --valid-src/--valid-tgt, \
             --test-src/--test-tgt)"
        );
    }
    let split = |src: &Option<PathBuf>, tgt: &Option<PathBuf>, name: &str| match (src, tgt) {
        (Some(src), Some(tgt)) => Ok(Some(CorpusSource::Vectors {
            src: src.clone(),
            tgt: tgt.clone(),
        })),
        (None, None) => Ok(None),
        _ => Err(anyhow::anyhow!(
            "--{name}-src and --{name}-tgt go together; fix: give both (the vectors and their \
             texts) or neither"
        )),
    };
    let train = split(&args.train_src, &args.train_tgt, "train")?.ok_or_else(|| {
        anyhow::anyhow!("no training data; fix: pass --train-src VECTORS --train-tgt TEXT")
    })?;
    Ok((
        train,
        split(&args.valid_src, &args.valid_tgt, "valid")?,
        split(&args.test_src, &args.test_tgt, "test")?,
    ))
}

fn config(args: &PrepareArgs) -> anyhow::Result<PrepareConfig> {
    let task: Task = args.task.into();
    let mut cfg = if args.format == Some(FormatArg::Vectors) {
        let (train, valid, test) = vector_sources(args, task)?;
        let mut cfg = PrepareConfig::new(train, &args.out);
        cfg.valid = valid;
        cfg.test = test;
        cfg
    } else if task.label_side().is_some() || task == Task::Asr {
        let (train, valid, test) = labelled_sources(args, task)?;
        let mut cfg = PrepareConfig::new(train, &args.out);
        cfg.valid = valid;
        cfg.test = test;
        cfg
    } else {
        let labelled = [
            ("--train", args.train.is_some()),
            ("--valid", args.valid.is_some()),
            ("--test", args.test.is_some()),
            ("--format", args.format.is_some()),
            ("--tag-column", args.tag_column.is_some()),
        ];
        if let Some((flag, _)) = labelled.iter().find(|(_, given)| *given) {
            anyhow::bail!(
                "{flag} is for the tagging, classification and generation tasks; fix: pass \
                 --task tagging, classification or generation, or for translation give \
                 --train-src F --train-tgt F (or --tsv F)"
            );
        }
        let train = source(
            args.train_src.clone(),
            args.train_tgt.clone(),
            args.tsv.clone(),
            args,
        )
        .ok_or_else(|| {
            anyhow::anyhow!("no training data; fix: pass --train-src F --train-tgt F, or --tsv F")
        })?;
        let mut cfg = PrepareConfig::new(train, &args.out);
        cfg.valid = source(
            args.valid_src.clone(),
            args.valid_tgt.clone(),
            args.valid_tsv.clone(),
            args,
        );
        cfg.test = source(
            args.test_src.clone(),
            args.test_tgt.clone(),
            args.test_tsv.clone(),
            args,
        );
        cfg
    };
    cfg.task = task;
    cfg.force = args.force;
    let audio = cfg.reads_audio();
    // Audio and vectors have no tokenizer: --tokenizer is the transcripts' (the labels', the
    // texts').
    cfg.src_tokenizer = if audio || cfg.reads_vectors() {
        args.src_tokenizer.map(Into::into)
    } else {
        args.src_tokenizer.or(args.tokenizer).map(Into::into)
    };
    cfg.tgt_tokenizer = args.tgt_tokenizer.or(args.tokenizer).map(Into::into);
    cfg.vocab_size = args.vocab_size;
    cfg.joint = args.joint;
    cfg.tokenizers_from = args.tokenizers_from.as_ref().map(|dir| {
        (
            dir.join(s2s_infer::model_dir::SRC_TOKENIZER),
            dir.join(s2s_infer::model_dir::TGT_TOKENIZER),
        )
    });
    cfg.max_len = args.max_len;
    cfg.max_src_tokens = args.max_src_tokens;
    cfg.min_freq = args.min_freq;
    cfg.unk_signatures = match (args.unk_signatures, args.no_unk_signatures) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    cfg.clean = CleanConfig {
        nfkc: args.nfkc,
        zh_script: args.zh_script.map(Into::into),
    };
    cfg.src_lang = args.src_lang.clone();
    cfg.tgt_lang = args.tgt_lang.clone();
    let fbank = &mut cfg.fbank;
    fbank.sample_rate = args.sample_rate.unwrap_or(fbank.sample_rate);
    fbank.n_mels = args.n_mels.unwrap_or(fbank.n_mels);
    fbank.window_ms = args.window_ms.unwrap_or(fbank.window_ms);
    fbank.hop_ms = args.hop_ms.unwrap_or(fbank.hop_ms);
    let given = [
        ("--sample-rate", args.sample_rate.is_some()),
        ("--n-mels", args.n_mels.is_some()),
        ("--window-ms", args.window_ms.is_some()),
        ("--hop-ms", args.hop_ms.is_some()),
    ];
    if !audio && let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
        anyhow::bail!(
            "{flag} sets the features of audio; fix: drop it, or give audio (--task asr, or \
             --format manifest or kaldi)"
        );
    }
    Ok(cfg)
}

fn report_counts(rec: &DataToml, max_len: usize) {
    for name in SplitName::ALL {
        let Some(s) = rec.splits.get(name) else {
            continue;
        };
        let too_long = if s.length_filtered {
            format!("{} over --max-len {max_len}", s.dropped_too_long)
        } else if max_len > 0 {
            format!(
                "0 for length (not filtered; {} over --max-len {max_len} kept)",
                s.over_max_len_kept
            )
        } else {
            "0 for length".to_owned()
        };
        eprintln!(
            "{name}: {} pairs read, {} kept; dropped {} empty, {too_long}; cleaning changed {} source and {} target lines",
            s.input_pairs, s.kept, s.dropped_empty, s.src_changed, s.tgt_changed
        );
        if s.src_truncated > 0 {
            eprintln!(
                "{name}: {} sources cut to their first {} tokens (--max-src-tokens)",
                s.src_truncated, rec.options.max_src_tokens
            );
        }
        if let Some(n) = s.forms_with_spaces.filter(|&n| n > 0) {
            eprintln!(
                "{name}: {n} word forms held whitespace, replaced by `_` to keep each one token"
            );
        }
        // Training labels are all in the vocabulary (prepare refuses otherwise).
        if let (Some(n), Some(pairs), false) = (
            s.unknown_labels,
            s.pairs_with_unknown_labels,
            name == SplitName::Train,
        ) {
            eprintln!(
                "{name}: {n} labels not seen in training (in {pairs} pairs), mapped to <unk>"
            );
        }
    }
}

pub fn run(args: PrepareArgs) -> anyhow::Result<()> {
    let cfg = config(&args)?;
    let start = Instant::now();
    let spinner = ProgressBar::new_spinner();
    spinner.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    spinner.enable_steady_tick(Duration::from_millis(120));
    let result = s2s_data::prepare(&cfg, &|step| spinner.set_message(step.to_owned()));
    spinner.finish_and_clear();
    let rec = result?;
    let secs = start.elapsed().as_secs_f64();
    report_counts(&rec, cfg.max_len);

    let t = &rec.tokenizers;
    println!("wrote {}", cfg.out.display());
    println!("  task: {}", rec.options.task);
    // What an audio source's targets are: a transcript, or one label.
    let targets = if rec.options.task.labels_input() {
        "label"
    } else {
        "transcript"
    };
    if let Some(audio) = &rec.audio {
        let f = &audio.fbank;
        println!(
            "  audio: {} log-mel bins, {} ms windows every {} ms at {} Hz; {targets}s: {} ({} tokens)",
            f.n_mels, f.window_ms, f.hop_ms, f.sample_rate, t.tgt.kind, t.tgt.vocab_size
        );
    } else if let Some(v) = &rec.vectors {
        println!(
            "  conditions: vectors of {} numbers; texts: {} ({} tokens)",
            v.dim, t.tgt.kind, t.tgt.vocab_size
        );
    } else if rec.options.joint {
        println!(
            "  tokenizer: joint {} ({} tokens)",
            t.src.kind, t.src.vocab_size
        );
    } else {
        let signs = if t.src.signatures {
            " with unknown-word signatures"
        } else {
            ""
        };
        println!(
            "  tokenizers: source {}{signs} ({} tokens), target {} ({} tokens)",
            t.src.kind, t.src.vocab_size, t.tgt.kind, t.tgt.vocab_size
        );
    }
    for name in SplitName::ALL {
        if let (Some(s), Some(audio)) = (rec.splits.get(name), &rec.audio) {
            let hours = s.src_tokens as f64 * f64::from(audio.fbank.hop_ms) / 3.6e6;
            println!(
                "  {name}: {} utterances, {} frames ({hours:.2} h), {} {targets} tokens",
                s.kept, s.src_tokens, s.tgt_tokens
            );
        } else if let (Some(s), Some(_)) = (rec.splits.get(name), &rec.vectors) {
            println!("  {name}: {} vectors, {} text tokens", s.kept, s.tgt_tokens);
        } else if let Some(s) = rec.splits.get(name) {
            println!(
                "  {name}: {} pairs, {} source and {} target tokens",
                s.kept, s.src_tokens, s.tgt_tokens
            );
        }
    }
    println!("  took {secs:.1} s");
    Ok(())
}
