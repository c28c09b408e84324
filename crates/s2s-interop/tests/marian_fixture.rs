//! Parity with Hugging Face transformers on the committed MarianMT fixture
//! (`tests/fixtures/marian/`, made by its `make_fixture.py`): the same token ids as
//! `MarianTokenizer`, logits within 1e-4, the same greedy and beam outputs, and an export that
//! imports back to bit-identical weights and logits.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use burn::tensor::{Device, Int, Tensor, TensorData};
use s2s_data::TextTokenizer;
use s2s_infer::Translator;
use s2s_infer::model_dir::{SRC_TOKENIZER, TGT_TOKENIZER};
use s2s_interop::marian;
use s2s_models::PaddedSource;
use s2s_search::{LengthPenalty, SearchConfig, Strategy};
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/marian")
}

fn reference() -> &'static Value {
    static R: OnceLock<Value> = OnceLock::new();
    R.get_or_init(|| {
        let text = std::fs::read_to_string(fixture().join("reference.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    })
}

/// The fixture imported once for all tests (kept in a temporary folder for the process).
fn imported() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        marian::import(&fixture().join("model"), &tmp.path().join("m"), false).unwrap();
        tmp
    })
    .path()
    .join("m")
    .leak()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

fn device() -> Device {
    Device::flex()
}

#[test]
fn source_and_target_ids_match_marian_tokenizer() {
    let dir = imported();
    for (file, key) in [
        (SRC_TOKENIZER, "source_tokenization"),
        (TGT_TOKENIZER, "target_tokenization"),
    ] {
        let tok = TextTokenizer::from_file(dir.join(file)).unwrap();
        let eos = tok.specials().eos;
        let cases = reference()[key].as_array().unwrap();
        assert!(cases.len() >= 15);
        let mut wrong = Vec::new();
        for case in cases {
            let text = case["text"].as_str().unwrap();
            let mut got = tok.encode(text);
            got.push(eos);
            if got != ids(&case["ids"]) {
                wrong.push(format!("{text:?}: got {got:?}, want {}", case["ids"]));
            }
        }
        assert!(wrong.is_empty(), "{key}:\n{}", wrong.join("\n"));
    }
}

#[test]
fn decoding_matches_marian_tokenizer() {
    let tok = TextTokenizer::from_file(imported().join(TGT_TOKENIZER)).unwrap();
    for case in reference()["decode"].as_array().unwrap() {
        assert_eq!(
            tok.decode(&ids(&case["ids"])),
            case["text"].as_str().unwrap(),
            "{}",
            case["note"]
        );
    }
}

/// Teacher-forced logits `[len, vocab]` of the model in `dir`.
fn logits(dir: &Path, source: &[u32], decoder_input: &[u32]) -> Vec<f32> {
    let t = Translator::load(dir, &device()).unwrap();
    let model = &t.loaded().model;
    let src = PaddedSource::new(&[source.to_vec()], t.specials().pad, &device());
    let tgt: Vec<i64> = decoder_input.iter().map(|&x| x as i64).collect();
    let tgt: Tensor<2, Int> =
        Tensor::from_data(TensorData::new(tgt, [1, decoder_input.len()]), &device());
    model
        .forward_teacher(&src, tgt, None)
        .into_data()
        .try_into_vec::<f32>()
        .unwrap()
}

/// The largest difference between the teacher-forced logits of the model in `dir` and
/// transformers' reference logits, and the spread (max - min) of the reference logits.
fn logit_difference_from_transformers(dir: &Path) -> (f32, f32) {
    let (mut worst, mut lo, mut hi) = (0f32, f32::MAX, f32::MIN);
    for case in reference()["logits"].as_array().unwrap() {
        let got = logits(
            dir,
            &ids(&case["source_ids"]),
            &ids(&case["decoder_input_ids"]),
        );
        let want: Vec<f32> = case["logits"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| {
                row.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
            })
            .collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            worst = worst.max((g - w).abs());
            (lo, hi) = (lo.min(*w), hi.max(*w));
        }
    }
    (worst, hi - lo)
}

#[test]
fn logits_match_transformers_within_1e4() {
    let (worst, _) = logit_difference_from_transformers(imported());
    eprintln!("largest logit difference from transformers: {worst:e}");
    assert!(worst < 1e-4, "largest logit difference {worst}");
}

/// Stated tolerance of int8 inference: its logits stay within 2% of the reference logits'
/// spread of transformers' f32 logits.
const INT8_LOGIT_TOLERANCE: f32 = 0.02;

#[test]
fn int8_logits_stay_close_to_transformers() {
    let tmp = tempfile::tempdir().unwrap();
    let q = tmp.path().join("q");
    s2s_infer::quantize::quantize(imported(), &q, s2s_models::engine::CacheFormat::Int8, false)
        .unwrap();
    let (worst, spread) = logit_difference_from_transformers(&q);
    eprintln!("int8: largest logit difference from transformers {worst} of a spread of {spread}");
    assert!(worst > 0.0, "the int8 model computed nothing in int8");
    assert!(
        worst <= INT8_LOGIT_TOLERANCE * spread,
        "int8 logits differ by {worst}, more than {INT8_LOGIT_TOLERANCE} of {spread}"
    );
}

