//! Teacher-forced scoring: the log-probability a model gives a known output for its input
//! (fairseq's `--score-reference`), the measure behind perplexity. What is scored per row is
//! what training's loss scores ([`Seq2SeqModel::loss_targets`]): every target token and `<eos>`
//! for an encoder-decoder, the tags of a tagger, the label of a classifier.

use burn::tensor::Device;

use crate::decoder::ModelSource;
use crate::{PaddedSource, Seq2SeqModel, ids_2d};
use s2s_search::Source;

/// The score of one (source, reference) pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefScore {
    /// Natural-log probability of the reference, summed over its scored tokens.
    pub logprob: f64,
    /// How many tokens were scored.
    pub tokens: usize,
}

/// Scores every source against its reference (ids, no specials), `batch_size` pairs at a time
/// (longest first, so that little is padding), under one model or an ensemble. A source is what
/// the models read: token ids, a speech model's frames, or spelled tokens ([`ModelSource`]).
/// Results are in input order. Under an ensemble each token's probability is the mean of the
/// members' given the same prefix (the reference's), as `s2s_search::Ensemble` decodes, so a
/// reference scores `sum_t log mean_i p_i(y_t)`. The members must score the same tokens: one
/// task and target vocabulary (`s2s_infer::Translator::ensemble` checks).
pub fn score_ensemble<S: ModelSource>(
    models: &[&Seq2SeqModel],
    device: &Device,
    sources: &[S],
    refs: &[Vec<u32>],
    specials: s2s_data::Specials,
    batch_size: usize,
) -> Vec<RefScore> {
    assert_eq!(sources.len(), refs.len(), "one reference per source");
    assert!(!models.is_empty(), "scoring needs at least one model");
    let tokens = crate::decoder::special_tokens(specials);
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((Source::len(&sources[i]), refs[i].len())));
    let mut out = vec![
        RefScore {
            logprob: 0.0,
            tokens: 0
        };
        sources.len()
    ];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<S> = chunk.iter().map(|&i| sources[i].clone()).collect();
        let pairs: Vec<(&[u32], &[u32])> = chunk
            .iter()
            .map(|&i| (sources[i].token_ids(), refs[i].as_slice()))
            .collect();
        let batch = s2s_data::Batch::from_pairs(&pairs, specials);
        let src = S::pad_batch(&rows, &tokens, device);
        for (&i, score) in chunk.iter().zip(score_source(models, device, &src, &batch)) {
            out[i] = score;
        }
    }
    out
}

/// The score of each row of `b`.
pub fn score_batch(model: &Seq2SeqModel, device: &Device, b: &s2s_data::Batch) -> Vec<RefScore> {
    score_source(&[model], device, &PaddedSource::from_batch(b, device), b)
}

/// The score of each row of `b`'s targets given the source `src` (the same rows) under the
/// members' mean probabilities.
fn score_source(
    models: &[&Seq2SeqModel],
    device: &Device,
    src: &PaddedSource,
    b: &s2s_data::Batch,
) -> Vec<RefScore> {
    let pad = b.specials.pad;
    let targets = models[0].loss_targets(b);
    let len = targets.shape[1];
    let picked: Vec<Vec<f32>> = models
        .iter()
        .map(|m| target_log_probs(m, device, src, b, &targets))
        .collect();
    targets
        .ids
        .chunks(len)
        .enumerate()
        .map(|(row, ids)| {
            let scored = ids.iter().enumerate().filter(|&(_, &id)| id != pad);
            let (logprob, tokens) = scored.fold((0.0, 0), |(s, n), (t, _)| {
                let at = row * len + t;
                let p = s2s_search::log_mean_exp(picked.len(), |i| picked[i][at]);
                (s + f64::from(p), n + 1)
            });
            RefScore { logprob, tokens }
        })
        .collect()
}

/// `model`'s teacher-forced log-probability of each of `targets` (row-major, padding included).
fn target_log_probs(
    model: &Seq2SeqModel,
    device: &Device,
    src: &PaddedSource,
    b: &s2s_data::Batch,
    targets: &crate::LossTargets,
) -> Vec<f32> {
    let tgt_in = ids_2d(&b.tgt_in, [b.batch_size, b.tgt_len], device);
    let log_probs = model.teacher_log_probs(src, tgt_in, None);
    let [rows, len, width] = log_probs.dims();
    debug_assert_eq!([rows, len], targets.shape);
    log_probs
        .reshape([rows * len, width])
        .gather(1, ids_2d(&targets.ids, [rows * len, 1], device))
        .into_data()
        .try_to_vec::<f32>()
        .expect("float log-probabilities")
}
