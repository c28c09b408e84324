//! The encoder-only model of the labelling tasks: embeddings, the recurrent or Transformer
//! encoder the sequence-to-sequence models use, and a head. The head says what the model outputs:
//! `tokens`, one label per source token (tagging, N vs N); or a pooled vector and one label per
//! sequence (classification, N vs 1).
//!
//! The source row is the data crate's: the tokens, then `<eos>`. The tagger's `<eos>` position has
//! no label (its target is padding); a pooled head reads it like any other position.
//!
//! A classifier over audio (`[model.speech]`, e.g. spoken digits) reads feature frames through
//! the speech models' front end ([`crate::speech`]) in place of embeddings; it pools the
//! subsampled positions like tokens.

use burn::module::Module;
use burn::nn::conv::{Conv1d, Conv1dConfig};
use burn::nn::{
    Dropout, DropoutConfig, Embedding, EmbeddingConfig, Initializer, Linear, PaddingConfig1d,
};
use burn::tensor::activation::relu;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::decoder::ModelSource;
use crate::init::{embedding, xavier_linear};
use crate::rnn::CellKind;
use crate::rnn::encoder::RnnEncoder;
use crate::speech::{ConvSubsampling, SpeechConfig};
use crate::transformer::encoder::TransformerEncoder;
use crate::transformer::positions::PositionEncoding;
use crate::transformer::{Activation, Positions, TransformerConfig};
use crate::{OutputLayer, PaddedSource};
use s2s_search::{Source, SpecialTokens};

/// The encoder under the head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EncoderKind {
    Lstm,
    Gru,
    Transformer,
    /// Kim (2014)'s convolutions: `hidden` feature maps per window width (`widths`).
    Cnn,
}

/// What the model puts out: one label per token, or one per sequence from a pooled vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Head {
    /// One label per source token (tagging).
    Tokens,
    /// The mean of the encoder's outputs over the tokens.
    Mean,
    /// Their element-wise maximum.
    Max,
    /// The final states (both directions' for a bidirectional RNN; the `<eos>` output for a
    /// Transformer).
    Last,
    /// A learned attention over the outputs (`v^T tanh(W h)`, Yang et al. 2016).
    Attention,
}

impl Head {
    /// Whether it labels every token (tagging) rather than the sequence.
    pub fn per_token(self) -> bool {
        self == Head::Tokens
    }
}

/// `[model]` of a labelling model (`type = "labeller"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabellerConfig {
    pub encoder: EncoderKind,
    pub head: Head,
    pub emb_dim: usize,
    /// A recurrent encoder's state size per direction; a Transformer's width (`d_model`, which
    /// must equal `emb_dim`).
    pub hidden: usize,
    pub layers: usize,
    /// Recurrent encoders only.
    pub bidirectional: bool,
    /// Transformer only: attention heads and the feed-forward width.
    pub heads: usize,
    pub ffn_dim: usize,
    /// Dropout on the embeddings, between layers and before the output layer.
    pub dropout: f64,
    /// Transformer only: longest input of the learned position table (sinusoids are used).
    pub max_positions: usize,
    /// CNN only: the window widths, in tokens, each with `hidden` feature maps.
    #[serde(default = "default_widths")]
    pub widths: Vec<usize>,
    /// A classifier of audio: the front end that turns feature frames into `emb_dim`-wide
    /// positions. Its `ctc_weight` must be 0: a label is no transcript to align.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speech: Option<SpeechConfig>,
    /// Each token's spelling, read by a character CNN whose features join its embedding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chars: Option<CharConfig>,
}

/// `[model.chars]`: Ma and Hovy (2016)'s character CNN. A token's spelling
/// ([`s2s_data::chars`]: its UTF-8 bytes between two markers) is embedded, convolved with windows
/// of `width` characters and max-pooled into `maps` features, which are appended to the token's
/// embedding: an unknown word still shows its suffix, capitals and digits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CharConfig {
    /// Character embedding width.
    pub dim: usize,
    /// Feature maps: the width of a spelling's vector. 0 turns the character model off.
    pub maps: usize,
    /// The window, in characters (odd widths centre it).
    pub width: usize,
}

fn default_widths() -> Vec<usize> {
    vec![3, 4, 5]
}

