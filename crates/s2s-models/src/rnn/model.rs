//! [`RnnSeq2Seq`]: one recurrent encoder-decoder whose options cover the textbook variants.
//!
//! - `attention = none`: the encoder's final state is the fixed context C, given to the decoder as
//!   its initial state (`init`), also as an input at every step (`every-step`, Cho), or only at
//!   every step with a learned initial state (`every-step-no-init`).
//! - `attention = bahdanau`: additive attention whose query is the *previous* decoder state;
//!   the context enters the recurrence and the output layer.
//! - `attention = luong`: dot/general/concat attention whose query is the *current* state, the
//!   attentional state `tanh(W_c [c; s])`, and optional input feeding.

use super::cell::{Cell, CellKind, CellState, input_projection};
use super::encoder::{EncoderFinal, RnnEncoder};
use crate::attention::{Attention, Memory, Score};
use crate::copy::CopyGate;
use crate::{OutputLayer, PaddedSource};
use burn::module::{Module, Param};
use burn::nn::{
    Dropout, DropoutConfig, Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig,
};
use burn::tensor::{Bool, Device, Int, Tensor};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RnnAttention {
    None,
    Bahdanau,
    Luong,
}

/// How the fixed context C reaches a decoder without attention.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContextMode {
    Init,
    EveryStep,
    EveryStepNoInit,
}

/// `q(h_1..h_m)`: how the encoder's states become the context and the decoder's initial state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bridge {
    /// The final states themselves, layer by layer (needs matching sizes, unidirectional).
    Last,
    /// `tanh(W h_m)` of the final state (both directions when bidirectional).
    Linear,
    /// `tanh(W mean_j h_j)` over the (unpadded) encoder outputs.
    Mean,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RnnConfig {
    pub cell: CellKind,
    pub emb_dim: usize,
    pub hidden: usize,
    pub enc_layers: usize,
    pub dec_layers: usize,
    pub bidirectional: bool,
    pub dropout: f64,
    pub attention: RnnAttention,
    /// Luong's score; Bahdanau always uses the additive score.
    pub score: Score,
    pub attn_dim: usize,
    pub input_feed: bool,
    pub context_mode: ContextMode,
    pub bridge: Bridge,
    /// Width of the `tanh` layer between features and the vocabulary; 0 = none.
    pub readout_dim: usize,
    /// Sutskever 2014's trick for a unidirectional encoder: read each source sentence from its
    /// last token to its first, so the first target words start close to the source words they
    /// translate. Outputs stay at their token's position, so attention is unaffected.
    #[serde(default)]
    pub reverse_source: bool,
    /// Copy source tokens through the attention ([`crate::copy`]; needs attention and one joint
    /// vocabulary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub copy: bool,
}

impl RnnConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.enc_layers == 0 || self.dec_layers == 0 {
            return Err("enc_layers and dec_layers must be at least 1".into());
        }
        if self.bridge == Bridge::Last && (self.bidirectional || self.enc_layers != self.dec_layers)
        {
            return Err("bridge = \"last\" needs a unidirectional encoder with as many layers as the decoder; use \"linear\" or \"mean\"".into());
        }
        if self.copy && self.attention == RnnAttention::None {
            return Err("copy = true copies through the attention: choose attention = \"bahdanau\" or \"luong\"".into());
        }
        if self.reverse_source && self.bidirectional {
            return Err("reverse_source = true needs a unidirectional encoder: a bidirectional one already reads the source both ways".into());
        }
        if self.attention == RnnAttention::Luong && self.score == Score::Dot && self.bidirectional {
            return Err("dot attention needs keys the size of the decoder state: use score = \"general\" with a bidirectional encoder".into());
        }
        Ok(())
    }
}

/// Encoder results a decoder step needs; rows can be reordered for beam search.
#[derive(Clone, Debug)]
pub struct EncCtx {
    pub memory: Option<Memory>,
    /// The fixed context C, when the decoder reads it at every step.
    pub context: Option<Tensor<2>>,
    /// What the attention values hold ([`RnnSeq2Seq::project_memory`]).
    pub projected: Projected,
}

/// The attention values' layout: the encoder states, or what decoding needs of them.
// One value per batch of sentences, holding a tensor handle: variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Projected {
    /// The encoder states `h_j`.
    No,
    /// `[h_j, W_x h_j]`: each state followed by its layer-0 input projection, so that attending
    /// yields the context and its projection.
    Input,
    /// `[W_x h_j, W_rc h_j]`: the input projection and the readout's context part. The context
    /// itself then enters nothing else, so it is not kept; `readout_rest` holds the readout's
    /// weight rows for the rest of its input, `[top, emb]`, stacked.
    InputAndReadout { readout_rest: Tensor<2> },
}

