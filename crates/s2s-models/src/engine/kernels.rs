//! The CPU kernels behind the engine's ops ([`super::ops`]): decoding-step operations burn has
//! no single op for, written on the CPU backend's tensors (burn-flex) through burn's
//! backend-extension API (`Tensor::try_into_primitive` / `from_primitive`). Each returns `None`
//! off that backend and for tensors autodiff tracks; its op then runs the plain tensor ops. They
//! are public so that tests can hold each kernel against those ops.

use burn::tensor::{Bool, DType, Shape, Tensor};
use burn_flex::{Flex, FlexTensor, Layout};

use super::gemv;
use super::int8::{Int8Matrix, Int8Vectors};
use super::{MASKED, RowMap};

// burn-flex's vectorised `exp` and `tanh` (a patch of the vendored copy) with the fast path;
// the standard library's otherwise (results may then differ in the last bits).
#[cfg(feature = "fast-path")]
use burn_flex::simd::fast_math::{exp_f32, tanh_f32};

#[cfg(not(feature = "fast-path"))]
#[inline(always)]
fn exp_f32(x: f32) -> f32 {
    x.exp()
}

#[cfg(not(feature = "fast-path"))]
#[inline(always)]
fn tanh_f32(x: f32) -> f32 {
    x.tanh()
}

/// `cat([past.select(0, rows), new], 2)` for `[rows, heads, len, d]` tensors, copying `past`
/// once instead of twice (see [`super::select_rows_then_cat`]).
pub fn select_rows_then_cat(
    past: &Tensor<4>,
    rows: &[usize],
    new: &Tensor<4>,
) -> Option<Tensor<4>> {
    let (p, n) = (flex_f32(past)?, flex_f32(new)?);
    Some(Tensor::from_primitive::<Flex>(select_rows_then_cat_flex(
        &p, rows, &n,
    )))
}

fn select_rows_then_cat_flex(past: &FlexTensor, rows: &[usize], new: &FlexTensor) -> FlexTensor {
    // `past` is read in place: a view (ConvS2S keeps its window as one) costs no extra copy.
    let past = Strided::of(past.clone());
    let new = new.to_contiguous();
    let [past_rows, heads, len, d] = past.dims;
    let [_, _, new_len, _] = dims4(&new);
    let (past_data, new_data) = (past.data(), new.storage::<f32>());
    let new_block = new_len * d;
    // Each (row, head)'s positions lie back to back unless the view interleaves them.
    let packed = past.strides[2] == d;
    let mut out = Vec::with_capacity(rows.len() * heads * (len * d + new_block));
    for (i, &row) in rows.iter().enumerate() {
        assert!(
            row < past_rows,
            "select_rows_then_cat: row {row} of {past_rows}"
        );
        for h in 0..heads {
            if packed && len > 0 {
                let p = row * past.strides[0] + h * past.strides[1];
                out.extend_from_slice(&past_data[p..p + len * d]);
            } else {
                for s in 0..len {
                    out.extend_from_slice(past.at(past_data, row, h, s));
                }
            }
            // `to_contiguous` leaves offset 0 and exactly the tensor's elements.
            let n = (i * heads + h) * new_block;
            out.extend_from_slice(&new_data[n..n + new_block]);
        }
    }
    flex_tensor(out, [rows.len(), heads, len + new_len, d])
}

/// `x W^T + bias` for an int8 weight `W: [n, k]` ([`Int8Matrix`]) and `x: [.., k]`: the
/// activations quantised per row and multiplied in int8. `None` off the CPU backend or for
/// tracked tensors.
pub fn int8_linear<const D: usize>(
    x: &Tensor<D>,
    w: &Int8Matrix,
    bias: Option<&Tensor<1>>,
) -> Option<Tensor<D>> {
    let x = flex_f32(x)?.to_contiguous();
    let bias = match bias {
        Some(b) => Some(flex_f32(b)?.to_contiguous()),
        None => None,
    };
    let mut dims: [usize; D] = x.layout().shape().to_vec().try_into().ok()?;
    let k = dims[D - 1];
    assert_eq!(
        k,
        w.cols(),
        "int8_linear: input {dims:?} for a [{}, {}] weight",
        w.rows(),
        w.cols()
    );
    let m = dims[..D - 1].iter().product();
    let mut out = vec![0.0f32; m * w.rows()];
    w.matmul(
        &x.storage::<f32>()[..m * k],
        m,
        bias.as_ref().map(|b| &b.storage::<f32>()[..w.rows()]),
        &mut out,
    );
    dims[D - 1] = w.rows();
    Some(Tensor::from_primitive::<Flex>(flex_tensor(out, dims)))
}

