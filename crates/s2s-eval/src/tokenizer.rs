//! BLEU tokenizers, ported line by line from sacreBLEU 2.x (`sacrebleu/tokenizers/`).

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use regex::Regex;

use crate::EvalError;
use crate::pystr::{py_normalize_spaces, py_strip};

/// The tokenizer applied to hypotheses and references before BLEU n-grams are counted.
///
/// Names (for [`FromStr`] and [`Display`](fmt::Display)) are sacreBLEU's: `13a`, `zh`, `intl`,
/// `char` and `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Tokenize {
    /// `13a`: mteval-v13a.pl, the WMT standard and sacreBLEU's default.
    #[default]
    ThirteenA,
    /// `zh`: every Chinese character (sacreBLEU's `_UCODE_RANGES`) is a token; the rest is
    /// tokenized like `13a` (without its HTML-entity handling).
    Zh,
    /// `intl`: mteval-v14 international tokenization on Unicode punctuation and symbols.
    Intl,
    /// `char`: every character is a token.
    Char,
    /// `none`: split on whitespace only.
    None,
}

impl Tokenize {
    /// All tokenizers, in the order sacreBLEU lists them.
    pub const ALL: [Tokenize; 5] = [
        Tokenize::None,
        Tokenize::Zh,
        Tokenize::ThirteenA,
        Tokenize::Intl,
        Tokenize::Char,
    ];

    /// sacreBLEU's name, as used in the signature (`tok:13a`).
    pub fn name(self) -> &'static str {
        match self {
            Tokenize::ThirteenA => "13a",
            Tokenize::Zh => "zh",
            Tokenize::Intl => "intl",
            Tokenize::Char => "char",
            Tokenize::None => "none",
        }
    }

    /// Tokenizes one line exactly as the sacreBLEU tokenizer of the same name does. The output
    /// is a string of tokens separated by single spaces (for `none` the line is returned as is;
    /// BLEU splits it on whitespace afterwards).
    pub fn tokenize(self, line: &str) -> String {
        match self {
            Tokenize::ThirteenA => tokenize_13a(line),
            Tokenize::Zh => tokenize_zh(line),
            Tokenize::Intl => tokenize_intl(line),
            Tokenize::Char => tokenize_char(line),
            Tokenize::None => line.to_owned(),
        }
    }
}

impl fmt::Display for Tokenize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenize {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tokenize::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| EvalError::UnknownTokenizer(s.to_owned()))
    }
}

/// sacreBLEU's `TokenizerRegexp`: the language-dependent part of mteval-v13a shared by `13a`
/// and `zh`.
fn tokenize_regexp(line: &str) -> String {
    // (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 ')
    // i.e. the ASCII ranges {-~, [-`, space-&, (-+, :-@ and '/'. A one-character pattern, so a
    // character-wise rewrite is equivalent to re.sub.
    let mut spaced = String::with_capacity(line.len() * 2);
    for c in line.chars() {
        if matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/') {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    static PERIOD_COMMA_UNLESS_PRECEDED_BY_DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"([^0-9])([\.,])").expect("valid regex"));
    static PERIOD_COMMA_UNLESS_FOLLOWED_BY_DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"([\.,])([^0-9])").expect("valid regex"));
    static DASH_PRECEDED_BY_DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"([0-9])(-)").expect("valid regex"));
    // Python's re.sub and regex's replace_all both replace leftmost-first, non-overlapping
    // matches scanning left to right, so these are exact equivalents.
    let s = PERIOD_COMMA_UNLESS_PRECEDED_BY_DIGIT.replace_all(&spaced, "${1} ${2} ");
    let s = PERIOD_COMMA_UNLESS_FOLLOWED_BY_DIGIT.replace_all(&s, " ${1} ${2}");
    let s = DASH_PRECEDED_BY_DIGIT.replace_all(&s, "${1} ${2} ");
    py_normalize_spaces(&s)
}

/// sacreBLEU's `Tokenizer13a`.
fn tokenize_13a(line: &str) -> String {
    let mut line = line
        .replace("<skipped>", "")
        .replace("-\n", "")
        .replace('\n', " ");
    if line.contains('&') {
        line = line
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">");
    }
    tokenize_regexp(&format!(" {line} "))
}