/// Decodes every `set` entry one sentence at a time and compares with transformers' outputs.
fn check_generation(set: &Value, cfg: &SearchConfig, check_score: bool) {
    let t = Translator::load(imported(), &device()).unwrap();
    let eos = t.specials().eos;
    let cases = set.as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let mut source = ids(&case["source_ids"]);
        assert_eq!(source.pop(), Some(eos));
        assert_eq!(t.encode(text), source, "{text:?}");
        let hyps = t.search(&[source.into()], cfg, 1).unwrap();
        let mut got = hyps[0][0].tokens.clone();
        got.push(eos);
        assert_eq!(got, ids(&case["output_ids"]), "{text:?}");
        assert_eq!(
            t.decode(&hyps[0][0].tokens, &[]),
            case["output_text"].as_str().unwrap()
        );
        if check_score {
            let want = case["sequences_score"].as_f64().unwrap() as f32;
            assert!(
                (hyps[0][0].score - want).abs() < 1e-3,
                "{text:?}: score {} vs {want}",
                hyps[0][0].score
            );
        }
    }
}

fn search(strategy: Strategy, length_penalty: LengthPenalty, max_new_tokens: u64) -> SearchConfig {
    let t = Translator::load(imported(), &device()).unwrap();
    SearchConfig {
        length_penalty,
        // transformers' `max_new_tokens` counts the final `</s>`; s2s's `max_len` does not.
        max_len: max_new_tokens as usize - 1,
        max_len_ratio: None,
        ..t.search_defaults(strategy)
    }
}

#[test]
fn greedy_and_beam_outputs_match_generate() {
    let g = &reference()["generate"];
    let m = g["settings"]["max_new_tokens"].as_u64().unwrap();
    check_generation(
        &g["greedy"],
        &search(Strategy::Greedy, LengthPenalty::None, m),
        false,
    );
    // Raw log-probability ranking (length_penalty 0, early_stopping false): the same bound.
    check_generation(
        &g["beam4_lp0"],
        &search(Strategy::Beam { k: 4 }, LengthPenalty::None, m),
        true,
    );
    // logprob / L with L counting `</s>` (early_stopping "never": the same bound).
    check_generation(
        &g["beam4_lp1"],
        &search(Strategy::Beam { k: 4 }, LengthPenalty::Alpha(1.0), m),
        true,
    );
    // At the length limit the forced `</s>` decides nothing for greedy search.
    let forced = &g["forced_eos"];
    let m = forced["max_new_tokens"].as_u64().unwrap();
    check_generation(
        &forced["greedy"],
        &search(Strategy::Greedy, LengthPenalty::None, m),
        false,
    );
}

#[test]
fn export_then_import_is_bit_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let exported = tmp.path().join("hf");
    let done = marian::export(imported(), &exported, false).unwrap();
    assert!(!done.reordered);
    // The same tensors, bit for bit, as the fixture's own checkpoint.
    let read = |dir: &Path| {
        let bytes = std::fs::read(dir.join(marian::WEIGHTS)).unwrap();
        marian::weights::read_safetensors(&bytes, "weights").unwrap()
    };
    let original = read(&fixture().join("model"));
    let ours = read(&exported);
    assert_eq!(
        original.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>()
    );
    for (name, t) in &original {
        assert!(ours[name] == *t, "{name} differs");
    }
    let vocab = |dir: &Path| marian::read_vocab(&dir.join(marian::VOCAB_JSON)).unwrap();
    assert_eq!(vocab(&fixture().join("model")), vocab(&exported));
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(exported.join(marian::CONFIG_JSON)).unwrap())
            .unwrap();
    let fixture_config: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture().join("model").join(marian::CONFIG_JSON)).unwrap(),
    )
    .unwrap();
    for key in [
        "vocab_size",
        "d_model",
        "encoder_layers",
        "decoder_layers",
        "encoder_attention_heads",
        "encoder_ffn_dim",
        "activation_function",
        "pad_token_id",
        "eos_token_id",
        "decoder_start_token_id",
        "scale_embedding",
    ] {
        assert_eq!(config[key], fixture_config[key], "{key}");
    }
    // Imported again: the same logits, bit for bit.
    let again = tmp.path().join("again");
    marian::import(&exported, &again, false).unwrap();
    for case in reference()["logits"].as_array().unwrap() {
        let (s, d) = (ids(&case["source_ids"]), ids(&case["decoder_input_ids"]));
        let a = logits(imported(), &s, &d);
        let b = logits(&again, &s, &d);
        assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}

#[test]
fn target_language_tags_are_listed_and_checked() {
    let t = Translator::load(imported(), &device()).unwrap();
    assert_eq!(t.language_tags(), vec![">>cmn_Hans<<", ">>cmn_Hant<<"]);
    let texts = vec!["I am Japanese.".to_owned()];
    let tagged = t.with_target_lang(&texts, "cmn_Hans").unwrap();
    assert_eq!(tagged, vec![">>cmn_Hans<< I am Japanese."]);
    assert_eq!(
        t.with_target_lang(&texts, ">>cmn_Hant<<").unwrap()[0],
        ">>cmn_Hant<< I am Japanese."
    );
    let err = t.with_target_lang(&texts, "deu").unwrap_err().to_string();
    assert!(
        err.contains(">>deu<<") && err.contains(">>cmn_Hans<<"),
        "{err}"
    );
    // The tag is one token, the vocabulary's own id for it.
    let ids = t.encode(&tagged[0]);
    assert_eq!(
        ids[0],
        t.loaded()
            .src_tokenizer
            .token_to_id(" >>cmn_Hans<<")
            .unwrap()
    );
}
