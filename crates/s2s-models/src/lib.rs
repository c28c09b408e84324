//! Burn modules for s2s: the recurrent family (basic encoder-decoder, RNNsearch, Luong), the
//! Transformer and ConvS2S, their configs and named presets, and the adapter that lets
//! `s2s-search` decode any of them; the encoder-only [`labeller`] of the tagging and
//! classification tasks; and teacher-forced [`scoring`] of references (perplexity).

pub mod attention;
pub mod backend;
pub mod config;
pub mod convs2s;
pub mod copy;
pub mod decoder;
pub mod engine;
pub mod init;
pub mod io;
pub mod labeller;
pub mod layers;
pub mod output;
pub mod rnn;
pub mod scoring;
pub mod speech;
pub mod transformer;

// `s2s_models::workers` and `s2s_models::allocator`, as the trainer and the CLI call them.
pub use engine::{allocator, workers};

pub use config::{ModelConfig, preset, preset_names};
pub use decoder::Decoder;
pub use output::OutputLayer;

use burn::module::Module;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// Every architecture s2s can train, behind one type so the trainer, the search adapter and the
/// server need no generics over models. The encoder-decoders are searched; a [`labeller`] labels
/// in one pass ([`labeller::Labeller::predict`]) and has no decoder.
// One model per process (or per loaded checkpoint): the variants' sizes do not matter, and burn's
// `Module` derive does not see through a `Box`.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Seq2SeqModel {
    Rnn(rnn::RnnSeq2Seq),
    Transformer(transformer::TransformerSeq2Seq),
    ConvS2S(convs2s::ConvS2S),
    Labeller(labeller::Labeller),
}

