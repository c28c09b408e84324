//! The characters of each source token, for a model that reads spellings as well as token ids
//! (a character-aware tagger: an unknown word still shows its suffix, capitals and digits).
//!
//! A token's spelling is the text it was cut from ([`crate::TextTokenizer::encode_spelled`]), so
//! an unknown word keeps its own letters though its id is `<unk>` or its signature's. Characters
//! are the spelling's UTF-8 bytes: no vocabulary to train or store, and any script works. A
//! spelling becomes `[WORD_START] ++ bytes ++ [WORD_END]`, byte `b` as id `FIRST_BYTE + b`; one
//! longer than [`MAX_SPELLING_BYTES`] keeps its first and last half of that many bytes (the
//! prefix and the suffix are what tell a word's class).

/// Pads a spelling row; also the row of a position that has no spelling (`<eos>`, padding).
pub const CHAR_PAD: u32 = 0;
/// Opens every spelling.
pub const WORD_START: u32 = 1;
/// Closes every spelling.
pub const WORD_END: u32 = 2;
/// The id of byte 0; byte `b` is `FIRST_BYTE + b`.
pub const FIRST_BYTE: u32 = 3;
/// Character ids, the three markers included.
pub const CHAR_VOCAB: usize = FIRST_BYTE as usize + 256;
/// The bytes of a spelling kept: longer ones keep their first and last `MAX_SPELLING_BYTES / 2`.
pub const MAX_SPELLING_BYTES: usize = 32;

/// The character ids of one spelling, markers included.
pub fn char_ids(spelling: &str) -> Vec<u32> {
    let bytes = spelling.as_bytes();
    let kept: Vec<u8> = if bytes.len() > MAX_SPELLING_BYTES {
        let half = MAX_SPELLING_BYTES / 2;
        bytes[..half]
            .iter()
            .chain(&bytes[bytes.len() - half..])
            .copied()
            .collect()
    } else {
        bytes.to_vec()
    };
    std::iter::once(WORD_START)
        .chain(kept.iter().map(|&b| FIRST_BYTE + b as u32))
        .chain([WORD_END])
        .collect()
}

/// A batch's spellings: `[rows, len, width]` character ids, row-major, [`CHAR_PAD`] past each
/// spelling's end and on every position without a token (`<eos>`, padding). `len` is the
/// batch's padded source length; `width` the longest spelling's, markers included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchChars {
    pub len: usize,
    pub width: usize,
    pub ids: Vec<u32>,
}

impl BatchChars {
    /// The spellings of each row's tokens, padded to `len` positions per row.
    pub fn new<S: AsRef<str>>(rows: &[&[S]], len: usize) -> BatchChars {
        let spelled: Vec<Vec<Vec<u32>>> = rows
            .iter()
            .map(|r| r.iter().map(|s| char_ids(s.as_ref())).collect())
            .collect();
        let width = spelled
            .iter()
            .flatten()
            .map(Vec::len)
            .max()
            .unwrap_or(0)
            .max(1);
        let mut ids = vec![CHAR_PAD; rows.len() * len * width];
        for (r, row) in spelled.iter().enumerate() {
            assert!(row.len() <= len, "a row has more spellings than positions");
            for (p, chars) in row.iter().enumerate() {
                let at = (r * len + p) * width;
                ids[at..at + chars.len()].copy_from_slice(chars);
            }
        }
        BatchChars { len, width, ids }
    }

    /// Rows `range`, with the same `len` and `width`.
    pub fn rows(&self, range: std::ops::Range<usize>) -> BatchChars {
        let per_row = self.len * self.width;
        BatchChars {
            len: self.len,
            width: self.width,
            ids: self.ids[range.start * per_row..range.end * per_row].to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spelling_is_its_bytes_between_markers() {
        assert_eq!(
            char_ids("Ab"),
            vec![WORD_START, FIRST_BYTE + 65, FIRST_BYTE + 98, WORD_END]
        );
        // "é" is two bytes.
        assert_eq!(char_ids("é").len(), 4);
        assert_eq!(char_ids(""), vec![WORD_START, WORD_END]);
    }

    #[test]
    fn a_long_spelling_keeps_its_prefix_and_suffix() {
        let word = format!("{}{}", "a".repeat(30), "tion");
        let ids = char_ids(&word);
        assert_eq!(ids.len(), MAX_SPELLING_BYTES + 2);
        let tail: Vec<u32> = "tion".bytes().map(|b| FIRST_BYTE + b as u32).collect();
        assert_eq!(&ids[ids.len() - 5..ids.len() - 1], &tail[..]);
        assert_eq!(ids[1], FIRST_BYTE + b'a' as u32);
    }

    fn tokenizer(kind: crate::TokenizerKind, signatures: bool) -> crate::TextTokenizer {
        let spec = crate::TokenizerSpec {
            kind,
            vocab_size: 100,
            min_freq: if signatures { 2 } else { 1 },
            signatures,
        };
        let texts = [
            "the cat sat on the mat",
            "the dog ran on the cat",
            "Running",
            "Jumping",
        ];
        crate::train_tokenizer(&spec, texts.into_iter()).unwrap()
    }

    #[test]
    fn an_unknown_word_keeps_its_spelling() {
        let tok = tokenizer(crate::TokenizerKind::Split, true);
        let (ids, spellings) = tok.encode_spelled("the  Walking cat");
        assert_eq!(ids, tok.encode("the  Walking cat"));
        assert_eq!(spellings, ["the", "Walking", "cat"]);
        // Its id is its signature's (or <unk>), its spelling its own.
        assert_eq!(tok.id_to_token(ids[1]).unwrap(), "<unk-Cap-ing>");
        let (ids, spellings) = tok.encode_spelled("  ");
        assert!(ids.is_empty() && spellings.is_empty());
        // A subword tokenizer spells each piece as the text it covers.
        let tok = tokenizer(crate::TokenizerKind::Word, false);
        let (ids, spellings) = tok.encode_spelled("the zebra");
        assert_eq!(ids.len(), spellings.len());
        assert_eq!(spellings, ["the", "zebra"]);
    }

    #[test]
    fn rows_are_padded_to_the_batch() {
        let a = ["to", "x"];
        let b = ["abc"];
        let chars = BatchChars::new(&[&a[..], &b[..]], 3);
        assert_eq!((chars.len, chars.width), (3, 5));
        assert_eq!(chars.ids.len(), 2 * 3 * 5);
        // Row 0, position 1: "x".
        assert_eq!(
            &chars.ids[5..10],
            &[WORD_START, FIRST_BYTE + b'x' as u32, WORD_END, 0, 0]
        );
        // Row 0's third position (its <eos>) and row 1's last two have no spelling.
        assert!(chars.ids[10..15].iter().all(|&c| c == CHAR_PAD));
        assert!(chars.ids[20..30].iter().all(|&c| c == CHAR_PAD));
        assert_eq!(chars.rows(1..2).ids, chars.ids[15..30].to_vec());
    }
}
