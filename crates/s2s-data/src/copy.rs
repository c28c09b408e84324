//! The extended vocabulary of a copy model (See et al. 2017's pointer-generator): a word the
//! vocabulary lacks can still be output by copying it from the source.
//!
//! Source and target share one vocabulary of `V` ids (a joint tokenizer). The unknown pieces of
//! a source get ids `V, V + 1, ...` in order of first appearance (a repeated piece keeps its
//! id), and the list of their pieces ([`SourceWords`]) goes with the sentence. A target piece
//! the vocabulary lacks takes the id of the same piece in its source, if there is one, and is
//! `<unk>` otherwise. A model reads ids past `V` as `<unk>`; its copy distribution puts each
//! source position's attention on that position's id, so it can output them, and
//! [`TextTokenizer::decode_copied`] turns them back into the source's pieces.

use crate::tokenizer::{SPACE_MARKER, TextTokenizer, TokenizerKind};

/// The pieces behind a sentence's ids past the vocabulary: piece `k` has id `V + k`.
pub type SourceWords = Vec<String>;

/// How many of a source's pieces its `ids` still use: pieces are numbered in order of first
/// appearance, so a cut source keeps a prefix of them.
pub fn words_used(ids: &[u32], vocab: usize) -> usize {
    ids.iter()
        .filter_map(|&id| (id as usize).checked_sub(vocab))
        .map(|k| k + 1)
        .max()
        .unwrap_or(0)
}

impl TextTokenizer {
    /// The ids of a source for a copy model (no `<bos>`/`<eos>`), with its unknown pieces
    /// numbered past the vocabulary, and those pieces.
    pub fn encode_source_copy(&self, text: &str) -> (Vec<u32>, SourceWords) {
        let mut words = SourceWords::new();
        let ids = self.extend_unknown(text, |piece| {
            let k = match words.iter().position(|w| *w == piece) {
                Some(k) => k,
                None => {
                    words.push(piece);
                    words.len() - 1
                }
            };
            Some(k)
        });
        (ids, words)
    }

    /// The ids of a target for a copy model: an unknown piece that `words` (its source's) has
    /// takes that id past the vocabulary; any other stays `<unk>`.
    pub fn encode_target_copy(&self, text: &str, words: &[String]) -> Vec<u32> {
        self.extend_unknown(text, |piece| words.iter().position(|w| *w == piece))
    }

    /// The text of ids that may reach past the vocabulary into `words` (a copy model's output);
    /// ids past both are skipped.
    pub fn decode_copied(&self, ids: &[u32], words: &[String]) -> String {
        let v = self.vocab_size();
        self.decode_pieces(
            ids.iter()
                .filter_map(|&id| match (id as usize).checked_sub(v) {
                    Some(k) => words.get(k).cloned(),
                    None => self.piece(id),
                }),
        )
    }

    /// [`TextTokenizer::tokens`] of ids that may reach past the vocabulary into `words`: a
    /// copied piece shows as itself.
    pub fn tokens_copied(&self, ids: &[u32], words: &[String]) -> Vec<String> {
        let v = self.vocab_size();
        let mut shown = self.tokens(ids);
        for (token, &id) in shown.iter_mut().zip(ids) {
            if let Some(word) = (id as usize).checked_sub(v).and_then(|k| words.get(k)) {
                *token = word.replace(SPACE_MARKER, "");
            }
        }
        shown
    }

    /// [`TextTokenizer::encode`] where each unknown piece may take the id `V + slot(piece)`.
    fn extend_unknown(
        &self,
        text: &str,
        mut slot: impl FnMut(String) -> Option<usize>,
    ) -> Vec<u32> {
        let Ok((mut ids, spans)) = self.segment_spans(text) else {
            return self.encode(text);
        };
        let (unk, v) = (self.specials().unk, self.vocab_size() as u32);
        for (i, (id, &span)) in ids.iter_mut().zip(&spans).enumerate() {
            if *id == unk
                && let Some(piece) = self.unknown_piece(text, span, i == 0)
                && let Some(k) = slot(piece)
            {
                *id = v + k as u32;
            }
        }
        ids
    }

    /// The piece an unknown span of `text` stands for, as the decoder reads pieces: with the
    /// word-start marker where the tokenizer marks word starts and the span holds the space
    /// before it (or is the first piece, whose marker the tokenizer prepends).
    fn unknown_piece(
        &self,
        text: &str,
        (start, end): (usize, usize),
        first: bool,
    ) -> Option<String> {
        let raw = text.get(start..end)?;
        let surface = raw.trim();
        if surface.is_empty() {
            return None;
        }
        let marks_words = matches!(
            self.kind(),
            Some(TokenizerKind::Bpe | TokenizerKind::Word | TokenizerKind::Unigram)
        );
        let word_start = raw.starts_with(char::is_whitespace) || first;
        Some(if marks_words && word_start {
            format!("{SPACE_MARKER}{surface}")
        } else {
            surface.to_owned()
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::tokenizer::{TokenizerKind, TokenizerSpec, train_tokenizer};

    fn word_tokenizer() -> crate::TextTokenizer {
        let spec = TokenizerSpec {
            kind: TokenizerKind::Word,
            vocab_size: 100,
            min_freq: 1,
            signatures: false,
        };
        train_tokenizer(&spec, ["the cat sat on the mat", "a dog ran"].into_iter()).unwrap()
    }

    #[test]
    fn unknown_source_words_get_ids_past_the_vocabulary() {
        let tok = word_tokenizer();
        let v = tok.vocab_size() as u32;
        let unk = tok.specials().unk;
        let (ids, words) = tok.encode_source_copy("the zebra met Alice and the zebra");
        assert_eq!(words, ["▁zebra", "▁met", "▁Alice", "▁and"]);
        assert_eq!(ids.len(), 7);
        assert_eq!(ids[0], tok.encode("the")[0]);
        assert_eq!(&ids[1..5], &[v, v + 1, v + 2, v + 3]);
        assert_eq!(ids[6], v, "a repeated word keeps its id");
        assert!(!ids.contains(&unk));
        // The target copies what its source has; other unknown words stay unknown.
        let tgt = tok.encode_target_copy("Alice saw the zebra", &words);
        assert_eq!(tgt, [v + 2, unk, tok.encode("the")[0], v]);
        // Decoding brings the copied words back, with their spacing.
        assert_eq!(tok.decode_copied(&tgt, &words), "Alice the zebra");
        assert_eq!(tok.decode_copied(&[v + 9], &words), "");
        // Without unknown words the ids are the plain encoding.
        let (plain, none) = tok.encode_source_copy("the cat sat");
        assert_eq!(plain, tok.encode("the cat sat"));
        assert!(none.is_empty());
    }

    #[test]
    fn a_cut_source_keeps_the_pieces_it_still_uses() {
        assert_eq!(super::words_used(&[4, 10, 11, 10], 10), 2);
        assert_eq!(super::words_used(&[4, 5], 10), 0);
    }

    #[test]
    fn unknown_characters_inside_a_word_join_it() {
        let spec = TokenizerSpec {
            kind: TokenizerKind::Bpe,
            vocab_size: 60,
            min_freq: 1,
            signatures: false,
        };
        let tok = train_tokenizer(&spec, ["caf cafe cab", "face bead"].into_iter()).unwrap();
        let (ids, words) = tok.encode_source_copy("café x");
        // The word-start marker of ` x` is a piece of its own before the unknown `x`.
        assert_eq!(words, ["é", "x"]);
        assert_eq!(tok.decode_copied(&ids, &words), "café x");
    }
}