/// What a decoder step hands the readout (or the output layer, without one).
#[derive(Clone, Debug)]
pub struct StepFeatures {
    /// `[rows, features]`: the whole input, `[top, c, emb]` with Bahdanau attention; with
    /// [`Projected::InputAndReadout`], the input less the context, `[top, emb]`.
    pub input: Tensor<2>,
    /// With [`Projected::InputAndReadout`]: the context's share of the readout, `W_rc c`.
    pub readout_context: Option<Tensor<2>>,
}

/// Decoder state between steps.
#[derive(Clone, Debug)]
pub struct DecState {
    pub layers: Vec<CellState>,
    /// Luong's attentional state from the previous step (input feeding).
    pub feed: Option<Tensor<2>>,
}

impl EncCtx {
    /// Row `i` becomes row `rows[i]` (`idx`: the same on the device). The memory only records it.
    pub fn select_rows(&self, rows: &[usize], idx: &Tensor<1, Int>) -> EncCtx {
        EncCtx {
            memory: self.memory.as_ref().map(|m| m.select_rows(rows)),
            context: self.context.clone().map(|c| c.select(0, idx.clone())),
            projected: self.projected.clone(),
        }
    }
}

impl DecState {
    pub fn select_rows(self, idx: &Tensor<1, Int>) -> DecState {
        DecState {
            layers: self
                .layers
                .into_iter()
                .map(|l| l.select_rows(idx))
                .collect(),
            feed: self.feed.map(|f| f.select(0, idx.clone())),
        }
    }
}

#[derive(Module, Debug)]
pub struct RnnSeq2Seq {
    pub src_emb: Embedding,
    pub tgt_emb: Embedding,
    pub encoder: RnnEncoder,
    /// Maps encoder states to the decoder's initial state / context (Linear, Mean bridges, and
    /// Bahdanau's `s_0 = tanh(W h_1_backward)`).
    pub bridge: Option<Linear>,
    /// Learned initial decoder state (`every-step-no-init`).
    pub init_state: Option<Param<Tensor<1>>>,
    /// Layer-0 input projection of the target embedding (all steps in one matmul).
    pub dec_emb_proj: Linear,
    /// Layer-0 input projection of the extra input: context, attention context or input feed.
    pub dec_extra_proj: Option<Linear>,
    /// Input projections of decoder layers above the first.
    pub dec_upper_proj: Vec<Linear>,
    pub dec_cells: Vec<Cell>,
    pub attention: Option<Attention>,
    /// Luong's `W_c` for the attentional state.
    pub attn_combine: Option<Linear>,
    pub readout: Option<Linear>,
    pub output: Linear,
    pub dropout: Dropout,
    /// With `copy`: the gate between generating and copying.
    pub copy: Option<CopyGate>,
    #[module(skip)]
    pub cfg: RnnConfig,
}

