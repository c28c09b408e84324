//! f32 products of one row by a weight matrix, `y = x @ w` for `x: [k]` and `w: [k, n]`: each
//! decoding step of greedy search on one sentence, and the last live hypothesis of a beam.
//!
//! Why: gemm runs a one-row product as a gemv that keeps the output in memory, reading and
//! writing all of it once per row of the weight. Here blocks of the output stay in registers
//! while the weight streams past once, so the product is bound by reading the weight; measured
//! in docs/performance.md. From 2 rows on, gemm's micro-kernel on weights packed once per
//! search is as fast or faster (measured there too), so those stay with gemm.
//!
//! The sums: a row-major weight (a linear layer's `[d_in, d_out]`) is summed over `k` in order,
//! one fused multiply-add per term from zero, as gemm's gemv sums it and its micro-kernel sums a
//! depth of up to 512 (so there one row and the same row in a batch agree to the bit); a
//! transposed one (a tied output layer, the embedding table `[n, k]` read as `[k, n]`) in
//! vector-wide partial sums, as gemm's gemv does for that layout.

/// Weights at least this large (`k * n`) have their columns split over the rayon pool's
/// threads; smaller products finish before a second thread would have started.
const PARALLEL_WEIGHT: usize = 256 * 256;

/// How a weight `w: [k, n]` lies in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `w[i][j]` at `i * stride + j`.
    Rows { stride: usize },
    /// `w[i][j]` at `j * stride + i`: the transpose of a row-major `[n, k]` matrix.
    Columns { stride: usize },
}

/// A weight `w: [k, n]` read in place.
#[derive(Clone, Copy, Debug)]
pub struct Weight<'a> {
    pub data: &'a [f32],
    pub k: usize,
    pub n: usize,
    pub layout: Layout,
}

impl Weight<'_> {
    /// The element count the layout reaches: `data` must be at least this long.
    fn extent(&self) -> usize {
        if self.k == 0 || self.n == 0 {
            return 0;
        }
        match self.layout {
            Layout::Rows { stride } => (self.k - 1) * stride + self.n,
            Layout::Columns { stride } => (self.n - 1) * stride + self.k,
        }
    }
}

/// The vector instructions a kernel runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
}

impl Isa {
    /// The best this CPU has, if any.
    pub fn best() -> Option<Isa> {
        Isa::all().into_iter().find(|isa| isa.available())
    }

    /// Every kernel, best first (tests compare them all).
    pub fn all() -> [Isa; 2] {
        [Isa::Avx512, Isa::Avx2]
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
                Isa::Avx2 => {
                    std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("fma")
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            false
        }
    }
}

/// `out = x @ w` for `x: [k]`, `out: [n]`, on this CPU's best kernel, its columns split over
/// the rayon pool's threads for a large weight. `false` (and `out` untouched) on a CPU without
/// AVX2 and FMA.
pub fn gemv(x: &[f32], w: Weight, out: &mut [f32]) -> bool {
    match Isa::best() {
        Some(isa) => gemv_on(isa, x, w, out, rayon::current_num_threads()),
        None => false,
    }
}

/// [`gemv`] on a given kernel with its columns split into up to `parts` parts; `false` where
/// `isa` is missing on this CPU.
pub fn gemv_on(isa: Isa, x: &[f32], w: Weight, out: &mut [f32], parts: usize) -> bool {
    if !isa.available() {
        return false;
    }
    assert!(x.len() >= w.k, "gemv: x has {} of {}", x.len(), w.k);
    assert!(out.len() >= w.n, "gemv: out has {} of {}", out.len(), w.n);
    assert!(
        w.data.len() >= w.extent(),
        "gemv: weight data too short for its layout"
    );
    let parts = if w.k * w.n >= PARALLEL_WEIGHT {
        parts.clamp(1, 64)
    } else {
        1
    };
    // Every column is computed alone, so any split gives the same bits; ranges start on whole
    // cache lines.
    let block = 64;
    let chunk = w.n.div_ceil(parts).div_ceil(block) * block;
    let ranges: Vec<(usize, usize)> = (0..w.n)
        .step_by(chunk.max(1))
        .map(|j| (j, (j + chunk).min(w.n)))
        .collect();
    let out_ptr = OutPtr(out.as_mut_ptr());
    let run = |&(j0, j1): &(usize, usize)| {
        // SAFETY: `isa` is available (checked above), the asserts above bound every access,
        // and each range writes only its own columns `j0..j1` of `out`.
        unsafe { columns(isa, x, w, out_ptr.get(), j0, j1) }
    };
    if ranges.len() > 1 {
        use rayon::prelude::*;
        ranges.par_iter().for_each(run);
    } else {
        ranges.iter().for_each(run);
    }
    true
}

/// The output pointer, shared by the threads that write disjoint columns of it.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: each thread writes its own columns only (see `gemv_on`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

impl OutPtr {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Columns `j0..j1` of `out = x @ w`.
///
/// # Safety
/// `isa` must be available; `x`, `w` and `out` must hold `k` values, the weight's extent and
/// `n` values.
#[allow(unused_variables)]
unsafe fn columns(isa: Isa, x: &[f32], w: Weight, out: *mut f32, j0: usize, j1: usize) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        match isa {
            Isa::Avx512 => avx512::columns(x, w, out, j0, j1),
            Isa::Avx2 => avx2::columns(x, w, out, j0, j1),
        }
    }
}

