//! The corpus reader never panics on arbitrary bytes, and cleaning is total and idempotent.

use std::path::Path;

use proptest::prelude::*;
use s2s_data::io::{split_lines, split_tsv};
use s2s_data::{CleanConfig, DataError, clean_line};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn reader_returns_data_or_a_typed_error(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let path = Path::new("x.txt");
        match split_lines(&bytes, path) {
            Ok(lines) => {
                prop_assert!(lines.iter().all(|l| !l.contains('\n')));
                let n = bytes.iter().filter(|&&b| b == b'\n').count();
                let extra = usize::from(!bytes.is_empty() && *bytes.last().unwrap() != b'\n');
                prop_assert_eq!(lines.len(), n + extra);
                if let Ok((s, t)) = split_tsv(&lines, path, 1, 2) {
                    prop_assert_eq!(s.len(), lines.len());
                    prop_assert_eq!(t.len(), lines.len());
                }
            }
            Err(DataError::InvalidUtf8 { line, offset, column, .. }) => {
                prop_assert!(line >= 1);
                prop_assert!((offset as usize) < bytes.len());
                prop_assert!(std::str::from_utf8(&bytes[..offset as usize]).is_ok());
                prop_assert!(column <= offset as usize);
            }
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }

    #[test]
    fn reader_handles_mostly_text(s in "[a-z\u{4e00}-\u{4e10} \t\r\n\u{200b}\u{feff}]{0,80}", junk in prop::option::of(any::<u8>())) {
        let mut bytes = s.into_bytes();
        if let Some(b) = junk { bytes.push(b); }
        let _ = split_lines(&bytes, Path::new("y.txt"));
    }

    #[test]
    fn cleaning_is_idempotent_and_normalises_whitespace(s in "\\PC{0,60}", nfkc in any::<bool>()) {
        let cfg = CleanConfig { nfkc, zh_script: None };
        let once = clean_line(&s, &cfg, false);
        prop_assert_eq!(&clean_line(&once, &cfg, false), &once);
        prop_assert!(!once.starts_with(' ') && !once.ends_with(' ') && !once.contains("  "));
        prop_assert!(once.chars().all(|c| c == ' ' || !c.is_whitespace()));
        let zero_width = ['\u{200B}', '\u{FEFF}'];
        prop_assert!(!once.contains(zero_width));
    }
}
