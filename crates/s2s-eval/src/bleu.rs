//! BLEU (Papineni et al., 2002), computed exactly as sacreBLEU 2.x (`sacrebleu/metrics/bleu.py`).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use crate::pystr::{py_lower, py_rstrip, py_split};
use crate::{EvalError, Tokenize, check_streams, signature_version};

/// sacreBLEU's default maximum n-gram order.
pub const MAX_NGRAM_ORDER: usize = 4;

/// Smoothing methods of Chen & Cherry (2014), as named by sacreBLEU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Smooth {
    /// `none`: no smoothing.
    None,
    /// `floor`: zero-match precisions become `value / total` (sacreBLEU's default value: 0.1).
    Floor(f64),
    /// `add-k`: add `value` to matches and totals of orders 2 and above (default: 1).
    AddK(f64),
    /// `exp`: NIST/mteval-v13a exponential smoothing, sacreBLEU's default.
    #[default]
    Exp,
}

impl Smooth {
    /// `floor` with sacreBLEU's default value 0.1.
    pub const FLOOR_DEFAULT: Smooth = Smooth::Floor(0.1);
    /// `add-k` with sacreBLEU's default value 1.
    pub const ADD_K_DEFAULT: Smooth = Smooth::AddK(1.0);

    /// The method name (`exp`, `none`, `floor`, `add-k`).
    pub fn method(self) -> &'static str {
        match self {
            Smooth::None => "none",
            Smooth::Floor(_) => "floor",
            Smooth::AddK(_) => "add-k",
            Smooth::Exp => "exp",
        }
    }
}

/// Signature form: `exp`, `none`, `floor[0.10]`, `add-k[1.00]`.
impl fmt::Display for Smooth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Smooth::None | Smooth::Exp => f.write_str(self.method()),
            Smooth::Floor(v) | Smooth::AddK(v) => write!(f, "{}[{v:.2}]", self.method()),
        }
    }
}

/// Parses a method name (`floor` and `add-k` get sacreBLEU's default values) or a
/// method with a value: `floor[0.5]`, `add-k[2]`.
impl FromStr for Smooth {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || EvalError::UnknownSmooth(s.to_owned());
        let (method, value) = match s.split_once('[') {
            Some((m, rest)) => {
                let v = rest.strip_suffix(']').ok_or_else(unknown)?;
                let v: f64 = v.trim().parse().map_err(|_| unknown())?;
                if !v.is_finite() || v < 0.0 {
                    return Err(unknown());
                }
                (m, Some(v))
            }
            None => (s, None),
        };
        match (method, value) {
            ("exp", None) => Ok(Smooth::Exp),
            ("none", None) => Ok(Smooth::None),
            ("floor", v) => Ok(Smooth::Floor(v.unwrap_or(0.1))),
            ("add-k", v) => Ok(Smooth::AddK(v.unwrap_or(1.0))),
            _ => Err(unknown()),
        }
    }
}

/// How to compute BLEU. `BleuConfig::default()` is sacreBLEU's corpus BLEU (`13a`, mixed case,
/// `exp` smoothing, no effective order); [`BleuConfig::sentence`] is sacreBLEU's
/// `sentence_bleu` (the same with effective order).
#[derive(Debug, Clone, PartialEq)]
pub struct BleuConfig {
    pub tokenize: Tokenize,
    pub lowercase: bool,
    pub smooth: Smooth,
    /// Only average over n-gram orders that the hypothesis has (recommended for sentence BLEU).
    pub effective_order: bool,
    /// Maximum n-gram order (4). Must be at least 1.
    pub max_ngram_order: usize,
}

impl Default for BleuConfig {
    fn default() -> Self {
        BleuConfig {
            tokenize: Tokenize::ThirteenA,
            lowercase: false,
            smooth: Smooth::Exp,
            effective_order: false,
            max_ngram_order: MAX_NGRAM_ORDER,
        }
    }
}

impl BleuConfig {
    /// Corpus BLEU with the given tokenizer and otherwise default settings.
    pub fn with_tokenize(tokenize: Tokenize) -> Self {
        BleuConfig {
            tokenize,
            ..Self::default()
        }
    }

    /// sacreBLEU's `sentence_bleu` defaults: as [`Default`] but with `effective_order`.
    pub fn sentence() -> Self {
        BleuConfig {
            effective_order: true,
            ..Self::default()
        }
    }

    /// The sacreBLEU signature for `nrefs` references, e.g.
    /// `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:s2s-0.1.0`.
    pub fn signature(&self, nrefs: usize) -> String {
        format!(
            "nrefs:{nrefs}|case:{}|eff:{}|tok:{}|smooth:{}|version:{}",
            if self.lowercase { "lc" } else { "mixed" },
            if self.effective_order { "yes" } else { "no" },
            self.tokenize,
            self.smooth,
            signature_version(),
        )
    }

