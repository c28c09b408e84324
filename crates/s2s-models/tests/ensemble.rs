//! Ensembles of real models: every step of a search over several models scores the mean of their
//! teacher-forced probabilities, for each kind of model that decodes, scoring under the ensemble
//! agrees with its search, and a labeller ensemble labels by the mean of its members' label
//! probabilities.

mod common;

use common::{EOS, SPECIAL, VOCAB, device, seeded, teacher_log_probs, tokens};
use s2s_models::decoder::{TextSource, translate_all, translate_ensemble};
use s2s_models::labeller::{Labeller, label_all, label_ensemble};
use s2s_models::scoring::score_ensemble;
use s2s_models::{PaddedSource, Seq2SeqModel};
use s2s_search::{SearchConfig, Strategy};

fn sources() -> Vec<Vec<u32>> {
    [3, 7, 1, 5, 2]
        .iter()
        .enumerate()
        .map(|(i, &n)| tokens(n, 40 + i as u64))
        .collect()
}

fn search(strategy: Strategy, nbest: usize) -> SearchConfig {
    SearchConfig {
        strategy,
        nbest,
        max_len: 7,
        special: SPECIAL,
        ..Default::default()
    }
}

#[test]
fn each_step_scores_the_members_mean_probability() {
    for preset in ["rnnsearch-tiny", "transformer-tiny", "convs2s-tiny"] {
        let cfg = s2s_models::preset(preset).unwrap();
        let members: Vec<Seq2SeqModel> = (0..3)
            .map(|s| seeded(&cfg, VOCAB, 70 + s, &device()))
            .collect();
        let refs: Vec<&Seq2SeqModel> = members.iter().collect();
        for (strategy, nbest) in [(Strategy::Greedy, 1), (Strategy::Beam { k: 3 }, 3)] {
            let out = translate_ensemble(
                &refs,
                &device(),
                VOCAB,
                &sources(),
                &search(strategy, nbest),
                2,
            )
            .unwrap();
            for (src, hyps) in sources().iter().zip(&out) {
                assert_eq!(hyps.len(), nbest);
                for h in hyps {
                    // Each member's teacher-forced distributions along the hypothesis.
                    let src_row: Vec<u32> = src.iter().copied().chain([EOS]).collect();
                    let tgt_in: Vec<u32> = std::iter::once(SPECIAL.bos)
                        .chain(h.tokens.iter().copied())
                        .collect();
                    let per_member: Vec<Vec<Vec<f32>>> = members
                        .iter()
                        .map(|m| {
                            teacher_log_probs(
                                m,
                                std::slice::from_ref(&src_row),
                                std::slice::from_ref(&tgt_in),
                            )
                            .remove(0)
                        })
                        .collect();
                    let next: Vec<u32> = h.tokens.iter().copied().chain([EOS]).collect();
                    for (t, &tok) in next.iter().enumerate() {
                        let mean = per_member
                            .iter()
                            .map(|lp| (lp[t][tok as usize] as f64).exp())
                            .sum::<f64>()
                            / members.len() as f64;
                        let got = h.token_logprobs[t] as f64;
                        assert!(
                            (got - mean.ln()).abs() < 2e-4,
                            "{preset} {strategy:?}: step {t} of {:?}: {got} against {}",
                            h.tokens,
                            mean.ln()
                        );
                    }
                }
            }
        }
    }
}

