//! Pictures as SVG, drawn with `plotters`: attention heatmaps (`s2s translate --attention-plot`)
//! and training curves (`s2s plot`).
//!
//! plotters' SVG backend writes text as `<text>` elements, so no font files are needed. (Its
//! bitmap backend would need a font to draw text, which is why there is no PNG output.)

use crate::Translation;
use crate::metrics::MetricsRecord;
use crate::model_dir::METRICS;
use anyhow::{Context, Result, bail};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

fn plot_err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing failed: {e}")
}

/// White (weight 0) to dark blue (weight 1).
fn heat_color(w: f32) -> RGBColor {
    let t = w.clamp(0.0, 1.0) as f64;
    let lerp = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    RGBColor(lerp(255.0, 29.0), lerp(255.0, 78.0), lerp(255.0, 216.0))
}

fn text_width(s: &str, size: f64) -> u32 {
    (s.chars().count() as f64 * size * 0.62).ceil() as u32
}

/// An attention heatmap: one filled rectangle per (output token, source token) cell, source tokens
/// along the x axis, output tokens down the y axis (first output token at the top). `weights` has
/// one row per entry of `tgt`, each as long as `src`.
pub fn attention_svg(
    src: &[String],
    tgt: &[String],
    weights: &[Vec<f32>],
    title: &str,
) -> Result<String> {
    if src.is_empty() || tgt.is_empty() {
        bail!("nothing to plot: the attention matrix is empty");
    }
    if weights.len() != tgt.len() || weights.iter().any(|r| r.len() != src.len()) {
        bail!(
            "attention matrix is not {} x {} (output x source tokens)",
            tgt.len(),
            src.len()
        );
    }
    const CELL: u32 = 34;
    const FONT: f64 = 14.0;
    let rotate = src.iter().any(|s| s.chars().count() > 2);
    // Room for the tick labels and the axis description.
    let x_label_area = if rotate {
        src.iter().map(|s| text_width(s, FONT)).max().unwrap_or(0) + 34
    } else {
        48
    };
    let y_label_area = tgt.iter().map(|s| text_width(s, FONT)).max().unwrap_or(0) + 34;
    let margin = 12;
    let caption = 30;
    let width = (margin * 2 + y_label_area + CELL * src.len() as u32)
        .max(text_width(title, 16.0) + 2 * margin);
    let height = margin * 2 + caption + x_label_area + CELL * tgt.len() as u32;
    let (n_src, n_tgt) = (src.len(), tgt.len());

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(margin)
            .x_label_area_size(x_label_area)
            .y_label_area_size(y_label_area)
            // `a..b` is inclusive for discrete plotters ranges: `0..n - 1` has n segments.
            .build_cartesian_2d(
                (0..n_src - 1).into_segmented(),
                (0..n_tgt - 1).into_segmented(),
            )
            .map_err(plot_err)?;
        // Long source tokens are drawn below, rotated; short ones as ordinary tick labels.
        let x_label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) if *i < n_src && !rotate => src[*i].clone(),
            _ => String::new(),
        };
        // Row r of the matrix is drawn at y = n_tgt - 1 - r, so the first output token is on top.
        let y_label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) if *i < n_tgt => tgt[n_tgt - 1 - *i].clone(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(n_src)
            .y_labels(n_tgt)
            .x_desc("source")
            .y_desc("output")
            .axis_desc_style(("sans-serif", 13))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_label_style(("sans-serif", FONT))
            .y_label_style(("sans-serif", FONT))
            .draw()
            .map_err(plot_err)?;
        if rotate {
            // Read bottom to top, ending just below the axis.
            let style = TextStyle::from(
                ("sans-serif", FONT)
                    .into_font()
                    .transform(FontTransform::Rotate270),
            )
            .pos(Pos::new(HPos::Right, VPos::Center));
            chart
                .draw_series(src.iter().enumerate().map(|(i, tok)| {
                    EmptyElement::at((SegmentValue::CenterOf(i), SegmentValue::Exact(0)))
                        + Text::new(tok.clone(), (0, 10), style.clone())
                }))
                .map_err(plot_err)?;
        }
        chart
            .draw_series(weights.iter().enumerate().flat_map(|(r, row)| {
                let y = n_tgt - 1 - r;
                row.iter().enumerate().map(move |(c, &w)| {
                    Rectangle::new(
                        [
                            (SegmentValue::Exact(c), SegmentValue::Exact(y)),
                            (SegmentValue::Exact(c + 1), SegmentValue::Exact(y + 1)),
                        ],
                        heat_color(w).filled(),
                    )
                })
            }))
            .map_err(plot_err)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// The file the plot of sentence `index` (0-based) of `count` goes to: `path` itself for a single
/// sentence, otherwise `path` with `.N` (1-based) before its extension: `out.svg` becomes
/// `out.1.svg`, `out.2.svg`, ...
pub fn numbered_path(path: &Path, index: usize, count: usize) -> PathBuf {
    if count == 1 {
        return path.to_owned();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{}.{}", index + 1, ext.to_string_lossy()),
        None => format!("{stem}.{}", index + 1),
    };
    path.with_file_name(name)
}

/// Writes the attention heatmap of the best hypothesis of every translation (see
/// [`numbered_path`] for the file names) and returns the paths written. A blank line (no source
/// tokens but a target-language tag, translated without decoding) has none and is skipped.
/// Fails if the model returned no attention; `arch` names the model in that message.
pub fn write_attention_plots(
    path: &Path,
    translations: &[Translation],
    arch: &str,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (i, t) in translations.iter().enumerate() {
        let Some(best) = t.hyps.first() else { continue };
        let blank = t
            .src_tokens
            .iter()
            .all(|s| s2s_data::sentencepiece::is_language_tag(s));
        if blank && best.attention.is_none() {
            continue;
        }
        let Some(att) = &best.attention else {
            bail!(
                "the model ({arch}) returned no attention, so there is nothing to plot; \
                 --attention-plot needs an attentional architecture such as rnnsearch or luong"
            );
        };
        let title = truncate(&t.src, 80);
        let svg = attention_svg(&att.src, &att.tgt, &att.mean, &title)
            .with_context(|| format!("sentence {}", i + 1))?;
        let out = numbered_path(path, i, translations.len());
        s2s_data::atomic_write(&out, svg.as_bytes())
            .with_context(|| format!("cannot write {}", out.display()))?;
        written.push(out);
    }
    Ok(written)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        s.chars().take(n - 1).chain(['…']).collect()
    }
}

