//! [`TransformerSeq2Seq`]: embeddings, the encoder and decoder stacks and the output projection,
//! with a parallel teacher-forced pass for training and an incremental, KV-cached step for search.

use burn::module::{Module, Param};
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Bool, Device, Int, Tensor};

use super::TransformerConfig;
use super::attention::{CachedKeyValue, PrefixCache};
use super::decoder::{EncoderSide, TransformerDecoder};
use super::encoder::TransformerEncoder;
use super::positions::PositionEncoding;
use crate::copy::CopyGate;
use crate::engine::{self, RowMap, int8::Int8Matrix};
use crate::init::{embedding, xavier_linear};
use crate::layers::{Embedding, Linear};
use crate::speech::ConvSubsampling;
use crate::{OutputLayer, PaddedSource};

/// Everything incremental decoding keeps between steps, for all live rows.
/// [`TransformerState::select_rows`] follows beam search's survivors.
#[derive(Clone, Debug)]
pub struct TransformerState {
    /// Per decoder layer: encoder-decoder keys and values, projected once per sentence.
    pub cross: Vec<CachedKeyValue>,
    /// `[sentences, src_len]`, true at source padding.
    pub src_pad: Tensor<2, Bool>,
    /// Row `i` decodes sentence `cross_rows.get(i)` of `cross` and `src_pad`. Beams share their
    /// sentence's encoder side instead of each holding a copy.
    pub cross_rows: RowMap,
    /// Per decoder layer: self-attention keys and values of the prefix decoded so far; `None`
    /// before the first step.
    pub past: Option<Vec<PrefixCache>>,
    /// Positions decoded so far (the position of the next input token).
    pub steps: usize,
    /// The output projection as [`OutputLayer::for_inference`], made on the first incremental
    /// step and kept for the rest of the search.
    pub output: Option<OutputLayer>,
}

impl TransformerState {
    /// Row `i` becomes row `rows[i]`. Nothing is copied: the rows' sentences are looked up
    /// through `cross_rows`, and the prefix caches reorder lazily ([`PrefixCache`]).
    pub fn select_rows(&self, rows: &[usize]) -> TransformerState {
        TransformerState {
            cross: self.cross.clone(),
            src_pad: self.src_pad.clone(),
            cross_rows: self.cross_rows.compose(rows),
            past: self
                .past
                .as_ref()
                .map(|p| p.iter().map(|kv| kv.select_rows(rows)).collect()),
            steps: self.steps,
            output: self.output.clone(),
        }
    }
}

fn push_attention<'a>(
    out: &mut Vec<(String, Quantizable<'a>)>,
    at: String,
    a: &'a mut super::attention::MultiHeadAttention,
) {
    for (name, l) in [
        ("query", &mut a.query),
        ("key", &mut a.key),
        ("value", &mut a.value),
        ("output", &mut a.output),
    ] {
        out.push((format!("{at}.{name}.weight"), Quantizable::Linear(l)));
    }
}

/// A layer whose weight int8 inference quantises ([`TransformerSeq2Seq::quantizable_mut`]).
pub enum Quantizable<'a> {
    Linear(&'a mut Linear),
    Embedding(&'a mut Embedding),
}

impl Quantizable<'_> {
    /// The int8 weight, once quantised.
    pub fn int8(&self) -> Option<&Int8Matrix> {
        match self {
            Quantizable::Linear(l) => l.int8.as_deref(),
            Quantizable::Embedding(e) => e.int8.as_deref(),
        }
    }

    /// The int8 weight's shape, `[outputs, inputs]` (a linear layer's weight transposed), read
    /// without drawing the f32 weight.
    pub fn int8_shape(&self) -> [usize; 2] {
        match self {
            Quantizable::Linear(l) => {
                let [d_in, d_out] = l.weight.lazy_shape().dims();
                [d_out, d_in]
            }
            Quantizable::Embedding(e) => e.weight.lazy_shape().dims(),
        }
    }

    /// Gives the layer its int8 weight (of [`Quantizable::int8_shape`]).
    pub fn set_int8(&mut self, w: Int8Matrix) {
        let w = Some(std::sync::Arc::new(w));
        match self {
            Quantizable::Linear(l) => l.int8 = w,
            Quantizable::Embedding(e) => e.int8 = w,
        }
    }
}