/// [`super::int8_feed_forward`] on the CPU backend: [`Int8Matrix::matmul_act_matmul`], with
/// `act` (a tensor op, so that its arithmetic is the op's own) applied to each block of hidden
/// rows. `None` off the CPU backend or for tracked tensors.
pub fn int8_feed_forward<const D: usize>(
    x: &Tensor<D>,
    (inner, inner_bias): (&Int8Matrix, Option<&Tensor<1>>),
    act: &dyn Fn(Tensor<2>) -> Tensor<2>,
    (outer, outer_bias): (&Int8Matrix, Option<&Tensor<1>>),
) -> Option<Tensor<D>> {
    let x = flex_f32(x)?.to_contiguous();
    let contiguous = |b: Option<&Tensor<1>>| -> Option<Option<FlexTensor>> {
        match b {
            Some(b) => Some(Some(flex_f32(b)?.to_contiguous())),
            None => Some(None),
        }
    };
    let (b1, b2) = (contiguous(inner_bias)?, contiguous(outer_bias)?);
    let mut dims: [usize; D] = x.layout().shape().to_vec().try_into().ok()?;
    let k = dims[D - 1];
    assert_eq!(
        k,
        inner.cols(),
        "int8_feed_forward: input {dims:?} for a [{}, {}] weight",
        inner.rows(),
        inner.cols()
    );
    let m = dims[..D - 1].iter().product();
    let hidden = inner.rows();
    let mut out = vec![0.0f32; m * outer.rows()];
    inner.matmul_act_matmul(
        &x.storage::<f32>()[..m * k],
        m,
        b1.as_ref().map(|b| &b.storage::<f32>()[..hidden]),
        |block, rows| {
            let h =
                Tensor::<2>::from_primitive::<Flex>(flex_tensor(block.to_vec(), [rows, hidden]));
            let h = flex_f32(&act(h))
                .expect("an op on the CPU backend stays there")
                .to_contiguous();
            block.copy_from_slice(&h.storage::<f32>()[..rows * hidden]);
        },
        outer,
        b2.as_ref().map(|b| &b.storage::<f32>()[..outer.rows()]),
        &mut out,
    );
    dims[D - 1] = outer.rows();
    Some(Tensor::from_primitive::<Flex>(flex_tensor(out, dims)))
}

/// `x @ weight + bias` for `x: [.., k]` with one row in all and `weight: [k, n]` row-major or
/// the transpose of a row-major `[n, k]` (a tied output layer): the one-row product
/// ([`gemv`]). `None` for more rows, other layouts, tracked tensors and CPUs without its
/// instructions; the bias is added as burn's `linear` adds it.
pub fn gemv_linear<const D: usize>(
    x: &Tensor<D>,
    weight: &Tensor<2>,
    bias: Option<&Tensor<1>>,
) -> Option<Tensor<D>> {
    let mut dims: [usize; D] = x.dims();
    if dims[..D - 1].iter().product::<usize>() != 1 {
        return None;
    }
    let w = flex_f32(weight)?;
    let [k, n] = weight.dims();
    let strides = w.layout().strides();
    let layout = match (strides[0], strides[1]) {
        (s, 1) if s >= n as isize => gemv::Layout::Rows { stride: s as usize },
        (1, s) if s >= k as isize => gemv::Layout::Columns { stride: s as usize },
        _ => return None,
    };
    let x = flex_f32(x)?.to_contiguous();
    let bias = match bias {
        Some(b) => Some(flex_f32(b)?.to_contiguous()),
        None => None,
    };
    let weight = gemv::Weight {
        data: &w.storage::<f32>()[w.layout().start_offset()..],
        k,
        n,
        layout,
    };
    let mut out = vec![0.0f32; n];
    if !gemv::gemv(&x.storage::<f32>()[..k], weight, &mut out) {
        return None;
    }
    if let Some(b) = &bias {
        out.iter_mut()
            .zip(&b.storage::<f32>()[..n])
            .for_each(|(y, b)| *y += b);
    }
    dims[D - 1] = n;
    Some(Tensor::from_primitive::<Flex>(flex_tensor(out, dims)))
}