/// The kernels, once per instruction set: `$lanes` floats per vector, `$nv` vectors of columns
/// per block of a row-major weight and `$nb` columns per block of a transposed one (independent
/// sums enough to hide the latency of a fused multiply-add).
macro_rules! kernels {
    ($name:ident, $features:literal, $lanes:literal, $vec:ty, $zero:ident, $load:ident,
     $store:ident, $set1:ident, $fma:ident, $reduce:path, nv = $nv:literal, nb = $nb:literal) => {
        #[cfg(target_arch = "x86_64")]
        mod $name {
            use super::{Layout, Weight};
            use std::arch::x86_64::*;

            const LANES: usize = $lanes;

            #[target_feature(enable = $features)]
            pub(super) unsafe fn columns(
                x: &[f32],
                w: Weight,
                out: *mut f32,
                j0: usize,
                j1: usize,
            ) {
                let (x, data, k) = (x.as_ptr(), w.data.as_ptr(), w.k);
                unsafe {
                    match w.layout {
                        Layout::Rows { stride } => rows(x, data, stride, k, out, j0, j1),
                        Layout::Columns { stride } => dots(x, data, stride, k, out, j0, j1),
                    }
                }
            }

            /// Row-major weight: blocks of `$nv` vectors of columns, then single vectors, then
            /// single columns; every output a sum over `k` in order from zero.
            #[target_feature(enable = $features)]
            unsafe fn rows(
                x: *const f32,
                w: *const f32,
                stride: usize,
                k: usize,
                out: *mut f32,
                j0: usize,
                j1: usize,
            ) {
                let mut j = j0;
                unsafe {
                    while j + $nv * LANES <= j1 {
                        rows_block::<$nv>(x, w.add(j), stride, k, out.add(j));
                        j += $nv * LANES;
                    }
                    while j + LANES <= j1 {
                        rows_block::<1>(x, w.add(j), stride, k, out.add(j));
                        j += LANES;
                    }
                    for j in j..j1 {
                        let mut acc = 0.0f32;
                        for i in 0..k {
                            acc = (*x.add(i)).mul_add(*w.add(i * stride + j), acc);
                        }
                        *out.add(j) = acc;
                    }
                }
            }

            #[target_feature(enable = $features)]
            #[inline]
            unsafe fn rows_block<const NV: usize>(
                x: *const f32,
                w: *const f32,
                stride: usize,
                k: usize,
                out: *mut f32,
            ) {
                unsafe {
                    let mut acc: [$vec; NV] = [$zero(); NV];
                    for i in 0..k {
                        let row = w.add(i * stride);
                        let xv = $set1(*x.add(i));
                        for (v, acc) in acc.iter_mut().enumerate() {
                            *acc = $fma(xv, $load(row.add(v * LANES)), *acc);
                        }
                    }
                    for (v, acc) in acc.iter().enumerate() {
                        $store(out.add(v * LANES), *acc);
                    }
                }
            }

            /// Transposed weight: `$nb` columns (rows of the `[n, k]` table) at a time, each
            /// a dot product in `LANES` partial sums, reduced, plus the `k % LANES` tail.
            #[target_feature(enable = $features)]
            unsafe fn dots(
                x: *const f32,
                w: *const f32,
                stride: usize,
                k: usize,
                out: *mut f32,
                j0: usize,
                j1: usize,
            ) {
                let mut j = j0;
                unsafe {
                    while j + $nb <= j1 {
                        dots_block::<$nb>(x, w.add(j * stride), stride, k, out.add(j));
                        j += $nb;
                    }
                    while j < j1 {
                        dots_block::<1>(x, w.add(j * stride), stride, k, out.add(j));
                        j += 1;
                    }
                }
            }

            #[target_feature(enable = $features)]
            #[inline]
            unsafe fn dots_block<const NB: usize>(
                x: *const f32,
                w: *const f32,
                stride: usize,
                k: usize,
                out: *mut f32,
            ) {
                unsafe {
                    let mut acc: [$vec; NB] = [$zero(); NB];
                    let full = k / LANES * LANES;
                    let mut i = 0;
                    while i < full {
                        let xv = $load(x.add(i));
                        for (b, acc) in acc.iter_mut().enumerate() {
                            *acc = $fma(xv, $load(w.add(b * stride + i)), *acc);
                        }
                        i += LANES;
                    }
                    for (b, acc) in acc.iter().enumerate() {
                        let mut sum = $reduce(*acc);
                        for i in full..k {
                            sum = (*x.add(i)).mul_add(*w.add(b * stride + i), sum);
                        }
                        *out.add(b) = sum;
                    }
                }
            }
        }
    };
}

kernels!(
    avx512,
    "avx512f",
    16,
    __m512,
    _mm512_setzero_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_set1_ps,
    _mm512_fmadd_ps,
    _mm512_reduce_add_ps,
    nv = 8,
    nb = 8
);

kernels!(
    avx2,
    "avx2,fma",
    8,
    __m256,
    _mm256_setzero_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_set1_ps,
    _mm256_fmadd_ps,
    super::reduce_add_256,
    nv = 8,
    nb = 4
);

/// The sum of a vector's 8 lanes: halves added, then pairs (`_mm512_reduce_add_ps`'s order).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn reduce_add_256(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let quad = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let pair = _mm_add_ps(quad, _mm_movehl_ps(quad, quad));
    let one = _mm_add_ss(pair, _mm_shuffle_ps::<0b01>(pair, pair));
    _mm_cvtss_f32(one)
}
