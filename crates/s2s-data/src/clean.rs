//! Text cleaning, applied line by line to both sides of every split (and, by the translator, to
//! its input, with the options recorded in `data.toml`).
//!
//! In order: zero-width characters (U+200B..U+200D, U+2060, U+FEFF) and other control
//! characters are removed; optionally Unicode NFKC is applied; optionally the Chinese script is
//! unified; every run of whitespace becomes one space and the ends are trimmed.

use serde::{Deserialize, Serialize};
use unicode_normalization::UnicodeNormalization;

use crate::zh::ZhScript;

/// Cleaning options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanConfig {
    /// Apply Unicode NFKC normalisation (full-width to half-width, ligatures, ...).
    #[serde(default)]
    pub nfkc: bool,
    /// Convert Chinese text to one script. Only applied to the sides that are Chinese.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zh_script: Option<ZhScript>,
}

/// Whether a character is removed by cleaning: zero-width characters and control characters
/// other than whitespace.
fn is_removed(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
        || (c.is_control() && !c.is_whitespace())
}

/// Cleans one line. `zh` says whether this side is Chinese (script conversion applies only
/// then). The result has no leading, trailing or repeated whitespace, and every whitespace
/// character is a plain space.
pub fn clean_line(text: &str, cfg: &CleanConfig, zh: bool) -> String {
    let mut s: String = text.chars().filter(|&c| !is_removed(c)).collect();
    if cfg.nfkc {
        s = s.nfkc().collect();
        // NFKC never yields removed characters from others, but keep the invariant explicit.
        s.retain(|c| !is_removed(c));
    }
    if zh && let Some(script) = cfg.zh_script {
        s = crate::zh::convert(&s, script);
    }
    let mut out = String::with_capacity(s.len());
    for word in s.split(char::is_whitespace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Whether a character belongs to a script written without spaces between words (Han, kana).
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'   // Hiragana, Katakana
        | '\u{3400}'..='\u{4DBF}' // CJK Extension A
        | '\u{4E00}'..='\u{9FFF}' // CJK Unified Ideographs
        | '\u{F900}'..='\u{FAFF}' // CJK Compatibility Ideographs
        | '\u{20000}'..='\u{3FFFF}' // Extensions B..
    )
}

/// Whether a character is a Han ideograph.
pub fn is_han(c: char) -> bool {
    matches!(c,
        '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{3FFFF}')
}

/// The fraction of non-space characters that are CJK, over (up to) the first 5000 lines.
pub fn cjk_fraction<S: AsRef<str>>(lines: &[S]) -> f64 {
    let (mut cjk, mut total) = (0usize, 0usize);
    for line in lines.iter().take(5000) {
        for c in line.as_ref().chars().filter(|c| !c.is_whitespace()) {
            total += 1;
            if is_cjk(c) {
                cjk += 1;
            }
        }
    }
    if total == 0 {
        0.0
    } else {
        cjk as f64 / total as f64
    }
}

/// Whether a side looks like Chinese or Japanese text: a language hint (`zh`, `zh-*`, `cmn`,
/// `yue`, `wuu`, `lzh`, `ja`, `jpn`) decides; otherwise at least 30% CJK characters.
pub fn looks_cjk<S: AsRef<str>>(lang: Option<&str>, lines: &[S]) -> bool {
    if let Some(lang) = lang {
        let l = lang.to_ascii_lowercase();
        let base = l.split(['-', '_']).next().unwrap_or("");
        return matches!(
            base,
            "zh" | "cmn" | "yue" | "wuu" | "lzh" | "ja" | "jpn" | "zho" | "chi"
        );
    }
    cjk_fraction(lines) >= 0.3
}

/// Whether a side is Chinese (for script conversion): a `zh`-like language hint, or at least 30%
/// Han characters and no kana.
pub fn looks_chinese<S: AsRef<str>>(lang: Option<&str>, lines: &[S]) -> bool {
    if let Some(lang) = lang {
        let l = lang.to_ascii_lowercase();
        let base = l.split(['-', '_']).next().unwrap_or("");
        return matches!(base, "zh" | "cmn" | "yue" | "wuu" | "lzh" | "zho" | "chi");
    }
    let (mut han, mut kana, mut total) = (0usize, 0usize, 0usize);
    for line in lines.iter().take(5000) {
        for c in line.as_ref().chars().filter(|c| !c.is_whitespace()) {
            total += 1;
            if is_han(c) {
                han += 1;
            } else if ('\u{3040}'..='\u{30FF}').contains(&c) {
                kana += 1;
            }
        }
    }
    total > 0 && han as f64 / total as f64 >= 0.3 && (kana as f64) < 0.01 * total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_zero_width_and_collapses_whitespace() {
        let cfg = CleanConfig::default();
        assert_eq!(
            clean_line("\u{FEFF} a\u{200B}b \t\u{3000} c  ", &cfg, false),
            "ab c"
        );
        assert_eq!(clean_line("x\u{2060}y\u{200C}\u{200D}", &cfg, false), "xy");
        assert_eq!(clean_line("   ", &cfg, false), "");
        assert_eq!(clean_line("a\u{0007}b", &cfg, false), "ab");
    }

    #[test]
    fn nfkc_is_optional() {
        let off = CleanConfig::default();
        let on = CleanConfig { nfkc: true, ..off };
        assert_eq!(clean_line("ＡＢＣ１２３，", &off, false), "ＡＢＣ１２３，");
        assert_eq!(clean_line("ＡＢＣ１２３，", &on, false), "ABC123,");
        assert_eq!(clean_line("ﬁ", &on, false), "fi");
    }

    #[test]
    fn detects_cjk() {
        assert!(looks_cjk(None, &["我喜欢猫。", "你好"]));
        assert!(!looks_cjk(None, &["I like cats.", "Hello 你"]));
        assert!(looks_cjk(Some("zh-TW"), &["whatever"]));
        assert!(!looks_cjk(Some("en"), &["我喜欢猫"]));
        assert!(looks_chinese(None, &["我喜欢猫。"]));
        assert!(!looks_chinese(None, &["これはペンです。"]));
    }
}