#[derive(Module, Debug)]
pub struct TransformerSeq2Seq {
    /// Source token embeddings; `None` when `share_embeddings` makes the encoder read `tgt_emb`,
    /// and in a speech model.
    pub src_emb: Option<Embedding>,
    /// A speech model's front end, in place of source embeddings ([`crate::speech`]).
    pub speech: Option<ConvSubsampling>,
    /// A speech model's joint-CTC projection of the encoder output to the vocabulary
    /// (`[model.speech] ctc_weight`), used by training only.
    pub ctc: Option<Linear>,
    pub tgt_emb: Embedding,
    pub src_pos: PositionEncoding,
    pub tgt_pos: PositionEncoding,
    pub encoder: TransformerEncoder,
    pub decoder: TransformerDecoder,
    /// Output projection; `None` when `tie_output` reuses `tgt_emb` (transposed).
    pub output: Option<Linear>,
    /// With `logits_bias`: a bias over the vocabulary added to every output's logits.
    pub logits_bias: Option<Param<Tensor<1>>>,
    /// Dropout on the summed token and position embeddings.
    pub dropout: Dropout,
    /// With `copy`: the gate between generating and copying.
    pub copy: Option<CopyGate>,
    #[module(skip)]
    pub cfg: TransformerConfig,
}

impl TransformerSeq2Seq {
    /// Builds the model; the config must be valid ([`TransformerConfig::validate`]) and, with
    /// `share_embeddings`, the vocabularies equal ([`TransformerConfig::check_vocab`]). A speech
    /// model's `src_vocab` is the number of feature bins of its frames.
    pub fn new(
        cfg: &TransformerConfig,
        src_vocab: usize,
        tgt_vocab: usize,
        device: &Device,
    ) -> Self {
        let d = cfg.d_model;
        // fairseq: N(0, d^-1/2), so that after the sqrt(d) scaling token embeddings have unit
        // variance, and a tied output projection starts with logits of moderate size.
        let std = (d as f64).powf(-0.5);
        let pad = Some(s2s_data::PAD);
        Self {
            src_emb: (!cfg.share_embeddings && cfg.speech.is_none())
                .then(|| embedding(src_vocab, d, std, pad, device).into()),
            speech: cfg
                .speech
                .as_ref()
                .map(|s| ConvSubsampling::new(s, src_vocab, d, device)),
            ctc: cfg
                .speech
                .as_ref()
                .filter(|s| s.ctc_weight > 0.0)
                .map(|_| xavier_linear(d, tgt_vocab, true, device).into()),
            tgt_emb: embedding(tgt_vocab, d, std, pad, device).into(),
            src_pos: PositionEncoding::new(cfg.positions, d, cfg.max_positions, device),
            tgt_pos: PositionEncoding::new(cfg.positions, d, cfg.max_positions, device),
            encoder: TransformerEncoder::new(cfg, device),
            decoder: TransformerDecoder::new(cfg, device),
            output: (!cfg.tie_output).then(|| xavier_linear(d, tgt_vocab, false, device).into()),
            logits_bias: cfg
                .logits_bias
                .then(|| Param::from_tensor(Tensor::zeros([tgt_vocab], device))),
            dropout: DropoutConfig::new(cfg.dropout).init(),
            copy: cfg.copy.then(|| CopyGate::new(d, tgt_vocab, device)),
            cfg: cfg.clone(),
        }
    }

    /// `table(ids) * sqrt(d) + PE(start..)` (unscaled without `scale_embeddings`), then dropout:
    /// `[batch, len, d]`. With `zero_first`, position 0's token embedding is zero.
    fn embed(
        &self,
        table: &Embedding,
        pos: &PositionEncoding,
        ids: Tensor<2, Int>,
        start: usize,
        zero_first: bool,
    ) -> Tensor<3> {
        let [batch, _] = ids.dims();
        let device = ids.device();
        let ids = match &self.copy {
            Some(copy) => copy.known(ids),
            None => ids,
        };
        let mut x = table.forward(ids);
        if zero_first && start == 0 {
            let d = self.cfg.d_model;
            x = x.slice_assign(
                [0..batch, 0..1, 0..d],
                Tensor::zeros([batch, 1, d], &device),
            );
        }
        self.place(x, pos, start)
    }