impl Seq2SeqModel {
    /// Builds a model. Panics with the config's own message when it does not fit the vocabularies
    /// (see [`ModelConfig::check_vocab`]; [`Seq2SeqModel::try_new`] returns it instead).
    pub fn new(cfg: &ModelConfig, src_vocab: usize, tgt_vocab: usize, device: &Device) -> Self {
        Self::try_new(cfg, src_vocab, tgt_vocab, device).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Builds a model, or says why the config does not fit the vocabularies. Every parameter is
    /// drawn here, from this thread's generator (see [`init::draw_now`]).
    pub fn try_new(
        cfg: &ModelConfig,
        src_vocab: usize,
        tgt_vocab: usize,
        device: &Device,
    ) -> Result<Self, String> {
        let model = Self::for_loading(cfg, src_vocab, tgt_vocab, device)?;
        init::draw_now(&model);
        Ok(model)
    }

    /// A model whose weights are about to be loaded: its parameters stay undrawn (burn's lazy
    /// initialisation), since loading replaces them, which saves drawing them for nothing.
    pub fn for_loading(
        cfg: &ModelConfig,
        src_vocab: usize,
        tgt_vocab: usize,
        device: &Device,
    ) -> Result<Self, String> {
        cfg.check_vocab(src_vocab, tgt_vocab)?;
        Ok(match cfg {
            ModelConfig::Rnn(c) => {
                Seq2SeqModel::Rnn(rnn::RnnSeq2Seq::new(c, src_vocab, tgt_vocab, device))
            }
            ModelConfig::Transformer(c) => Seq2SeqModel::Transformer(
                transformer::TransformerSeq2Seq::new(c, src_vocab, tgt_vocab, device),
            ),
            ModelConfig::ConvS2S(c) => {
                Seq2SeqModel::ConvS2S(convs2s::ConvS2S::new(c, src_vocab, tgt_vocab, device))
            }
            ModelConfig::Labeller(c) => {
                Seq2SeqModel::Labeller(labeller::Labeller::new(c, src_vocab, tgt_vocab, device))
            }
        })
    }

    /// Teacher-forced logits `[batch, tgt_len, vocab]`: [`Seq2SeqModel::teacher_hidden`] through
    /// [`Seq2SeqModel::output_layer`].
    pub fn forward_teacher(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
        feed_gold: Option<&mut dyn FnMut(usize) -> Tensor<1, Bool>>,
    ) -> Tensor<3> {
        let hidden = self.teacher_hidden(src, tgt_in, feed_gold);
        match self {
            // An int8 Transformer projects in int8; it has no f32 output layer.
            Seq2SeqModel::Transformer(m) => m.logits(hidden),
            _ => self.output_layer().logits(hidden),
        }
    }

    /// Teacher-forced decoder output just before the vocabulary projection,
    /// `[batch, tgt_len, hidden]` (see [`rnn::RnnSeq2Seq::teacher_hidden`]).
    ///
    /// `feed_gold` (scheduled sampling) applies to the recurrent models only. The Transformer and
    /// ConvS2S always use full teacher forcing, the whole target in one parallel pass, and ignore
    /// it: feeding their own predictions would need a sequential pass per step. A labeller reads
    /// no target: its output is [`labeller::Labeller::features`], `[batch, 1, hidden]` when it
    /// labels whole sequences (see [`Seq2SeqModel::loss_targets`]).
    pub fn teacher_hidden(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
        feed_gold: Option<&mut dyn FnMut(usize) -> Tensor<1, Bool>>,
    ) -> Tensor<3> {
        match self {
            Seq2SeqModel::Rnn(m) => m.teacher_hidden(src, tgt_in, feed_gold).0,
            Seq2SeqModel::Transformer(m) => m.teacher_hidden(src, tgt_in).0,
            Seq2SeqModel::ConvS2S(m) => {
                m.teacher_hidden(src.ids.clone(), src.pad.clone(), tgt_in).0
            }
            Seq2SeqModel::Labeller(m) => m.features(src),
        }
    }

    /// The copy gate of a copy model ([`copy`]).
    pub fn copy_gate(&self) -> Option<&copy::CopyGate> {
        match self {
            Seq2SeqModel::Rnn(m) => m.copy.as_ref(),
            Seq2SeqModel::Transformer(m) => m.copy.as_ref(),
            Seq2SeqModel::ConvS2S(_) | Seq2SeqModel::Labeller(_) => None,
        }
    }

    /// Teacher-forced log-probabilities `[batch, tgt_len, width]`: the log-softmax of
    /// [`Seq2SeqModel::forward_teacher`] (`width` = the vocabulary), or for a copy model the
    /// log of its mixture over the extended vocabulary (`width` reaching the largest source id),
    /// floored at `1e-30` so that every entry stays finite for training.
    pub fn teacher_log_probs(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
        feed_gold: Option<&mut dyn FnMut(usize) -> Tensor<1, Bool>>,
    ) -> Tensor<3> {
        let Some(copy) = self.copy_gate() else {
            return burn::tensor::activation::log_softmax(
                self.forward_teacher(src, tgt_in, feed_gold),
                2,
            );
        };
        let (hidden, attention) = match self {
            Seq2SeqModel::Rnn(m) => {
                let (hidden, attns) = m.teacher_hidden(src, tgt_in, feed_gold);
                (hidden, Tensor::stack(attns, 1))
            }
            Seq2SeqModel::Transformer(m) => m.teacher_hidden(src, tgt_in),
            _ => unreachable!("only these models copy"),
        };
        let largest = src.ids.clone().max().into_scalar::<i64>() as usize;
        let width = (largest + 1).max(copy.vocab);
        let logits = self.output_layer().logits(hidden.clone());
        copy.mix(hidden, logits, attention, src.ids.clone(), width)
            .clamp_min(1e-30)
            .log()
    }

    /// A speech model's joint-CTC weight, when it trains with one ([`speech::SpeechConfig`]).
    pub fn ctc_weight(&self) -> Option<f64> {
        match self {
            Seq2SeqModel::Transformer(m) if m.ctc.is_some() => {
                m.cfg.speech.as_ref().map(|s| s.ctc_weight)
            }
            _ => None,
        }
    }

    /// Whether the model computes with int8 weights (`s2s quantize`); only inference runs it.
    pub fn is_int8(&self) -> bool {
        matches!(self, Seq2SeqModel::Transformer(m) if m.is_int8())
    }

    /// The vocabulary projection that turns [`Seq2SeqModel::teacher_hidden`] into logits.
    pub fn output_layer(&self) -> OutputLayer {
        match self {
            Seq2SeqModel::Rnn(m) => m.output_layer(),
            Seq2SeqModel::Transformer(m) => m.output_layer(),
            Seq2SeqModel::ConvS2S(m) => m.output_layer(),
            Seq2SeqModel::Labeller(m) => m.output_layer(),
        }
    }

    /// The labeller, for a model of a labelling task.
    pub fn as_labeller(&self) -> Option<&labeller::Labeller> {
        match self {
            Seq2SeqModel::Labeller(m) => Some(m),
            _ => None,
        }
    }

    /// What [`Seq2SeqModel::teacher_hidden`]'s positions are scored against, for batch `b`: the
    /// decoder output rows; for a tagger the same rows without `<eos>` (a source's `<eos>` has no
    /// tag); for a classifier the first column (the label).
    pub fn loss_targets(&self, b: &s2s_data::Batch) -> LossTargets {
        let pad = b.specials.pad;
        let tokens = self.loss_tokens(b);
        match self.as_labeller().map(|m| m.cfg.head.per_token()) {
            None => LossTargets {
                ids: b.tgt_out.clone(),
                shape: [b.batch_size, b.tgt_len],
                tokens,
            },
            Some(true) => {
                assert_eq!(
                    b.src_len, b.tgt_len,
                    "tagging needs one tag per source token"
                );
                let ids: Vec<u32> = b
                    .tgt_out
                    .iter()
                    .map(|&t| if t == b.specials.eos { pad } else { t })
                    .collect();
                LossTargets {
                    ids,
                    shape: [b.batch_size, b.tgt_len],
                    tokens,
                }
            }
            Some(false) => LossTargets {
                ids: b.tgt_out.chunks(b.tgt_len).map(|row| row[0]).collect(),
                shape: [b.batch_size, 1],
                tokens,
            },
        }
    }

    /// How many targets [`Seq2SeqModel::loss_targets`] scores for batch `b`, counted without
    /// building them (the loss normaliser, and the weight of a share of the batch): the target
    /// tokens with `<eos>`; a tagger's tags (each row's one `<eos>` left out); a classifier's
    /// one label per row.
    pub fn loss_tokens(&self, b: &s2s_data::Batch) -> usize {
        match self.as_labeller().map(|m| m.cfg.head.per_token()) {
            None => b.num_tgt_tokens(),
            Some(true) => b.num_tgt_tokens() - b.batch_size,
            Some(false) => b.batch_size,
        }
    }
}

/// The targets of a training batch's loss: row-major ids of `shape` (padding where nothing is
/// scored), and how many are scored.
#[derive(Clone, Debug)]
pub struct LossTargets {
    pub ids: Vec<u32>,
    pub shape: [usize; 2],
    pub tokens: usize,
}

/// A padded batch of sources on a device: token ids with their padding mask (true at padding),
/// or for a speech model ([`speech`]) feature frames, whose mask then marks padded frames and
/// whose `ids` are zeros of the mask's shape.
#[derive(Clone, Debug)]
pub struct PaddedSource {
    pub ids: Tensor<2, Int>,
    pub pad: Tensor<2, Bool>,
    /// `[batch, frames, bins]`, zero on padded frames.
    pub frames: Option<Tensor<3>>,
    /// `[batch, len, width]` character ids of each token's spelling ([`s2s_data::chars`]), for a
    /// model that reads characters.
    pub chars: Option<Tensor<3, Int>>,
    /// `[batch, dim]`: a vector-conditioned model's conditions ([`s2s_data::vectors`]), each
    /// read as one source position (`ids` and `pad` then `[batch, 1]`).
    pub vectors: Option<Tensor<2>>,
}

impl PaddedSource {
    /// Pads `rows` with `pad_id` to the longest row.
    pub fn new(rows: &[Vec<u32>], pad_id: u32, device: &Device) -> Self {
        let len = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
        Self::from_flat(
            &pad_rows(rows, len, pad_id),
            rows.len(),
            len,
            pad_id,
            device,
        )
    }