/// The CPU backend's f32 tensor behind `t`; `None` for other backends, dtypes or tracked tensors.
fn flex_f32<const D: usize>(t: &Tensor<D>) -> Option<FlexTensor> {
    (t.dtype() == DType::F32)
        .then(|| t.clone().try_into_primitive::<Flex>().ok())
        .flatten()
}

/// A contiguous one-byte-per-element mask. burn-flex's `select` on a bool tensor labels its
/// result `U8`, so both labels are accepted.
fn flex_mask(p: &Tensor<2, Bool>) -> Option<FlexTensor> {
    let p = p.clone().try_into_primitive::<Flex>().ok()?.to_contiguous();
    (matches!(p.dtype(), DType::Bool(_) | DType::U8) && p.dtype().size() == 1).then_some(p)
}

fn flex_tensor<const D: usize>(data: Vec<f32>, dims: [usize; D]) -> FlexTensor {
    FlexTensor::new(
        burn::tensor::Bytes::from_elems(data),
        Layout::contiguous(Shape::new(dims)),
        DType::F32,
    )
}

/// Bahdanau's additive attention for one decoding step: the energy of key `s` of row `r` is
/// `v . tanh(keys[r', s] + q[r])`, masked where `pad[r', s]` is true, then a softmax over the keys
/// and the context `sum_s weights[r, s] values[r', s]`, where `r' = kv_rows.get(r)`, so the beams
/// of one sentence read one copy of its encoder side. `q: [rows, a]` is the projected query,
/// `keys: [n, len, a]`, `v: [a, 1]`, `values: [n, len, d]`, `pad: [n, len]`. Returns the context
/// `[rows, d]` and the weights `[rows, len]`.
///
/// The tensor ops materialise `keys + q` and its `tanh` (`[rows, len, a]`), multiply by `v` as a
/// one-column gemm and take the context as one tiny gemm per row; here each key's energy is
/// computed while its row is in cache. `None` off the CPU backend or for tracked tensors.
pub fn additive_attention(
    q: &Tensor<2>,
    keys: &Tensor<3>,
    v: &Tensor<2>,
    values: &Tensor<3>,
    pad: &Tensor<2, Bool>,
    kv_rows: &RowMap,
) -> Option<(Tensor<2>, Tensor<2>)> {
    let (q, keys, v) = (
        flex_f32(q)?.to_contiguous(),
        flex_f32(keys)?.to_contiguous(),
        flex_f32(v)?.to_contiguous(),
    );
    let (values, pad) = (flex_f32(values)?.to_contiguous(), flex_mask(pad)?);
    let shape = |t: &FlexTensor| t.layout().shape().to_vec();
    let (ks, vs, qs) = (shape(&keys), shape(&values), shape(&q));
    let [n, len, a, d, rows] = [ks[0], ks[1], ks[2], vs[2], qs[0]];
    assert!(
        qs == [rows, a] && shape(&v) == [a, 1] && vs[..2] == [n, len],
        "additive_attention: shapes {qs:?} {ks:?} {:?} {vs:?}",
        shape(&v)
    );
    assert!(kv_rows.fits(rows, n));
    let mut context = vec![0.0f32; rows * d];
    let mut weights = vec![0.0f32; rows * len];
    let kernel = Additive {
        q: &q.storage::<f32>()[..rows * a],
        keys: &keys.storage::<f32>()[..n * len * a],
        v: &v.storage::<f32>()[..a],
        values: &values.storage::<f32>()[..n * len * d],
        pad: &pad.storage::<u8>()[..n * len],
        kv_rows,
        dims: [rows, len, a, d],
    };
    run(&kernel, &mut context, &mut weights);
    Some((
        Tensor::from_primitive::<Flex>(flex_tensor(context, [rows, d])),
        Tensor::from_primitive::<Flex>(flex_tensor(weights, [rows, len])),
    ))
}