impl LabellerConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(chars) = self.char_model() {
            if chars.dim == 0 || chars.width == 0 {
                return Err(format!(
                    "[model.chars] dim = {}, width = {}: both must be at least 1 (maps = 0 \
                     turns the character model off)",
                    chars.dim, chars.width
                ));
            }
            if self.speech.is_some() {
                return Err(
                    "[model.chars]: audio has no spellings; fix: set [model.chars] maps = 0".into(),
                );
            }
            if self.encoder == EncoderKind::Transformer {
                return Err(
                    "[model.chars]: the Transformer encoder's width is its embeddings'; fix: \
                     use an lstm, gru or cnn encoder, or set [model.chars] maps = 0"
                        .into(),
                );
            }
        }
        if self.encoder == EncoderKind::Cnn {
            if self.widths.is_empty() || self.widths.contains(&0) {
                return Err(format!(
                    "widths = {:?}: a CNN encoder needs at least one window width, each at \
                     least 1",
                    self.widths
                ));
            }
            if self.layers != 1 {
                return Err(format!(
                    "layers = {}: a CNN encoder is one layer of convolutions; fix: layers = 1",
                    self.layers
                ));
            }
        }
        if self.layers == 0 || self.emb_dim == 0 || self.hidden == 0 {
            return Err("layers, emb_dim and hidden must be at least 1".into());
        }
        if !(0.0..1.0).contains(&self.dropout) {
            return Err(format!("dropout = {} must be in [0, 1)", self.dropout));
        }
        if let Some(speech) = &self.speech {
            speech.validate()?;
            if self.head.per_token() {
                return Err(
                    "[model.speech]: a tagger labels tokens, and audio has none; fix: \
                            choose a pooled head (mean, max, last or attention)"
                        .into(),
                );
            }
            if speech.ctc_weight != 0.0 {
                return Err(format!(
                    "[model.speech] ctc_weight = {}: a classifier's label is no transcript for \
                     CTC to align; fix: set ctc_weight = 0",
                    speech.ctc_weight
                ));
            }
        }
        if self.encoder == EncoderKind::Transformer {
            if self.emb_dim != self.hidden {
                return Err(format!(
                    "a Transformer encoder's emb_dim ({}) must equal its hidden width ({})",
                    self.emb_dim, self.hidden
                ));
            }
            if self.heads == 0 || !self.hidden.is_multiple_of(self.heads) {
                return Err(format!(
                    "hidden = {} must be a multiple of heads = {}",
                    self.hidden, self.heads
                ));
            }
        }
        Ok(())
    }

    /// The character model, if it is on.
    pub fn char_model(&self) -> Option<&CharConfig> {
        self.chars.as_ref().filter(|c| c.maps > 0)
    }

    /// Width of the encoder's inputs: a token's embedding and its spelling's features.
    pub fn input_size(&self) -> usize {
        self.emb_dim + self.char_model().map_or(0, |c| c.maps)
    }

    /// Width of the encoder's outputs.
    pub fn output_size(&self) -> usize {
        match self.encoder {
            EncoderKind::Transformer => self.hidden,
            EncoderKind::Cnn => self.hidden * self.widths.len(),
            _ if self.bidirectional => 2 * self.hidden,
            _ => self.hidden,
        }
    }

    /// The Transformer layers' config (post-norm, sinusoidal positions, ReLU).
    fn transformer(&self) -> TransformerConfig {
        TransformerConfig {
            d_model: self.hidden,
            heads: self.heads,
            enc_layers: self.layers,
            dec_layers: 0,
            ffn_dim: self.ffn_dim,
            dropout: self.dropout,
            attention_dropout: 0.0,
            activation_dropout: 0.0,
            positions: Positions::Sinusoidal,
            max_positions: self.max_positions,
            pre_norm: false,
            share_embeddings: false,
            tie_output: false,
            activation: Activation::Relu,
            scale_embeddings: true,
            logits_bias: false,
            zero_start: false,
            alignment_layer: None,
            copy: false,
            speech: None,
        }
    }
}

/// The encoder stack of a [`Labeller`].
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum LabelEncoder {
    Rnn(RnnEncoder),
    Transformer(TransformerEncoder),
    Cnn(CnnEncoder),
}

/// Kim (2014)'s sentence convolutions: for each window width `w`, feature maps over the `w`
/// tokens ending at each position (zeros before the first token), through a ReLU; the widths'
/// maps concatenated. A position reads no token after it, so padding at a row's end changes none
/// of its real positions (batch invariance); the pooled heads mask the padded ones.
#[derive(Module, Debug)]
pub struct CnnEncoder {
    pub convs: Vec<Conv1d>,
}

impl CnnEncoder {
    pub fn new(widths: &[usize], d_in: usize, maps: usize, device: &Device) -> Self {
        let convs = widths
            .iter()
            .map(|&w| {
                Conv1dConfig::new(d_in, maps, w)
                    .with_padding(PaddingConfig1d::Explicit(w - 1, 0))
                    .init(device)
            })
            .collect();
        Self { convs }
    }