    /// Embeddings `x: [batch, len, d]` as the layers read them: `x * sqrt(d)` (unscaled without
    /// `scale_embeddings`) `+ PE(start..)`, then dropout.
    fn place(&self, x: Tensor<3>, pos: &PositionEncoding, start: usize) -> Tensor<3> {
        let [_, len, _] = x.dims();
        let device = x.device();
        let x = if self.cfg.scale_embeddings {
            x.mul_scalar((self.cfg.d_model as f64).sqrt())
        } else {
            x
        };
        self.dropout.forward(x + pos.forward(start, len, &device))
    }

    /// Encoder output `[batch, src_len, d]` for `src` with `pad` (true at padding).
    pub fn encode(&self, src: Tensor<2, Int>, pad: &Tensor<2, Bool>) -> Tensor<3> {
        let table = self.src_emb.as_ref().unwrap_or(&self.tgt_emb);
        let x = self.embed(table, &self.src_pos, src, 0, false);
        self.encoder.forward(x, pad)
    }

    /// Encoder output `[batch, 1, d]` for vector conditions `vectors: [batch, dim]`
    /// ([`PaddedSource::vectors`]): each is one source position embedded as `v E`, the source
    /// table's rows weighted by its numbers (a one-hot vector reads as that row's token), then
    /// scaled and placed as a token is.
    pub fn encode_vectors(&self, vectors: Tensor<2>, pad: &Tensor<2, Bool>) -> Tensor<3> {
        let table = self
            .src_emb
            .as_ref()
            .expect("vectors need the model's own source table (share_embeddings = false)");
        let x = vectors.matmul(table.weight.val()).unsqueeze_dim::<3>(1);
        self.encoder.forward(self.place(x, &self.src_pos, 0), pad)
    }

    /// A speech model's encoder output `[batch, positions, d]` for `frames` with `pad` (true at
    /// padded frames), and the positions' padding mask.
    pub fn encode_frames(
        &self,
        frames: Tensor<3>,
        pad: &Tensor<2, Bool>,
    ) -> (Tensor<3>, Tensor<2, Bool>) {
        let front = self
            .speech
            .as_ref()
            .expect("frames need a speech model ([model.speech])");
        let (x, pad) = front.forward(frames, pad);
        let [_, len, _] = x.dims();
        let x = x + self.src_pos.forward(0, len, &pad.device());
        (self.encoder.forward(self.dropout.forward(x), &pad), pad)
    }

    /// Encodes `src` (token ids, vectors, or a speech model's frames) and projects the encoder
    /// output for every decoder layer's cross-attention: the state before the first decoding step.
    pub fn start(&self, src: &PaddedSource) -> TransformerState {
        self.start_keeping_memory(src).0
    }

    /// [`TransformerSeq2Seq::start`], also returning the encoder output.
    fn start_keeping_memory(&self, src: &PaddedSource) -> (TransformerState, Tensor<3>) {
        let (memory, pad) = match (&src.frames, &src.vectors) {
            (Some(frames), _) => self.encode_frames(frames.clone(), &src.pad),
            (None, Some(v)) => (self.encode_vectors(v.clone(), &src.pad), src.pad.clone()),
            (None, None) => (self.encode(src.ids.clone(), &src.pad), src.pad.clone()),
        };
        let state = TransformerState {
            cross: self
                .decoder
                .layers
                .iter()
                .map(|l| {
                    CachedKeyValue::new(
                        l.cross_attn.keys_values(memory.clone()),
                        self.decoder.kv_cache,
                    )
                })
                .collect(),
            src_pad: pad,
            cross_rows: RowMap::identity(),
            past: None,
            steps: 0,
            output: None,
        };
        (state, memory)
    }

    /// Which decoder layer's cross-attention is reported.
    fn alignment_layer(&self) -> usize {
        self.cfg
            .alignment_layer
            .unwrap_or(self.cfg.dec_layers - 1)
            .min(self.cfg.dec_layers - 1)
    }

