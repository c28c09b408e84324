//! `s2s plot` (training curves) and `s2s translate --attention-plot` (heatmaps) on a real trained
//! model: the files are written and are valid SVG with the expected cells and series.

mod serving;

use s2s_infer::plot::{write_attention_plots, write_training_plots};
use s2s_serve::SearchOptions;
use serving::*;
use std::path::Path;

fn parse_svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not valid XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    text
}

fn elements<'a>(doc: &'a roxmltree::Document, name: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == name)
        .collect()
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    elements(doc, "text")
        .iter()
        .filter_map(|n| n.text().map(|t| t.trim().to_owned()))
        .collect()
}

#[test]
fn training_curves() {
    let model = model_dir();
    let records = s2s_infer::metrics::read(&model.join("metrics.jsonl")).unwrap();
    assert_eq!(records.len(), 5, "validations at steps 60..=300");
    let out = tempfile::tempdir().unwrap();
    let written = write_training_plots(model, out.path()).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["loss.svg", "bleu.svg", "lr.svg", "curves.svg"]);
    for (path, series) in written.iter().take(3).zip([2usize, 1, 1]) {
        let text = parse_svg(path);
        let doc = roxmltree::Document::parse(&text).unwrap();
        // Two panels (against steps and minutes); per panel each series is a line, a legend
        // line and one marker per validation.
        let lines = elements(&doc, "polyline")
            .into_iter()
            .filter(|n| n.attribute("stroke-width") == Some("2"))
            .count();
        assert_eq!(lines, 2 * series * 2, "{}: lines", path.display());
        assert_eq!(
            elements(&doc, "circle").len(),
            2 * series * records.len(),
            "{}: markers",
            path.display()
        );
        let labels = texts(&doc);
        assert!(labels.iter().any(|t| t == "step"), "{labels:?}");
        assert!(labels.iter().any(|t| t == "minutes"), "{labels:?}");
    }
    // curves.svg: validation BLEU (1 series) and loss (2 series), each one panel against minutes.
    let text = parse_svg(&written[3]);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let lines = elements(&doc, "polyline")
        .into_iter()
        .filter(|n| n.attribute("stroke-width") == Some("2"))
        .count();
    assert_eq!(lines, 3 * 2, "curves.svg: lines");
    assert_eq!(elements(&doc, "circle").len(), 3 * records.len());
    let labels = texts(&doc);
    assert!(labels.iter().any(|t| t == "minutes"), "{labels:?}");
    assert!(!labels.iter().any(|t| t == "step"), "{labels:?}");
    assert!(
        labels
            .iter()
            .any(|t| t.contains("validation BLEU and loss")),
        "{labels:?}"
    );
    let loss = std::fs::read_to_string(out.path().join("loss.svg")).unwrap();
    assert!(loss.contains("train loss") && loss.contains("valid loss"));

    // No metrics: a clear error.
    let empty = tempfile::tempdir().unwrap();
    let e = write_training_plots(empty.path(), out.path()).unwrap_err();
    assert!(e.to_string().contains("metrics.jsonl not found"), "{e}");
}

/// What `s2s translate --attention-plot` does: decode with attention, then plot each sentence.
#[test]
fn attention_plots() {
    let device = burn::tensor::Device::flex();
    let translator = s2s_infer::Translator::load(model_dir(), &device).unwrap();
    let lines: Vec<String> = vec!["1 2 3 4".into(), "9 8 7 6 5".into()];
    let cfg = SearchOptions {
        attention: true,
        ..SearchOptions::default()
    }
    .to_config(translator.specials());
    let translations = translator.translate(&lines, &cfg, 64).unwrap();
    let arch = translator.arch_name();
    let out = tempfile::tempdir().unwrap();
    let path = out.path().join("att.svg");

    // Several sentences: att.1.svg, att.2.svg.
    let written = write_attention_plots(&path, &translations, &arch).unwrap();
    assert_eq!(
        written,
        vec![out.path().join("att.1.svg"), out.path().join("att.2.svg")]
    );
    assert!(!path.exists());
    for (file, (line, t)) in written.iter().zip(lines.iter().zip(&translations)) {
        let text = parse_svg(file);
        let doc = roxmltree::Document::parse(&text).unwrap();
        let src = translator.encode(line);
        let best = &t.hyps[0];
        // Source tokens, plus <eos> when the search returns that column.
        let n_src = best.attention.as_ref().unwrap().mean[0].len();
        assert!(n_src == src.len() || n_src == src.len() + 1);
        let n_tgt = best.tokens.len() + 1;
        // One background rectangle, then one per cell.
        assert_eq!(
            elements(&doc, "rect").len(),
            1 + n_src * n_tgt,
            "{}",
            file.display()
        );
        let labels = texts(&doc);
        assert!(labels.iter().any(|t| t == "<eos>"), "{labels:?}");
        for tok in translator.loaded().src_tokenizer.tokens(&src) {
            assert!(labels.contains(&tok), "{tok} labelled: {labels:?}");
        }
    }

    // One sentence: the file itself.
    let written = write_attention_plots(&path, &translations[..1], &arch).unwrap();
    assert_eq!(written, vec![path.clone()]);
    parse_svg(&path);

    // Without attention there is nothing to plot.
    let mut no_att = translations.clone();
    no_att[0].hyps[0].attention = None;
    let e = write_attention_plots(&path, &no_att, &arch).unwrap_err();
    assert!(e.to_string().contains("no attention"), "{e}");
    assert!(e.to_string().contains(&arch), "{e}");
}
