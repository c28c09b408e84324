//! Chinese script unification (Traditional <-> Simplified), with the OpenCC dictionaries of
//! `ferrous-opencc` (Apache-2.0), behind the default feature `zh-convert`.

use serde::{Deserialize, Serialize};

use crate::error::{DataError, Result};

/// The script to convert the Chinese side to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ZhScript {
    /// Traditional to Simplified (OpenCC `t2s`).
    Simplified,
    /// Simplified to Traditional (OpenCC `s2t`).
    Traditional,
}

#[cfg(feature = "zh-convert")]
mod imp {
    use std::sync::OnceLock;

    use ferrous_opencc::OpenCC;
    use ferrous_opencc::config::BuiltinConfig;

    use super::ZhScript;

    static T2S: OnceLock<Result<OpenCC, String>> = OnceLock::new();
    static S2T: OnceLock<Result<OpenCC, String>> = OnceLock::new();

    pub fn converter(script: ZhScript) -> Result<&'static OpenCC, String> {
        let (cell, cfg) = match script {
            ZhScript::Simplified => (&T2S, BuiltinConfig::T2s),
            ZhScript::Traditional => (&S2T, BuiltinConfig::S2t),
        };
        cell.get_or_init(|| OpenCC::from_config(cfg).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Checks that conversion to `script` is available (built with the `zh-convert` feature and
/// its dictionaries load).
pub fn check_available(script: ZhScript) -> Result<()> {
    #[cfg(feature = "zh-convert")]
    {
        imp::converter(script).map(|_| ()).map_err(|e| {
            DataError::Config(format!("cannot load the Chinese script converter: {e}"))
        })
    }
    #[cfg(not(feature = "zh-convert"))]
    {
        Err(DataError::Config(format!(
            "--zh-script {script:?} needs s2s-data built with the `zh-convert` feature; fix: rebuild with default features"
        )))
    }
}

/// Converts `text` to `script`; characters that are not Chinese are left alone. When the
/// converter is unavailable (see [`check_available`]) the text is returned unchanged.
pub fn convert(text: &str, script: ZhScript) -> String {
    #[cfg(feature = "zh-convert")]
    {
        match imp::converter(script) {
            Ok(cc) => cc.convert(text),
            Err(_) => text.to_owned(),
        }
    }
    #[cfg(not(feature = "zh-convert"))]
    {
        let _ = script;
        text.to_owned()
    }
}

#[cfg(all(test, feature = "zh-convert"))]
mod tests {
    use super::*;

    #[test]
    fn converts_both_ways() {
        assert_eq!(
            convert("我們喜歡這個國家。", ZhScript::Simplified),
            "我们喜欢这个国家。"
        );
        assert_eq!(
            convert("我们喜欢这个国家。", ZhScript::Traditional),
            "我們喜歡這個國家。"
        );
        assert_eq!(
            convert("Hello, 世界!", ZhScript::Simplified),
            "Hello, 世界!"
        );
    }
}
