//! An ensemble decodes the mean of its members' probabilities, whatever the search reorders, and
//! one of a single model is that model.

use s2s_search::toy::{Fallback, TableModel};
use s2s_search::{
    Ensemble, LengthPenalty, SearchConfig, SearchError, SpecialTokens, Strategy, search,
};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

fn member(seed: u64) -> TableModel {
    TableModel::random(9, SPECIAL, seed)
        .with_fallback(Fallback::Hashed {
            seed,
            sharpness: 4.0,
            eos_growth: 0.5,
        })
        .with_attention(true)
}

fn sources() -> Vec<Vec<u32>> {
    vec![
        vec![4, 5, 6],
        vec![7],
        vec![],
        vec![8, 8, 4, 5, 6, 7],
        vec![4, 5, 6],
    ]
}

fn config(strategy: Strategy, nbest: usize) -> SearchConfig {
    SearchConfig {
        strategy,
        nbest,
        max_len: 6,
        special: SPECIAL,
        ..SearchConfig::default()
    }
}

/// `log(mean_i p_i(next | source, prefix))`, in f64 from the members' own tables.
fn mean_log_prob(members: &[TableModel], source: &[u32], prefix: &[u32], next: u32) -> f64 {
    let mean = members
        .iter()
        .map(|m| (m.log_probs(source, prefix)[next as usize] as f64).exp())
        .sum::<f64>()
        / members.len() as f64;
    mean.ln()
}

#[test]
fn every_step_scores_the_mean_of_the_members_probabilities() {
    let members = vec![member(1), member(2), member(3)];
    let ensemble = Ensemble::new(members.clone()).unwrap();
    for strategy in [Strategy::Greedy, Strategy::Beam { k: 4 }] {
        let nbest = if strategy == Strategy::Greedy { 1 } else { 4 };
        let out = search(&ensemble, &sources(), &config(strategy, nbest)).unwrap();
        for (source, hyps) in sources().iter().zip(&out) {
            assert_eq!(hyps.len(), nbest);
            for h in hyps {
                // Beam search reorders rows at every step: a state moved wrongly would score a
                // token after another hypothesis's prefix.
                let full: Vec<u32> = h.tokens.iter().copied().chain([SPECIAL.eos]).collect();
                assert_eq!(h.token_logprobs.len(), full.len());
                for (i, (&got, &next)) in h.token_logprobs.iter().zip(&full).enumerate() {
                    let want = mean_log_prob(&members, source, &h.tokens[..i], next);
                    assert!(
                        (got as f64 - want).abs() < 1e-5,
                        "{strategy:?}, source {source:?}, {:?} token {i}: {got} against {want}",
                        h.tokens
                    );
                }
            }
        }
    }
}

#[test]
fn the_ensemble_finds_the_best_sequence_of_the_mean_distribution() {
    let members = vec![member(11), member(12)];
    let ensemble = Ensemble::new(members.clone()).unwrap();
    // Ranked by the raw log-probability, which the brute force below maximises.
    let cfg = SearchConfig {
        max_len: 3,
        length_penalty: LengthPenalty::None,
        ..config(Strategy::Exhaustive, 1)
    };
    let out = search(&ensemble, &sources(), &cfg).unwrap();
    let words: Vec<u32> = (4..9).collect();
    for (source, hyps) in sources().iter().zip(&out) {
        // Every sequence of up to 3 ordinary tokens, then <eos>, scored by brute force.
        let mut best = (f64::NEG_INFINITY, Vec::new());
        let mut frontier: Vec<Vec<u32>> = vec![Vec::new()];
        for _ in 0..=3 {
            let mut next = Vec::new();
            for prefix in &frontier {
                let mut lp = 0.0;
                for i in 0..prefix.len() {
                    lp += mean_log_prob(&members, source, &prefix[..i], prefix[i]);
                }
                lp += mean_log_prob(&members, source, prefix, SPECIAL.eos);
                if lp > best.0 {
                    best = (lp, prefix.clone());
                }
                next.extend(words.iter().map(|&w| {
                    let mut p = prefix.clone();
                    p.push(w);
                    p
                }));
            }
            frontier = next;
        }
        assert_eq!(hyps[0].tokens, best.1, "source {source:?}");
        assert!((hyps[0].logprob as f64 - best.0).abs() < 1e-4);
    }
}

#[test]
fn an_ensemble_of_one_is_its_model() {
    let model = member(5);
    let alone = search(&model, &sources(), &config(Strategy::Beam { k: 3 }, 3)).unwrap();
    let ensemble = Ensemble::new(vec![member(5)]).unwrap();
    let wrapped = search(&ensemble, &sources(), &config(Strategy::Beam { k: 3 }, 3)).unwrap();
    assert_eq!(alone, wrapped);
}

#[test]
fn an_ensemble_is_batch_invariant_and_averages_attention() {
    let members = vec![member(21), member(22)];
    let ensemble = Ensemble::new(members).unwrap();
    let cfg = SearchConfig {
        return_attention: true,
        ..config(Strategy::Beam { k: 3 }, 2)
    };
    let batched = search(&ensemble, &sources(), &cfg).unwrap();
    for (i, source) in sources().iter().enumerate() {
        let alone = search(&ensemble, std::slice::from_ref(source), &cfg).unwrap();
        assert_eq!(alone[0], batched[i], "source {i}");
    }
    // Each member's attention rows sum to 1 over a non-empty source, so their mean does too.
    let attention = batched[0][0].attention.as_ref().expect("attention");
    for row in attention {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{row:?}");
    }
}

#[test]
fn members_must_share_a_vocabulary() {
    let err = Ensemble::new(vec![member(1), TableModel::random(12, SPECIAL, 2)])
        .err()
        .expect("different vocabularies are refused");
    assert!(
        matches!(&err, SearchError::InvalidConfig(m) if m.contains("member 2") && m.contains("12")),
        "{err}"
    );
    assert!(Ensemble::<TableModel>::new(Vec::new()).is_err());
}