impl RnnSeq2Seq {
    pub fn new(cfg: &RnnConfig, src_vocab: usize, tgt_vocab: usize, device: &Device) -> Self {
        let h = cfg.hidden;
        let enc_out = if cfg.bidirectional { 2 * h } else { h };
        let emb_init = Initializer::Uniform {
            min: -0.1,
            max: 0.1,
        };
        let linear = |i: usize, o: usize| LinearConfig::new(i, o).init(device);
        let bridge_in = match (cfg.attention, cfg.bridge) {
            (RnnAttention::Bahdanau, _) => Some(h), // from the first backward (or last forward) state
            (_, Bridge::Last) => None,
            (_, Bridge::Linear | Bridge::Mean) => Some(enc_out),
        };
        let extra_dim = match cfg.attention {
            RnnAttention::Bahdanau => Some(enc_out),
            RnnAttention::Luong => cfg.input_feed.then_some(h),
            RnnAttention::None => match cfg.context_mode {
                ContextMode::Init => None,
                _ => Some(h),
            },
        };
        let features = match cfg.attention {
            RnnAttention::Bahdanau => h + enc_out + cfg.emb_dim,
            RnnAttention::Luong => h,
            RnnAttention::None => match cfg.context_mode {
                ContextMode::Init => h,
                _ => 2 * h + cfg.emb_dim,
            },
        };
        let out_in = if cfg.readout_dim > 0 {
            cfg.readout_dim
        } else {
            features
        };
        Self {
            src_emb: EmbeddingConfig::new(src_vocab, cfg.emb_dim)
                .with_initializer(emb_init.clone())
                .init(device),
            tgt_emb: EmbeddingConfig::new(tgt_vocab, cfg.emb_dim)
                .with_initializer(emb_init)
                .init(device),
            encoder: RnnEncoder::new(
                cfg.cell,
                cfg.emb_dim,
                h,
                cfg.enc_layers,
                cfg.bidirectional,
                cfg.dropout,
                device,
            ),
            bridge: bridge_in.map(|i| linear(i, h)),
            init_state: (cfg.attention == RnnAttention::None
                && cfg.context_mode == ContextMode::EveryStepNoInit)
                .then(|| Initializer::Zeros.init([h], device)),
            dec_emb_proj: input_projection(cfg.cell, cfg.emb_dim, h, true, device),
            dec_extra_proj: extra_dim.map(|x| input_projection(cfg.cell, x, h, false, device)),
            dec_upper_proj: (1..cfg.dec_layers)
                .map(|_| input_projection(cfg.cell, h, h, true, device))
                .collect(),
            dec_cells: (0..cfg.dec_layers)
                .map(|_| Cell::new(cfg.cell, h, device))
                .collect(),
            attention: match cfg.attention {
                RnnAttention::None => None,
                RnnAttention::Bahdanau => Some(Attention::new(
                    Score::Additive,
                    h,
                    enc_out,
                    cfg.attn_dim,
                    device,
                )),
                RnnAttention::Luong => {
                    Some(Attention::new(cfg.score, h, enc_out, cfg.attn_dim, device))
                }
            },
            attn_combine: (cfg.attention == RnnAttention::Luong).then(|| {
                LinearConfig::new(enc_out + h, h)
                    .with_bias(false)
                    .init(device)
            }),
            readout: (cfg.readout_dim > 0).then(|| linear(features, cfg.readout_dim)),
            output: linear(out_in, tgt_vocab),
            dropout: DropoutConfig::new(cfg.dropout).init(),
            copy: cfg.copy.then(|| CopyGate::new(out_in, tgt_vocab, device)),
            cfg: cfg.clone(),
        }
    }

    /// Encodes `src: [batch, len]` with `pad: [batch, len]` (true at padding) and returns the
    /// decoder's context and initial state.
    pub fn encode(&self, src: Tensor<2, Int>, pad: Tensor<2, Bool>) -> (EncCtx, DecState) {
        let x = self.src_emb.forward(self.known(src));
        self.encode_embedded(x, pad)
    }

    /// [`RnnSeq2Seq::encode`] of a padded source: its ids, or a vector-conditioned batch's
    /// vectors, each read as one position embedded as `v E` (the source table's rows weighted
    /// by the vector's numbers, so a one-hot vector reads as that row's token).
    pub fn encode_source(&self, src: &PaddedSource) -> (EncCtx, DecState) {
        match &src.vectors {
            Some(v) => {
                let x = v.clone().matmul(self.src_emb.weight.val());
                self.encode_embedded(x.unsqueeze_dim::<3>(1), src.pad.clone())
            }
            None => self.encode(src.ids.clone(), src.pad.clone()),
        }
    }

