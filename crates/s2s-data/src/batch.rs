//! Batching: plain Rust data, no tensors.
//!
//! # Layout of a batch
//! For a pair (x, y) of token sequences (as produced by [`crate::TextTokenizer::encode`], no
//! specials):
//! - the source row is `x ++ [eos]`, of length `|x| + 1`;
//! - the decoder input row is `[bos] ++ y` and the decoder output row is `y ++ [eos]`, both of
//!   length `|y| + 1`.
//!
//! Rows are padded with `pad` to the longest row of the batch and stored row-major; the ids come
//! from the vocabulary's [`Specials`]. The masks, not the ids, say where padding is (Marian's
//! `bos` equals its `pad`).
//!
//! # Token budget
//! The *cost* of a pair is `max(|x|, |y|) + 1`, the longer of its source and target rows. The
//! cost of a batch is `batch_size * max cost in the batch`: the number of token slots, padding
//! included, of the larger of its padded source and target matrices. A batch never costs more
//! than [`BatchConfig::max_tokens`] and never holds more than [`BatchConfig::max_sentences`]
//! pairs, with one exception: a pair whose cost alone exceeds `max_tokens` gets a batch of its
//! own (so every pair is still seen once per epoch).
//!
//! # Determinism and resume
//! [`epoch_batches`] depends only on the lengths, the config, the seed and the epoch. To resume
//! exactly, a trainer stores `(epoch, index of the next batch)`, recomputes the epoch's batches
//! and skips the ones already done.

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::Specials;
use crate::audio::{Features, SpecAugment};
use crate::chars::BatchChars;

/// Limits of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchConfig {
    /// Maximum token slots per batch, padding included (see the module docs). At least 1.
    pub max_tokens: usize,
    /// Maximum pairs per batch; 0 means no limit besides `max_tokens`.
    pub max_sentences: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            max_tokens: 4096,
            max_sentences: 0,
        }
    }
}

/// The cost of one pair of lengths `(|x|, |y|)` (without specials): `max(|x|, |y|) + 1`.
pub fn pair_cost(len: (usize, usize)) -> usize {
    len.0.max(len.1) + 1
}

/// The cost of a batch: `indices.len() * max pair_cost`.
pub fn batch_cost(lengths: &[(usize, usize)], indices: &[usize]) -> usize {
    indices.len()
        * indices
            .iter()
            .map(|&i| pair_cost(lengths[i]))
            .max()
            .unwrap_or(0)
}

/// Cuts `order` greedily into batches within the budget, keeping its order.
fn pack(lengths: &[(usize, usize)], order: &[usize], cfg: &BatchConfig) -> Vec<Vec<usize>> {
    let max_sentences = if cfg.max_sentences == 0 {
        usize::MAX
    } else {
        cfg.max_sentences
    };
    let mut batches = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut cur_max = 0usize;
    for &i in order {
        let c = pair_cost(lengths[i]);
        let new_max = cur_max.max(c);
        if !cur.is_empty()
            && ((cur.len() + 1).saturating_mul(new_max) > cfg.max_tokens
                || cur.len() + 1 > max_sentences)
        {
            batches.push(std::mem::take(&mut cur));
            cur_max = c;
        } else {
            cur_max = new_max;
        }
        cur.push(i);
    }
    if !cur.is_empty() {
        batches.push(cur);
    }
    batches
}

/// splitmix64, to derive independent RNG seeds from (seed, epoch).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fisher-Yates with a fixed, version-independent index draw.
fn shuffle<T>(v: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..v.len()).rev() {
        let j = ((rng.next_u64() as u128 * (i as u128 + 1)) >> 64) as usize;
        v.swap(i, j);
    }
}

