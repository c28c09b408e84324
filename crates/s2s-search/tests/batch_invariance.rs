//! Each sentence decoded alone is bitwise equal to the same sentence decoded in a batch of 64.

use s2s_search::toy::{Fallback, TableModel};
use s2s_search::{
    Hypothesis, LenRatio, LengthPenalty, SearchConfig, SpecialTokens, Strategy, search,
};

const SPECIAL: SpecialTokens = SpecialTokens {
    pad: 0,
    unk: 1,
    bos: 2,
    eos: 3,
};

/// 64 sources of lengths 0..=20 (deterministic pseudo-random tokens), with duplicates.
fn sources(vocab: u32) -> Vec<Vec<u32>> {
    let mut x: u64 = 0x1234_5678;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out: Vec<Vec<u32>> = (0..62)
        .map(|_| {
            let len = (next() % 21) as usize;
            (0..len)
                .map(|_| 4 + (next() % (vocab as u64 - 4)) as u32)
                .collect()
        })
        .collect();
    out.push(out[3].clone());
    out.push(Vec::new());
    out
}

fn model(vocab: usize) -> TableModel {
    TableModel::random(vocab, SPECIAL, 42)
        .with_fallback(Fallback::Hashed {
            seed: 42,
            sharpness: 5.0,
            eos_growth: 0.4,
        })
        .with_attention(true)
}

/// Tokens, score, logprob, token log-probs and attention, as bits.
type Bits = (Vec<u32>, u32, u32, Vec<u32>, Option<Vec<Vec<u32>>>);

fn bits(h: &Hypothesis) -> Bits {
    (
        h.tokens.clone(),
        h.score.to_bits(),
        h.logprob.to_bits(),
        h.token_logprobs.iter().map(|x| x.to_bits()).collect(),
        h.attention.as_ref().map(|a| {
            a.iter()
                .map(|r| r.iter().map(|x| x.to_bits()).collect())
                .collect()
        }),
    )
}

fn check(model: &TableModel, srcs: &[Vec<u32>], cfg: &SearchConfig) {
    let batch = search(model, srcs, cfg).unwrap();
    assert_eq!(batch.len(), srcs.len());
    for (i, src) in srcs.iter().enumerate() {
        let alone = search(model, std::slice::from_ref(src), cfg).unwrap();
        assert_eq!(alone.len(), 1);
        assert_eq!(
            alone[0].len(),
            batch[i].len(),
            "sentence {i}, {:?}",
            cfg.strategy
        );
        assert!(!alone[0].is_empty());
        for (a, b) in alone[0].iter().zip(&batch[i]) {
            assert_eq!(bits(a), bits(b), "sentence {i}, {:?}", cfg.strategy);
            let att = a.attention.as_ref().expect("attention requested");
            assert_eq!(att.len(), a.tokens.len() + 1);
            assert!(att.iter().all(|r| r.len() == src.len()));
        }
    }
}

fn config(strategy: Strategy, nbest: usize) -> SearchConfig {
    SearchConfig {
        strategy,
        nbest,
        length_penalty: LengthPenalty::Alpha(0.75),
        max_len: 30,
        max_len_ratio: Some(LenRatio {
            ratio: 1.5,
            offset: 3,
        }),
        no_repeat_ngram: 3,
        special: SPECIAL,
        return_attention: true,
        ..SearchConfig::default()
    }
}

#[test]
fn greedy_is_batch_invariant() {
    let m = model(24);
    let srcs = sources(24);
    check(&m, &srcs, &config(Strategy::Greedy, 1));
    // Finished sentences leave the batch: fewer rows than steps x sentences.
    m.reset_stats();
    search(&m, &srcs, &config(Strategy::Greedy, 1)).unwrap();
    let s = m.stats();
    assert!(s.rows < s.steps * srcs.len(), "{s:?}");
}

#[test]
fn beam_is_batch_invariant() {
    let m = model(24);
    let srcs = sources(24);
    check(&m, &srcs, &config(Strategy::Beam { k: 4 }, 3));
    let mut cfg = config(Strategy::Beam { k: 5 }, 5);
    cfg.length_penalty = LengthPenalty::Gnmt(0.6);
    cfg.min_len = 2;
    cfg.ban_unk = true;
    check(&m, &srcs, &cfg);
    m.reset_stats();
    search(&m, &srcs, &config(Strategy::Beam { k: 4 }, 1)).unwrap();
    let s = m.stats();
    assert!(s.rows < s.steps * srcs.len() * 4, "{s:?}");
}

#[test]
fn sampling_is_batch_invariant() {
    let m = model(24);
    let srcs = sources(24);
    let strategy = Strategy::Sample {
        temperature: 0.8,
        top_k: 6,
        top_p: 0.9,
        seed: 2024,
    };
    check(&m, &srcs, &config(strategy, 3));
    let strategy = Strategy::Sample {
        temperature: 1.3,
        top_k: 0,
        top_p: 1.0,
        seed: 7,
    };
    check(&m, &srcs, &config(strategy, 1));
    // Different seeds give different samples somewhere in the batch.
    let a = search(&m, &srcs, &config(strategy, 2)).unwrap();
    let other = Strategy::Sample {
        temperature: 1.3,
        top_k: 0,
        top_p: 1.0,
        seed: 8,
    };
    let b = search(&m, &srcs, &config(other, 2)).unwrap();
    assert_ne!(a, b);
}

#[test]
fn exhaustive_is_batch_invariant() {
    let m = model(6);
    let srcs = sources(6);
    let mut cfg = config(Strategy::Exhaustive, 3);
    cfg.max_len_ratio = Some(LenRatio {
        ratio: 0.2,
        offset: 1,
    });
    check(&m, &srcs, &cfg);
}