/// Teacher-forced scoring of an ensemble (`s2s score --model A --model B`) gives its own
/// hypotheses the log-probability it decoded them with, and not its first member's.
#[test]
fn scoring_under_an_ensemble_gives_what_it_decoded() {
    for preset in ["rnnsearch-tiny", "transformer-tiny", "convs2s-tiny"] {
        let cfg = s2s_models::preset(preset).unwrap();
        let members: Vec<Seq2SeqModel> = (0..2)
            .map(|s| seeded(&cfg, VOCAB, 80 + s, &device()))
            .collect();
        let refs: Vec<&Seq2SeqModel> = members.iter().collect();
        let cfg = search(Strategy::Greedy, 1);
        let out = translate_ensemble(&refs, &device(), VOCAB, &sources(), &cfg, 2).unwrap();
        let hyps: Vec<Vec<u32>> = out.iter().map(|h| h[0].tokens.clone()).collect();
        let specials = s2s_data::Specials::S2S;
        let scored = score_ensemble(&refs, &device(), &sources(), &hyps, specials, 2);
        let first = score_ensemble(&refs[..1], &device(), &sources(), &hyps, specials, 2);
        let mut apart = 0;
        for ((h, s), f) in out.iter().zip(&scored).zip(&first) {
            let decoded: f64 = h[0].token_logprobs.iter().map(|&p| f64::from(p)).sum();
            assert_eq!(
                s.tokens,
                h[0].tokens.len() + 1,
                "{preset}: tokens and <eos>"
            );
            assert!(
                (s.logprob - decoded).abs() < 1e-3,
                "{preset}: {:?} decoded at {decoded}, scored {}",
                h[0].tokens,
                s.logprob
            );
            apart += usize::from((f.logprob - s.logprob).abs() > 1e-3);
        }
        assert!(
            apart > 0,
            "{preset}: the ensemble scores like its first member"
        );
    }
}

#[test]
fn an_ensemble_of_one_model_is_that_model() {
    let cfg = s2s_models::preset("transformer-tiny").unwrap();
    let model = seeded(&cfg, VOCAB, 71, &device());
    let cfg = search(Strategy::Beam { k: 3 }, 2);
    let alone = translate_all(&model, &device(), VOCAB, &sources(), &cfg, 2).unwrap();
    let one = translate_ensemble(&[&model], &device(), VOCAB, &sources(), &cfg, 2).unwrap();
    assert_eq!(alone, one);
    let no_model: &[&Seq2SeqModel] = &[];
    assert!(translate_ensemble(no_model, &device(), VOCAB, &sources(), &cfg, 2).is_err());
}

fn classifier(seed: u64) -> Labeller {
    let cfg = s2s_models::preset("bilstm-classifier-tiny").unwrap();
    let Seq2SeqModel::Labeller(m) = seeded(&cfg, VOCAB, seed, &device()) else {
        unreachable!()
    };
    m
}

#[test]
fn a_labeller_ensemble_takes_the_label_of_the_mean_probability() {
    let members = [classifier(1), classifier(2), classifier(3)];
    let refs: Vec<&Labeller> = members.iter().collect();
    let srcs: Vec<TextSource> = sources().into_iter().map(TextSource::from).collect();
    let specials = s2s_data::Specials::S2S;
    let reserved = [SPECIAL.pad, SPECIAL.unk, SPECIAL.bos, SPECIAL.eos];
    let together = label_ensemble(&refs, &device(), &srcs, specials, 2);
    let mut disagreements = 0;
    for (i, src) in sources().iter().enumerate() {
        let row: Vec<u32> = src.iter().copied().chain([EOS]).collect();
        let padded = PaddedSource::new(&[row], SPECIAL.pad, &device());
        let probs: Vec<Vec<f32>> = members
            .iter()
            .map(|m| {
                m.probabilities(&padded, &reserved)
                    .into_data()
                    .try_into_vec::<f32>()
                    .unwrap()
            })
            .collect();
        let mean: Vec<f32> = (0..probs[0].len())
            .map(|j| probs.iter().map(|p| p[j]).sum::<f32>() / 3.0)
            .collect();
        let (best, p) =
            mean.iter().enumerate().fold(
                (0, f32::MIN),
                |acc, (j, &p)| if p > acc.1 { (j, p) } else { acc },
            );
        assert_eq!(together[i].len(), 1);
        assert_eq!(together[i][0].0 as usize, best, "sentence {i}");
        assert!((together[i][0].1 - p).abs() < 1e-5, "sentence {i}");
        let alone = label_all(
            &members[0],
            &device(),
            std::slice::from_ref(&srcs[i]),
            specials,
            1,
        );
        disagreements += usize::from(alone[0][0].1 != together[i][0].1);
    }
    // The members differ, so the ensemble's probabilities are not the first member's.
    assert!(disagreements > 0);
}