struct Additive<'a> {
    q: &'a [f32],
    keys: &'a [f32],
    v: &'a [f32],
    values: &'a [f32],
    pad: &'a [u8],
    /// Row of `keys`, `values` and `pad` each query row reads.
    kv_rows: &'a RowMap,
    /// rows, keys per row, attention size, value size.
    dims: [usize; 4],
}

impl StepKernel for Additive<'_> {
    #[inline(always)]
    fn compute(&self, context: &mut [f32], weights: &mut [f32]) {
        let [rows, len, a, d] = self.dims;
        let mut hidden = vec![0.0f32; a];
        for r in 0..rows {
            let kv_r = self.kv_rows.get(r);
            let q = &self.q[r * a..(r + 1) * a];
            let w = &mut weights[r * len..(r + 1) * len];
            for (s, w) in w.iter_mut().enumerate() {
                if self.pad[kv_r * len + s] != 0 {
                    *w = MASKED;
                    continue;
                }
                let key = &self.keys[(kv_r * len + s) * a..(kv_r * len + s + 1) * a];
                for ((h, &k), &q) in hidden.iter_mut().zip(key).zip(q) {
                    *h = tanh_f32(k + q);
                }
                *w = dot(self.v, &hidden);
            }
            softmax_in_place(w);
            let out = &mut context[r * d..(r + 1) * d];
            let values = &self.values[kv_r * len * d..(kv_r + 1) * len * d];
            for (&p, value) in w.iter().zip(values.chunks_exact(d)) {
                for (o, &x) in out.iter_mut().zip(value) {
                    *o += p * x;
                }
            }
        }
    }
}

fn dims4(t: &FlexTensor) -> [usize; 4] {
    let s = t.layout().shape();
    [s[0], s[1], s[2], s[3]]
}

/// `[n, heads, len, d]` keys or values, in f32 or int8 (`super::CacheFormat::Int8`).
#[derive(Clone, Copy)]
pub enum Vectors<'a> {
    F32(&'a Tensor<4>),
    Int8(&'a Int8Vectors),
}

impl Vectors<'_> {
    pub fn dims(&self) -> [usize; 4] {
        match self {
            Vectors::F32(t) => t.dims(),
            Vectors::Int8(q) => q.dims(),
        }
    }
}

/// `t: [n, heads, len, d]` quantised vector by vector ([`Int8Vectors`]). `None` off the CPU
/// backend or for tracked tensors.
pub fn quantize_vectors(t: &Tensor<4>) -> Option<Int8Vectors> {
    let t = flex_f32(t)?.to_contiguous();
    let dims = dims4(&t);
    let n = dims.iter().product::<usize>();
    Some(Int8Vectors::quantize(&t.storage::<f32>()[..n], dims))
}

/// [`Int8Vectors`] back in f32, as a CPU tensor.
pub fn dequantize_vectors(q: &Int8Vectors) -> Tensor<4> {
    Tensor::from_primitive::<Flex>(flex_tensor(q.dequantize(), q.dims()))
}

/// Keys and values a decoding step attends over, in order: the encoder side (one segment), or a
/// prefix cache (one segment per decoded block, see [`super::PrefixCache`]).
#[derive(Clone, Copy)]
pub struct Segment<'a> {
    /// `[n, heads, len, d_k]`; `value` is `[n, heads, len, d_v]`.
    pub key: Vectors<'a>,
    pub value: Vectors<'a>,
    /// `[n, len]`, true at padded keys.
    pub pad: Option<&'a Tensor<2, Bool>>,
    /// Query row `i` reads row `rows.get(i)` of this segment.
    pub rows: &'a RowMap,
}

