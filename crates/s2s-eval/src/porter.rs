//! The Porter stemmer as NLTK implements it (`nltk.stem.porter.PorterStemmer()`, the default
//! `NLTK_EXTENSIONS` mode), which is what Google's `rouge-score` stems with. NLTK departs from
//! Martin Porter's published algorithm in a handful of rules (a pool of irregular forms, `-ies`
//! and `-ied` of four letters, `-y` to `-i`, `-alli`, `-fulli`, `-logi`, two-letter words), so a
//! Porter or Snowball stemmer from elsewhere would not give `rouge-score`'s numbers.
//!
//! Words here are what ROUGE's tokenizer leaves: lowercase ASCII letters and digits. Each step
//! follows NLTK's function of the same name; a rule list returns at the first suffix that
//! matches, whether or not its condition then holds, as NLTK's `_apply_rule_list` does.

/// NLTK's `irregular_forms` pool: these words stem to the given form and skip the steps.
const IRREGULAR: [(&str, &str); 16] = [
    ("sky", "sky"),
    ("skies", "sky"),
    ("dying", "die"),
    ("lying", "lie"),
    ("tying", "tie"),
    ("news", "news"),
    ("innings", "inning"),
    ("inning", "inning"),
    ("outings", "outing"),
    ("outing", "outing"),
    ("cannings", "canning"),
    ("canning", "canning"),
    ("howe", "howe"),
    ("proceed", "proceed"),
    ("exceed", "exceed"),
    ("succeed", "succeed"),
];

/// The stem of a lowercase ASCII word, as `PorterStemmer().stem(word)` gives it.
pub fn stem(word: &str) -> String {
    debug_assert!(word.is_ascii(), "ROUGE's tokens are ASCII: {word:?}");
    if let Some((_, form)) = IRREGULAR.iter().find(|(w, _)| *w == word) {
        return (*form).to_owned();
    }
    if word.len() <= 2 {
        return word.to_owned();
    }
    let mut w = word.as_bytes().to_vec();
    for step in [step1a, step1b, step1c, step2, step3, step4, step5a, step5b] {
        w = step(w);
    }
    String::from_utf8(w).expect("ASCII in, ASCII out")
}

type Word = Vec<u8>;

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

/// Consonant or not, letter by letter: `y` is a consonant at the start and after a vowel, a
/// vowel after a consonant (NLTK's `_consonant_flags`).
fn consonant_flags(w: &[u8]) -> Vec<bool> {
    let mut flags: Vec<bool> = Vec::with_capacity(w.len());
    for (i, &c) in w.iter().enumerate() {
        let consonant = if is_vowel(c) {
            false
        } else if c == b'y' {
            i == 0 || !flags[i - 1]
        } else {
            true
        };
        flags.push(consonant);
    }
    flags
}

fn is_consonant(w: &[u8], i: usize) -> bool {
    consonant_flags(&w[..=i])[i]
}

/// m in Porter's `[C](VC)^m[V]`: how often a vowel is followed by a consonant.
fn measure(stem: &[u8]) -> usize {
    consonant_flags(stem)
        .windows(2)
        .filter(|p| !p[0] && p[1])
        .count()
}

fn contains_vowel(stem: &[u8]) -> bool {
    consonant_flags(stem).iter().any(|&c| !c)
}

fn ends_double_consonant(w: &[u8]) -> bool {
    let n = w.len();
    n >= 2 && w[n - 1] == w[n - 2] && is_consonant(w, n - 1)
}

/// `*o`: consonant-vowel-consonant at the end, the last not w, x or y; NLTK also counts a
/// two-letter vowel-consonant word.
fn ends_cvc(w: &[u8]) -> bool {
    let n = w.len();
    (n >= 3
        && is_consonant(w, n - 3)
        && !is_consonant(w, n - 2)
        && is_consonant(w, n - 1)
        && !matches!(w[n - 1], b'w' | b'x' | b'y'))
        || (n == 2 && !is_consonant(w, 0) && is_consonant(w, 1))
}

fn positive_measure(stem: &[u8]) -> bool {
    measure(stem) > 0
}

fn measure_above_one(stem: &[u8]) -> bool {
    measure(stem) > 1
}

fn replace(w: &[u8], suffix: &str, replacement: &str) -> Word {
    let mut out = w[..w.len() - suffix.len()].to_vec();
    out.extend_from_slice(replacement.as_bytes());
    out
}

/// A rule: suffix, replacement, and the condition on the stem left without the suffix.
type Rule<'a> = (&'a str, &'a str, &'a dyn Fn(&[u8]) -> bool);

/// NLTK's `_apply_rule_list` without its `*d` case (only step 1b has it): the first rule whose
/// suffix ends the word decides, replacing it if the condition holds and leaving the word
/// unchanged if not.
fn apply_rules(w: Word, rules: &[Rule]) -> Word {
    for (suffix, replacement, condition) in rules {
        if w.ends_with(suffix.as_bytes()) {
            let stem = &w[..w.len() - suffix.len()];
            return if condition(stem) {
                replace(&w, suffix, replacement)
            } else {
                w
            };
        }
    }
    w
}

fn always(_: &[u8]) -> bool {
    true
}

fn step1a(w: Word) -> Word {
    if w.ends_with(b"ies") && w.len() == 4 {
        return replace(&w, "ies", "ie");
    }
    apply_rules(
        w,
        &[
            ("sses", "ss", &always),
            ("ies", "i", &always),
            ("ss", "ss", &always),
            ("s", "", &always),
        ],
    )
}