    /// Encodes source embeddings `x: [batch, len, emb]` with `pad`.
    fn encode_embedded(&self, x: Tensor<3>, pad: Tensor<2, Bool>) -> (EncCtx, DecState) {
        let [b, _, _] = x.dims();
        let device = x.device();
        let mask = pad.clone().bool_not().float(); // 1 = token
        let x = self.dropout.forward(x);
        let (outputs, finals) = self.encoder.forward(x, &mask, self.cfg.reverse_source);
        let cfg = &self.cfg;
        let top = |f: &EncoderFinal| -> Tensor<2> {
            let fwd = f.forward.last().unwrap().h.clone();
            match f.backward.last() {
                Some(bwd) => Tensor::cat(vec![fwd, bwd.h.clone()], 1),
                None => fwd,
            }
        };
        let repeat = |s: Tensor<2>| -> Vec<CellState> {
            (0..cfg.dec_layers)
                .map(|_| CellState {
                    h: s.clone(),
                    c: (cfg.cell == CellKind::Lstm).then(|| s.zeros_like()),
                })
                .collect()
        };
        match cfg.attention {
            RnnAttention::None => {
                let (context, init) = match cfg.bridge {
                    Bridge::Last => (
                        finals.forward.last().unwrap().h.clone(),
                        finals.forward.clone(),
                    ),
                    Bridge::Linear => {
                        let c = self.bridge.as_ref().unwrap().forward(top(&finals)).tanh();
                        (c.clone(), repeat(c))
                    }
                    Bridge::Mean => {
                        let lens = mask.clone().sum_dim(1); // [b,1]
                        let summed: Tensor<2> = (outputs * mask.clone().unsqueeze_dim::<3>(2))
                            .sum_dim(1)
                            .squeeze_dim(1);
                        let c = self.bridge.as_ref().unwrap().forward(summed / lens).tanh();
                        (c.clone(), repeat(c))
                    }
                };
                let layers = match (&self.init_state, cfg.context_mode) {
                    (Some(p), _) => repeat(p.val().unsqueeze_dim::<2>(0).repeat_dim(0, b)),
                    _ => init,
                };
                let context = (cfg.context_mode != ContextMode::Init).then_some(context);
                (
                    EncCtx {
                        memory: None,
                        context,
                        projected: Projected::No,
                    },
                    DecState { layers, feed: None },
                )
            }
            RnnAttention::Bahdanau => {
                // Bahdanau: s_0 = tanh(W h_1_backward); the last forward state without a backward pass.
                let first = match finals.backward.last() {
                    Some(bwd) => bwd.h.clone(),
                    None => finals.forward.last().unwrap().h.clone(),
                };
                let s0 = self.bridge.as_ref().unwrap().forward(first).tanh();
                let memory = self.attention.as_ref().unwrap().prepare(outputs, pad);
                (
                    EncCtx {
                        memory: Some(memory),
                        context: None,
                        projected: Projected::No,
                    },
                    DecState {
                        layers: repeat(s0),
                        feed: None,
                    },
                )
            }
            RnnAttention::Luong => {
                let layers = match cfg.bridge {
                    Bridge::Last => finals.forward.clone(),
                    _ => repeat(self.bridge.as_ref().unwrap().forward(top(&finals)).tanh()),
                };
                let memory = self.attention.as_ref().unwrap().prepare(outputs, pad);
                let feed = cfg
                    .input_feed
                    .then(|| Tensor::zeros([b, cfg.hidden], &device));
                (
                    EncCtx {
                        memory: Some(memory),
                        context: None,
                        projected: Projected::No,
                    },
                    DecState { layers, feed },
                )
            }
        }
    }

    /// For decoding: Bahdanau's context enters the recurrence only through the layer-0 projection
    /// `W_x c = sum_j a_j (W_x h_j)`, and the readout only through its context part `W_rc c`
    /// likewise, so each encoder state's projections are computed once per sentence and the
    /// memory's values hold them; attending then weighs them in one pass. A step's `rows x enc_out
    /// x (3 hidden + readout)` products become weighted sums over the source, and beams share
    /// them. Without a readout the output layer reads the context itself, which then stays in the
    /// values ([`Projected::Input`]). Training keeps the per-step products (the results differ
    /// only by rounding).
    pub fn project_memory(&self, enc: EncCtx) -> EncCtx {
        let (Some(memory), Some(proj), RnnAttention::Bahdanau, Projected::No) = (
            &enc.memory,
            &self.dec_extra_proj,
            self.cfg.attention,
            &enc.projected,
        ) else {
            return enc;
        };
        let states = memory.values.clone();
        let input = proj.forward(states.clone());
        let (values, projected) = match &self.readout {
            Some(readout) => {
                // The readout's input is `[top, c, emb]`: its weight rows in that order.
                let (h, enc_out) = (self.cfg.hidden, states.dims()[2]);
                let w = readout.weight.val();
                let [rows, width] = w.dims();
                let context_rows = w.clone().slice([h..h + enc_out, 0..width]);
                let rest = Tensor::cat(
                    vec![
                        w.clone().slice([0..h, 0..width]),
                        w.slice([h + enc_out..rows, 0..width]),
                    ],
                    0,
                );
                let readout_context = crate::engine::linear(states, context_rows, None);
                (
                    Tensor::cat(vec![input, readout_context], 2),
                    Projected::InputAndReadout { readout_rest: rest },
                )
            }
            None => (Tensor::cat(vec![states, input], 2), Projected::Input),
        };
        EncCtx {
            memory: Some(Memory {
                values,
                ..memory.clone()
            }),
            context: enc.context,
            projected,
        }
    }