    /// Runs the decoder over `tokens: [batch, len]` placed at positions `state.steps..`, after the
    /// cached prefix. Returns the features `[batch, len, d]` and the reported attention
    /// `[batch, len, src_len]` (mean over heads), and advances `state`.
    fn decode(
        &self,
        state: &mut TransformerState,
        tokens: Tensor<2, Int>,
    ) -> (Tensor<3>, Tensor<3>) {
        let [_, len] = tokens.dims();
        let device = tokens.device();
        let mut x = self.embed(
            &self.tgt_emb,
            &self.tgt_pos,
            tokens,
            state.steps,
            self.cfg.zero_start,
        );
        // The parallel pass (no cache) masks the future; a single cached step attends only over
        // the prefix, which is all in the past, so it needs no mask at all.
        debug_assert!(
            state.past.is_none() || len == 1,
            "cached decoding is one step at a time"
        );
        let causal = (len > 1).then(|| Tensor::<2, Bool>::tril_mask([len, len], 0, &device));
        let mut past = state.past.take().map(|p| p.into_iter());
        let mut new_past = Vec::with_capacity(self.decoder.layers.len());
        let align = self.alignment_layer();
        let mut attn = None;
        for (l, layer) in self.decoder.layers.iter().enumerate() {
            let prev = past.as_mut().and_then(|p| p.next());
            let cross = EncoderSide {
                kv: &state.cross[l],
                rows: &state.cross_rows,
                pad: &state.src_pad,
            };
            let out = layer.forward(x, prev, self.decoder.kv_cache, causal.as_ref(), &cross);
            x = out.x;
            new_past.push(out.self_kv);
            if l == align {
                let [b, _, q, s] = out.cross_weights.dims();
                attn = Some(out.cross_weights.mean_dim(1).reshape([b, q, s]));
            }
        }
        state.past = Some(new_past);
        state.steps += len;
        (
            self.decoder.final_norm(x),
            attn.expect("at least one decoder layer"),
        )
    }

    /// The vocabulary projection: the output layer, or the transposed target embeddings if tied,
    /// plus the logits bias if any. Training's view of it (plain tensors); an int8 model has none
    /// (see [`TransformerSeq2Seq::logits`]).
    pub fn output_layer(&self) -> OutputLayer {
        assert!(
            !self.is_int8(),
            "an int8 model has no f32 output layer: train or fine-tune the fp32 model it was quantised from"
        );
        let bias = self.logits_bias.as_ref().map(|b| b.val());
        match &self.output {
            Some(out) => OutputLayer {
                weight: out.weight.val(),
                bias,
            },
            None => OutputLayer {
                weight: self.tgt_emb.weight.val().transpose(),
                bias,
            },
        }
    }

    /// The int8 vocabulary projection `[vocab, d]` of an int8 model: the output layer's, or the
    /// target embeddings' when tied.
    fn int8_output(&self) -> Option<&Int8Matrix> {
        match &self.output {
            Some(out) => out.int8.as_deref(),
            None => self.tgt_emb.int8.as_deref(),
        }
    }

    /// Whether the weights are int8 ([`TransformerSeq2Seq::quantize`]).
    pub fn is_int8(&self) -> bool {
        self.int8_output().is_some()
    }

    /// Features `[.., d]` to vocabulary logits.
    pub fn logits<const D: usize>(&self, features: Tensor<D>) -> Tensor<D> {
        match self.int8_output() {
            Some(w) => {
                let bias = self.logits_bias.as_ref().map(|b| b.val());
                engine::int8_linear(features, w, bias.as_ref())
            }
            None => self.output_layer().logits(features),
        }
    }

    /// Every layer whose weight int8 inference quantises, by its weight's name in the weights
    /// file: the token embeddings and every linear projection. Positions, biases, layer norms
    /// and the logits bias stay f32.
    pub fn quantizable_mut(&mut self) -> Vec<(String, Quantizable<'_>)> {
        let mut out = Vec::new();
        if let Some(e) = self.src_emb.as_mut() {
            out.push(("src_emb.weight".to_string(), Quantizable::Embedding(e)));
        }
        out.push((
            "tgt_emb.weight".to_string(),
            Quantizable::Embedding(&mut self.tgt_emb),
        ));
        for (i, l) in self.encoder.layers.iter_mut().enumerate() {
            push_attention(
                &mut out,
                format!("encoder.layers.{i}.self_attn"),
                &mut l.self_attn,
            );
            out.push((
                format!("encoder.layers.{i}.ffn.inner.weight"),
                Quantizable::Linear(&mut l.ffn.inner),
            ));
            out.push((
                format!("encoder.layers.{i}.ffn.outer.weight"),
                Quantizable::Linear(&mut l.ffn.outer),
            ));
        }
        for (i, l) in self.decoder.layers.iter_mut().enumerate() {
            push_attention(
                &mut out,
                format!("decoder.layers.{i}.self_attn"),
                &mut l.self_attn,
            );
            push_attention(
                &mut out,
                format!("decoder.layers.{i}.cross_attn"),
                &mut l.cross_attn,
            );
            out.push((
                format!("decoder.layers.{i}.ffn.inner.weight"),
                Quantizable::Linear(&mut l.ffn.inner),
            ));
            out.push((
                format!("decoder.layers.{i}.ffn.outer.weight"),
                Quantizable::Linear(&mut l.ffn.outer),
            ));
        }
        if let Some(o) = self.output.as_mut() {
            out.push(("output.weight".to_string(), Quantizable::Linear(o)));
        }
        out
    }

