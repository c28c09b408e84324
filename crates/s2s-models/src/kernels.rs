//! Operations burn has no single op for, written for the CPU backend (burn-flex) through burn's
//! backend-extension API (`Tensor::try_into_primitive` / `from_primitive`). On any other backend
//! each falls back to the equivalent plain tensor ops, so results never depend on which path ran.

use burn::tensor::{Bool, DType, Shape, Tensor};
use burn_flex::{Flex, FlexTensor, Layout};

use crate::ids_1d;
use crate::transformer::attention::MASKED;

/// `cat([past.select(0, rows), new], 2)` for `[rows, heads, len, d]` tensors: the rows of `past`
/// that beam search kept, in their new order, each followed by its new positions.
///
/// Decoding does this to every layer's self-attention cache at every step. Two ops copy the
/// whole cache twice (once to reorder, once to grow); this copies it once.
pub fn select_rows_then_cat(past: Tensor<4>, rows: &[usize], new: Tensor<4>) -> Tensor<4> {
    let [_, heads, _, d] = past.dims();
    let [new_rows, new_heads, _, new_d] = new.dims();
    assert!(
        rows.len() == new_rows && heads == new_heads && d == new_d,
        "select_rows_then_cat: {} rows of {:?} after {:?}",
        rows.len(),
        new.dims(),
        past.dims()
    );
    let on_cpu = past.dtype() == DType::F32 && new.dtype() == DType::F32;
    if on_cpu
        && let (Ok(p), Ok(n)) = (
            past.clone().try_into_primitive::<Flex>(),
            new.clone().try_into_primitive::<Flex>(),
        )
    {
        return Tensor::from_primitive::<Flex>(select_rows_then_cat_flex(&p, rows, &n));
    }
    let ids: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    let kept = past.select(0, ids_1d(&ids, &new.device()));
    Tensor::cat(vec![kept, new], 2)
}

fn select_rows_then_cat_flex(past: &FlexTensor, rows: &[usize], new: &FlexTensor) -> FlexTensor {
    let past = past.to_contiguous();
    let new = new.to_contiguous();
    let [past_rows, heads, len, d] = dims4(&past);
    let [_, _, new_len, _] = dims4(&new);
    let past_data: &[f32] = &past.storage::<f32>()[past.layout().start_offset()..];
    let new_data: &[f32] = &new.storage::<f32>()[new.layout().start_offset()..];
    let (past_block, new_block) = (len * d, new_len * d);
    let mut out = Vec::with_capacity(rows.len() * heads * (past_block + new_block));
    for (i, &row) in rows.iter().enumerate() {
        assert!(
            row < past_rows,
            "select_rows_then_cat: row {row} of {past_rows}"
        );
        for h in 0..heads {
            let p = (row * heads + h) * past_block;
            out.extend_from_slice(&past_data[p..p + past_block]);
            let n = (i * heads + h) * new_block;
            out.extend_from_slice(&new_data[n..n + new_block]);
        }
    }
    FlexTensor::new(
        burn::tensor::Bytes::from_elems(out),
        Layout::contiguous(Shape::new([rows.len(), heads, len + new_len, d])),
        DType::F32,
    )
}

fn dims4(t: &FlexTensor) -> [usize; 4] {
    let s = t.layout().shape();
    [s[0], s[1], s[2], s[3]]
}

