//! `s2s data`: benchmark corpora. The fetching and checking is in `crate::datasets`.

use anyhow::Result;
use std::path::PathBuf;

/// Get benchmark corpora.
#[derive(clap::Args)]
pub struct DataArgs {
    #[command(subcommand)]
    pub command: DataCommand,
}

#[derive(clap::Subcommand)]
pub enum DataCommand {
    /// Download a corpus (or copy it from a local folder) and verify its sha256 sums.
    Get(GetArgs),
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Dataset {
    /// Multi30k German-English (WMT16 multimodal task 1): train, val, test2016; .de and .en.
    Multi30k,
}

/// Download a corpus (or copy it from a local folder) and verify its sha256 sums.
///
/// Multi30k comes from github.com/multi30k/dataset (data/task1/raw/*.gz, pinned to one commit)
/// and is written as train.{de,en}, val.{de,en} and test2016.{de,en}. Nothing is written unless
/// all six files verify.
#[derive(clap::Args)]
pub struct GetArgs {
    /// The corpus.
    pub dataset: Dataset,
    /// Folder to write the files into.
    #[arg(long)]
    pub out: PathBuf,
    /// Copy from this folder instead of downloading: the files plain or .gz, named as in the
    /// output (test2016.de) or as upstream (test_2016_flickr.de.gz), or a clone of the repository.
    #[arg(long)]
    pub from: Option<PathBuf>,
}

pub fn run(args: DataArgs) -> Result<()> {
    match args.command {
        DataCommand::Get(get) => match get.dataset {
            Dataset::Multi30k => {
                for p in crate::datasets::get_multi30k(&get.out, get.from.as_deref())? {
                    println!("{}", p.display());
                }
                eprintln!("Multi30k is in {} (verified)", get.out.display());
                Ok(())
            }
        },
    }
}
