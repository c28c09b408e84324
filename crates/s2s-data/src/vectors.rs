//! Vector conditions: a generation (1 vs N) source that is a vector of numbers rather than a
//! label, e.g. an image's or a sentence's embedding. A vectors file has one vector per line,
//! its numbers separated by spaces or tabs, aligned with the target file; every vector of a
//! DATA_DIR has the training split's dimension. `s2s prepare` writes them back in the split's
//! `.src` file ([`format`], which reads back to the same `f32`s), and a model reads each through
//! its source embedding as one position ([`BatchVectors`]).

use std::sync::Arc;

/// The numbers of one line, or what is wrong with it (without the place, which the caller
/// knows). An empty or blank line is `Ok` and empty.
pub fn parse(line: &str) -> Result<Vec<f32>, String> {
    line.split_whitespace()
        .enumerate()
        .map(|(i, item)| match item.parse::<f32>() {
            Ok(x) if x.is_finite() => Ok(x),
            Ok(_) => Err(format!(
                "number {} (`{item}`) is not finite; fix: give finite numbers",
                i + 1
            )),
            Err(_) => Err(format!(
                "item {} (`{item}`) is not a number; fix: give one vector per line, its numbers \
                 separated by spaces (e.g. `0.25 -1 3e-2`)",
                i + 1
            )),
        })
        .collect()
}

/// Parses `line` and checks its dimension against `dim` (`None`: any non-empty vector).
pub fn parse_dim(line: &str, dim: Option<usize>) -> Result<Vec<f32>, String> {
    let v = parse(line)?;
    if v.is_empty() {
        return Err("is empty; fix: give one vector per line".to_owned());
    }
    match dim {
        Some(d) if v.len() != d => Err(format!(
            "has {} numbers where {d} are expected; fix: give every vector {d} numbers",
            v.len()
        )),
        _ => Ok(v),
    }
}

/// One line of `v`'s numbers, separated by single spaces: each the shortest text that parses
/// back to the same `f32`.
pub fn format(v: &[f32]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A batch's vector conditions, row-major `[rows, dim]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchVectors {
    pub dim: usize,
    pub data: Vec<f32>,
}

impl BatchVectors {
    /// The rows `vectors`, which all have `dim` numbers.
    pub fn new(vectors: &[&[f32]], dim: usize) -> BatchVectors {
        let mut data = Vec::with_capacity(vectors.len() * dim);
        for v in vectors {
            assert_eq!(
                v.len(),
                dim,
                "every vector of a batch has the same dimension"
            );
            data.extend_from_slice(v);
        }
        BatchVectors { dim, data }
    }

    /// Rows `range`.
    pub fn rows(&self, range: std::ops::Range<usize>) -> BatchVectors {
        BatchVectors {
            dim: self.dim,
            data: self.data[range.start * self.dim..range.end * self.dim].to_vec(),
        }
    }
}

/// A split's vectors, shared between the encoded split and its batches.
pub type SplitVectors = Arc<[Vec<f32>]>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_through_their_text() {
        let v = vec![0.1f32, -3.0e-7, 12345.678, 1.0 / 3.0, 0.0, -0.0];
        let text = format(&v);
        let back = parse(&text).unwrap();
        assert_eq!(
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            back.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert_eq!(parse(" 1\t2  3 ").unwrap(), vec![1.0, 2.0, 3.0]);
        assert!(parse("   ").unwrap().is_empty());
    }

    #[test]
    fn a_bad_line_says_which_item_and_the_fix() {
        let e = parse("1 2 x3").unwrap_err();
        assert!(e.contains("item 3 (`x3`) is not a number"), "{e}");
        assert!(e.contains("fix:"), "{e}");
        let e = parse("1 NaN").unwrap_err();
        assert!(e.contains("number 2 (`NaN`) is not finite"), "{e}");
        let e = parse("inf").unwrap_err();
        assert!(e.contains("not finite"), "{e}");
        let e = parse_dim("1 2", Some(3)).unwrap_err();
        assert!(e.contains("has 2 numbers where 3 are expected"), "{e}");
        assert!(parse_dim("", None).unwrap_err().contains("is empty"));
        assert_eq!(parse_dim("1 2 3", Some(3)).unwrap().len(), 3);
    }

    #[test]
    fn batch_rows_keep_their_vectors() {
        let (a, b, c) = ([1.0f32, 2.0], [3.0f32, 4.0], [5.0f32, 6.0]);
        let batch = BatchVectors::new(&[&a, &b, &c], 2);
        assert_eq!(batch.data, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(batch.rows(1..3).data, vec![3.0, 4.0, 5.0, 6.0]);
    }
}