/// Scaled dot-product attention of a single query position per row, as a decoding step needs it:
/// `q: [rows, heads, 1, d_k]` over `key`, `value: [n, heads, len, d_k]`, with `key_pad: [n, len]`
/// true at padded keys. Row `i` reads row `kv_rows[i]` of them (`None`: row `i`, and `n = rows`),
/// so the beams of one sentence read one copy of its encoder side. Returns the context `[rows, 1, heads * d_k]` (heads
/// concatenated) and the weights `[rows, heads, 1, len]`.
///
/// With one query, every (row, head) product is a vector-matrix product of a few dozen keys: as
/// two batched matmuls that is two tiny gemm calls per (row, head), mostly call overhead. Here
/// it is one loop over the keys. `None` off the CPU backend or for tracked (autodiff) tensors:
/// the caller then runs the general path, which computes the same function.
pub fn single_query_attention(
    q: &Tensor<4>,
    key: &Tensor<4>,
    value: &Tensor<4>,
    key_pad: Option<&Tensor<2, Bool>>,
    kv_rows: Option<&[usize]>,
) -> Option<(Tensor<3>, Tensor<4>)> {
    let flex = |t: &Tensor<4>| {
        (t.dtype() == DType::F32)
            .then(|| t.clone().try_into_primitive::<Flex>().ok())
            .flatten()
    };
    let q = flex(q)?.to_contiguous();
    let (key, value) = (Strided::of(flex(key)?), Strided::of(flex(value)?));
    let pad = match key_pad {
        Some(p) => {
            let p = p.clone().try_into_primitive::<Flex>().ok()?.to_contiguous();
            // One byte per key. burn-flex's `select` on a bool tensor labels its result `U8`.
            if !(matches!(p.dtype(), DType::Bool(_) | DType::U8) && p.dtype().size() == 1) {
                return None;
            }
            Some(p)
        }
        None => None,
    };
    let [rows, heads, q_len, d_k] = dims4(&q);
    let [kv_n, _, len, _] = key.dims;
    assert_eq!(q_len, 1, "single_query_attention: {q_len} query positions");
    assert!(key.dims == [kv_n, heads, len, d_k] && value.dims == key.dims);
    let identity: Vec<usize>;
    let kv_rows = match kv_rows {
        Some(r) => r,
        None => {
            identity = (0..rows).collect();
            &identity
        }
    };
    assert!(kv_rows.len() == rows && kv_rows.iter().all(|&r| r < kv_n));
    let mut context = vec![0.0f32; rows * heads * d_k];
    let mut weights = vec![0.0f32; rows * heads * len];
    let pad_data = pad
        .as_ref()
        .map(|p: &FlexTensor| &p.storage::<u8>()[..kv_n * len]);
    Attend {
        q: &q.storage::<f32>()[..rows * heads * d_k],
        kv_rows,
        key: &key,
        value: &value,
        pad: pad_data,
    }
    .run(&mut context, &mut weights);
    let context = FlexTensor::new(
        burn::tensor::Bytes::from_elems(context),
        Layout::contiguous(Shape::new([rows, 1, heads * d_k])),
        DType::F32,
    );
    let weights = FlexTensor::new(
        burn::tensor::Bytes::from_elems(weights),
        Layout::contiguous(Shape::new([rows, heads, 1, len])),
        DType::F32,
    );
    Some((
        Tensor::from_primitive::<Flex>(context),
        Tensor::from_primitive::<Flex>(weights),
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

    /// The `d_k` values at (row, head, position).
    #[inline(always)]
    fn at<'a>(&self, data: &'a [f32], r: usize, h: usize, s: usize) -> &'a [f32] {
        let o = r * self.strides[0] + h * self.strides[1] + s * self.strides[2];
        &data[o..o + self.dims[3]]
    }
}

struct Attend<'a> {
    q: &'a [f32],
    kv_rows: &'a [usize],
    key: &'a Strided,
    value: &'a Strided,
    pad: Option<&'a [u8]>,
}

impl Attend<'_> {
    /// Picks the widest vector unit the CPU has; the arithmetic, and so every result, is the
    /// same on each (no fused multiply-add, fixed lane order).
    fn run(&self, context: &mut [f32], weights: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked just above).
                return unsafe { self.run_avx512(context, weights) };
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2 (checked just above).
                return unsafe { self.run_avx2(context, weights) };
            }
        }
        self.attend(context, weights)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn run_avx512(&self, context: &mut [f32], weights: &mut [f32]) {
        self.attend(context, weights)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn run_avx2(&self, context: &mut [f32], weights: &mut [f32]) {
        self.attend(context, weights)
    }

    #[inline(always)]
    fn attend(&self, context: &mut [f32], weights: &mut [f32]) {
        let [_, heads, len, d_k] = self.key.dims;
        let (keys, values) = (self.key.data(), self.value.data());
        let scale = (d_k as f32).sqrt();
        for (r, &kv_r) in self.kv_rows.iter().enumerate() {
            let pad = self.pad.map(|p| &p[kv_r * len..(kv_r + 1) * len]);
            for h in 0..heads {
                let rh = r * heads + h;
                let q = &self.q[rh * d_k..(rh + 1) * d_k];
                let w = &mut weights[rh * len..(rh + 1) * len];
                for (s, w) in w.iter_mut().enumerate() {
                    let masked = pad.is_some_and(|p| p[s] != 0);
                    *w = if masked {
                        MASKED
                    } else {
                        dot(q, self.key.at(keys, kv_r, h, s)) / scale
                    };
                }
                softmax_in_place(w);
                let out = &mut context[rh * d_k..(rh + 1) * d_k];
                for (s, &p) in w.iter().enumerate() {
                    for (o, &x) in out.iter_mut().zip(self.value.at(values, kv_r, h, s)) {
                        *o += p * x;
                    }
                }
            }
        }
    }
}

/// A dot product in 16 independent lanes (vectorisable without reassociating any sum).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0.0f32; LANES];
    let (a_main, a_tail) = a.split_at(a.len() / LANES * LANES);
    let (b_main, b_tail) = b.split_at(a_main.len());
    for (x, y) in a_main.chunks_exact(LANES).zip(b_main.chunks_exact(LANES)) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let mut sum = acc.iter().sum::<f32>();
    for (x, y) in a_tail.iter().zip(b_tail) {
        sum += x * y;
    }
    sum
}

/// burn-flex's softmax over one row: `exp(x - max)` normalised by its (sequential) sum.
#[inline(always)]
fn softmax_in_place(w: &mut [f32]) {
    let max = w.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for x in w.iter_mut() {
        *x = burn_flex::simd::fast_math::exp_f32(*x - max);
        sum += *x;
    }
    let inv = 1.0 / sum;
    for x in w.iter_mut() {
        *x *= inv;
    }
}
