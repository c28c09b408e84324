//! The adapter that lets `s2s-search` drive any [`Seq2SeqModel`] through its [`StepModel`] trait:
//! encode once, then step with incremental state, reordering rows for beams.

use crate::convs2s::ConvS2SState;
use crate::engine::{self, packed, row_ids};
use crate::rnn::{DecState, EncCtx};
use crate::speech::Frames;
use crate::transformer::TransformerState;
use crate::{PaddedSource, Seq2SeqModel, ids_1d};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor};
use s2s_search::step::{StepModel, StepOutput};
use s2s_search::{Source, SpecialTokens};

/// A source as a model reads it: token ids (`Vec<u32>`, without the `<eos>` the batch adds), or
/// a speech model's feature frames ([`Frames`]).
pub trait ModelSource: Source + Clone + Send + Sync {
    /// The padded batch of `sources` on `device`.
    fn pad_batch(sources: &[Self], special: &SpecialTokens, device: &Device) -> PaddedSource;

    /// Its token ids (none for frames).
    fn token_ids(&self) -> &[u32];
}

impl ModelSource for Vec<u32> {
    fn pad_batch(sources: &[Self], special: &SpecialTokens, device: &Device) -> PaddedSource {
        // Sources end with <eos>, as in training batches.
        let rows: Vec<Vec<u32>> = sources
            .iter()
            .map(|s| s.iter().copied().chain([special.eos]).collect())
            .collect();
        PaddedSource::new(&rows, special.pad, device)
    }

    fn token_ids(&self) -> &[u32] {
        self
    }
}

impl ModelSource for Frames {
    fn pad_batch(sources: &[Self], _special: &SpecialTokens, device: &Device) -> PaddedSource {
        Frames::pad_batch(sources, device)
    }

    fn token_ids(&self) -> &[u32] {
        &[]
    }
}

