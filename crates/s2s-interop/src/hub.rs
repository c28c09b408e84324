//! Model folders from the Hugging Face hub, by id (`Helsinki-NLP/opus-mt-en-de`), through the
//! `hf-hub` client and its cache (`HF_HOME`, `HF_ENDPOINT` and `HF_TOKEN` are honoured).

use std::path::{Path, PathBuf};

use crate::{Result, unsupported};

/// Whether `src` reads as a hub id (`owner/name`) rather than a local folder.
pub fn looks_like_hub_id(src: &str) -> bool {
    let mut parts = src.split('/');
    let ok = |p: Option<&str>| {
        p.is_some_and(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
    };
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none() && !Path::new(src).exists()
}

/// Downloads `files` of model `id` (those in `optional` may be absent) into the hub cache and
/// returns the folder that holds them.
#[cfg(feature = "hub")]
pub fn fetch(id: &str, files: &[&str], optional: &[&str]) -> Result<PathBuf> {
    use hf_hub::api::sync::ApiBuilder;
    let offline = |e: &dyn std::fmt::Display| {
        unsupported(format!(
            "cannot fetch {id} from the Hugging Face hub ({e}); without network, download the \
             folder on a machine that has it (`git clone https://huggingface.co/{id}`) and pass \
             its path instead"
        ))
    };
    let api = ApiBuilder::from_env()
        .with_progress(false)
        .build()
        .map_err(|e| offline(&e))?;
    let repo = api.model(id.to_owned());
    let mut folder = None;
    for name in files.iter().chain(optional) {
        match repo.get(name) {
            Ok(path) => folder = path.parent().map(Path::to_path_buf),
            Err(_) if optional.contains(name) => {}
            Err(e) => return Err(offline(&e)),
        }
    }
    folder.ok_or_else(|| unsupported(format!("{id}: nothing was downloaded")))
}

/// Without the `hub` feature: says how to pass a local folder.
#[cfg(not(feature = "hub"))]
pub fn fetch(id: &str, _files: &[&str], _optional: &[&str]) -> Result<PathBuf> {
    Err(unsupported(format!(
        "this s2s was built without the `hub` feature, so it cannot download {id}; download the \
         folder elsewhere (`git clone https://huggingface.co/{id}`) and pass its path"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hub_ids_and_paths() {
        assert!(looks_like_hub_id("Helsinki-NLP/opus-mt-en-zh"));
        assert!(!looks_like_hub_id("opus-mt-en-zh"));
        assert!(!looks_like_hub_id("a/b/c"));
        assert!(!looks_like_hub_id("./x"));
        assert!(!looks_like_hub_id("/abs/path"));
    }
}