/// sacreBLEU's `TokenizerZh._is_chinese_char`.
///
/// sacreBLEU tests `start <= uchar <= end` on *strings*. Two of its `_UCODE_RANGES` entries are
/// written `u'\u20000'`/`u'\u2a6d6'` and `u'\u2f800'`/`u'\u2fa1d'`, which Python parses as a
/// four-digit escape followed by a literal character, so string comparison makes them
/// U+2001..=U+2A6D and U+2F81..=U+2FA1 (and CJK Extension B is *not* split). We reproduce the
/// effective behaviour, which was checked against sacreBLEU for every code point.
pub(crate) fn is_chinese_char(c: char) -> bool {
    const RANGES: [(char, char); 22] = [
        ('\u{3400}', '\u{4db5}'), // CJK Unified Ideographs Extension A, release 3.0
        ('\u{4e00}', '\u{9fa5}'), // CJK Unified Ideographs, release 1.1
        ('\u{9fa6}', '\u{9fbb}'), // CJK Unified Ideographs, release 4.1
        ('\u{f900}', '\u{fa2d}'), // CJK Compatibility Ideographs, release 1.1
        ('\u{fa30}', '\u{fa6a}'), // CJK Compatibility Ideographs, release 3.2
        ('\u{fa70}', '\u{fad9}'), // CJK Compatibility Ideographs, release 4.1
        ('\u{2001}', '\u{2a6d}'), // sacreBLEU: (u'\u20000', u'\u2a6d6'), see above
        ('\u{2f81}', '\u{2fa1}'), // sacreBLEU: (u'\u2f800', u'\u2fa1d'), see above
        ('\u{ff00}', '\u{ffef}'), // Full width ASCII and punctuation, half width kana, Hangul
        ('\u{2e80}', '\u{2eff}'), // CJK Radicals Supplement
        ('\u{3000}', '\u{303f}'), // CJK punctuation mark
        ('\u{31c0}', '\u{31ef}'), // CJK stroke
        ('\u{2f00}', '\u{2fdf}'), // Kangxi Radicals
        ('\u{2ff0}', '\u{2fff}'), // Chinese character structure
        ('\u{3100}', '\u{312f}'), // Phonetic symbols
        ('\u{31a0}', '\u{31bf}'), // Phonetic symbols (Taiwanese and Hakka expansion)
        ('\u{fe10}', '\u{fe1f}'),
        ('\u{fe30}', '\u{fe4f}'),
        ('\u{2600}', '\u{26ff}'),
        ('\u{2700}', '\u{27bf}'),
        ('\u{3200}', '\u{32ff}'),
        ('\u{3300}', '\u{33ff}'),
    ];
    RANGES.iter().any(|&(start, end)| start <= c && c <= end)
}

/// sacreBLEU's `TokenizerZh`.
fn tokenize_zh(line: &str) -> String {
    let line = py_strip(line);
    let mut spaced = String::with_capacity(line.len() * 2);
    for c in line.chars() {
        if is_chinese_char(c) {
            spaced.push(' ');
            spaced.push(c);
            spaced.push(' ');
        } else {
            spaced.push(c);
        }
    }
    tokenize_regexp(&spaced)
}

/// sacreBLEU's `TokenizerV14International`.
fn tokenize_intl(line: &str) -> String {
    static PUNCT_AFTER_NON_DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\P{N})(\p{P})").expect("valid regex"));
    static PUNCT_BEFORE_NON_DIGIT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\p{P})(\P{N})").expect("valid regex"));
    static SYMBOL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\p{S})").expect("valid regex"));
    let s = PUNCT_AFTER_NON_DIGIT.replace_all(line, "${1} ${2} ");
    let s = PUNCT_BEFORE_NON_DIGIT.replace_all(&s, " ${1} ${2}");
    let s = SYMBOL.replace_all(&s, " ${1} ");
    py_normalize_spaces(&s)
}

/// sacreBLEU's `TokenizerChar`: `" ".join(line)` (whitespace characters included; BLEU's
/// whitespace split removes them afterwards).
fn tokenize_char(line: &str) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    for (i, c) in line.chars().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Tokenize::ALL {
            assert_eq!(t.to_string().parse::<Tokenize>().unwrap(), t);
        }
        assert!("13b".parse::<Tokenize>().is_err());
        assert_eq!(Tokenize::default(), Tokenize::ThirteenA);
    }

    #[test]
    fn thirteen_a() {
        let t = Tokenize::ThirteenA;
        assert_eq!(
            t.tokenize("It wasn't surprising."),
            "It wasn't surprising ."
        );
        assert_eq!(
            t.tokenize("1,000.50 dollars, in 2019-2020."),
            "1,000.50 dollars , in 2019 - 2020 ."
        );
        assert_eq!(
            t.tokenize("a &amp; b &quot;c&quot; &lt;d&gt;"),
            "a & b \" c \" < d >"
        );
        assert_eq!(t.tokenize("x<skipped>y"), "xy");
        assert_eq!(t.tokenize(""), "");
        assert_eq!(t.tokenize("a..b"), "a . . b");
    }

    #[test]
    fn intl() {
        let t = Tokenize::Intl;
        assert_eq!(
            t.tokenize("Hello, world! 1,000.5 €"),
            "Hello , world ! 1,000.5 €"
        );
        assert_eq!(t.tokenize("«Bonjour»"), "« Bonjour »");
    }

    #[test]
    fn zh() {
        let t = Tokenize::Zh;
        assert_eq!(
            t.tokenize(" 我爱北京天安门。 OK, 2.5"),
            "我 爱 北 京 天 安 门 。 OK , 2.5"
        );
        // U+2019 falls in the quirky U+2001..=U+2A6D range; U+20000 (Ext. B) does not.
        assert!(is_chinese_char('\u{2019}'));
        assert!(!is_chinese_char('\u{2000}'));
        assert!(!is_chinese_char('\u{20000}'));
        assert!(is_chinese_char('\u{2a6d}'));
        assert!(!is_chinese_char('\u{2a6e}'));
    }

    #[test]
    fn char_and_none() {
        assert_eq!(Tokenize::Char.tokenize("ab c"), "a b   c");
        assert_eq!(Tokenize::None.tokenize(" a  b "), " a  b ");
    }
}