/// A series of a figure: its legend label, colour and value.
type Series = (&'static str, RGBColor, fn(&MetricsRecord) -> f64);

/// One training-curve figure: a name (the file is `NAME.svg`), a y-axis label and its series.
struct Figure {
    name: &'static str,
    y_desc: &'static str,
    legend: SeriesLabelPosition,
    series: Vec<Series>,
}

/// The figures of a run: loss, its task's validation score (BLEU, with ROUGE where it was
/// measured, or label accuracy for a labelling model, whose records have it), and the learning
/// rate.
fn figures(records: &[MetricsRecord]) -> Vec<Figure> {
    let labels = records.iter().any(|r| r.valid_accuracy.is_finite());
    let score = if labels {
        Figure {
            name: "accuracy",
            y_desc: "validation accuracy %",
            legend: SeriesLabelPosition::LowerRight,
            series: vec![("valid accuracy", RGBColor(22, 163, 74), |r| {
                r.valid_accuracy
            })],
        }
    } else {
        let mut series: Vec<Series> = vec![("valid BLEU", RGBColor(22, 163, 74), |r| r.valid_bleu)];
        let rouge = records.iter().any(|r| r.valid_rouge.is_finite());
        if rouge {
            series.push(("valid ROUGE", RGBColor(234, 88, 12), |r| r.valid_rouge));
        }
        Figure {
            name: "bleu",
            y_desc: if rouge {
                "validation BLEU, ROUGE"
            } else {
                "validation BLEU"
            },
            legend: SeriesLabelPosition::LowerRight,
            series,
        }
    };
    vec![
        Figure {
            name: "loss",
            y_desc: "loss",
            legend: SeriesLabelPosition::UpperRight,
            series: vec![
                ("train loss", RGBColor(29, 78, 216), |r| r.train_loss),
                ("valid loss", RGBColor(220, 38, 38), |r| r.valid_loss),
            ],
        },
        score,
        Figure {
            name: "lr",
            y_desc: "learning rate",
            legend: SeriesLabelPosition::LowerRight,
            series: vec![("learning rate", RGBColor(147, 51, 234), |r| r.lr)],
        },
    ]
}

fn padded_range(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo {
        (hi - lo) * 0.08
    } else {
        lo.abs().max(1e-3) * 0.1
    };
    (lo - pad)..(hi + pad)
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    fig: &Figure,
    records: &[MetricsRecord],
    x_desc: &str,
    x_of: fn(&MetricsRecord) -> f64,
    integer_x: bool,
) -> Result<()> {
    let x_max = records.iter().map(x_of).fold(0.0, f64::max);
    let x_range = 0.0..if x_max > 0.0 { x_max * 1.02 } else { 1.0 };
    let y_range = padded_range(
        fig.series
            .iter()
            .flat_map(|(_, _, f)| records.iter().map(f)),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{} vs {x_desc}", fig.y_desc), ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(fig.y_desc)
        .label_style(("sans-serif", 12))
        .axis_desc_style(("sans-serif", 13))
        .light_line_style(RGBColor(240, 240, 240))
        .x_label_formatter(&|v| {
            if integer_x {
                format!("{v:.0}")
            } else {
                let s = format!("{v:.3}");
                s.trim_end_matches('0').trim_end_matches('.').to_owned()
            }
        })
        .y_label_formatter(&|v| {
            if v.abs() > 0.0 && v.abs() < 1e-2 {
                format!("{v:.1e}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()
        .map_err(plot_err)?;
    for &(label, color, f) in &fig.series {
        let points: Vec<(f64, f64)> = records
            .iter()
            .map(|r| (x_of(r), f(r)))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(plot_err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color.stroke_width(2)));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(plot_err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(200, 200, 200))
        .label_font(("sans-serif", 12))
        .position(fig.legend.clone())
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// The training curves of `metrics.jsonl` as SVG figures `(name, svg)`: `loss` (train and
/// validation), `bleu` (validation BLEU; `accuracy` for a labelling model) and `lr` (learning
/// rate), each with two panels: against
/// steps and against minutes of training. Every validation is a marker on its line.
pub fn training_svgs(records: &[MetricsRecord]) -> Result<Vec<(&'static str, String)>> {
    if records.is_empty() {
        bail!("no validations recorded yet: metrics.jsonl is empty");
    }
    let mut out = Vec::new();
    for fig in figures(records) {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (1000, 380)).into_drawing_area();
            root.fill(&WHITE).map_err(plot_err)?;
            let panels = root.split_evenly((1, 2));
            draw_panel(&panels[0], &fig, records, "step", |r| r.step as f64, true)?;
            draw_panel(
                &panels[1],
                &fig,
                records,
                "minutes",
                |r| r.elapsed_sec / 60.0,
                false,
            )?;
            root.present().map_err(plot_err)?;
        }
        out.push((fig.name, svg));
    }
    Ok(out)
}

/// One figure for reports such as the benchmark table: validation BLEU or accuracy (left) and train and
/// validation loss (right), both against minutes of training, under `title`.
pub fn curves_svg(records: &[MetricsRecord], title: &str) -> Result<String> {
    if records.is_empty() {
        bail!("no validations recorded yet: metrics.jsonl is empty");
    }
    let figs = figures(records);
    let find = |name: &str| figs.iter().find(|f| f.name == name).expect("figure exists");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 410)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let root = root.titled(title, ("sans-serif", 18)).map_err(plot_err)?;
        let panels = root.split_evenly((1, 2));
        let minutes = |r: &MetricsRecord| r.elapsed_sec / 60.0;
        // The task's score: BLEU, or label accuracy.
        draw_panel(&panels[0], &figs[1], records, "minutes", minutes, false)?;
        draw_panel(&panels[1], find("loss"), records, "minutes", minutes, false)?;
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}

/// `s2s plot`: reads `MODEL_DIR/metrics.jsonl` and writes `loss.svg`, `bleu.svg` and `lr.svg`
/// into `out_dir`, and `curves.svg` (validation BLEU and loss against minutes, in one figure
/// titled with the model directory's name); returns the paths written.
pub fn write_training_plots(model_dir: &Path, out_dir: &Path) -> Result<Vec<PathBuf>> {
    let path = model_dir.join(METRICS);
    if !path.exists() {
        bail!(
            "{} not found: is {} a MODEL_DIR written by `s2s train`?",
            path.display(),
            model_dir.display()
        );
    }
    let records = crate::metrics::read(&path)?;
    let figs = training_svgs(&records).with_context(|| path.display().to_string())?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let mut written = Vec::new();
    for (name, svg) in figs {
        let p = out_dir.join(format!("{name}.svg"));
        s2s_data::atomic_write(&p, svg.as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))?;
        written.push(p);
    }
    let title = format!(
        "{}: validation BLEU and loss",
        model_dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| model_dir.display().to_string())
    );
    let p = out_dir.join("curves.svg");
    let svg = curves_svg(&records, &title)?;
    s2s_data::atomic_write(&p, svg.as_bytes())
        .with_context(|| format!("cannot write {}", p.display()))?;
    written.push(p);
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn heatmap_has_one_rect_per_cell_and_escaped_labels() {
        let src = toks("1 2 3 <eos>");
        let tgt = toks("3 2 <eos>");
        let w = vec![vec![0.1, 0.2, 0.6, 0.1]; 3];
        let svg = attention_svg(&src, &tgt, &w, "a <b> & c").unwrap();
        // One background rectangle plus the cells.
        assert_eq!(svg.matches("<rect").count(), 1 + 12, "{svg}");
        assert!(svg.contains("&lt;eos&gt;"), "{svg}");
        assert!(!svg.contains("<eos>"));
        // Labels, the title and the axis descriptions.
        assert!(svg.matches("<text").count() >= src.len() + tgt.len() + 3);
    }

    #[test]
    fn heatmap_checks_shape() {
        let src = toks("a b");
        assert!(attention_svg(&src, &toks("x"), &[vec![1.0]], "t").is_err());
        assert!(attention_svg(&[], &[], &[], "t").is_err());
    }

    #[test]
    fn numbering() {
        let p = Path::new("/tmp/out.svg");
        assert_eq!(numbered_path(p, 0, 1), p);
        assert_eq!(numbered_path(p, 1, 3), Path::new("/tmp/out.2.svg"));
        assert_eq!(numbered_path(Path::new("att"), 0, 2), Path::new("att.1"));
    }

    #[test]
    fn the_score_figure_draws_rouge_only_where_it_was_measured() {
        let record = |step: usize, rouge: f64| MetricsRecord {
            step,
            epoch: 0,
            train_loss: 3.0,
            valid_loss: 2.5,
            valid_ppl: 2.5f64.exp(),
            valid_bleu: 1.0,
            valid_accuracy: f64::NAN,
            valid_wer: f64::NAN,
            valid_rouge: rouge,
            tokens_per_sec: 100.0,
            elapsed_sec: step as f64,
            lr: 1e-3,
            teacher_forcing: 1.0,
        };
        let score = |records: &[MetricsRecord]| {
            let svgs = training_svgs(records).unwrap();
            svgs.into_iter()
                .find(|(name, _)| *name == "bleu")
                .unwrap()
                .1
        };
        let with = score(&[record(10, 20.0), record(20, 25.0)]);
        assert!(with.contains("valid ROUGE") && with.contains("valid BLEU"));
        let without = score(&[record(10, f64::NAN), record(20, f64::NAN)]);
        assert!(!without.contains("ROUGE") && without.contains("valid BLEU"));
    }
}
