//! Reading hypothesis and reference files the way the sacreBLEU command line does.

use std::path::Path;

use crate::EvalError;
use crate::pystr::py_rstrip;

/// Reads a UTF-8 text file as segments, one per line, like sacreBLEU's command line: lines end
/// at `\n` only, a final newline does not start another segment, and each line is
/// right-stripped of (Python) whitespace, which also removes a `\r` of CRLF files.
///
/// Errors name the file, and the (1-based) line for invalid UTF-8.
pub fn read_lines(path: &Path) -> Result<Vec<String>, EvalError> {
    let bytes = std::fs::read(path).map_err(|error| EvalError::Io {
        path: path.to_owned(),
        error,
    })?;
    let mut pieces: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    if pieces.last().is_some_and(|last| last.is_empty()) {
        pieces.pop();
    }
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, piece)| {
            std::str::from_utf8(piece)
                .map(|line| py_rstrip(line).to_owned())
                .map_err(|_| EvalError::InvalidUtf8 {
                    path: path.to_owned(),
                    line: i + 1,
                })
        })
        .collect()
}

/// A hypothesis stream and its reference streams, ready to score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalInputs {
    pub hyps: Vec<String>,
    /// One stream per reference file, each with one segment per hypothesis.
    pub refs: Vec<Vec<String>>,
    /// The hypothesis file was empty (no lines at all) and was taken as one empty hypothesis
    /// per reference segment, so the system scores 0 instead of failing the line-count check.
    pub hyp_file_was_empty: bool,
}

/// Reads a hypothesis file and one or more reference files, checking that they have the same
/// number of lines. An entirely empty hypothesis file stands for empty hypotheses (scoring 0)
/// and sets [`EvalInputs::hyp_file_was_empty`].
pub fn load_inputs<P: AsRef<Path>>(
    hyp_path: &Path,
    ref_paths: &[P],
) -> Result<EvalInputs, EvalError> {
    if ref_paths.is_empty() {
        return Err(EvalError::NoReferences);
    }
    let mut hyps = read_lines(hyp_path)?;
    let refs = ref_paths
        .iter()
        .map(|p| read_lines(p.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;

    let mismatch = |first: &Path, first_lines: usize, second: &Path, second_lines: usize| {
        EvalError::LineCountMismatch {
            first: first.to_owned(),
            first_lines,
            second: second.to_owned(),
            second_lines,
        }
    };
    let ref0 = ref_paths[0].as_ref();
    let ref0_lines = refs[0].len();
    // All references must agree with each other, whatever the hypothesis file holds.
    for (path, stream) in ref_paths.iter().zip(&refs).skip(1) {
        if stream.len() != ref0_lines {
            return Err(mismatch(ref0, ref0_lines, path.as_ref(), stream.len()));
        }
    }
    let hyp_file_was_empty = hyps.is_empty() && ref0_lines > 0;
    if hyp_file_was_empty {
        hyps = vec![String::new(); ref0_lines];
    } else if hyps.len() != ref0_lines {
        return Err(mismatch(hyp_path, hyps.len(), ref0, ref0_lines));
    }
    Ok(EvalInputs {
        hyps,
        refs,
        hyp_file_was_empty,
    })
}
