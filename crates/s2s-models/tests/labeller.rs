//! The labeller's heads and encoders: a sentence's labels must not depend on the padding its
//! batch needed (of tokens, and of characters for the spellings the recurrent and CNN encoders
//! read), per-token heads give one label per token, pooled heads one per sentence, and the label
//! vocabulary's specials are never chosen.

mod common;

use common::{assert_close, device};
use s2s_models::decoder::TextSource;
use s2s_models::labeller::{EncoderKind, Head, Labeller, LabellerConfig, label_all};
use s2s_models::{ModelConfig, Seq2SeqModel};

const SRC_VOCAB: usize = 23;
const LABELS: usize = 9;

fn config(encoder: EncoderKind, head: Head) -> LabellerConfig {
    let ModelConfig::Labeller(base) = s2s_models::preset("bilstm-tagger-tiny").unwrap() else {
        unreachable!()
    };
    assert!(base.chars.is_some(), "the tagger preset reads spellings");
    LabellerConfig {
        encoder,
        head,
        bidirectional: matches!(encoder, EncoderKind::Lstm | EncoderKind::Gru),
        heads: 2,
        // The Transformer's width is its embeddings' (validated).
        chars: base.chars.filter(|_| encoder != EncoderKind::Transformer),
        ..base
    }
}

fn build(cfg: &LabellerConfig) -> Labeller {
    let model = Seq2SeqModel::new(
        &ModelConfig::Labeller(cfg.clone()),
        SRC_VOCAB,
        LABELS,
        &device(),
    );
    let Seq2SeqModel::Labeller(m) = model else {
        unreachable!()
    };
    m
}

/// Sources whose spellings differ in length, so that a batch pads most of them.
fn sources() -> Vec<TextSource> {
    let ids = [
        vec![5, 6, 7, 8, 9, 10, 11],
        vec![12, 4],
        vec![13, 14, 15, 16],
        vec![17],
    ];
    ids.into_iter()
        .map(|ids| TextSource {
            spellings: Some(
                ids.iter()
                    .map(|&id| format!("{}{id}", "é".repeat(id as usize % 5)))
                    .collect(),
            ),
            ids,
        })
        .collect()
}

#[test]
fn labels_do_not_depend_on_the_batch_or_its_padding() {
    let srcs = sources();
    for encoder in [
        EncoderKind::Lstm,
        EncoderKind::Gru,
        EncoderKind::Transformer,
        EncoderKind::Cnn,
    ] {
        for head in [
            Head::Tokens,
            Head::Mean,
            Head::Max,
            Head::Last,
            Head::Attention,
        ] {
            let what = format!("{encoder:?} {head:?}");
            let model = build(&config(encoder, head));
            let together = label_all(&model, &device(), &srcs, s2s_data::Specials::S2S, 8);
            for (i, src) in srcs.iter().enumerate() {
                let alone = label_all(
                    &model,
                    &device(),
                    std::slice::from_ref(src),
                    s2s_data::Specials::S2S,
                    1,
                );
                let expected = if head.per_token() { src.ids.len() } else { 1 };
                assert_eq!(together[i].len(), expected, "{what}: sentence {i}");
                let ids = |v: &[(u32, f32)]| v.iter().map(|x| x.0).collect::<Vec<_>>();
                let probs = |v: &[(u32, f32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
                assert_eq!(ids(&together[i]), ids(&alone[0]), "{what}: sentence {i}");
                assert_close(&probs(&together[i]), &probs(&alone[0]), &what);
                for &(id, p) in &together[i] {
                    assert!(id >= 4 && (id as usize) < LABELS, "{what}: label {id}");
                    assert!(p > 0.0 && p <= 1.0, "{what}: probability {p}");
                }
            }
        }
    }
}

#[test]
fn presets_are_labellers_of_their_task_and_bad_configs_are_refused() {
    for (name, task) in [
        ("bilstm-tagger", s2s_data::Task::Tagging),
        ("bilstm-classifier", s2s_data::Task::Classification),
        (
            "transformer-classifier-tiny",
            s2s_data::Task::Classification,
        ),
        ("cnn-classifier", s2s_data::Task::Classification),
        ("speech-classifier-tiny", s2s_data::Task::Classification),
        ("transformer-small", s2s_data::Task::Translation),
    ] {
        let preset = s2s_models::preset(name).unwrap();
        assert_eq!(preset.task(), task, "{name}");
        assert_eq!(preset.reads_audio(), name.starts_with("speech"), "{name}");
        preset.validate().unwrap();
    }
    let mut bad = config(EncoderKind::Cnn, Head::Max);
    bad.widths.clear();
    assert!(bad.validate().unwrap_err().contains("window width"));
    bad.widths = vec![2];
    bad.layers = 2;
    assert!(bad.validate().unwrap_err().contains("layers = 1"));
    let ModelConfig::Labeller(mut bad) = s2s_models::preset("speech-classifier").unwrap() else {
        unreachable!()
    };
    bad.speech.as_mut().unwrap().ctc_weight = 0.3;
    assert!(bad.validate().unwrap_err().contains("ctc_weight = 0"));
    bad.speech.as_mut().unwrap().ctc_weight = 0.0;
    bad.head = Head::Tokens;
    assert!(bad.validate().unwrap_err().contains("pooled head"));
    bad.head = Head::Mean;
    bad.chars = config(EncoderKind::Lstm, Head::Tokens).chars;
    assert!(bad.validate().unwrap_err().contains("no spellings"));
    let mut bad = config(EncoderKind::Transformer, Head::Mean);
    bad.chars = config(EncoderKind::Lstm, Head::Tokens).chars;
    assert!(bad.validate().unwrap_err().contains("lstm, gru or cnn"));
    bad.chars.as_mut().unwrap().maps = 0;
    bad.validate().unwrap();
    let mut bad = config(EncoderKind::Lstm, Head::Tokens);
    bad.chars.as_mut().unwrap().width = 0;
    assert!(bad.validate().unwrap_err().contains("at least 1"));
    let mut bad = config(EncoderKind::Transformer, Head::Mean);
    bad.emb_dim += 1;
    assert!(bad.validate().unwrap_err().contains("emb_dim"));
    let mut bad = config(EncoderKind::Transformer, Head::Mean);
    bad.heads = 3;
    assert!(bad.validate().unwrap_err().contains("multiple of heads"));
    let text =
        toml::to_string(&ModelConfig::Labeller(config(EncoderKind::Gru, Head::Max))).unwrap();
    assert!(text.contains("type = \"labeller\""), "{text}");
    assert!(text.contains("head = \"max\""), "{text}");
    let mut extra = text.clone();
    extra.push_str("no_such_field = 1\n");
    assert!(toml::from_str::<ModelConfig>(&extra).is_err());
}