/// FNV-1a over `key`, a shape and the values' bits: the same on every build and platform.
pub(crate) fn fingerprint_floats(key: u64, shape: &[u64], values: &[f32]) -> u64 {
    let values = values.iter().map(|x| u64::from(x.to_bits()));
    [key]
        .into_iter()
        .chain(shape.iter().copied())
        .chain(values)
        .fold(0xcbf2_9ce4_8422_2325, |h, w| {
            (h ^ w).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A vector-conditioned model's source ([`s2s_data::vectors`]): one vector, read as one
/// position, shared (not copied) between the batches of a search.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector(pub std::sync::Arc<[f32]>);

impl Source for Vector {
    fn len(&self) -> usize {
        1
    }

    fn fingerprint(&self, key: u64) -> u64 {
        fingerprint_floats(key, &[self.0.len() as u64], &self.0)
    }
}

impl ModelSource for Vector {
    fn pad_batch(sources: &[Self], _special: &SpecialTokens, device: &Device) -> PaddedSource {
        let rows: Vec<&[f32]> = sources.iter().map(|v| &v.0[..]).collect();
        let dim = rows.first().map_or(1, |v| v.len());
        let batch = s2s_data::vectors::BatchVectors::new(&rows, dim);
        PaddedSource::from_vectors(batch.data, batch.dim, device)
    }

    fn token_ids(&self) -> &[u32] {
        &[]
    }
}

/// A text as a model reads it: its token ids (without the `<eos>` the batch adds) and, for a
/// model that reads characters, each token's spelling ([`s2s_data::chars`]). The spellings are
/// shared, not copied, between the batches of a search.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TextSource {
    pub ids: Vec<u32>,
    /// One per id, or none.
    pub spellings: Option<std::sync::Arc<[String]>>,
}

impl From<Vec<u32>> for TextSource {
    fn from(ids: Vec<u32>) -> Self {
        TextSource {
            ids,
            spellings: None,
        }
    }
}

impl Source for TextSource {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn fingerprint(&self, key: u64) -> u64 {
        Source::fingerprint(&self.ids, key)
    }
}

impl ModelSource for TextSource {
    /// With the spellings when every source has them.
    fn pad_batch(sources: &[Self], special: &SpecialTokens, device: &Device) -> PaddedSource {
        let ids: Vec<Vec<u32>> = sources.iter().map(|s| s.ids.clone()).collect();
        let src = Vec::<u32>::pad_batch(&ids, special, device);
        let spelled: Option<Vec<&[String]>> =
            sources.iter().map(|s| s.spellings.as_deref()).collect();
        match spelled {
            Some(rows) => {
                let [_, len] = src.ids.dims();
                src.with_chars(Some(&s2s_data::chars::BatchChars::new(&rows, len)), device)
            }
            None => src,
        }
    }

    fn token_ids(&self) -> &[u32] {
        &self.ids
    }
}

/// The search's view of a vocabulary's special ids.
pub fn special_tokens(specials: s2s_data::Specials) -> SpecialTokens {
    let s2s_data::Specials { pad, unk, bos, eos } = specials;
    SpecialTokens { pad, unk, bos, eos }
}

/// A trained model on an inference device (no autodiff), ready to search sources of type `S`.
pub struct Decoder<'a, S = Vec<u32>> {
    pub model: &'a Seq2SeqModel,
    pub device: Device,
    /// `pad` pads sources; `eos` ends each of them.
    pub special: SpecialTokens,
    pub vocab_size: usize,
    sources: std::marker::PhantomData<fn(&S)>,
}

impl<'a, S> Decoder<'a, S> {
    pub fn new(
        model: &'a Seq2SeqModel,
        device: Device,
        special: SpecialTokens,
        vocab_size: usize,
    ) -> Self {
        Self {
            model,
            device,
            special,
            vocab_size,
            sources: std::marker::PhantomData,
        }
    }
}

/// Incremental state of all live rows.
pub struct DecodeState {
    /// The sentence (index into `start`'s sources) each row decodes. When a reorder leaves it
    /// unchanged, the encoder-side state needs no copying.
    sentence_of_row: Vec<usize>,
    /// Padded source length.
    src_len: usize,
    /// A copy model's padded sources `[sentences, src_len]` (extended ids), which its copy
    /// distribution scatters the attention onto.
    copy_src: Option<Tensor<2, Int>>,
    model: ModelState,
}

// One value per search call, mostly tensor handles: variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
enum ModelState {
    Rnn {
        enc: EncCtx,
        dec: DecState,
    },
    /// Per layer: the self-attention KV cache of the prefix and the cross-attention K/V of the
    /// encoder output.
    Transformer(TransformerState),
    /// The attention memory and, per decoder layer, the last `kernel - 1` convolution inputs.
    ConvS2S(ConvS2SState),
}

fn to_host(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_into_vec::<f32>().expect("float tensor")
}

impl<S: ModelSource> StepModel for Decoder<'_, S> {
    type State = DecodeState;
    type Source = S;

    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    fn start(&self, sources: &[S]) -> DecodeState {
        let src = S::pad_batch(sources, &self.special, &self.device);
        // What attention spans: the tokens, or the frames after the speech front end.
        let src_len = match &src.frames {
            Some(_) => crate::speech::subsampled_len(src.pad.dims()[1]),
            None => src.ids.dims()[1],
        };
        let copy_src = self.model.copy_gate().map(|_| src.ids.clone());
        let model = match self.model {
            Seq2SeqModel::Rnn(m) => {
                let (enc, dec) = m.encode_source(&src);
                let enc = m.project_memory(enc);
                ModelState::Rnn { enc, dec }
            }
            Seq2SeqModel::Transformer(m) => ModelState::Transformer(m.start(&src)),
            Seq2SeqModel::ConvS2S(m) => ModelState::ConvS2S(m.start(src.ids, src.pad)),
            Seq2SeqModel::Labeller(_) => {
                panic!("a labeller has no decoder to search: label with Labeller::predict")
            }
        };
        DecodeState {
            sentence_of_row: (0..sources.len()).collect(),
            src_len,
            copy_src,
            model,
        }
    }

    fn step(&self, state: &mut DecodeState, last_tokens: &[u32]) -> StepOutput {
        let tokens = ids_1d(last_tokens, &self.device);
        let src_len = state.src_len;
        // The features before the vocabulary projection, for a copy model's gate.
        let (logits, attn, hidden) = match (self.model, &mut state.model) {
            (Seq2SeqModel::Rnn(m), ModelState::Rnn { enc, dec }) => {
                let (emb, proj) = m.embed_step(tokens);
                let prev = std::mem::replace(
                    dec,
                    DecState {
                        layers: Vec::new(),
                        feed: None,
                    },
                );
                let (features, next, attn) = m.decode_step(enc, prev, emb, proj);
                *dec = next;
                let hidden = m.readout(enc, features);
                (m.output_layer().logits(hidden.clone()), attn, Some(hidden))
            }
            (Seq2SeqModel::Transformer(m), ModelState::Transformer(state)) => {
                let (features, attn) = m.step_features(state, tokens);
                (
                    m.step_logits(state, features.clone()),
                    Some(attn),
                    Some(features),
                )
            }
            (Seq2SeqModel::ConvS2S(m), ModelState::ConvS2S(state)) => {
                let (logits, attn) = m.step(state, tokens);
                (logits, Some(attn), None)
            }
            _ => panic!("decode state does not belong to this model"),
        };
        let log_probs = match (self.model.copy_gate(), &state.copy_src, &attn, hidden) {
            (Some(copy), Some(src), Some(attn), Some(hidden)) => {
                let rows = last_tokens.len();
                let (d, v) = (hidden.dims()[1], logits.dims()[1]);
                let sources = row_ids(&state.sentence_of_row, &self.device);
                // Empty slots (past this sentence's copied pieces) are log 0 = -inf: never chosen.
                copy.mix(
                    hidden.reshape([rows, 1, d]),
                    logits.reshape([rows, 1, v]),
                    attn.clone().reshape([rows, 1, src_len]),
                    src.clone().select(0, sources),
                    self.vocab_size,
                )
                .reshape([rows, self.vocab_size])
                .log()
            }
            _ => log_softmax(logits, 1),
        };
        let attention = attn.map(to_host);
        debug_assert!(
            attention
                .as_ref()
                .is_none_or(|a| a.len() == last_tokens.len() * src_len)
        );
        StepOutput {
            log_probs: to_host(log_probs),
            attention,
        }
    }

    fn reorder(&self, state: &mut DecodeState, indices: &[usize]) {
        let sentence_of_row: Vec<usize> =
            indices.iter().map(|&i| state.sentence_of_row[i]).collect();
        // An RNN's rows of one sentence read its one attention memory and hold equal copies of
        // its fixed context, so both only move when some row now decodes a different sentence
        // (beams fanning out at the first step, finished sentences dropping out).
        let source_side = sentence_of_row != state.sentence_of_row;
        state.sentence_of_row = sentence_of_row;
        match &mut state.model {
            ModelState::Rnn { enc, dec } => {
                let idx = row_ids(indices, &self.device);
                if source_side {
                    *enc = enc.select_rows(indices, &idx);
                }
                let prev = std::mem::replace(
                    dec,
                    DecState {
                        layers: Vec::new(),
                        feed: None,
                    },
                );
                *dec = prev.select_rows(&idx);
            }
            // These record the reorder and read each sentence's one encoder side through a row map.
            ModelState::Transformer(s) => *s = s.select_rows(indices),
            ModelState::ConvS2S(s) => *s = s.select_rows(indices),
        }
    }
}