    /// `[batch, len, d_in]` to `[batch, len, maps * widths]`.
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let x = x.swap_dims(1, 2);
        let maps: Vec<Tensor<3>> = self
            .convs
            .iter()
            .map(|c| relu(c.forward(x.clone())))
            .collect();
        Tensor::cat(maps, 1).swap_dims(1, 2)
    }
}

/// The character CNN of [`CharConfig`].
#[derive(Module, Debug)]
pub struct CharEncoder {
    pub emb: Embedding,
    pub conv: Conv1d,
}

impl CharEncoder {
    pub fn new(cfg: &CharConfig, device: &Device) -> Self {
        Self {
            emb: EmbeddingConfig::new(s2s_data::chars::CHAR_VOCAB, cfg.dim)
                .with_initializer(Initializer::Uniform {
                    min: -0.1,
                    max: 0.1,
                })
                .init(device),
            conv: Conv1dConfig::new(cfg.dim, cfg.maps, cfg.width)
                .with_padding(PaddingConfig1d::Explicit(
                    (cfg.width - 1) / 2,
                    cfg.width / 2,
                ))
                .init(device),
        }
    }

    /// `[batch, len, width]` character ids to `[batch, len, maps]`. Padding characters are zero
    /// vectors, as the convolution's own padding is, and are left out of the maximum, so a
    /// spelling's features do not depend on the batch's widest one; a position without a
    /// spelling gets zeros.
    pub fn forward(&self, chars: Tensor<3, burn::tensor::Int>) -> Tensor<3> {
        let [b, len, width] = chars.dims();
        let flat = chars.reshape([b * len, width]);
        let real = flat
            .clone()
            .not_equal_elem(s2s_data::chars::CHAR_PAD as i64)
            .float();
        let x = self.emb.forward(flat) * real.clone().unsqueeze_dim::<3>(2);
        // ReLU's outputs are at least 0, so zeroing the padding leaves the maximum unchanged.
        let maps = relu(self.conv.forward(x.swap_dims(1, 2))) * real.unsqueeze_dim::<3>(1);
        let [_, m, _] = maps.dims();
        maps.max_dim(2).reshape([b, len, m])
    }
}

#[derive(Module, Debug)]
pub struct Labeller {
    /// Text only.
    pub emb: Option<Embedding>,
    /// Audio only: frames to positions, in place of `emb`.
    pub speech: Option<ConvSubsampling>,
    /// Text only, with `[model.chars]`.
    pub chars: Option<CharEncoder>,
    /// Transformer only.
    pub positions: Option<PositionEncoding>,
    pub encoder: LabelEncoder,
    /// The attention head's `W` and `v`.
    pub pool_hidden: Option<Linear>,
    pub pool_score: Option<Linear>,
    pub output: Linear,
    pub dropout: Dropout,
    #[module(skip)]
    pub cfg: LabellerConfig,
}

impl Labeller {
    /// `src_vocab` source tokens (for audio: feature bins), `labels` label ids (the target
    /// vocabulary, specials included).
    pub fn new(cfg: &LabellerConfig, src_vocab: usize, labels: usize, device: &Device) -> Self {
        let out = cfg.output_size();
        let speech = cfg
            .speech
            .as_ref()
            .map(|s| ConvSubsampling::new(s, src_vocab, cfg.emb_dim, device));
        // Audio reads the front end's positions instead of embeddings.
        let emb = speech.is_none().then(|| match cfg.encoder {
            EncoderKind::Transformer => {
                let std = (cfg.hidden as f64).powf(-0.5);
                embedding(src_vocab, cfg.hidden, std, Some(s2s_data::PAD), device)
            }
            _ => EmbeddingConfig::new(src_vocab, cfg.emb_dim)
                .with_initializer(Initializer::Uniform {
                    min: -0.1,
                    max: 0.1,
                })
                .init(device),
        });
        let (positions, encoder) = match cfg.encoder {
            EncoderKind::Transformer => {
                let t = cfg.transformer();
                (
                    Some(PositionEncoding::new(
                        t.positions,
                        cfg.hidden,
                        cfg.max_positions,
                        device,
                    )),
                    LabelEncoder::Transformer(TransformerEncoder::new(&t, device)),
                )
            }
            EncoderKind::Cnn => (
                None,
                LabelEncoder::Cnn(CnnEncoder::new(
                    &cfg.widths,
                    cfg.input_size(),
                    cfg.hidden,
                    device,
                )),
            ),
            kind => {
                let cell = if kind == EncoderKind::Lstm {
                    CellKind::Lstm
                } else {
                    CellKind::Gru
                };
                (
                    None,
                    LabelEncoder::Rnn(RnnEncoder::new(
                        cell,
                        cfg.input_size(),
                        cfg.hidden,
                        cfg.layers,
                        cfg.bidirectional,
                        cfg.dropout,
                        device,
                    )),
                )
            }
        };
        let attention = cfg.head == Head::Attention;
        Self {
            emb,
            speech,
            chars: cfg.char_model().map(|c| CharEncoder::new(c, device)),
            positions,
            encoder,
            pool_hidden: attention.then(|| xavier_linear(out, out, true, device)),
            pool_score: attention.then(|| xavier_linear(out, 1, false, device)),
            output: xavier_linear(out, labels, true, device),
            dropout: DropoutConfig::new(cfg.dropout).init(),
            cfg: cfg.clone(),
        }
    }

