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
/// (longest first, so that little is padding). A source is what the model reads: token ids, a
/// speech model's frames, or spelled tokens ([`ModelSource`]). Results are in input order.
pub fn score_all<S: ModelSource>(
    model: &Seq2SeqModel,
    device: &Device,
    sources: &[S],
    refs: &[Vec<u32>],
    specials: s2s_data::Specials,
    batch_size: usize,
) -> Vec<RefScore> {
    assert_eq!(sources.len(), refs.len(), "one reference per source");
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
        for (&i, score) in chunk.iter().zip(score_source(model, device, &src, &batch)) {
            out[i] = score;
        }
    }
    out
}

/// The score of each row of `b`.
pub fn score_batch(model: &Seq2SeqModel, device: &Device, b: &s2s_data::Batch) -> Vec<RefScore> {
    score_source(model, device, &PaddedSource::from_batch(b, device), b)
}

/// The score of each row of `b`'s targets given the source `src` (the same rows).
fn score_source(
    model: &Seq2SeqModel,
    device: &Device,
    src: &PaddedSource,
    b: &s2s_data::Batch,
) -> Vec<RefScore> {
    let pad = b.specials.pad;
    let tgt_in = ids_2d(&b.tgt_in, [b.batch_size, b.tgt_len], device);
    let targets = model.loss_targets(b);
    let log_probs = model.teacher_log_probs(src, tgt_in, None);
    let [rows, len, width] = log_probs.dims();
    debug_assert_eq!([rows, len], targets.shape);
    let picked = log_probs
        .reshape([rows * len, width])
        .gather(1, ids_2d(&targets.ids, [rows * len, 1], device));
    let picked: Vec<f32> = picked
        .into_data()
        .try_to_vec::<f32>()
        .expect("float log-probabilities");
    picked
        .chunks(len)
        .zip(targets.ids.chunks(len))
        .map(|(lp, ids)| {
            let scored = lp.iter().zip(ids).filter(|&(_, &id)| id != pad);
            let (logprob, tokens) =
                scored.fold((0.0, 0), |(s, n), (&p, _)| (s + f64::from(p), n + 1));
            RefScore { logprob, tokens }
        })
        .collect()
}