    fn validate(&self) -> Result<(), EvalError> {
        if self.max_ngram_order == 0 {
            return Err(EvalError::InvalidConfig(
                "max_ngram_order must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Lowercasing (optional) then tokenization of a right-stripped segment, as sacreBLEU's
    /// `BLEU._preprocess_segment`.
    pub fn preprocess(&self, segment: &str) -> String {
        if self.lowercase {
            self.tokenize.tokenize(py_rstrip(&py_lower(segment)))
        } else {
            self.tokenize.tokenize(py_rstrip(segment))
        }
    }
}

/// BLEU's sufficient statistics. They add up over segments (`+=`), so corpus BLEU is
/// [`compute_bleu`] of the summed segment statistics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BleuStats {
    /// Hypothesis length in tokens.
    pub sys_len: u64,
    /// Closest reference length (ties go to the shorter reference).
    pub ref_len: u64,
    /// Clipped n-gram matches per order (index 0 = unigrams).
    pub correct: Vec<u64>,
    /// Hypothesis n-grams per order.
    pub total: Vec<u64>,
}

impl BleuStats {
    /// All-zero statistics for the given maximum n-gram order.
    pub fn zeros(max_ngram_order: usize) -> Self {
        BleuStats {
            sys_len: 0,
            ref_len: 0,
            correct: vec![0; max_ngram_order],
            total: vec![0; max_ngram_order],
        }
    }
}

impl std::ops::AddAssign<&BleuStats> for BleuStats {
    fn add_assign(&mut self, rhs: &BleuStats) {
        if self.correct.len() < rhs.correct.len() {
            self.correct.resize(rhs.correct.len(), 0);
            self.total.resize(rhs.total.len(), 0);
        }
        self.sys_len += rhs.sys_len;
        self.ref_len += rhs.ref_len;
        for (a, b) in self.correct.iter_mut().zip(&rhs.correct) {
            *a += b;
        }
        for (a, b) in self.total.iter_mut().zip(&rhs.total) {
            *a += b;
        }
    }
}

/// A BLEU score with sacreBLEU's fields. `score`, `precisions` are on a 0-100 scale.
#[derive(Debug, Clone, PartialEq)]
pub struct BleuScore {
    pub score: f64,
    /// Per-order precisions (0-100), after smoothing.
    pub precisions: Vec<f64>,
    /// Brevity penalty.
    pub bp: f64,
    /// `sys_len / ref_len` (0 when `ref_len` is 0).
    pub ratio: f64,
    pub sys_len: u64,
    pub ref_len: u64,
    /// Clipped n-gram matches per order, before any `add-k` smoothing (sacreBLEU reports them
    /// after it).
    pub counts: Vec<u64>,
    /// Hypothesis n-grams per order, before any `add-k` smoothing.
    pub totals: Vec<u64>,
    /// sacreBLEU signature; empty when the score came from [`compute_bleu`] alone.
    pub signature: String,
}

impl BleuScore {
    /// sacreBLEU's score line, e.g.
    /// `BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)`,
    /// with the score to `width` decimals.
    pub fn format(&self, width: usize) -> String {
        let precisions: Vec<String> = self.precisions.iter().map(|p| format!("{p:.1}")).collect();
        format!(
            "BLEU = {:.width$} {} (BP = {:.3} ratio = {:.3} hyp_len = {} ref_len = {})",
            self.score,
            precisions.join("/"),
            self.bp,
            self.ratio,
            self.sys_len,
            self.ref_len,
        )
    }
}

impl fmt::Display for BleuScore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format(2))
    }
}

/// sacreBLEU's `my_log`: the logarithm, floored for zero.
fn my_log(x: f64) -> f64 {
    if x == 0.0 { -9_999_999_999.0 } else { x.ln() }
}