    /// One decoder step. `emb`: the previous token's embedding `[rows, emb]`; `emb_proj`: its
    /// layer-0 input projection. Returns the features for the readout ([`RnnSeq2Seq::readout`])
    /// and the attention.
    pub fn decode_step(
        &self,
        enc: &EncCtx,
        state: DecState,
        emb: Tensor<2>,
        emb_proj: Tensor<2>,
    ) -> (StepFeatures, DecState, Option<Tensor<2>>) {
        let cfg = &self.cfg;
        let DecState { layers, feed } = state;
        let mut attn = None;
        // Bahdanau's context, or the parts of it the projected memory yields.
        let mut bahdanau_ctx = None;
        let mut extra_proj = None;
        let mut readout_context = None;
        let extra = match cfg.attention {
            RnnAttention::None => enc.context.clone(),
            RnnAttention::Luong => feed,
            RnnAttention::Bahdanau => {
                let query = layers.last().unwrap().h.clone(); // s_{i-1}
                let (c, a) = self
                    .attention
                    .as_ref()
                    .unwrap()
                    .attend(query, enc.memory.as_ref().unwrap());
                attn = Some(a);
                let [rows, width] = c.dims();
                let gates = emb_proj.dims()[1];
                match enc.projected {
                    Projected::No => bahdanau_ctx = Some(c.clone()),
                    Projected::Input => {
                        extra_proj = Some(c.clone().slice([0..rows, width - gates..width]));
                        bahdanau_ctx = Some(c.slice([0..rows, 0..width - gates]));
                    }
                    Projected::InputAndReadout { .. } => {
                        extra_proj = Some(c.clone().slice([0..rows, 0..gates]));
                        readout_context = Some(c.slice([0..rows, gates..width]));
                    }
                }
                bahdanau_ctx.clone()
            }
        };
        let mut x_proj = emb_proj;
        match (extra_proj, &self.dec_extra_proj, extra) {
            (Some(projected), _, _) => x_proj = x_proj + projected,
            (None, Some(proj), Some(extra)) => x_proj = x_proj + proj.forward(extra),
            _ => {}
        }
        let mut new_layers = Vec::with_capacity(layers.len());
        for (l, prev) in layers.into_iter().enumerate() {
            if l > 0 {
                let below = self
                    .dropout
                    .forward(new_layers.last().map(|s: &CellState| s.h.clone()).unwrap());
                x_proj = self.dec_upper_proj[l - 1].forward(below);
            }
            new_layers.push(self.dec_cells[l].step(x_proj.clone(), prev));
        }
        let top = new_layers.last().unwrap().h.clone();
        let (input, feed) = match cfg.attention {
            RnnAttention::Bahdanau => match bahdanau_ctx {
                Some(c) => (Tensor::cat(vec![top, c, emb], 1), None),
                None => (Tensor::cat(vec![top, emb], 1), None),
            },
            RnnAttention::Luong => {
                let (c, a) = self
                    .attention
                    .as_ref()
                    .unwrap()
                    .attend(top.clone(), enc.memory.as_ref().unwrap());
                attn = Some(a);
                let h_tilde = self
                    .attn_combine
                    .as_ref()
                    .unwrap()
                    .forward(Tensor::cat(vec![c, top], 1))
                    .tanh();
                (h_tilde.clone(), cfg.input_feed.then_some(h_tilde))
            }
            RnnAttention::None => match &enc.context {
                Some(c) => (Tensor::cat(vec![top, c.clone(), emb], 1), None),
                None => (top, None),
            },
        };
        (
            StepFeatures {
                input,
                readout_context,
            },
            DecState {
                layers: new_layers,
                feed,
            },
            attn,
        )
    }

    /// A decoding step's features to the output layer's input: [`RnnSeq2Seq::pre_output`], with
    /// the readout's context part taken from the projected memory where `enc` has it.
    pub fn readout(&self, enc: &EncCtx, features: StepFeatures) -> Tensor<2> {
        let Some(context) = features.readout_context else {
            return self.pre_output(features.input);
        };
        // `project_memory` takes the readout's context part only for a model with a readout.
        let (Projected::InputAndReadout { readout_rest }, Some(readout)) =
            (&enc.projected, &self.readout)
        else {
            unreachable!("a readout context without a projected readout")
        };
        let x = self.dropout.forward(features.input);
        let bias = readout.bias.as_ref().map(|b| b.val());
        (crate::engine::linear(x, readout_rest.clone(), bias) + context).tanh()
    }