/// Dot-product attention of a single query position per row, as a decoding step needs it:
/// `q: [rows, heads, 1, d_k]` over the keys of `segments` one after another, with scores
/// `q . k / score_divisor` (`sqrt(d_k)` for the Transformer, 1 for ConvS2S). Row maps let the
/// beams of one sentence read one copy of its encoder side, and a prefix cache follow beam
/// reorders without copying. Returns the context `[rows, 1, heads * d_v]` (heads concatenated)
/// and the weights `[rows, heads, 1, len]` (`len` summed over the segments).
///
/// With one query, every (row, head) product is a vector-matrix product of a few dozen keys: as
/// two batched matmuls that is two tiny gemm calls per (row, head), mostly call overhead. Here
/// it is one loop over the keys. `None` off the CPU backend or for tracked (autodiff) tensors.
pub fn single_query_attention(
    q: &Tensor<4>,
    segments: &[Segment<'_>],
    score_divisor: f32,
) -> Option<(Tensor<3>, Tensor<4>)> {
    let q = flex_f32(q)?.to_contiguous();
    let [rows, heads, q_len, d_k] = dims4(&q);
    assert_eq!(q_len, 1, "single_query_attention: {q_len} query positions");
    assert!(!segments.is_empty(), "single_query_attention: no keys");
    let d_v = segments.first().map_or(0, |g| g.value.dims()[3]);
    let mut parts = Vec::with_capacity(segments.len());
    for seg in segments {
        let (key, value) = (Stored::of(seg.key)?, Stored::of(seg.value)?);
        let pad = match seg.pad {
            Some(p) => Some(flex_mask(p)?),
            None => None,
        };
        let [n, _, len, _] = key.dims();
        assert!(key.dims() == [n, heads, len, d_k] && value.dims() == [n, heads, len, d_v]);
        assert!(seg.rows.fits(rows, n));
        parts.push((key, value, pad, seg.rows));
    }
    let total: usize = parts.iter().map(|p| p.0.dims()[2]).sum();
    let mut context = vec![0.0f32; rows * heads * d_v];
    let mut weights = vec![0.0f32; rows * heads * total];
    let kernel = Attend {
        q: &q.storage::<f32>()[..rows * heads * d_k],
        segments: parts
            .iter()
            .map(|(key, value, pad, rows)| AttendSegment {
                key: key.read(),
                value: value.read(),
                len: key.dims()[2],
                pad: pad.as_ref().map(|p| {
                    let [n, _, len, _] = key.dims();
                    &p.storage::<u8>()[..n * len]
                }),
                rows,
            })
            .collect(),
        heads,
        d_k,
        d_v,
        len: total,
        score_divisor,
    };
    run(&kernel, &mut context, &mut weights);
    Some((
        Tensor::from_primitive::<Flex>(flex_tensor(context, [rows, 1, heads * d_v])),
        Tensor::from_primitive::<Flex>(flex_tensor(weights, [rows, heads, 1, total])),
    ))
}

/// A `[rows, heads, len, d_k]` tensor's data with its strides (the last one 1): the encoder
/// side's keys and values are head-split views, read in place rather than copied every step.
struct Strided {
    tensor: FlexTensor,
    dims: [usize; 4],
    strides: [usize; 3],
}

impl Strided {
    fn of(t: FlexTensor) -> Self {
        let usable = |t: &FlexTensor| {
            let s = t.layout().strides();
            s[3] == 1 && s[..3].iter().all(|&x| x >= 0)
        };
        let t = if usable(&t) { t } else { t.to_contiguous() };
        let s = t.layout().strides();
        let strides = [s[0] as usize, s[1] as usize, s[2] as usize];
        Self {
            dims: dims4(&t),
            tensor: t,
            strides,
        }
    }

    fn data(&self) -> &[f32] {
        &self.tensor.storage::<f32>()[self.tensor.layout().start_offset()..]
    }

    /// The last axis's values at (row, head, position).
    #[inline(always)]
    fn at<'a>(&self, data: &'a [f32], r: usize, h: usize, s: usize) -> &'a [f32] {
        let o = r * self.strides[0] + h * self.strides[1] + s * self.strides[2];
        &data[o..o + self.dims[3]]
    }
}

/// A segment's keys or values as the kernel holds them.
enum Stored<'a> {
    F32(Strided),
    Int8(&'a Int8Vectors),
}

