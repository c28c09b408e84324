//! One module per subcommand.
pub mod average;
pub mod baseline;
pub mod bench;
pub mod convert;
pub mod data;
pub mod eval;
pub mod extract;
pub mod plot;
pub mod prepare;
pub mod quantize;
pub mod quickstart;
pub mod score;
pub mod serve;
pub mod train;
pub mod translate;
pub mod tune;

/// Writes one output per line to `output` (whole and atomically: nothing half-written if a
/// later step fails), or to stdout when there is none.
pub fn write_lines(lines: &[String], output: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context;
    let mut text = lines.join("\n");
    if !lines.is_empty() {
        text.push('\n');
    }
    match output {
        Some(p) => s2s_data::atomic_write(p, text.as_bytes())
            .with_context(|| format!("cannot write {}", p.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
