//! Teacher-forced scoring: the log-probability a model gives a known output for its input
//! (fairseq's `--score-reference`), the measure behind perplexity. What is scored per row is
//! what training's loss scores ([`Seq2SeqModel::loss_targets`]): every target token and `<eos>`
//! for an encoder-decoder, the tags of a tagger, the label of a classifier.

use burn::tensor::Device;

use crate::{PaddedSource, Seq2SeqModel, ids_2d};

/// The score of one (source, reference) pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefScore {
    /// Natural-log probability of the reference, summed over its scored tokens.
    pub logprob: f64,
    /// How many tokens were scored.
    pub tokens: usize,
}

/// Scores every `(source, reference)` pair of ids (no specials), `batch_size` pairs at a time
/// (longest first, so that little is padding). A speech model's sources are `frames` (one per
/// pair, whose source ids are then empty). Results are in input order.
pub fn score_all(
    model: &Seq2SeqModel,
    device: &Device,
    pairs: &[(Vec<u32>, Vec<u32>)],
    frames: Option<&[crate::speech::Frames]>,
    specials: s2s_data::Specials,
    batch_size: usize,
) -> Vec<RefScore> {
    let src_len = |i: usize| frames.map_or(pairs[i].0.len(), |f| f[i].0.frames);
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((src_len(i), pairs[i].1.len())));
    let mut out = vec![
        RefScore {
            logprob: 0.0,
            tokens: 0
        };
        pairs.len()
    ];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<(&[u32], &[u32])> = chunk
            .iter()
            .map(|&i| (pairs[i].0.as_slice(), pairs[i].1.as_slice()))
            .collect();
        let mut batch = s2s_data::Batch::from_pairs(&rows, specials);
        if let Some(frames) = frames {
            let utterances: Vec<&s2s_data::audio::Features> =
                chunk.iter().map(|&i| &*frames[i].0).collect();
            batch.frames = Some(s2s_data::batch::BatchFrames::new(&utterances));
        }
        for (&i, score) in chunk.iter().zip(score_batch(model, device, &batch)) {
            out[i] = score;
        }
    }
    out
}

/// The score of each row of `b`.
pub fn score_batch(model: &Seq2SeqModel, device: &Device, b: &s2s_data::Batch) -> Vec<RefScore> {
    let pad = b.specials.pad;
    let src = PaddedSource::from_batch(b, device);
    let tgt_in = ids_2d(&b.tgt_in, [b.batch_size, b.tgt_len], device);
    let targets = model.loss_targets(b);
    let log_probs = model.teacher_log_probs(&src, tgt_in, None);
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