impl<'a> Stored<'a> {
    fn of(v: Vectors<'a>) -> Option<Self> {
        Some(match v {
            Vectors::F32(t) => Stored::F32(Strided::of(flex_f32(t)?)),
            Vectors::Int8(q) => Stored::Int8(q),
        })
    }

    fn dims(&self) -> [usize; 4] {
        match self {
            Stored::F32(t) => t.dims,
            Stored::Int8(q) => q.dims(),
        }
    }

    fn read(&self) -> Read<'_> {
        match self {
            Stored::F32(t) => Read::F32(t, t.data()),
            Stored::Int8(q) => Read::Int8(q),
        }
    }
}

/// The vectors of a segment as the kernel's loops read them.
#[derive(Clone, Copy)]
enum Read<'a> {
    F32(&'a Strided, &'a [f32]),
    Int8(&'a Int8Vectors),
}

impl Read<'_> {
    /// `q . v` for the vector at (row, head, position); int8 vectors sum `q . v_int8` and then
    /// apply their scale.
    #[inline(always)]
    fn dot(&self, q: &[f32], r: usize, h: usize, s: usize) -> f32 {
        match *self {
            Read::F32(t, data) => dot(q, t.at(data, r, h, s)),
            Read::Int8(v) => {
                let (v, scale) = v.at(r, h, s);
                dot_i8(q, v) * scale
            }
        }
    }

    /// `out += sum_s p[s] v_s[from..from + out.len()]` over the first `p.len()` positions of
    /// (row, head), position by position: each output value sums its terms in position order.
    #[inline(always)]
    fn add_weighted(&self, out: &mut [f32], p: &[f32], r: usize, h: usize, from: usize) {
        let to = from + out.len();
        match *self {
            Read::F32(t, data) => {
                for (s, &p) in p.iter().enumerate() {
                    for (o, &x) in out.iter_mut().zip(&t.at(data, r, h, s)[from..to]) {
                        *o += p * x;
                    }
                }
            }
            Read::Int8(v) => {
                for (s, &p) in p.iter().enumerate() {
                    let (v, scale) = v.at(r, h, s);
                    let p = p * scale;
                    for (o, &x) in out.iter_mut().zip(&v[from..to]) {
                        *o += p * x as f32;
                    }
                }
            }
        }
    }
}

/// Output values the value pass sums at once: a block this size stays in vector registers
/// (four of AVX-512's) over all positions instead of going through memory at each one.
const VALUE_BLOCK: usize = 64;

struct Attend<'a> {
    q: &'a [f32],
    segments: Vec<AttendSegment<'a>>,
    heads: usize,
    d_k: usize,
    d_v: usize,
    /// Keys over all segments.
    len: usize,
    score_divisor: f32,
}

struct AttendSegment<'a> {
    key: Read<'a>,
    value: Read<'a>,
    /// Positions.
    len: usize,
    pad: Option<&'a [u8]>,
    rows: &'a RowMap,
}

/// A kernel writing a decoding step's attention context and weights, compiled for each vector
/// unit by [`run`].
trait StepKernel {
    fn compute(&self, context: &mut [f32], weights: &mut [f32]);
}