/// Decodes many sentences in length-sorted batches of at most `batch_size`, returning each
/// sentence's n-best in input order. Search is batch-invariant, so the batching only changes speed.
pub fn translate_all<S: ModelSource>(
    model: &Seq2SeqModel,
    device: &Device,
    vocab_size: usize,
    sources: &[S],
    cfg: &s2s_search::SearchConfig,
    batch_size: usize,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    translate_ensemble(&[model], device, vocab_size, sources, cfg, batch_size)
}

/// [`translate_all`] for an ensemble ([`s2s_search::Ensemble`]): every step decodes the mean of
/// the `models`' next-token probabilities. The models share the target vocabulary; either all of
/// them copy from the source or none does.
pub fn translate_ensemble<S: ModelSource>(
    models: &[&Seq2SeqModel],
    device: &Device,
    vocab_size: usize,
    sources: &[S],
    cfg: &s2s_search::SearchConfig,
    batch_size: usize,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    let invalid = |m: &str| Err(s2s_search::SearchError::InvalidConfig(m.into()));
    let Some(first) = models.first() else {
        return invalid("an ensemble needs at least one model");
    };
    let copies = first.copy_gate().is_some();
    if models.iter().any(|m| m.copy_gate().is_some() != copies) {
        return invalid(
            "the members of an ensemble must all copy from the source or none of them: their \
             output vocabularies differ otherwise",
        );
    }
    // A copy model outputs over its extended vocabulary, as wide as the largest source id needs.
    let vocab_size = match copies {
        true => crate::copy::extended_width(
            sources.iter().flat_map(|s| s.token_ids()).copied(),
            vocab_size,
        ),
        false => vocab_size,
    };
    if cfg.strategy == s2s_search::Strategy::Ctc {
        if models.len() > 1 {
            return invalid("CTC decoding reads one model's CTC head: it takes no ensemble");
        }
        return ctc_best_paths(first, device, vocab_size, sources, cfg, batch_size);
    }
    let decoders = models
        .iter()
        .map(|m| Decoder::new(m, device.clone(), cfg.special, vocab_size))
        .collect();
    let ensemble = s2s_search::Ensemble::new(decoders)?;
    translate_with(&ensemble, device, sources, cfg, batch_size)
}