    /// What the output layer reads: `[batch, src_len, d]` per token, or `[batch, 1, d]` pooled.
    pub fn features(&self, src: &PaddedSource) -> Tensor<3> {
        let (x, pad, scale) = match (&self.speech, &src.frames) {
            (Some(front), Some(frames)) => {
                let (x, pad) = front.forward(frames.clone(), &src.pad);
                (x, pad, 1.0)
            }
            (None, None) => {
                let emb = self.emb.as_ref().expect("a text labeller has embeddings");
                let scale = (self.cfg.hidden as f64).sqrt();
                let x = emb.forward(src.ids.clone());
                let x = match (&self.chars, &src.chars) {
                    (Some(chars), Some(spelled)) => {
                        Tensor::cat(vec![x, chars.forward(spelled.clone())], 2)
                    }
                    (Some(_), None) => panic!("a character-aware labeller reads spellings"),
                    (None, _) => x,
                };
                (x, src.pad.clone(), scale)
            }
            (Some(_), None) => panic!("an audio classifier reads feature frames, not ids"),
            (None, Some(_)) => panic!("a text labeller reads ids, not feature frames"),
        };
        let pad = &pad;
        let mask = pad.clone().bool_not().float(); // 1 = position
        let (states, last) = match &self.encoder {
            LabelEncoder::Rnn(rnn) => {
                let (states, finals) = rnn.forward(self.dropout.forward(x), &mask, false);
                let mut last = vec![finals.forward.last().expect("a layer").h.clone()];
                if let Some(b) = finals.backward.last() {
                    last.push(b.h.clone());
                }
                (states, Some(Tensor::cat(last, 1)))
            }
            LabelEncoder::Transformer(enc) => {
                let [_, len, _] = x.dims();
                let device = x.device();
                let pos = self
                    .positions
                    .as_ref()
                    .expect("a Transformer has positions");
                // Embeddings are scaled (Vaswani et al.); the speech front end's outputs are
                // not, as in the speech Transformer.
                let x = x.mul_scalar(scale) + pos.forward(0, len, &device);
                (enc.forward(self.dropout.forward(x), pad), None)
            }
            // Kim (2014) drops out the pooled features only.
            LabelEncoder::Cnn(cnn) => (cnn.forward(x), None),
        };
        let [b, len, d] = states.dims();
        let mask3 = mask.clone().reshape([b, len, 1]);
        let pooled = match self.cfg.head {
            Head::Tokens => return self.dropout.forward(states),
            Head::Mean => (states * mask3.clone()).sum_dim(1) / mask3.sum_dim(1).clamp_min(1.0),
            Head::Max => (states + (mask3 - 1.0) * 1e9).max_dim(1),
            Head::Last => match last {
                Some(last) => last.reshape([b, 1, d]),
                None => {
                    // The `<eos>` output: the last real position of each row (the first of a
                    // row of none).
                    let ends = (mask.sum_dim(1).int() - 1).clamp_min(0); // [b, 1]
                    let idx = ends.reshape([b, 1, 1]).expand([b, 1, d]);
                    states.gather(1, idx)
                }
            },
            Head::Attention => {
                let w = self.pool_hidden.as_ref().expect("an attention head");
                let v = self.pool_score.as_ref().expect("an attention head");
                let scores = v.forward(w.forward(states.clone()).tanh()) + (mask3 - 1.0) * 1e9;
                let weights = softmax(scores, 1); // [b, len, 1]
                (states * weights).sum_dim(1)
            }
        };
        self.dropout.forward(pooled)
    }

    /// The label projection.
    pub fn output_layer(&self) -> OutputLayer {
        OutputLayer::of_linear(&self.output)
    }

    /// Logits `[batch, positions, labels]` ([`Labeller::features`] projected).
    pub fn logits(&self, src: &PaddedSource) -> Tensor<3> {
        self.output_layer().logits(self.features(src))
    }

