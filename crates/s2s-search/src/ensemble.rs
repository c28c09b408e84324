//! Several models decoded as one: each step's distribution is the mean of the members'
//! next-token probabilities (equal weights; the rule of fairseq, Marian and OpenNMT-py). An
//! [`Ensemble`] is itself a [`StepModel`], so every search decodes it unchanged, and it stays
//! batch-invariant when its members are.

use crate::config::SearchError;
use crate::step::{StepModel, StepOutput};

/// Models that share a target vocabulary, read the same sources and step together.
pub struct Ensemble<M> {
    members: Vec<M>,
}

impl<M: StepModel> Ensemble<M> {
    /// Fails when there is no member or when the members' vocabularies differ in size.
    pub fn new(members: Vec<M>) -> Result<Self, SearchError> {
        let Some(first) = members.first() else {
            return Err(SearchError::InvalidConfig(
                "an ensemble needs at least one model".into(),
            ));
        };
        let vocab = first.vocab_size();
        if let Some((i, m)) = members
            .iter()
            .enumerate()
            .find(|(_, m)| m.vocab_size() != vocab)
        {
            return Err(SearchError::InvalidConfig(format!(
                "ensemble member {} outputs {} tokens but member 1 outputs {vocab}: the members \
                 of an ensemble must share one target vocabulary",
                i + 1,
                m.vocab_size()
            )));
        }
        Ok(Self { members })
    }
}

impl<M: StepModel> StepModel for Ensemble<M> {
    /// One state per member, in member order.
    type State = Vec<M::State>;
    type Source = M::Source;

    fn vocab_size(&self) -> usize {
        self.members[0].vocab_size()
    }

    fn start(&self, sources: &[M::Source]) -> Vec<M::State> {
        self.members.iter().map(|m| m.start(sources)).collect()
    }

    fn step(&self, state: &mut Vec<M::State>, last_tokens: &[u32]) -> StepOutput {
        // One member (every single-model decode): its output as it is, nothing copied.
        if let ([member], [s]) = (self.members.as_slice(), state.as_mut_slice()) {
            return member.step(s, last_tokens);
        }
        let outputs: Vec<StepOutput> = self
            .members
            .iter()
            .zip(state.iter_mut())
            .map(|(m, s)| m.step(s, last_tokens))
            .collect();
        mean_output(outputs)
    }

    fn reorder(&self, state: &mut Vec<M::State>, indices: &[usize]) {
        for (m, s) in self.members.iter().zip(state.iter_mut()) {
            m.reorder(s, indices);
        }
    }
}

/// `log(mean_i exp(x_i))` of the `n` values `value(0..n)`: the log of the mean of `n` members'
/// probabilities given as log-probabilities, shifted by their maximum so that nothing under- or
/// overflows. `-inf` when every value is (a token no member allows); one value comes back as it
/// is. Teacher-forced scoring of an ensemble (`s2s score`) combines its members' token
/// log-probabilities with this too, so that it scores what the ensemble decodes.
pub fn log_mean_exp(n: usize, value: impl Fn(usize) -> f32) -> f32 {
    let max = (0..n).map(&value).fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return max;
    }
    let sum: f32 = (0..n).map(|i| (value(i) - max).exp()).sum();
    max + sum.ln() - (n as f32).ln()
}

/// The members' mean distribution, [`log_mean_exp`] entry by entry, and their mean attention
/// (none unless every member gives one).
fn mean_output(outputs: Vec<StepOutput>) -> StepOutput {
    let n = outputs.len();
    let width = outputs[0].log_probs.len();
    assert!(
        outputs.iter().all(|o| o.log_probs.len() == width),
        "ensemble members returned log-probs of different sizes"
    );
    let log_probs = (0..width)
        .map(|j| log_mean_exp(n, |i| outputs[i].log_probs[j]))
        .collect();
    let attention = outputs
        .iter()
        .map(|o| o.attention.as_deref())
        .collect::<Option<Vec<&[f32]>>>()
        .filter(|rows| rows.iter().all(|a| a.len() == rows[0].len()))
        .map(|rows| {
            (0..rows[0].len())
                .map(|j| rows.iter().map(|a| a[j]).sum::<f32>() / n as f32)
                .collect()
        });
    StepOutput {
        log_probs,
        attention,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(probs: &[f32], attention: Option<Vec<f32>>) -> StepOutput {
        StepOutput {
            log_probs: probs.iter().map(|p| p.ln()).collect(),
            attention,
        }
    }

    #[test]
    fn the_mean_is_of_probabilities_not_of_log_probabilities() {
        let mean = mean_output(vec![
            output(&[0.5, 0.5, 0.0], Some(vec![1.0, 0.0])),
            output(&[0.9, 0.0, 0.1], Some(vec![0.5, 0.5])),
        ]);
        let probs: Vec<f32> = mean.log_probs.iter().map(|l| l.exp()).collect();
        for (got, want) in probs.iter().zip([0.7, 0.25, 0.05]) {
            assert!((got - want).abs() < 1e-6, "{probs:?}");
        }
        // A token no member allows stays impossible.
        let none = mean_output(vec![output(&[1.0, 0.0], None), output(&[1.0, 0.0], None)]);
        assert_eq!(none.log_probs[1], f32::NEG_INFINITY);
        assert_eq!(mean.attention, Some(vec![0.75, 0.25]));
        // One member without attention: the ensemble shows none rather than a partial mean.
        let partial = mean_output(vec![output(&[1.0], Some(vec![1.0])), output(&[1.0], None)]);
        assert_eq!(partial.attention, None);
    }

    #[test]
    fn log_mean_exp_is_exact_for_one_value_and_stable_far_from_zero() {
        for x in [0.0f32, -3.25, -1.0e4, f32::NEG_INFINITY] {
            assert_eq!(log_mean_exp(1, |_| x).to_bits(), x.to_bits());
        }
        // exp(-1e4) underflows to 0 in f32: without the shift the log would be -inf.
        let far = [-1.0e4f32, -1.0e4 - 2.0f32.ln()];
        let want = -1.0e4 + (0.75f64).ln();
        assert!((f64::from(log_mean_exp(2, |i| far[i])) - want).abs() < 1e-2);
        let half = [0.0f32, f32::NEG_INFINITY];
        assert!((log_mean_exp(2, |i| half[i]) - 0.5f32.ln()).abs() < 1e-6);
    }
}