    /// From row-major ids `[batch, len]` already padded with `pad_id`.
    pub fn from_flat(flat: &[u32], batch: usize, len: usize, pad_id: u32, device: &Device) -> Self {
        let ids: Vec<i64> = flat.iter().map(|&t| t as i64).collect();
        let pad: Vec<bool> = flat.iter().map(|&t| t == pad_id).collect();
        Self {
            ids: Tensor::from_data(TensorData::new(ids, [batch, len]), device),
            pad: Tensor::from_data(TensorData::new(pad, [batch, len]), device),
            frames: None,
            chars: None,
            vectors: None,
        }
    }

    /// A training or scoring batch's source: its frames when it has them, else its ids (and
    /// their spellings where it has them).
    pub fn from_batch(b: &s2s_data::Batch, device: &Device) -> Self {
        match (&b.frames, &b.vectors) {
            (Some(f), _) => Self::from_frames(f.data.clone(), &f.lens, f.len, f.bins, device),
            (None, Some(v)) => Self::from_vectors(v.data.clone(), v.dim, device),
            (None, None) => {
                Self::from_flat(&b.src, b.batch_size, b.src_len, b.specials.pad, device)
                    .with_chars(b.chars.as_ref(), device)
            }
        }
    }

    /// From row-major vectors `[batch, dim]`: one source position per row.
    pub fn from_vectors(vectors: Vec<f32>, dim: usize, device: &Device) -> Self {
        let batch = vectors.len() / dim.max(1);
        Self {
            ids: Tensor::zeros([batch, 1], device),
            pad: Tensor::<2, Bool>::full([batch, 1], false, device),
            frames: None,
            chars: None,
            vectors: Some(Tensor::from_data(
                TensorData::new(vectors, [batch, dim]),
                device,
            )),
        }
    }