/// The training batches of one epoch, as indices into the split.
///
/// Pairs are shuffled, then stably sorted by cost (so pairs of equal cost come in a random
/// order), packed greedily within the budget, and the batches are shuffled. Every index appears
/// exactly once. The result depends only on the arguments.
pub fn epoch_batches(
    lengths: &[(usize, usize)],
    cfg: &BatchConfig,
    seed: u64,
    epoch: u64,
) -> Vec<Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(mix(seed ^ mix(epoch)));
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    shuffle(&mut order, &mut rng);
    order.sort_by_key(|&i| pair_cost(lengths[i]));
    let mut batches = pack(lengths, &order, cfg);
    shuffle(&mut batches, &mut rng);
    batches
}

/// Batches sorted by length and not shuffled: the cheapest way to go over a split once, e.g.
/// for the validation loss. Every index appears exactly once.
pub fn sorted_batches(lengths: &[(usize, usize)], cfg: &BatchConfig) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lengths.len()).collect();
    order.sort_by_key(|&i| pair_cost(lengths[i]));
    pack(lengths, &order, cfg)
}

/// Batches in the original order (consecutive runs of indices), e.g. to translate a file and
/// write the output in order. Every index appears exactly once.
pub fn sequential_batches(lengths: &[(usize, usize)], cfg: &BatchConfig) -> Vec<Vec<usize>> {
    let order: Vec<usize> = (0..lengths.len()).collect();
    pack(lengths, &order, cfg)
}

/// A speech batch's source: feature frames, row-major `[rows, len, bins]`, zero past each row's
/// end.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchFrames {
    /// The longest row's frames.
    pub len: usize,
    pub bins: usize,
    /// Each row's number of real frames.
    pub lens: Vec<usize>,
    pub data: Vec<f32>,
}

impl BatchFrames {
    /// Pads `utterances` to the longest.
    pub fn new(utterances: &[&Features]) -> BatchFrames {
        let bins = utterances.first().map_or(1, |f| f.bins);
        let len = utterances.iter().map(|f| f.frames).max().unwrap_or(0);
        let mut data = vec![0.0; utterances.len() * len * bins];
        for (row, f) in data.chunks_mut((len * bins).max(1)).zip(utterances) {
            assert_eq!(
                f.bins, bins,
                "every utterance of a data directory has the same bins"
            );
            row[..f.data.len()].copy_from_slice(&f.data);
        }
        BatchFrames {
            len,
            bins,
            lens: utterances.iter().map(|f| f.frames).collect(),
            data,
        }
    }

    /// SpecAugment's masks on every row, row `r` drawn from `mix(seed, r)`: a function of the
    /// seed and the batch only, so that resuming draws the same masks.
    pub fn augment(&mut self, spec: &SpecAugment, seed: u64) {
        if spec.is_off() {
            return;
        }
        let width = self.len * self.bins;
        for (r, &n) in self.lens.iter().enumerate() {
            let row = &mut self.data[r * width..r * width + n * self.bins];
            let mut f = Features {
                frames: n,
                bins: self.bins,
                data: row.to_vec(),
            };
            spec.apply(&mut f, mix(seed ^ mix(r as u64)));
            row.copy_from_slice(&f.data);
        }
    }

    fn rows(&self, range: std::ops::Range<usize>) -> BatchFrames {
        let width = self.len * self.bins;
        BatchFrames {
            len: self.len,
            bins: self.bins,
            lens: self.lens[range.clone()].to_vec(),
            data: self.data[range.start * width..range.end * width].to_vec(),
        }
    }
}