/// [`s2s_search::Strategy::Ctc`]: for every source, the best path of a speech model's CTC head
/// (blank = the padding id, as in training), in batches of `batch_size`.
fn ctc_best_paths<S: ModelSource>(
    model: &Seq2SeqModel,
    device: &Device,
    vocab_size: usize,
    sources: &[S],
    cfg: &s2s_search::SearchConfig,
    batch_size: usize,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    cfg.validate(vocab_size)?;
    let no_head = || {
        s2s_search::SearchError::InvalidConfig(
            "CTC decoding needs a speech model trained with joint CTC ([model.speech] \
             ctc_weight > 0); decode this one with greedy or beam search"
                .into(),
        )
    };
    let Seq2SeqModel::Transformer(transformer) = model else {
        return Err(no_head());
    };
    let blank = cfg.special.pad as usize;
    let mut out = Vec::with_capacity(sources.len());
    for chunk in sources.chunks(batch_size.max(1)) {
        let batch = S::pad_batch(chunk, &cfg.special, device);
        let (log_probs, pad) = transformer.ctc_outputs(&batch).ok_or_else(no_head)?;
        let [rows, positions, vocab] = log_probs.dims();
        let log_probs = log_probs
            .into_data()
            .try_into_vec::<f32>()
            .expect("float tensor");
        let pad = to_host(pad.float());
        for r in 0..rows {
            let mut hyp = s2s_search::Hypothesis {
                tokens: Vec::new(),
                score: 0.0,
                logprob: 0.0,
                token_logprobs: Vec::new(),
                attention: None,
            };
            let mut previous = blank;
            for p in (0..positions).filter(|&p| pad[r * positions + p] == 0.0) {
                let at = &log_probs[(r * positions + p) * vocab..][..vocab];
                let (best, &lp) = at
                    .iter()
                    .enumerate()
                    .max_by(|a, b| a.1.total_cmp(b.1))
                    .expect("a vocabulary");
                hyp.logprob += lp;
                if best != blank && best != previous {
                    hyp.tokens.push(best as u32);
                    hyp.token_logprobs.push(lp);
                }
                previous = best;
            }
            // The entry of <eos>, which a CTC path does not emit.
            hyp.token_logprobs.push(0.0);
            hyp.score = hyp.logprob;
            out.push(vec![hyp]);
        }
    }
    Ok(out)
}

fn translate_with<S: ModelSource, M: StepModel<Source = S> + Sync>(
    model: &M,
    device: &Device,
    sources: &[S],
    cfg: &s2s_search::SearchConfig,
    batch_size: usize,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(Source::len(&sources[i])));
    let mut out: Vec<Vec<s2s_search::Hypothesis>> = vec![Vec::new(); sources.len()];
    // One packing scope around all the batches keeps the packed weights from one batch to the
    // next: with a scope per search only, they were packed again for every batch, that is for
    // every sentence at batch size 1.
    packed::with_packed_weights(|| {
        for chunk in order.chunks(batch_size.max(1)) {
            for (&i, hyps) in chunk
                .iter()
                .zip(search_on_workers(model, device, sources, chunk, cfg)?)
            {
                out[i] = hyps;
            }
        }
        Ok(out)
    })
}

/// Searches the batch `sources[chunk]`, split over the CPU's cores when it is large enough
/// ([`engine::workers`]). Sentence `chunk[j]` goes to worker `j % workers`: the chunk is sorted by
/// length, so every worker gets long and short sentences alike. Results are in `chunk` order.
fn search_on_workers<S: ModelSource, M: StepModel<Source = S> + Sync>(
    model: &M,
    device: &Device,
    sources: &[S],
    chunk: &[usize],
    cfg: &s2s_search::SearchConfig,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    let workers = engine::workers::worker_count(device, chunk.len());
    let mut parts: Vec<Vec<S>> = (0..workers)
        .map(|w| {
            let rows = chunk.iter().skip(w).step_by(workers);
            rows.map(|&i| sources[i].clone()).collect()
        })
        .collect();
    if workers == 1 {
        let part = parts.pop().unwrap_or_default();
        return engine::workers::run_with_helpers_awake(device, || search(model, &part, cfg));
    }
    let mut results = Vec::with_capacity(workers);
    for part in engine::workers::run_each(parts, |part| search(model, &part, cfg)) {
        results.push(part?.into_iter());
    }
    Ok((0..chunk.len())
        .map(|j| {
            results[j % workers]
                .next()
                .expect("one result per sentence")
        })
        .collect())
}

/// One search, with every weight packed for the matrix kernels once ([`packed`]; the scope is per
/// thread, so a worker opens its own).
fn search<M: StepModel>(
    model: &M,
    sources: &[M::Source],
    cfg: &s2s_search::SearchConfig,
) -> Result<Vec<Vec<s2s_search::Hypothesis>>, s2s_search::SearchError> {
    packed::with_packed_weights(|| s2s_search::search(model, sources, cfg))
}