    /// Features `[.., features]` to vocabulary logits.
    pub fn logits<const D: usize>(&self, features: Tensor<D>) -> Tensor<D> {
        self.output_layer().logits(self.pre_output(features))
    }

    /// What comes between a step's features and the vocabulary projection: dropout, then the
    /// `tanh` readout layer if the model has one.
    pub fn pre_output<const D: usize>(&self, features: Tensor<D>) -> Tensor<D> {
        let x = self.dropout.forward(features);
        match &self.readout {
            Some(r) => r.forward(x).tanh(),
            None => x,
        }
    }

    /// `ids` as the embeddings read them: a copy model's ids past the vocabulary as `<unk>`.
    fn known(&self, ids: Tensor<2, Int>) -> Tensor<2, Int> {
        match &self.copy {
            Some(copy) => copy.known(ids),
            None => ids,
        }
    }

    /// The vocabulary projection.
    pub fn output_layer(&self) -> OutputLayer {
        OutputLayer::of_linear(&self.output)
    }

    /// Embeds a `[rows]` token vector and projects it for the first decoder layer.
    pub fn embed_step(&self, tokens: Tensor<1, Int>) -> (Tensor<2>, Tensor<2>) {
        let [rows] = tokens.dims();
        let e: Tensor<2> = self
            .dropout
            .forward(self.tgt_emb.forward(self.known(tokens.reshape([rows, 1]))))
            .reshape([rows, self.cfg.emb_dim]);
        let p = self.dec_emb_proj.forward(e.clone());
        (e, p)
    }

    /// Teacher-forced forward pass over `tgt_in: [batch, tgt_len]`. With `feed_gold = None` every
    /// step reads the gold previous token, and the embeddings and their projections for all steps
    /// are computed in one pass. Otherwise `feed_gold(t)` gives, for step `t >= 1`, which rows read
    /// the gold token (`[batch]`, true = gold); the others read the model's own previous argmax.
    /// Returns the hidden states that enter the output projection, `[batch, tgt_len, hidden]`,
    /// and the attention weights of every step.
    pub fn teacher_hidden(
        &self,
        src: &PaddedSource,
        tgt_in: Tensor<2, Int>,
        mut feed_gold: Option<&mut dyn FnMut(usize) -> Tensor<1, Bool>>,
    ) -> (Tensor<3>, Vec<Tensor<2>>) {
        let [b, t_len] = tgt_in.dims();
        let (enc, mut state) = self.encode_source(src);
        let mut features = Vec::with_capacity(t_len);
        let mut attns = Vec::new();
        let gold_all = if feed_gold.is_none() {
            let e = self
                .dropout
                .forward(self.tgt_emb.forward(self.known(tgt_in.clone())));
            let p = self.dec_emb_proj.forward(e.clone());
            Some((e, p))
        } else {
            None
        };
        let mut prev_pred: Option<Tensor<1, Int>> = None;
        for t in 0..t_len {
            let (emb, emb_proj) = match &gold_all {
                Some((e, p)) => {
                    let [_, _, ed] = e.dims();
                    let gd = p.dims()[2];
                    (
                        e.clone().slice([0..b, t..t + 1, 0..ed]).reshape([b, ed]),
                        p.clone().slice([0..b, t..t + 1, 0..gd]).reshape([b, gd]),
                    )
                }
                None => {
                    let gold: Tensor<1, Int> = tgt_in.clone().slice([0..b, t..t + 1]).reshape([b]);
                    let tokens = match (&prev_pred, feed_gold.as_mut()) {
                        (Some(pred), Some(choose)) => {
                            let use_gold = choose(t);
                            pred.clone().mask_where(use_gold, gold)
                        }
                        _ => gold,
                    };
                    self.embed_step(tokens)
                }
            };
            let (f, next, a) = self.decode_step(&enc, state, emb, emb_proj);
            let f = f.input; // whole: training never projects the memory
            state = next;
            if gold_all.is_none() {
                prev_pred = Some(self.logits(f.clone()).detach().argmax(1).reshape([b]));
            }
            features.push(f);
            if let Some(a) = a {
                attns.push(a);
            }
        }
        let features: Tensor<3> = Tensor::stack(features, 1);
        (self.pre_output(features), attns)
    }
}