/// Runs `kernel` compiled for the widest vector unit the CPU has; the arithmetic, and so every
/// result, is the same on each (no fused multiply-add, fixed lane order).
fn run<K: StepKernel>(kernel: &K, context: &mut [f32], weights: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { run_avx512(kernel, context, weights) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { run_avx2(kernel, context, weights) };
        }
    }
    kernel.compute(context, weights)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn run_avx512<K: StepKernel>(kernel: &K, context: &mut [f32], weights: &mut [f32]) {
    kernel.compute(context, weights)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn run_avx2<K: StepKernel>(kernel: &K, context: &mut [f32], weights: &mut [f32]) {
    kernel.compute(context, weights)
}

impl StepKernel for Attend<'_> {
    #[inline(always)]
    fn compute(&self, context: &mut [f32], weights: &mut [f32]) {
        let (heads, len, d_k, d_v) = (self.heads, self.len, self.d_k, self.d_v);
        // The row each segment gives the current query row.
        let mut kv_rows = vec![0usize; self.segments.len()];
        // Scores: positions outermost, heads inside, so a position's keys for every head are
        // read together, one contiguous row of a step's projection. Context: head by head, each
        // block of output values summed over the positions in order, as one sum per value.
        for r in 0..self.q.len() / (heads * d_k) {
            for (g, kv_r) in self.segments.iter().zip(kv_rows.iter_mut()) {
                *kv_r = g.rows.get(r);
            }
            let q = &self.q[r * heads * d_k..(r + 1) * heads * d_k];
            let w = &mut weights[r * heads * len..(r + 1) * heads * len];
            let mut at = 0;
            for (g, &kv_r) in self.segments.iter().zip(&kv_rows) {
                let n = g.len;
                let pad = g.pad.map(|p| &p[kv_r * n..(kv_r + 1) * n]);
                for s in 0..n {
                    let masked = pad.is_some_and(|p| p[s] != 0);
                    for h in 0..heads {
                        w[h * len + at + s] = if masked {
                            MASKED
                        } else {
                            let q = &q[h * d_k..(h + 1) * d_k];
                            g.key.dot(q, kv_r, h, s) / self.score_divisor
                        };
                    }
                }
                at += n;
            }
            for w in w.chunks_exact_mut(len) {
                softmax_in_place(w);
            }
            let out = &mut context[r * heads * d_v..(r + 1) * heads * d_v];
            for (h, (out, w)) in out.chunks_mut(d_v.max(1)).zip(w.chunks(len)).enumerate() {
                for (b, out) in out.chunks_mut(VALUE_BLOCK).enumerate() {
                    let from = b * VALUE_BLOCK;
                    // A whole block has a length the compiler knows, so it can hold `acc` in
                    // registers; the last, shorter one (`d_v` not a multiple) goes through memory.
                    let mut acc = [0.0f32; VALUE_BLOCK];
                    if let Ok(out) = <&mut [f32; VALUE_BLOCK]>::try_from(&mut *out) {
                        self.weigh_values(&mut acc, w, &kv_rows, h, from);
                        *out = acc;
                    } else {
                        let acc = &mut acc[..out.len()];
                        self.weigh_values(acc, w, &kv_rows, h, from);
                        out.copy_from_slice(acc);
                    }
                }
            }
        }
    }
}

impl Attend<'_> {
    /// `acc += sum_s w[s] v_s[from..from + acc.len()]` over head `h`'s positions in every
    /// segment, in order (`w`: the row's weights for that head, `kv_rows`: each segment's row).
    #[inline(always)]
    fn weigh_values(&self, acc: &mut [f32], w: &[f32], kv_rows: &[usize], h: usize, from: usize) {
        let mut at = 0;
        for (g, &kv_r) in self.segments.iter().zip(kv_rows) {
            g.value.add_weighted(acc, &w[at..at + g.len], kv_r, h, from);
            at += g.len;
        }
    }
}

/// A dot product in 16 independent lanes (vectorisable without reassociating any sum).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_as(a, b, |y| y)
}

/// [`dot`] of f32 by int8 values, each converted to f32 (exactly) in the same lanes.
#[inline(always)]
fn dot_i8(a: &[f32], b: &[i8]) -> f32 {
    dot_as(a, b, f32::from)
}

/// `sum a[i] * f(b[i])` in [`dot`]'s 16 lanes.
#[inline(always)]
fn dot_as<T: Copy>(a: &[f32], b: &[T], f: impl Fn(T) -> f32) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0.0f32; LANES];
    let (a_main, a_tail) = a.split_at(a.len() / LANES * LANES);
    let (b_main, b_tail) = b.split_at(a_main.len());
    for (x, y) in a_main.chunks_exact(LANES).zip(b_main.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += x[l] * f(y[l]);
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, &y) in a_tail.iter().zip(b_tail) {
        sum += x * f(y);
    }
    sum
}

/// burn-flex's softmax over one row: `exp(x - max)` normalised by its (sequential) sum.
#[inline(always)]
fn softmax_in_place(w: &mut [f32]) {
    let max = w.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for x in w.iter_mut() {
        *x = exp_f32(*x - max);
        sum += *x;
    }
    let inv = 1.0 / sum;
    for x in w.iter_mut() {
        *x *= inv;
    }
}