/// BLEU from sufficient statistics: sacreBLEU's `BLEU.compute_bleu`, operation for operation.
/// The maximum n-gram order is `stats.correct.len()`. The signature of the result is empty.
pub fn compute_bleu(stats: &BleuStats, smooth: Smooth, effective_order: bool) -> BleuScore {
    let order = stats.correct.len();
    let (sys_len, ref_len) = (stats.sys_len, stats.ref_len);

    let mut bp = 1.0;
    if sys_len < ref_len {
        bp = if sys_len > 0 {
            (1.0 - ref_len as f64 / sys_len as f64).exp()
        } else {
            0.0
        };
    }
    let ratio = if ref_len > 0 {
        sys_len as f64 / ref_len as f64
    } else {
        0.0
    };

    let mut precisions = vec![0.0; order];
    let mut result = BleuScore {
        score: 0.0,
        precisions: Vec::new(),
        bp,
        ratio,
        sys_len,
        ref_len,
        counts: stats.correct.clone(),
        totals: stats.total.clone(),
        signature: String::new(),
    };

    // Early stop if there are no matches (sacreBLEU #141).
    if stats.correct.iter().all(|&c| c == 0) {
        result.precisions = precisions;
        return result;
    }

    let mut smooth_mteval = 1.0;
    let mut eff_order = order;
    for n in 1..=order {
        let mut correct = stats.correct[n - 1] as f64;
        let mut total = stats.total.get(n - 1).copied().unwrap_or(0) as f64;
        if let Smooth::AddK(k) = smooth
            && n > 1
        {
            correct += k;
            total += k;
        }
        if total == 0.0 {
            break;
        }
        if effective_order {
            eff_order = n;
        }
        if correct == 0.0 {
            match smooth {
                Smooth::Exp => {
                    smooth_mteval *= 2.0;
                    precisions[n - 1] = 100.0 / (smooth_mteval * total);
                }
                Smooth::Floor(value) => precisions[n - 1] = 100.0 * value / total,
                Smooth::None | Smooth::AddK(_) => {}
            }
        } else {
            precisions[n - 1] = 100.0 * correct / total;
        }
    }

    let log_sum = precisions[..eff_order]
        .iter()
        .fold(0.0, |acc, &p| acc + my_log(p));
    result.score = bp * (log_sum / eff_order as f64).exp();
    result.precisions = precisions;
    result
}

