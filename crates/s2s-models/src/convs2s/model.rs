//! [`ConvS2S`]: embeddings, the convolutional encoder and decoder, a parallel teacher-forced pass
//! and an incremental step that keeps the last `kernel - 1` inputs of every decoder layer.

use burn::module::Module;
use burn::tensor::{Bool, Device, Int, Tensor};

use super::ConvS2SConfig;
use super::attention::ConvMemory;
use super::decoder::ConvDecoder;
use super::embedding::ConvEmbedding;
use super::encoder::ConvEncoder;
use crate::OutputLayer;
use crate::engine::{self, RowMap};

/// Incremental decoding state of all live rows. [`ConvS2SState::select_rows`] follows beam
/// search's survivors without copying: the memory is read through its row map, and the next
/// step gathers the surviving rows of the windows as it builds its own.
#[derive(Clone, Debug)]
pub struct ConvS2SState {
    pub memory: ConvMemory,
    /// Per decoder layer: its last convolution window `[rows, kernel, hidden]`, oldest input
    /// first, whose newest `kernel - 1` inputs begin the next window; zeros before the first
    /// step, exactly the causal padding of the full pass.
    pub windows: Vec<Tensor<3>>,
    /// Live row `i` is row `window_rows.get(i)` of `windows`.
    pub window_rows: RowMap,
    /// Positions decoded so far.
    pub steps: usize,
}

impl ConvS2SState {
    /// Row `i` becomes row `rows[i]`.
    pub fn select_rows(&self, rows: &[usize]) -> ConvS2SState {
        ConvS2SState {
            memory: self.memory.select_rows(rows),
            windows: self.windows.clone(),
            window_rows: self.window_rows.compose(rows),
            steps: self.steps,
        }
    }
}

#[derive(Module, Debug)]
pub struct ConvS2S {
    pub src_embed: ConvEmbedding,
    pub tgt_embed: ConvEmbedding,
    pub encoder: ConvEncoder,
    pub decoder: ConvDecoder,
    #[module(skip)]
    pub cfg: ConvS2SConfig,
}

impl ConvS2S {
    pub fn new(cfg: &ConvS2SConfig, src_vocab: usize, tgt_vocab: usize, device: &Device) -> Self {
        let embed =
            |v: usize| ConvEmbedding::new(v, cfg.emb_dim, cfg.max_positions, cfg.dropout, device);
        Self {
            src_embed: embed(src_vocab),
            tgt_embed: embed(tgt_vocab),
            encoder: ConvEncoder::new(cfg, device),
            decoder: ConvDecoder::new(cfg, tgt_vocab, device),
            cfg: cfg.clone(),
        }
    }

    /// Encodes `src: [batch, src_len]` with `pad` (true at padding) into the attention memory.
    pub fn encode(&self, src: Tensor<2, Int>, pad: Tensor<2, Bool>) -> ConvMemory {
        self.encoder.forward(self.src_embed.forward(src, 0), pad)
    }

    /// The reported attention: one layer's, or the mean over layers (fairseq's default).
    fn report(&self, mut attns: Vec<Tensor<3>>) -> Tensor<3> {
        match self.cfg.alignment_layer {
            Some(l) => attns.swap_remove(l.min(attns.len() - 1)),
            None => {
                let n = attns.len();
                attns
                    .into_iter()
                    .reduce(|a, b| a + b)
                    .expect("at least one decoder layer")
                    .div_scalar(n as f64)
            }
        }
    }

    /// Teacher-forced pass over the whole target: the hidden states that enter the output
    /// projection, `[batch, tgt_len, out_dim]`, and the reported attention
    /// `[batch, tgt_len, src_len]`.
    pub fn teacher_hidden(
        &self,
        src: Tensor<2, Int>,
        src_pad: Tensor<2, Bool>,
        tgt_in: Tensor<2, Int>,
    ) -> (Tensor<3>, Tensor<3>) {
        let memory = self.encode(src, src_pad);
        let emb = self.tgt_embed.forward(tgt_in, 0);
        let (hidden, attns) = self
            .decoder
            .forward(emb, &memory, |_, conv, x| conv.forward(x));
        (hidden, self.report(attns))
    }

    /// The vocabulary projection.
    pub fn output_layer(&self) -> OutputLayer {
        OutputLayer::of_linear(&self.decoder.output)
    }

    /// The state before the first step.
    pub fn start(&self, src: Tensor<2, Int>, pad: Tensor<2, Bool>) -> ConvS2SState {
        let [rows, _] = src.dims();
        let device = src.device();
        let memory = self.encode(src, pad);
        ConvS2SState {
            memory,
            windows: (0..self.cfg.dec_layers)
                .map(|_| Tensor::zeros([rows, self.cfg.kernel, self.cfg.hidden], &device))
                .collect(),
            window_rows: RowMap::identity(),
            steps: 0,
        }
    }

    /// One step: `tokens: [rows]` are the previous tokens. Returns logits `[rows, vocab]` and the
    /// reported attention `[rows, src_len]`.
    pub fn step(&self, state: &mut ConvS2SState, tokens: Tensor<1, Int>) -> (Tensor<2>, Tensor<2>) {
        let [rows] = tokens.dims();
        let emb = self
            .tgt_embed
            .forward(tokens.reshape([rows, 1]), state.steps);
        let width = self.cfg.kernel - 1;
        let windows = &mut state.windows;
        let kept = std::mem::take(&mut state.window_rows);
        let (hidden, attns) = self.decoder.forward(emb, &state.memory, |l, conv, x| {
            let [old_rows, k, hidden] = windows[l].dims();
            // The last window's newest inputs, read in place, then the new one: with a reorder
            // pending, gathering the surviving rows and appending is one copy.
            let past = windows[l]
                .clone()
                .reshape([old_rows, 1, k, hidden])
                .narrow(2, 1, width);
            let new = x.reshape([rows, 1, 1, hidden]);
            let window = engine::select_rows_then_cat(past, &kept, new).reshape([rows, k, hidden]);
            windows[l] = window.clone();
            conv.step(window)
        });
        state.steps += 1;
        let logits = self.decoder.output.forward(hidden);
        let attn = self.report(attns);
        let [_, _, v] = logits.dims();
        let [_, _, s] = attn.dims();
        (logits.reshape([rows, v]), attn.reshape([rows, s]))
    }
}