    /// Whether it reads audio (feature frames) rather than token ids.
    pub fn reads_audio(&self) -> bool {
        self.speech.is_some()
    }

    /// Whether it reads each token's spelling ([`crate::decoder::TextSource`]s with spellings).
    pub fn reads_characters(&self) -> bool {
        self.chars.is_some()
    }

    /// The probability of every label at every position `[batch, positions, labels]`, with
    /// `reserved` ids (the label vocabulary's specials) at probability 0.
    pub fn probabilities(&self, src: &PaddedSource, reserved: &[u32]) -> Tensor<3> {
        let logits = self.logits(src);
        let [_, _, labels] = logits.dims();
        let mut bias = vec![0.0f32; labels];
        for &r in reserved {
            if let Some(x) = bias.get_mut(r as usize) {
                *x = -1e9;
            }
        }
        let bias: Tensor<1> = Tensor::from_data(
            burn::tensor::TensorData::new(bias, [labels]),
            &logits.device(),
        );
        softmax(logits + bias.reshape([1, 1, labels]), 2)
    }

    /// The most likely label of every token (tagging; each row's `<eos>` is left out) or of every
    /// row (classification), with its probability. `reserved` ids are never chosen. Rows are
    /// `src_lens` long, `<eos>` included (a tagger's).
    pub fn predict(
        &self,
        src: &PaddedSource,
        src_lens: &[usize],
        reserved: &[u32],
    ) -> Vec<Vec<(u32, f32)>> {
        most_likely(
            self.probabilities(src, reserved),
            src_lens,
            self.cfg.head.per_token(),
        )
    }
}

/// The most likely label at each position of `probs` `[batch, positions, labels]` with its
/// probability: the first `src_lens[r] - 1` positions of row `r` when `per_token`, else the one.
fn most_likely(probs: Tensor<3>, src_lens: &[usize], per_token: bool) -> Vec<Vec<(u32, f32)>> {
    let [b, n, _] = probs.dims();
    let (best, arg) = probs.max_dim_with_indices(2);
    let best: Vec<f32> = best
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .expect("f32");
    let arg: Vec<i64> = arg
        .into_data()
        .convert::<i64>()
        .try_into_vec::<i64>()
        .expect("i64");
    (0..b)
        .map(|r| {
            let keep = if per_token {
                src_lens[r].saturating_sub(1)
            } else {
                1
            };
            (0..keep)
                .map(|p| (arg[r * n + p] as u32, best[r * n + p]))
                .collect()
        })
        .collect()
}

/// Labels `sources` (token ids without `<eos>`, or an audio classifier's frames) in batches of
/// up to `batch_size` sources of similar length: for each, its tokens' labels (tagging) or its one
/// label (classification), with their probabilities, in input order. Specials of the label
/// vocabulary are never chosen.
pub fn label_all<S: ModelSource>(
    model: &Labeller,
    device: &Device,
    sources: &[S],
    specials: s2s_data::Specials,
    batch_size: usize,
) -> Vec<Vec<(u32, f32)>> {
    label_ensemble(&[model], device, sources, specials, batch_size)
}

/// [`label_all`] for an ensemble: each label's probability is the mean of the members'
/// (`models`, which share the label vocabulary and the shape of their head).
pub fn label_ensemble<S: ModelSource>(
    models: &[&Labeller],
    device: &Device,
    sources: &[S],
    specials: s2s_data::Specials,
    batch_size: usize,
) -> Vec<Vec<(u32, f32)>> {
    let Some(first) = models.first() else {
        return vec![Vec::new(); sources.len()];
    };
    let per_token = first.cfg.head.per_token();
    let tokens = crate::decoder::special_tokens(specials);
    let SpecialTokens { pad, unk, bos, eos } = tokens;
    let reserved = [pad, unk, bos, eos];
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(Source::len(&sources[i])));
    let mut out = vec![Vec::new(); sources.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<S> = chunk.iter().map(|&i| sources[i].clone()).collect();
        let src = S::pad_batch(&rows, &tokens, device);
        // With `<eos>`, as the tagger's rows have it.
        let lens: Vec<usize> = rows.iter().map(|s| s.token_ids().len() + 1).collect();
        let sum = models
            .iter()
            .map(|m| m.probabilities(&src, &reserved))
            .reduce(|a, b| a + b)
            .expect("at least one member");
        let probs = match models.len() {
            1 => sum,
            n => sum / n as f32,
        };
        for (&i, labels) in chunk.iter().zip(most_likely(probs, &lens, per_token)) {
            out[i] = labels;
        }
    }
    out
}