/// A padded batch. All matrices are row-major, `batch_size` rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    /// Number of pairs (rows).
    pub batch_size: usize,
    /// Padded source length: `max(|x|) + 1`.
    pub src_len: usize,
    /// Padded target length: `max(|y|) + 1`.
    pub tgt_len: usize,
    /// `[batch_size, src_len]`: `x ++ [eos]`, then `pad`.
    pub src: Vec<u32>,
    /// Unpadded length of each source row (`|x| + 1`).
    pub src_lens: Vec<usize>,
    /// `[batch_size, src_len]`: `true` on real tokens, `false` on padding.
    pub src_mask: Vec<bool>,
    /// `[batch_size, tgt_len]`: `[bos] ++ y`, then `pad`.
    pub tgt_in: Vec<u32>,
    /// `[batch_size, tgt_len]`: `y ++ [eos]`, then `pad`.
    pub tgt_out: Vec<u32>,
    /// Unpadded length of each target row (`|y| + 1`).
    pub tgt_lens: Vec<usize>,
    /// `[batch_size, tgt_len]`: `true` on real tokens, `false` on padding.
    pub tgt_mask: Vec<bool>,
    /// The ids the rows were built with.
    pub specials: Specials,
    /// A speech batch's frames, which the model reads instead of `src` (then empty rows of
    /// `<eos>`).
    pub frames: Option<BatchFrames>,
    /// A vector-conditioned batch's vectors ([`crate::vectors`]), which the model reads instead
    /// of `src` (then empty rows of `<eos>`).
    pub vectors: Option<crate::vectors::BatchVectors>,
    /// The spellings of the source tokens, for a model that reads characters.
    pub chars: Option<BatchChars>,
}

impl Batch {
    /// Builds a batch from `(x, y)` pairs of token ids without specials.
    pub fn from_pairs<S: AsRef<[u32]>, T: AsRef<[u32]>>(
        pairs: &[(S, T)],
        specials: Specials,
    ) -> Batch {
        let Specials { pad, bos, eos, .. } = specials;
        let b = pairs.len();
        let src_lens: Vec<usize> = pairs.iter().map(|(x, _)| x.as_ref().len() + 1).collect();
        let tgt_lens: Vec<usize> = pairs.iter().map(|(_, y)| y.as_ref().len() + 1).collect();
        let src_len = src_lens.iter().copied().max().unwrap_or(1);
        let tgt_len = tgt_lens.iter().copied().max().unwrap_or(1);
        let mut src = vec![pad; b * src_len];
        let mut src_mask = vec![false; b * src_len];
        let mut tgt_in = vec![pad; b * tgt_len];
        let mut tgt_out = vec![pad; b * tgt_len];
        let mut tgt_mask = vec![false; b * tgt_len];
        for (r, (x, y)) in pairs.iter().enumerate() {
            let (x, y) = (x.as_ref(), y.as_ref());
            let row = &mut src[r * src_len..(r + 1) * src_len];
            row[..x.len()].copy_from_slice(x);
            row[x.len()] = eos;
            src_mask[r * src_len..r * src_len + x.len() + 1].fill(true);
            let row_in = &mut tgt_in[r * tgt_len..(r + 1) * tgt_len];
            row_in[0] = bos;
            row_in[1..=y.len()].copy_from_slice(y);
            let row_out = &mut tgt_out[r * tgt_len..(r + 1) * tgt_len];
            row_out[..y.len()].copy_from_slice(y);
            row_out[y.len()] = eos;
            tgt_mask[r * tgt_len..r * tgt_len + y.len() + 1].fill(true);
        }
        Batch {
            batch_size: b,
            src_len,
            tgt_len,
            src,
            src_lens,
            src_mask,
            tgt_in,
            tgt_out,
            tgt_lens,
            tgt_mask,
            specials,
            frames: None,
            vectors: None,
            chars: None,
        }
    }

    /// Builds a source-only batch for inference: the targets are empty, so `tgt_in` is
    /// `[bos]` and `tgt_out` is `[eos]` on each row.
    pub fn from_sources<S: AsRef<[u32]>>(sources: &[S], specials: Specials) -> Batch {
        let pairs: Vec<(&[u32], &[u32])> = sources.iter().map(|s| (s.as_ref(), &[][..])).collect();
        Batch::from_pairs(&pairs, specials)
    }

