//! Unknown-word signatures: a word the vocabulary lacks becomes the token of its shape rather
//! than plain `<unk>`, the Berkeley parser's device for unknown words (Petrov et al. 2006). The
//! shape is what tells a tagger most about a word it never saw: capitals (a name), digits (a
//! number), a dash, an English suffix (`-ing`, `-ly`, `-s`), or no letter at all (punctuation,
//! symbols). A `split` tokenizer trained with signatures replaces the training words rarer than
//! `min_freq` by their signatures, so that each signature is trained on the rare words it stands
//! for, and gives an unknown word its signature's id at encoding (plain `<unk>` when training
//! never saw that signature).

/// How a signature token starts; no other vocabulary entry does.
pub const SIGNATURE_PREFIX: &str = "<unk-";

/// Suffixes of English words, longest first within a shared ending.
const SUFFIXES: [&str; 17] = [
    "ing", "ion", "ment", "ness", "ity", "ism", "ist", "able", "ible", "ive", "ous", "ful", "est",
    "ed", "er", "ly", "al",
];

/// The signature token of `word`: `<unk-` and `-`-joined features, then `>`, e.g. `<unk-Cap>`,
/// `<unk-lc-ing>`, `<unk-num>`, `<unk-sym>`.
pub fn signature(word: &str) -> String {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let uppers = word.chars().filter(|c| c.is_uppercase()).count();
    let digits = word.chars().filter(|c| c.is_numeric()).count();
    let mut features: Vec<&str> = Vec::new();
    if letters == 0 {
        features.push(if digits > 0 { "num" } else { "sym" });
        if digits > 0 && word.contains(['.', ',']) {
            features.push("sep");
        }
    } else {
        let first_upper = word.chars().next().is_some_and(char::is_uppercase);
        features.push(if uppers == letters && letters > 1 {
            "CAPS"
        } else if first_upper {
            "Cap"
        } else if uppers > 0 {
            "mixed"
        } else {
            "lc"
        });
        if digits > 0 {
            features.push("digit");
        }
        if word.contains('-') {
            features.push("dash");
        }
        let lower = word.to_lowercase();
        if letters >= 4 {
            if let Some(suffix) = SUFFIXES.iter().find(|s| lower.ends_with(*s)) {
                features.push(suffix);
            } else if lower.ends_with('s') && !lower.ends_with("ss") {
                features.push("s");
            } else if lower.ends_with('y') {
                features.push("y");
            }
        }
    }
    format!("{SIGNATURE_PREFIX}{}>", features.join("-"))
}

/// `texts` with every whitespace-separated item seen fewer than `min_freq` times in them
/// replaced by its signature: what a `split` tokenizer with signatures is trained on.
pub fn rare_items_as_signatures<S: AsRef<str>>(
    texts: impl Iterator<Item = S>,
    min_freq: u64,
) -> Vec<String> {
    let texts: Vec<S> = texts.collect();
    let mut counts: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for t in &texts {
        for item in t.as_ref().split_whitespace() {
            *counts.entry(item).or_default() += 1;
        }
    }
    texts
        .iter()
        .map(|t| {
            t.as_ref()
                .split_whitespace()
                .map(|item| {
                    if counts[item] < min_freq {
                        signature(item)
                    } else {
                        item.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// Whether `token` is a signature.
pub fn is_signature(token: &str) -> bool {
    token.starts_with(SIGNATURE_PREFIX) && token.ends_with('>')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        for (word, sig) in [
            ("Glorpination", "<unk-Cap-ion>"),
            ("glorping", "<unk-lc-ing>"),
            ("NASA", "<unk-CAPS>"),
            ("iPhone", "<unk-mixed>"),
            ("1,234.5", "<unk-num-sep>"),
            ("1987", "<unk-num>"),
            ("B-52s", "<unk-Cap-digit-dash>"),
            ("well-known", "<unk-lc-dash>"),
            ("quickly", "<unk-lc-ly>"),
            ("zorbs", "<unk-lc-s>"),
            ("glass", "<unk-lc>"),
            ("->", "<unk-sym>"),
            ("x", "<unk-lc>"),
            ("Été", "<unk-Cap>"),
        ] {
            assert_eq!(signature(word), sig, "{word}");
            assert!(is_signature(&signature(word)));
        }
        assert!(!is_signature("<unk>") && !is_signature("<pad>"));
    }
}