fn step1b(w: Word) -> Word {
    if w.ends_with(b"ied") {
        return replace(&w, "ied", if w.len() == 4 { "ie" } else { "i" });
    }
    if w.ends_with(b"eed") {
        return if measure(&w[..w.len() - 3]) > 0 {
            replace(&w, "eed", "ee")
        } else {
            w
        };
    }
    let Some(stem) = ["ed", "ing"]
        .iter()
        .filter(|s| w.ends_with(s.as_bytes()))
        .map(|s| &w[..w.len() - s.len()])
        .find(|stem| contains_vowel(stem))
    else {
        return w;
    };
    let stem = stem.to_vec();
    for (suffix, replacement) in [("at", "ate"), ("bl", "ble"), ("iz", "ize")] {
        if stem.ends_with(suffix.as_bytes()) {
            return replace(&stem, suffix, replacement);
        }
    }
    // `*d`: a double consonant other than l, s or z loses one letter.
    if ends_double_consonant(&stem) {
        let last = stem[stem.len() - 1];
        return if matches!(last, b'l' | b's' | b'z') {
            stem
        } else {
            stem[..stem.len() - 1].to_vec()
        };
    }
    if measure(&stem) == 1 && ends_cvc(&stem) {
        let mut out = stem;
        out.push(b'e');
        return out;
    }
    stem
}

fn step1c(w: Word) -> Word {
    apply_rules(
        w,
        &[("y", "i", &|stem: &[u8]| {
            stem.len() > 1 && is_consonant(stem, stem.len() - 1)
        })],
    )
}

fn step2(w: Word) -> Word {
    if w.ends_with(b"alli") && positive_measure(&w[..w.len() - 4]) {
        return step2(replace(&w, "alli", "al"));
    }
    let p: &dyn Fn(&[u8]) -> bool = &positive_measure;
    // `logi`'s condition is on the word less three letters, i.e. with the `l` (as NLTK has it).
    let logi_stem_with_l = w.len() >= 3 && positive_measure(&w[..w.len() - 3]);
    let logi = move |_: &[u8]| logi_stem_with_l;
    apply_rules(
        w,
        &[
            ("ational", "ate", p),
            ("tional", "tion", p),
            ("enci", "ence", p),
            ("anci", "ance", p),
            ("izer", "ize", p),
            ("bli", "ble", p),
            ("alli", "al", p),
            ("entli", "ent", p),
            ("eli", "e", p),
            ("ousli", "ous", p),
            ("ization", "ize", p),
            ("ation", "ate", p),
            ("ator", "ate", p),
            ("alism", "al", p),
            ("iveness", "ive", p),
            ("fulness", "ful", p),
            ("ousness", "ous", p),
            ("aliti", "al", p),
            ("iviti", "ive", p),
            ("biliti", "ble", p),
            ("fulli", "ful", p),
            ("logi", "log", &logi),
        ],
    )
}

fn step3(w: Word) -> Word {
    let p: &dyn Fn(&[u8]) -> bool = &positive_measure;
    apply_rules(
        w,
        &[
            ("icate", "ic", p),
            ("ative", "", p),
            ("alize", "al", p),
            ("iciti", "ic", p),
            ("ical", "ic", p),
            ("ful", "", p),
            ("ness", "", p),
        ],
    )
}

fn step4(w: Word) -> Word {
    let m: &dyn Fn(&[u8]) -> bool = &measure_above_one;
    let ion = |stem: &[u8]| measure_above_one(stem) && matches!(stem.last(), Some(b's' | b't'));
    apply_rules(
        w,
        &[
            ("al", "", m),
            ("ance", "", m),
            ("ence", "", m),
            ("er", "", m),
            ("ic", "", m),
            ("able", "", m),
            ("ible", "", m),
            ("ant", "", m),
            ("ement", "", m),
            ("ment", "", m),
            ("ent", "", m),
            ("ion", "", &ion),
            ("ou", "", m),
            ("ism", "", m),
            ("ate", "", m),
            ("iti", "", m),
            ("ous", "", m),
            ("ive", "", m),
            ("ize", "", m),
        ],
    )
}

fn step5a(w: Word) -> Word {
    if let Some(stem) = w.strip_suffix(b"e") {
        let m = measure(stem);
        if m > 1 || (m == 1 && !ends_cvc(stem)) {
            return stem.to_vec();
        }
    }
    w
}

fn step5b(w: Word) -> Word {
    // The condition is on the word less one letter (NLTK's `word[:-1]`), not on the stem.
    let above_one = !w.is_empty() && measure_above_one(&w[..w.len() - 1]);
    apply_rules(w, &[("ll", "l", &move |_: &[u8]| above_one)])
}

#[cfg(test)]
mod tests {
    use super::stem;

    /// Pairs from NLTK 3.10's PorterStemmer (default mode), one per rule family.
    #[test]
    fn nltk_examples() {
        for (word, want) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "tie"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("generalization", "gener"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("adjustment", "adjust"),
            ("controlling", "control"),
            ("dying", "die"),
            ("skies", "sky"),
            ("died", "die"),
            ("cried", "cri"),
            ("analogi", "analog"),
            ("fy", "fy"),
            ("2023", "2023"),
        ] {
            assert_eq!(stem(word), want, "{word}");
        }
    }
}