    /// Rows `range` of this batch as a batch of their own, with the same padded lengths, so
    /// every row holds exactly what it holds here.
    pub fn rows(&self, range: std::ops::Range<usize>) -> Batch {
        let (s, t) = (self.src_len, self.tgt_len);
        Batch {
            batch_size: range.len(),
            src_len: s,
            tgt_len: t,
            src: self.src[range.start * s..range.end * s].to_vec(),
            src_lens: self.src_lens[range.clone()].to_vec(),
            src_mask: self.src_mask[range.start * s..range.end * s].to_vec(),
            tgt_in: self.tgt_in[range.start * t..range.end * t].to_vec(),
            tgt_out: self.tgt_out[range.start * t..range.end * t].to_vec(),
            tgt_lens: self.tgt_lens[range.clone()].to_vec(),
            tgt_mask: self.tgt_mask[range.start * t..range.end * t].to_vec(),
            specials: self.specials,
            frames: self.frames.as_ref().map(|f| f.rows(range.clone())),
            vectors: self.vectors.as_ref().map(|v| v.rows(range.clone())),
            chars: self.chars.as_ref().map(|c| c.rows(range)),
        }
    }

    /// Word dropout: each source token but `<eos>` becomes `<unk>` with probability `p`, drawn
    /// from `seed` alone (so that resuming draws the same). Spellings stay: a model that reads
    /// them learns to label a word from its letters, as it must for one the vocabulary lacks.
    pub fn drop_source_words(&mut self, p: f64, seed: u64) {
        if p <= 0.0 {
            return;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let unk = self.specials.unk;
        for (row, &len) in self.src.chunks_mut(self.src_len).zip(&self.src_lens) {
            for id in &mut row[..len.saturating_sub(1)] {
                // A uniform draw in [0, 1) from the top 53 bits.
                if (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p {
                    *id = unk;
                }
            }
        }
    }

    /// Number of real target tokens (`sum(tgt_lens)`, `<eos>` included): the usual loss
    /// normaliser.
    pub fn num_tgt_tokens(&self) -> usize {
        self.tgt_lens.iter().sum()
    }

    /// The cost of this batch under the token budget: `batch_size * max(src_len, tgt_len)`.
    pub fn cost(&self) -> usize {
        self.batch_size * self.src_len.max(self.tgt_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BOS, EOS, PAD, UNK};
    const S2S: Specials = Specials::S2S;

    #[test]
    fn rows_keep_the_padded_lengths() {
        let pairs = [
            (vec![5, 6, 7], vec![8]),
            (vec![9], vec![10, 11, 12]),
            (vec![13, 14], vec![15, 16]),
        ];
        let whole = Batch::from_pairs(&pairs, S2S);
        let tail = whole.rows(1..3);
        assert_eq!((tail.batch_size, tail.src_len, tail.tgt_len), (2, 4, 4));
        let alone = Batch::from_pairs(&pairs[1..], S2S);
        // The same rows built on their own pad to their own lengths; cut from the whole batch
        // they keep its lengths, and so its padding.
        assert_eq!(alone.src_len, 3);
        assert_eq!(&tail.src[..], &whole.src[4..]);
        assert_eq!(&tail.tgt_out[..], &whole.tgt_out[4..]);
        assert_eq!(&tail.tgt_in[..], &whole.tgt_in[4..]);
        assert_eq!(&tail.src_mask[..], &whole.src_mask[4..]);
        assert_eq!(&tail.tgt_mask[..], &whole.tgt_mask[4..]);
        assert_eq!(tail.src_lens, vec![2, 3]);
        assert_eq!(tail.tgt_lens, vec![4, 3]);
        assert_eq!(
            whole.rows(0..1).num_tgt_tokens() + tail.num_tgt_tokens(),
            whole.num_tgt_tokens()
        );
    }

    #[test]
    fn pads_and_shifts() {
        let b = Batch::from_pairs(
            &[(vec![5, 6, 7], vec![8]), (vec![9], vec![10, 11, 12])],
            S2S,
        );
        assert_eq!((b.batch_size, b.src_len, b.tgt_len), (2, 4, 4));
        assert_eq!(b.src, vec![5, 6, 7, EOS, 9, EOS, PAD, PAD]);
        assert_eq!(b.src_lens, vec![4, 2]);
        assert_eq!(
            b.src_mask,
            vec![true, true, true, true, true, true, false, false]
        );
        assert_eq!(b.tgt_in, vec![BOS, 8, PAD, PAD, BOS, 10, 11, 12]);
        assert_eq!(b.tgt_out, vec![8, EOS, PAD, PAD, 10, 11, 12, EOS]);
        assert_eq!(b.tgt_lens, vec![2, 4]);
        assert_eq!(
            b.tgt_mask,
            vec![true, true, false, false, true, true, true, true]
        );
        assert_eq!(b.num_tgt_tokens(), 6);
        assert_eq!(b.cost(), 8);
        assert_eq!(b.cost(), batch_cost(&[(3, 1), (1, 3)], &[0, 1]));
    }

    #[test]
    fn word_dropout_replaces_tokens_but_eos_and_padding() {
        let pairs: Vec<(Vec<u32>, Vec<u32>)> = (0..50)
            .map(|i| (vec![10 + i; 1 + i as usize % 7], vec![5]))
            .collect();
        let whole = Batch::from_pairs(&pairs, S2S);
        let mut dropped = whole.clone();
        dropped.drop_source_words(0.3, 7);
        let mut again = whole.clone();
        again.drop_source_words(0.3, 7);
        assert_eq!(dropped, again, "a function of the seed");
        let mut n = 0;
        for (i, (&a, &b)) in whole.src.iter().zip(&dropped.src).enumerate() {
            let (r, t) = (i / whole.src_len, i % whole.src_len);
            if t + 1 < whole.src_lens[r] {
                assert!(b == a || b == UNK);
                n += usize::from(b == UNK);
            } else {
                assert_eq!(a, b, "<eos> and padding stay");
            }
        }
        let tokens: usize = whole.src_lens.iter().map(|l| l - 1).sum();
        let share = n as f64 / tokens as f64;
        assert!((0.2..0.4).contains(&share), "{n} of {tokens} dropped");
        let mut none = whole.clone();
        none.drop_source_words(0.0, 7);
        assert_eq!(none, whole);
    }

    #[test]
    fn source_only_batch() {
        let b = Batch::from_sources(&[vec![4u32], vec![]], S2S);
        assert_eq!(b.src, vec![4, EOS, EOS, PAD]);
        assert_eq!(b.tgt_in, vec![BOS, BOS]);
        assert_eq!(b.tgt_out, vec![EOS, EOS]);
    }

    #[test]
    fn marian_layout_starts_from_pad_and_masks_say_where_padding_is() {
        let marian = Specials {
            pad: 9,
            unk: 1,
            bos: 9,
            eos: 0,
        };
        let b = Batch::from_pairs(&[(vec![5, 6], vec![7]), (vec![4], vec![])], marian);
        assert_eq!(b.src, vec![5, 6, 0, 4, 0, 9]);
        assert_eq!(b.tgt_in, vec![9, 7, 9, 9]);
        assert_eq!(b.tgt_out, vec![7, 0, 0, 9]);
        assert_eq!(b.tgt_mask, vec![true, true, true, false]);
    }

    #[test]
    fn oversized_pair_gets_its_own_batch() {
        let lengths = [(2, 2), (50, 3), (1, 1)];
        let cfg = BatchConfig {
            max_tokens: 10,
            max_sentences: 0,
        };
        let batches = sorted_batches(&lengths, &cfg);
        assert!(batches.contains(&vec![1]));
        let mut all: Vec<usize> = batches.concat();
        all.sort();
        assert_eq!(all, vec![0, 1, 2]);
    }
}