/// Counts all n-grams of orders 1..=max_order over `tokens`.
fn count_ngrams<'a>(tokens: &'a [&'a str], max_order: usize) -> HashMap<&'a [&'a str], u64> {
    let mut counts = HashMap::new();
    for n in 1..=max_order.min(tokens.len()) {
        for ngram in tokens.windows(n) {
            *counts.entry(ngram).or_insert(0) += 1;
        }
    }
    counts
}

/// sacreBLEU's `_get_closest_ref_len`: the reference length closest to `hyp_len`, ties going
/// to the shorter reference.
fn closest_ref_len(hyp_len: u64, ref_lens: &[u64]) -> u64 {
    let mut best: Option<(u64, u64)> = None; // (diff, len)
    for &len in ref_lens {
        let diff = hyp_len.abs_diff(len);
        best = match best {
            None => Some((diff, len)),
            Some((bd, bl)) if diff < bd || (diff == bd && len < bl) => Some((diff, len)),
            keep => keep,
        };
    }
    best.map_or(0, |(_, len)| len)
}

/// Statistics of one already-preprocessed (lowercased/tokenized) segment against its
/// preprocessed references: sacreBLEU's `_extract_reference_info` +
/// `_compute_segment_statistics`.
fn segment_stats_preprocessed(hyp: &str, refs: &[String], max_order: usize) -> BleuStats {
    let ref_tokens: Vec<Vec<&str>> = refs.iter().map(|r| py_split(r).collect()).collect();
    let mut ref_ngrams: HashMap<&[&str], u64> = HashMap::new();
    for tokens in &ref_tokens {
        for (ngram, count) in count_ngrams(tokens, max_order) {
            let entry = ref_ngrams.entry(ngram).or_insert(0);
            *entry = (*entry).max(count);
        }
    }
    let ref_lens: Vec<u64> = ref_tokens.iter().map(|t| t.len() as u64).collect();

    let hyp_tokens: Vec<&str> = py_split(hyp).collect();
    let mut stats = BleuStats::zeros(max_order);
    stats.sys_len = hyp_tokens.len() as u64;
    stats.ref_len = closest_ref_len(stats.sys_len, &ref_lens);
    for (ngram, count) in count_ngrams(&hyp_tokens, max_order) {
        let n = ngram.len() - 1;
        stats.total[n] += count;
        if let Some(&ref_count) = ref_ngrams.get(ngram) {
            stats.correct[n] += count.min(ref_count);
        }
    }
    stats
}

/// BLEU statistics of one raw segment against its raw references (at least one).
pub fn segment_bleu_stats<R: AsRef<str>>(hyp: &str, refs: &[R], cfg: &BleuConfig) -> BleuStats {
    let refs: Vec<String> = refs.iter().map(|r| cfg.preprocess(r.as_ref())).collect();
    segment_stats_preprocessed(&cfg.preprocess(hyp), &refs, cfg.max_ngram_order)
}

/// Corpus-level statistics: the sum of [`segment_bleu_stats`] over all segments.
///
/// `refs` holds one stream per reference, each with one segment per hypothesis.
pub fn corpus_bleu_stats<H, R, S>(
    hyps: &[H],
    refs: &[S],
    cfg: &BleuConfig,
) -> Result<BleuStats, EvalError>
where
    H: AsRef<str>,
    R: AsRef<str>,
    S: AsRef<[R]>,
{
    cfg.validate()?;
    check_streams(hyps.len(), refs)?;
    let mut total = BleuStats::zeros(cfg.max_ngram_order);
    for (i, hyp) in hyps.iter().enumerate() {
        let seg_refs: Vec<String> = refs
            .iter()
            .map(|stream| cfg.preprocess(stream.as_ref()[i].as_ref()))
            .collect();
        let stats = segment_stats_preprocessed(
            &cfg.preprocess(hyp.as_ref()),
            &seg_refs,
            cfg.max_ngram_order,
        );
        total += &stats;
    }
    Ok(total)
}

/// Corpus BLEU, as sacreBLEU's `corpus_bleu` / `BLEU(...).corpus_score`.
///
/// `refs` holds one stream per reference (`&[&refs]` for a single reference), each with one
/// segment per hypothesis. An empty corpus scores 0.
///
/// ```
/// use s2s_eval::{BleuConfig, corpus_bleu};
/// let hyps = ["The dog bit the man."];
/// let refs = vec!["The dog bit the man."];
/// let bleu = corpus_bleu(&hyps, &[&refs], &BleuConfig::default()).unwrap();
/// assert!((bleu.score - 100.0).abs() < 1e-9);
/// assert_eq!(bleu.precisions, [100.0; 4]);
/// ```
pub fn corpus_bleu<H, R, S>(
    hyps: &[H],
    refs: &[S],
    cfg: &BleuConfig,
) -> Result<BleuScore, EvalError>
where
    H: AsRef<str>,
    R: AsRef<str>,
    S: AsRef<[R]>,
{
    let stats = corpus_bleu_stats(hyps, refs, cfg)?;
    let mut score = compute_bleu(&stats, cfg.smooth, cfg.effective_order);
    score.signature = cfg.signature(refs.len());
    Ok(score)
}

/// Sentence BLEU of one hypothesis against one or more references, as sacreBLEU's
/// `BLEU(...).sentence_score`. Use [`BleuConfig::sentence`] for sacreBLEU's `sentence_bleu`
/// defaults (effective order).
pub fn sentence_bleu<R: AsRef<str>>(
    hyp: &str,
    refs: &[R],
    cfg: &BleuConfig,
) -> Result<BleuScore, EvalError> {
    cfg.validate()?;
    if refs.is_empty() {
        return Err(EvalError::NoReferences);
    }
    let stats = segment_bleu_stats(hyp, refs, cfg);
    let mut score = compute_bleu(&stats, cfg.smooth, cfg.effective_order);
    score.signature = cfg.signature(refs.len());
    Ok(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_ref_len_prefers_shorter_on_ties() {
        assert_eq!(closest_ref_len(5, &[7, 3]), 3);
        assert_eq!(closest_ref_len(5, &[3, 7]), 3);
        assert_eq!(closest_ref_len(5, &[9, 6, 4]), 4);
        assert_eq!(closest_ref_len(0, &[]), 0);
    }

    #[test]
    fn smooth_parse_and_display() {
        assert_eq!("exp".parse::<Smooth>().unwrap(), Smooth::Exp);
        assert_eq!("floor".parse::<Smooth>().unwrap(), Smooth::FLOOR_DEFAULT);
        assert_eq!("add-k[2]".parse::<Smooth>().unwrap(), Smooth::AddK(2.0));
        assert!("exp[1]".parse::<Smooth>().is_err());
        assert!("lol".parse::<Smooth>().is_err());
        assert_eq!(Smooth::FLOOR_DEFAULT.to_string(), "floor[0.10]");
        assert_eq!(Smooth::ADD_K_DEFAULT.to_string(), "add-k[1.00]");
    }

    #[test]
    fn stats_add_up() {
        let mut a = BleuStats {
            sys_len: 1,
            ref_len: 2,
            correct: vec![1, 0, 0, 0],
            total: vec![1, 0, 0, 0],
        };
        a += &BleuStats {
            sys_len: 3,
            ref_len: 4,
            correct: vec![2, 1, 0, 0],
            total: vec![3, 2, 1, 0],
        };
        assert_eq!(a.correct, [3, 1, 0, 0]);
        assert_eq!(a.total, [4, 2, 1, 0]);
        assert_eq!((a.sys_len, a.ref_len), (4, 6));
    }
}
