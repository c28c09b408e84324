//! Python `str` semantics that sacreBLEU relies on implicitly.
//!
//! sacreBLEU splits, strips and lowercases with Python's `str` methods, whose notion of
//! whitespace (`str.isspace`) is not Rust's `char::is_whitespace`: Python also treats the
//! information separators U+001C..=U+001F as whitespace. Matching sacreBLEU exactly requires
//! using Python's definition everywhere.

/// Python's `str.isspace()` for a single character.
///
/// Characters with bidirectional class WS, B or S, or general category Zs (checked against
/// CPython 3.11 / Unicode 14 for every code point; the set has been stable for many versions).
pub(crate) fn is_py_space(c: char) -> bool {
    matches!(
        c,
        '\u{09}'..='\u{0D}'
            | '\u{1C}'..='\u{20}'
            | '\u{85}'
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
    )
}

/// Python's `str.split()` (no arguments): split on runs of whitespace, dropping empty parts.
pub(crate) fn py_split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_py_space).filter(|part| !part.is_empty())
}

/// Python's `' '.join(s.split())`.
pub(crate) fn py_normalize_spaces(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in py_split(s) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Python's `str.rstrip()` (no arguments).
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// Python's `str.strip()` (no arguments).
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// Python's `str.lower()`: full Unicode lowercase mapping, including the final-sigma rule
/// (both CPython and Rust implement Unicode's `Final_Sigma` condition).
pub(crate) fn py_lower(s: &str) -> String {
    s.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_matches_python() {
        let s = " a\u{1c}b\u{3000}c\u{a0} d\t\n";
        assert_eq!(py_split(s).collect::<Vec<_>>(), ["a", "b", "c", "d"]);
        assert_eq!(py_split("").count(), 0);
        assert_eq!(py_split(" \u{1f} ").count(), 0);
        // U+200B (zero width space) is not whitespace for Python.
        assert_eq!(py_split("a\u{200b}b").count(), 1);
    }

    #[test]
    fn strip_matches_python() {
        assert_eq!(py_rstrip(" a b \u{1c}\r\n"), " a b");
        assert_eq!(py_strip("\u{3000} a b \u{85}"), "a b");
        assert_eq!(py_normalize_spaces("  a   b \t c "), "a b c");
    }

    #[test]
    fn lower_final_sigma() {
        assert_eq!(
            py_lower("ΟΔΟΣ ΟΔΟΣ."),
            "\u{3bf}\u{3b4}\u{3bf}\u{3c2} \u{3bf}\u{3b4}\u{3bf}\u{3c2}."
        );
        assert_eq!(py_lower("ΣΑ"), "\u{3c3}\u{3b1}");
        assert_eq!(py_lower("İ"), "i\u{307}");
    }
}