    /// These ids with `chars`, the spellings of their tokens (same rows and positions).
    pub fn with_chars(self, chars: Option<&s2s_data::chars::BatchChars>, device: &Device) -> Self {
        let Some(c) = chars else { return self };
        let [batch, len] = self.ids.dims();
        assert_eq!(c.len, len, "spellings for every source position");
        let ids: Vec<i64> = c.ids.iter().map(|&x| x as i64).collect();
        Self {
            chars: Some(Tensor::from_data(
                TensorData::new(ids, [batch, len, c.width]),
                device,
            )),
            ..self
        }
    }

    /// From row-major frames `[batch, len, bins]` (zero where padded) and each row's number of
    /// real frames.
    pub fn from_frames(
        frames: Vec<f32>,
        lens: &[usize],
        len: usize,
        bins: usize,
        device: &Device,
    ) -> Self {
        let batch = lens.len();
        let (frames, len) = if len == 0 {
            (vec![0.0; batch * bins], 1)
        } else {
            (frames, len)
        };
        let pad: Vec<bool> = lens
            .iter()
            .flat_map(|&n| (0..len).map(move |t| t >= n))
            .collect();
        Self {
            ids: Tensor::zeros([batch, len], device),
            pad: Tensor::from_data(TensorData::new(pad, [batch, len]), device),
            frames: Some(Tensor::from_data(
                TensorData::new(frames, [batch, len, bins]),
                device,
            )),
            chars: None,
            vectors: None,
        }
    }
}

/// Row-major `[rows, len]` ids, right-padded with `pad_id`.
pub fn pad_rows(rows: &[Vec<u32>], len: usize, pad_id: u32) -> Vec<u32> {
    let mut flat = Vec::with_capacity(rows.len() * len);
    for r in rows {
        flat.extend_from_slice(&r[..r.len().min(len)]);
        flat.extend(std::iter::repeat_n(pad_id, len - r.len().min(len)));
    }
    flat
}

/// Row-major ids of `shape` as a 2-D device tensor.
pub fn ids_2d(ids: &[u32], shape: [usize; 2], device: &Device) -> Tensor<2, Int> {
    let v: Vec<i64> = ids.iter().map(|&t| t as i64).collect();
    Tensor::from_data(TensorData::new(v, shape), device)
}

/// Converts an int id tensor to a 1-D device tensor.
pub fn ids_1d(ids: &[u32], device: &Device) -> Tensor<1, Int> {
    let v: Vec<i64> = ids.iter().map(|&t| t as i64).collect();
    Tensor::from_data(TensorData::new(v, [ids.len()]), device)
}
