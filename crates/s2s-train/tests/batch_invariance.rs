//! A sentence decodes to the same output and score alone as in a batch of 64 mixed-length
//! sentences, with a real trained model (search is batch-invariant by construction; this checks
//! that the model's padding handling keeps it so).

mod common;

use common::*;
use s2s_search::{SearchConfig, Strategy};

#[test]
fn trained_model_decodes_the_same_alone_and_in_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let data = reversal_data(dir.path(), 2000, 8);
    let run = run_config(
        "rnnsearch-tiny",
        &data,
        "max_steps = 300\nmax_tokens = 1200\nlr = 5e-3\nwarmup_steps = 30\nvalid_every = 300\npatience = 0",
    );
    let model_dir = dir.path().join("model");
    train(&model_dir, &data, &run, false);
    let device = burn::tensor::Device::flex();
    let model = s2s_models::Seq2SeqModel::new(&run.model, run.src_vocab, run.tgt_vocab, &device);
    let model = s2s_models::io::load_weights(model, &model_dir.join("model.safetensors")).unwrap();
    let test = data.encode(data.test.as_ref().unwrap());
    let sources: Vec<Vec<u32>> = test.src[..64].to_vec();
    let lengths: std::collections::BTreeSet<usize> = sources.iter().map(Vec::len).collect();
    assert!(lengths.len() >= 4, "the batch mixes lengths: {lengths:?}");
    for strategy in [Strategy::Greedy, Strategy::Beam { k: 5 }] {
        let cfg = SearchConfig {
            strategy,
            nbest: 1,
            max_len: 20,
            return_attention: true,
            special: s2s_infer::defaults::special_tokens(s2s_data::Specials::S2S),
            ..Default::default()
        };
        let batched =
            s2s_models::decoder::translate_all(&model, &device, run.tgt_vocab, &sources, &cfg, 64)
                .unwrap();
        for (i, src) in sources.iter().enumerate() {
            let alone = s2s_models::decoder::translate_all(
                &model,
                &device,
                run.tgt_vocab,
                std::slice::from_ref(src),
                &cfg,
                1,
            )
            .unwrap();
            let (a, b) = (&alone[0][0], &batched[i][0]);
            assert_eq!(
                a.tokens, b.tokens,
                "{strategy:?} sentence {i}: tokens differ"
            );
            assert_eq!(
                a.score.to_bits(),
                b.score.to_bits(),
                "{strategy:?} sentence {i}: score {} vs {}",
                a.score,
                b.score
            );
            assert_eq!(
                a.logprob.to_bits(),
                b.logprob.to_bits(),
                "{strategy:?} sentence {i}: logprob differs"
            );
        }
    }
}