    /// Quantises every layer of [`TransformerSeq2Seq::quantizable_mut`] to int8.
    pub fn quantize(&mut self) {
        for (_, layer) in self.quantizable_mut() {
            match layer {
                Quantizable::Linear(l) => l.quantize(),
                Quantizable::Embedding(e) => e.quantize(),
            }
        }
    }

    /// Teacher-forced pass over the whole target at once (causal mask): the decoder's features
    /// `[batch, tgt_len, d]` (before the output projection) and the reported cross-attention
    /// `[batch, tgt_len, src_len]`.
    pub fn teacher_hidden(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
    ) -> (Tensor<3>, Tensor<3>) {
        let mut state = self.start(src);
        self.decode(&mut state, tgt_in)
    }

    /// [`TransformerSeq2Seq::teacher_hidden`]'s features, and for a speech model with joint CTC
    /// the CTC log-probabilities of its encoder output, `[positions, batch, vocab]`.
    pub fn teacher_hidden_ctc(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
    ) -> (Tensor<3>, Option<Tensor<3>>) {
        let (mut state, memory) = self.start_keeping_memory(src);
        let ctc = self.ctc_log_probs(memory).map(|lp| lp.swap_dims(0, 1));
        (self.decode(&mut state, tgt_in).0, ctc)
    }

    /// The CTC head's log-probabilities `[batch, positions, vocab]` over the encoder output
    /// `memory`; none without joint CTC.
    fn ctc_log_probs(&self, memory: Tensor<3>) -> Option<Tensor<3>> {
        let proj = self.ctc.as_ref()?;
        Some(burn::tensor::activation::log_softmax(
            proj.forward(memory),
            2,
        ))
    }

    /// For a speech model with joint CTC and a batch of frames: the CTC head's log-probabilities
    /// `[batch, positions, vocab]` and the positions' padding mask.
    pub fn ctc_outputs(&self, src: &PaddedSource) -> Option<(Tensor<3>, Tensor<2, Bool>)> {
        let frames = src.frames.as_ref()?;
        self.ctc.as_ref()?;
        let (memory, pad) = self.encode_frames(frames.clone(), &src.pad);
        Some((self.ctc_log_probs(memory)?, pad))
    }

    /// One incremental step: `tokens: [rows]` are the previous tokens. Returns the logits
    /// `[rows, vocab]` and the reported attention `[rows, src_len]`.
    pub fn step(
        &self,
        state: &mut TransformerState,
        tokens: Tensor<1, Int>,
    ) -> (Tensor<2>, Tensor<2>) {
        let (features, attn) = self.step_features(state, tokens);
        (self.step_logits(state, features), attn)
    }

    /// One incremental step's features `[rows, d]` (before the output projection) and reported
    /// attention `[rows, src_len]`.
    pub fn step_features(
        &self,
        state: &mut TransformerState,
        tokens: Tensor<1, Int>,
    ) -> (Tensor<2>, Tensor<2>) {
        let [rows] = tokens.dims();
        let (features, attn) = self.decode(state, tokens.reshape([rows, 1]));
        let [_, _, d] = features.dims();
        let [_, _, s] = attn.dims();
        (features.reshape([rows, d]), attn.reshape([rows, s]))
    }

    /// A step's features `[rows, d]` to logits, through the output layer the state keeps for
    /// the search (or the int8 one).
    pub fn step_logits(&self, state: &mut TransformerState, features: Tensor<2>) -> Tensor<2> {
        match self.int8_output() {
            Some(_) => self.logits(features),
            None => state
                .output
                .get_or_insert_with(|| self.output_layer().for_inference())
                .logits(features),
        }
    }
}
