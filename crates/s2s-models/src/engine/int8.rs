//! int8 weights and the int8 matrix product of int8 inference (`s2s quantize`).
//!
//! A weight `W: [n, k]` (one row per output) is stored as int8 with one scale per row,
//! `W[r] ~ scale[r] * q[r]`, `q` in `[-127, 127]`. A product `x W^T` quantises each row of the
//! activations `x: [m, k]` on the fly the same way (one scale per row, from its largest magnitude),
//! multiplies in integers with 32-bit accumulation, and scales back to f32: CTranslate2's
//! `int8_float32` scheme. The integer sums are exact, so every kernel returns the same bits.
//!
//! Kernels, picked at run time ([`Kernel::best`]):
//! - [`Kernel::Amx`]: AMX's `tdpbssd` (a 16 x 64 tile of signed activation bytes times a 64 x 16
//!   tile of signed weight bytes, added into a 16 x 16 tile of 32-bit sums, in one instruction).
//!   Signed times signed, so no offset is needed. Products of fewer than [`AMX_MIN_ROWS`] rows run
//!   the VNNI kernel instead: a tile is 16 rows, and one or five rows would waste most of it;
//! - [`Kernel::Vnni`]: AVX-512 VNNI's `vpdpbusd` (4 unsigned x signed byte products added into
//!   each 32-bit lane). It needs unsigned activations, so they are stored shifted by 128 and
//!   `128 * sum_j q[r, j]` (kept per row) is subtracted afterwards, as oneDNN does;
//! - [`Kernel::Avx2`]: the same sums with AVX2's `vpmaddubsw` (pairs of unsigned x signed byte
//!   products added into 16-bit lanes, saturating) and `vpmaddwd` by ones (pairs of those into
//!   32-bit lanes). It multiplies `|w|` by `x` with `w`'s sign moved onto it (`vpsignb`): both
//!   at most 127 in magnitude, a pair sums to at most `2 * 127 * 127 = 32258`, which cannot
//!   saturate, so no offset is needed and the sums are exact. (With activations offset by 128, as
//!   `vpdpbusd` needs, a pair could reach `2 * 255 * 127` and saturate: oneDNN's AVX2 products
//!   accept that rounding; these do not);
//! - [`Kernel::Portable`]: the same loops in plain Rust, compiled for the baseline target and
//!   vectorised by the compiler. The fallback wherever AVX2 is missing.
//!
//! No maintained crate fits: `gemm` and `matrixmultiply` multiply floats only, and candle's
//! quantised products use its own block formats (32 weights per f16 scale).

use std::sync::OnceLock;

/// Output rows per packed panel (one 512-bit register of 32-bit sums).
const PANEL: usize = 16;
/// Inner-dimension values per 32-bit lane (`vpdpbusd` adds 4 byte products).
const GROUP: usize = 4;
/// The activations' offset where a kernel needs them unsigned (`vpdpbusd`; [`Kernel::offset`]).
const OFFSET: i32 = 128;
/// Activation rows from which [`Kernel::Amx`] multiplies with AMX tiles (16 rows each); smaller
/// products run [`Kernel::Vnni`], the same integers.
pub const AMX_MIN_ROWS: usize = 8;
/// Bytes of one row of an AMX tile: 64 activation values, or 16 weight columns x 4 values.
const AMX_ROW_BYTES: usize = 64;
/// Column groups per AMX weight tile (its 16 rows of 64 bytes).
const AMX_GROUPS: usize = AMX_ROW_BYTES / GROUP;
/// Products at least this large (m * n * k) are split over the threads of the current rayon pool;
/// below it, waking a thread costs more than it saves.
const PARALLEL_WORK: usize = 1 << 22;

/// An int8 matrix kernel. All compute the same integers; they differ only in speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// AMX tiles (`amx-tile`, `amx-int8`, with the kernel's permission from Linux), and VNNI for
    /// products of few rows.
    Amx,
    /// AVX-512 VNNI (`avx512f`, `avx512bw`, `avx512vnni`).
    Vnni,
    /// AVX2 (`vpmaddubsw` on `|w|` and `x` signed by `w`, then `vpmaddwd` by ones).
    Avx2,
    /// The plain loops compiled for the baseline target: every CPU.
    Portable,
}

impl Kernel {
    /// The kernels this CPU can run, fastest first.
    pub fn available() -> Vec<Kernel> {
        [Kernel::Amx, Kernel::Vnni, Kernel::Avx2, Kernel::Portable]
            .into_iter()
            .filter(|k| k.is_available())
            .collect()
    }

    pub fn is_available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Vnni => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Amx => Kernel::Vnni.is_available() && amx::permitted(),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Amx | Kernel::Vnni | Kernel::Avx2 => false,
            Kernel::Portable => true,
        }
    }

    /// The micro-kernel's tile: activation rows and 16-column panels per call. VNNI's sums take
    /// 5 cycles before the next `vpdpbusd` into the same register can start, and a core issues
    /// two per cycle: 6 rows x 2 panels keep 12 independent sums in flight (of 32 registers), where
    /// 4 x 1 left the unit idle half the time. AVX2 has 16 registers: 4 rows x 2 registers of
    /// sums, the panel's bytes and their magnitudes (4), a row's bytes, a scratch and the ones.
    /// AMX has 8 tile registers: 2 x 2 tiles of sums (32 rows x 2 panels), 2 of activations and 2
    /// of weights.
    fn tile(self) -> (usize, usize) {
        match self {
            Kernel::Amx => (32, 2),
            Kernel::Vnni => (6, 2),
            Kernel::Avx2 | Kernel::Portable => (4, 1),
        }
    }

    /// What the kernel adds to every quantised activation: 128 where it multiplies unsigned
    /// activations (`vpdpbusd`, and the portable loops, which mirror it), 0 where signed.
    fn offset(self) -> i32 {
        match self {
            Kernel::Vnni | Kernel::Portable => OFFSET,
            Kernel::Avx2 | Kernel::Amx => 0,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kernel::Amx => "amx",
            Kernel::Vnni => "vnni",
            Kernel::Avx2 => "avx2",
            Kernel::Portable => "portable",
        }
    }

    /// The fastest kernel this CPU has, checked once per process. `S2S_INT8_KERNEL=amx|vnni|avx2|
    /// portable` picks another (for benchmarks and checks); one the CPU lacks falls back to the
    /// fastest, with a warning.
    pub fn best() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            let fastest = Kernel::available()[0];
            let Ok(wanted) = std::env::var("S2S_INT8_KERNEL") else {
                return fastest;
            };
            match Kernel::available()
                .into_iter()
                .find(|k| k.name() == wanted.trim())
            {
                Some(k) => k,
                None => {
                    eprintln!(
                        "warning: S2S_INT8_KERNEL={wanted} is not a kernel this CPU has (it has {}); using {}",
                        Kernel::available()
                            .iter()
                            .map(|k| k.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                        fastest.name()
                    );
                    fastest
                }
            }
        })
    }
}

/// A weight `[rows, cols]` quantised per row, packed for the kernels: panels of 16 rows, and in
/// each panel, for every 4 columns, the 16 rows' 4 bytes back to back (64 bytes, one register).
/// A panel's groups are thus the rows of AMX weight tiles, 16 groups (64 columns) per tile; the
/// last tile of a panel whose groups are not a multiple of 16 reads on into the next panel, or
/// into [`AMX_SLACK`] zero bytes after the last, where the activations it meets are zero padding.
#[derive(Clone, PartialEq)]
pub struct Int8Matrix {
    rows: usize,
    cols: usize,
    /// Column groups of 4 (`cols` rounded up; the padding is zero).
    groups: usize,
    packed: Vec<i8>,
    scales: Vec<f32>,
    /// `sum_j q[r, j]`, for the activations' offset.
    row_sums: Vec<i32>,
}

impl std::fmt::Debug for Int8Matrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Int8Matrix[{}, {}]", self.rows, self.cols)
    }
}

/// Vectors quantised one by one along their last axis, each with its own scale (`v ~ scale * q`,
/// as [`Int8Matrix`] does its rows): an int8 model's self-attention prefix, `[rows, heads, len,
/// d]` with one vector per (row, head, position), in a quarter of its f32 bytes plus one scale per
/// vector ([`super::CacheFormat::Int8`]).
#[derive(Clone, PartialEq)]
pub struct Int8Vectors {
    dims: [usize; 4],
    values: Vec<i8>,
    scales: Vec<f32>,
}

impl std::fmt::Debug for Int8Vectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Int8Vectors{:?}", self.dims)
    }
}

impl Int8Vectors {
    /// Quantises `values` (`dims`, row-major) vector by vector.
    pub fn quantize(values: &[f32], dims: [usize; 4]) -> Self {
        assert_eq!(
            values.len(),
            dims.iter().product::<usize>(),
            "Int8Vectors::quantize: shape"
        );
        let d = dims[3];
        let mut q = vec![0i8; values.len()];
        let mut scales = vec![0.0; dims[..3].iter().product()];
        if d > 0 {
            quantize_vectors(values, d, &mut q, &mut scales);
        }
        Self {
            dims,
            values: q,
            scales,
        }
    }

    pub fn dims(&self) -> [usize; 4] {
        self.dims
    }

    /// The int8 values of the vector at (row, head, position), and its scale.
    #[inline(always)]
    pub fn at(&self, r: usize, h: usize, s: usize) -> (&[i8], f32) {
        let [_, heads, len, d] = self.dims;
        let v = (r * heads + h) * len + s;
        (&self.values[v * d..(v + 1) * d], self.scales[v])
    }

    /// All vectors back in f32 (`scale * q`), row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        let d = self.dims[3].max(1);
        self.values
            .chunks(d)
            .zip(&self.scales)
            .flat_map(|(q, &scale)| q.iter().map(move |&v| v as f32 * scale))
            .collect()
    }

    /// Bytes held (values and scales).
    pub fn size_bytes(&self) -> usize {
        self.values.len() + 4 * self.scales.len()
    }
}

/// `values` in vectors of `d`, each as [`quantize_row`] does a row: its scale into `scales`, its
/// values into `out`. A prefix cache quantises every step's keys and values, so this takes the
/// activations' AVX2 loop where it can (the plain loop rounds through a libm call per value).
fn quantize_vectors(values: &[f32], d: usize, out: &mut [i8], scales: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { quantize_vectors_avx2(values, d, out, scales) };
    }
    for ((v, q), s) in values.chunks(d).zip(out.chunks_mut(d)).zip(scales) {
        *s = quantize_row(v, q);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_vectors_avx2(values: &[f32], d: usize, out: &mut [i8], scales: &mut [f32]) {
    let out: &mut [u8] = bytemuck::cast_slice_mut(out);
    for ((v, q), s) in values.chunks(d).zip(out.chunks_mut(d)).zip(scales) {
        let (scale, inv) = row_scale(v);
        *s = scale;
        // SAFETY: the caller's CPU has AVX2. With offset 0 the bytes are the signed values.
        unsafe { offset_row_avx2(v, inv, 0, q) };
    }
}

/// Zero bytes after the last panel: what its last AMX weight tile may read past its groups.
const AMX_SLACK: usize = (AMX_GROUPS - 1) * PANEL * GROUP;

/// The scale of a row and the values it quantises to: `max |x| / 127`, rounding half to even.
/// An all-zero row has scale 0 and quantises to zeros.
#[inline(always)]
fn quantize_row(row: &[f32], out: &mut [i8]) -> f32 {
    let (scale, inv) = row_scale(row);
    for (q, &x) in out.iter_mut().zip(row) {
        *q = quantize_value(x, inv);
    }
    scale
}

/// A row's scale (`max |x| / 127`) and its inverse (0 for an all-zero row).
#[inline(always)]
fn row_scale(row: &[f32]) -> (f32, f32) {
    // Lane-wise maxima first, so that the compiler vectorises the scan.
    let mut lanes = [0.0f32; 16];
    let chunks = row.chunks_exact(16);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (m, x) in lanes.iter_mut().zip(chunk) {
            *m = m.max(x.abs());
        }
    }
    let peak = rest
        .iter()
        .fold(lanes.iter().fold(0.0f32, |a, &b| a.max(b)), |a, x| {
            a.max(x.abs())
        });
    (peak / 127.0, if peak > 0.0 { 127.0 / peak } else { 0.0 })
}

/// `x / scale` rounded half to even and clamped to `[-127, 127]`; NaN (from an infinite or NaN
/// input) quantises to 0.
#[inline(always)]
fn quantize_value(x: f32, inv: f32) -> i8 {
    (x * inv).round_ties_even().clamp(-127.0, 127.0) as i32 as i8
}

impl Int8Matrix {
    /// Quantises `values: [rows, cols]` (row-major) row by row.
    pub fn quantize(values: &[f32], rows: usize, cols: usize) -> Self {
        assert_eq!(values.len(), rows * cols, "Int8Matrix::quantize: shape");
        let mut q = vec![0i8; rows * cols];
        let scales = if cols == 0 {
            vec![0.0; rows]
        } else {
            values
                .chunks(cols)
                .zip(q.chunks_mut(cols))
                .map(|(row, out)| quantize_row(row, out))
                .collect()
        };
        Self::from_quantized(&q, scales, rows, cols)
    }

    /// A matrix from its int8 values `q: [rows, cols]` (row-major) and per-row scales, as
    /// [`Int8Matrix::values`] and [`Int8Matrix::scales`] return them.
    pub fn from_quantized(q: &[i8], scales: Vec<f32>, rows: usize, cols: usize) -> Self {
        assert_eq!(q.len(), rows * cols, "Int8Matrix::from_quantized: values");
        assert_eq!(scales.len(), rows, "Int8Matrix::from_quantized: scales");
        let groups = cols.div_ceil(GROUP);
        let panels = rows.div_ceil(PANEL);
        let mut packed = vec![0i8; panels * groups * PANEL * GROUP + AMX_SLACK];
        let mut row_sums = vec![0i32; rows];
        for (r, row) in q.chunks(cols.max(1)).take(rows).enumerate() {
            let (p, c) = (r / PANEL, r % PANEL);
            for (j, &v) in row.iter().enumerate() {
                packed[((p * groups + j / GROUP) * PANEL + c) * GROUP + j % GROUP] = v;
            }
            row_sums[r] = row.iter().map(|&v| v as i32).sum();
        }
        Self {
            rows,
            cols,
            groups,
            packed,
            scales,
            row_sums,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    pub fn scales(&self) -> &[f32] {
        &self.scales
    }

    /// Bytes held (the packed values, scales and row sums).
    pub fn size_bytes(&self) -> usize {
        self.packed.len() + 8 * self.rows
    }

    /// The int8 values of row `r`.
    pub fn row_values(&self, r: usize) -> impl Iterator<Item = i8> + '_ {
        assert!(r < self.rows, "Int8Matrix: row {r} of {}", self.rows);
        let (p, c) = (r / PANEL, r % PANEL);
        (0..self.cols).map(move |j| {
            self.packed[((p * self.groups + j / GROUP) * PANEL + c) * GROUP + j % GROUP]
        })
    }

    /// All int8 values, `[rows, cols]` row-major.
    pub fn values(&self) -> Vec<i8> {
        (0..self.rows).flat_map(|r| self.row_values(r)).collect()
    }

    /// Row `r` back in f32 (`scale * q`), appended to `out`: an embedding lookup.
    pub fn dequantize_row_into(&self, r: usize, out: &mut Vec<f32>) {
        let scale = self.scales[r];
        out.extend(self.row_values(r).map(|v| v as f32 * scale));
    }

    /// The whole matrix back in f32, `[rows, cols]` row-major.
    pub fn dequantize(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.rows * self.cols);
        for r in 0..self.rows {
            self.dequantize_row_into(r, &mut out);
        }
        out
    }

    /// `out = x W^T + bias` for `x: [m, cols]` (row-major), `out: [m, rows]`, with the fastest
    /// kernel ([`Kernel::best`]).
    pub fn matmul(&self, x: &[f32], m: usize, bias: Option<&[f32]>, out: &mut [f32]) {
        self.matmul_with(Kernel::best(), x, m, bias, out)
    }

    /// [`Int8Matrix::matmul`] with a given kernel, which must be available on this CPU.
    pub fn matmul_with(
        &self,
        kernel: Kernel,
        x: &[f32],
        m: usize,
        bias: Option<&[f32]>,
        out: &mut [f32],
    ) {
        let k = self.cols;
        assert_eq!(x.len(), m * k, "Int8Matrix::matmul: x is not [{m}, {k}]");
        let kernel = kernel_for(kernel, m);
        let mut a = QuantizedRows::zeroed(kernel, m, self.groups * GROUP);
        a.fill(kernel, 0, x, k);
        self.multiply(kernel, &a, bias, out);
    }

    /// `out = act(x W^T + bias) V^T + next_bias` for `x: [m, cols]` and the next matrix `V =
    /// next` (`[n, rows]`), `out: [m, n]`: a feed-forward network. The hidden layer is computed
    /// [`HIDDEN_BLOCK`] rows at a time and quantised for the second product as it goes, so its
    /// f32 values never exist for all rows at once (a quarter of the memory, and each block is
    /// still in cache when quantised). `act` gets a block of rows `[rows, self.rows()]`. The
    /// same bits as the two products done one after the other: every row of a product depends on
    /// that row alone.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_act_matmul(
        &self,
        x: &[f32],
        m: usize,
        bias: Option<&[f32]>,
        mut act: impl FnMut(&mut [f32], usize),
        next: &Int8Matrix,
        next_bias: Option<&[f32]>,
        out: &mut [f32],
    ) {
        let (hidden, k) = (self.rows, self.cols);
        assert_eq!(x.len(), m * k, "Int8Matrix::matmul: x is not [{m}, {k}]");
        assert_eq!(
            next.cols, hidden,
            "Int8Matrix::matmul_act_matmul: [{}, {}] after [{hidden}, {k}]",
            next.rows, next.cols
        );
        let best = Kernel::best();
        let next_kernel = kernel_for(best, m);
        let mut h = QuantizedRows::zeroed(next_kernel, m, next.groups * GROUP);
        let mut block = vec![0.0f32; HIDDEN_BLOCK.min(m) * hidden];
        for r0 in (0..m).step_by(HIDDEN_BLOCK) {
            let rows = HIDDEN_BLOCK.min(m - r0);
            let block = &mut block[..rows * hidden];
            self.matmul_with(best, &x[r0 * k..(r0 + rows) * k], rows, bias, block);
            act(block, rows);
            h.fill(next_kernel, r0, block, hidden);
        }
        next.multiply(next_kernel, &h, next_bias, out);
    }

    /// `out = a W^T + bias` for activations `a` quantised for `kernel`.
    fn multiply(&self, kernel: Kernel, a: &QuantizedRows, bias: Option<&[f32]>, out: &mut [f32]) {
        let (m, n) = (a.scales.len(), self.rows);
        assert_eq!(
            out.len(),
            m * n,
            "Int8Matrix::matmul: out is not [{m}, {n}]"
        );
        if let Some(b) = bias {
            assert_eq!(b.len(), n, "Int8Matrix::matmul: bias is not [{n}]");
        }
        let panels = n.div_ceil(PANEL);
        let threads = if m * n * self.cols >= PARALLEL_WORK {
            rayon::current_num_threads().min(panels)
        } else {
            1
        };
        let job = Product {
            w: self,
            a,
            bias,
            out: OutPtr(out.as_mut_ptr()),
            kernel,
        };
        if threads <= 1 {
            job.run(0..panels);
        } else {
            use rayon::prelude::*;
            // Whole tiles per thread, so that only the last thread has a narrower one.
            let per = panels.div_ceil(threads).next_multiple_of(kernel.tile().1);
            (0..threads)
                .into_par_iter()
                .for_each(|t| job.run(t * per..((t + 1) * per).min(panels)));
        }
    }
}

/// Rows of a feed-forward network's hidden layer held in f32 at a time
/// ([`Int8Matrix::matmul_act_matmul`]): four AMX tiles of rows.
pub const HIDDEN_BLOCK: usize = 64;

/// The kernel that multiplies `m` rows: `kernel`, which must be available on this CPU, or VNNI
/// where AMX tiles (16 rows) would be mostly padding (below [`AMX_MIN_ROWS`]); VNNI computes the
/// same integers.
fn kernel_for(kernel: Kernel, m: usize) -> Kernel {
    assert!(
        kernel.is_available(),
        "int8 kernel {kernel:?} needs CPU features this CPU lacks"
    );
    if kernel == Kernel::Amx && m < AMX_MIN_ROWS {
        Kernel::Vnni
    } else {
        kernel
    }
}

/// Activations quantised per row, shifted by the kernel's offset ([`Kernel::offset`]; with
/// offset 0 the bytes are the signed values), each row padded to whole column groups (with the
/// offset, i.e. zero). For AMX, rows are padded to whole tile rows (64 bytes) and the rows to
/// whole tiles (16), all zero.
struct QuantizedRows {
    values: Vec<u8>,
    scales: Vec<f32>,
    /// Bytes per row: a multiple of [`GROUP`].
    stride: usize,
    offset: i32,
}

impl QuantizedRows {
    /// Room for `m` rows of `stride` bytes (a multiple of [`GROUP`]) for `kernel`, every value
    /// zero (the offset) until [`QuantizedRows::fill`] writes it.
    fn zeroed(kernel: Kernel, m: usize, stride: usize) -> Self {
        let offset = kernel.offset();
        let (stride, padded_rows) = match kernel {
            Kernel::Amx => (
                stride.next_multiple_of(AMX_ROW_BYTES),
                m.next_multiple_of(PANEL),
            ),
            _ => (stride, m),
        };
        Self {
            values: vec![offset as u8; padded_rows * stride],
            scales: vec![0.0f32; m],
            stride,
            offset,
        }
    }

    /// Quantises `x: [rows, k]` into rows `r0..r0 + rows`, as `kernel` reads them.
    fn fill(&mut self, kernel: Kernel, r0: usize, x: &[f32], k: usize) {
        match kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `kernel_for` checked that the CPU has the kernel's features (VNNI's
            // include AVX2).
            Kernel::Amx | Kernel::Vnni | Kernel::Avx2 => unsafe { self.fill_avx2(r0, x, k) },
            _ => self.fill_with(r0, x, k, offset_row),
        }
    }

    /// [`QuantizedRows::fill_with`] with [`offset_row_avx2`], compiled for AVX2 (the scan for
    /// each row's scale included).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn fill_avx2(&mut self, r0: usize, x: &[f32], k: usize) {
        // SAFETY: the caller's CPU has AVX2 (see above).
        self.fill_with(r0, x, k, |row, inv, offset, out| unsafe {
            offset_row_avx2(row, inv, offset, out)
        })
    }

    /// Each row of `x: [rows, k]`, as row `r0 + i`: its scale, and its values quantised and
    /// shifted by `quantize`.
    #[inline(always)]
    fn fill_with(
        &mut self,
        r0: usize,
        x: &[f32],
        k: usize,
        quantize: impl Fn(&[f32], f32, i32, &mut [u8]),
    ) {
        if k == 0 {
            return;
        }
        for (i, row) in x.chunks_exact(k).enumerate() {
            let r = r0 + i;
            let (s, inv) = row_scale(row);
            self.scales[r] = s;
            quantize(
                row,
                inv,
                self.offset,
                &mut self.values[r * self.stride..r * self.stride + k],
            );
        }
    }
}

/// `out = quantize_value(row, inv) + offset` (128 or 0), value by value, as bytes.
#[inline(always)]
fn offset_row(row: &[f32], inv: f32, offset: i32, out: &mut [u8]) {
    for (v, &x) in out.iter_mut().zip(row) {
        *v = (quantize_value(x, inv) as i32 + offset) as u8;
    }
}

/// [`offset_row`] eight values at a time: the compiler leaves the plain loop's saturating
/// float-to-int conversion scalar, and at the decoder's widths (256 outputs per weight)
/// quantising the activations then costs about as much as the product.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn offset_row_avx2(row: &[f32], inv: f32, offset: i32, out: &mut [u8]) {
    use std::arch::x86_64::*;
    let (hi, lo) = (_mm256_set1_ps(127.0), _mm256_set1_ps(-127.0));
    // Adding 128 to a byte in [-127, 127] flips its top bit.
    let flip = _mm_set1_epi8(if offset == OFFSET { i8::MIN } else { 0 });
    debug_assert!(offset == OFFSET || offset == 0);
    let inv8 = _mm256_set1_ps(inv);
    let whole = row.len() / 8 * 8;
    for (xs, qs) in row[..whole].chunks_exact(8).zip(out.chunks_exact_mut(8)) {
        // SAFETY: `xs` is 8 floats and `qs` 8 bytes (one 256-bit load, one 64-bit store).
        unsafe {
            let v = _mm256_mul_ps(_mm256_loadu_ps(xs.as_ptr()), inv8);
            // NaN to 0, as `quantize_value`'s `as i32` does; then the clamp, which commutes
            // with rounding (its bounds are integers).
            let v = _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v));
            let v = _mm256_max_ps(lo, _mm256_min_ps(hi, v));
            // Rounds half to even (the default rounding mode), to [-127, 127].
            let q = _mm256_cvtps_epi32(v);
            // Per 128-bit lane: 32 -> 16 -> 8 bits (no value saturates), so each lane's first 4
            // bytes hold its 4 values; then the two lanes' 4 bytes side by side.
            let q = _mm256_packs_epi16(_mm256_packs_epi32(q, q), q);
            let q = _mm_unpacklo_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256::<1>(q));
            _mm_storel_epi64(qs.as_mut_ptr() as *mut __m128i, _mm_xor_si128(q, flip));
        }
    }
    offset_row(&row[whole..], inv, offset, &mut out[whole..]);
}

/// The output, written by several threads at once, each to its own columns.
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);
// SAFETY: `Product::panels` writes only the columns of its own panels, disjoint between threads.
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

struct Product<'a> {
    w: &'a Int8Matrix,
    a: &'a QuantizedRows,
    bias: Option<&'a [f32]>,
    out: OutPtr,
    kernel: Kernel,
}

/// The most activation rows and panels of any kernel's tile ([`Kernel::tile`]).
const MAX_ROWS: usize = 6;
const MAX_PANELS: usize = 2;

/// A micro-kernel's integer sums: `[row][panel][column in the panel]`.
type TileSums = [[[i32; PANEL]; MAX_PANELS]; MAX_ROWS];

impl Product<'_> {
    /// Output columns of `panels`, compiled for the kernel's features (the epilogue included).
    fn run(&self, panels: std::ops::Range<usize>) {
        match self.kernel {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `kernel_for` checked that the CPU has the kernel's features, and the
            // process has AMX's permission (`amx::permitted`).
            Kernel::Amx => unsafe { self.panels_amx(panels) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `kernel_for` checked that the CPU has the kernel's features.
            Kernel::Vnni => unsafe { self.panels_avx512(panels) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Kernel::Avx2 => unsafe { self.panels_avx2(panels) },
            _ => self.panels(panels),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn panels_avx512(&self, panels: std::ops::Range<usize>) {
        self.panels(panels)
    }

    /// [`Product::panels`] with AMX tiles: 32 rows (two tiles) by 2 panels (two tiles) of sums at
    /// a time, over the inner dimension 64 values (one tile of activations per 16 rows and one of
    /// weights per panel) at a time.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    unsafe fn panels_amx(&self, panels: std::ops::Range<usize>) {
        let m = self.a.scales.len();
        let (stride, blocks) = (self.a.stride, self.a.stride / AMX_ROW_BYTES);
        let size = self.w.groups * PANEL * GROUP;
        debug_assert!(self.a.values.len() >= m.next_multiple_of(PANEL) * stride);
        debug_assert!(self.w.packed.len() >= panels.end * size + AMX_SLACK);
        let mut sums: amx::Sums = [[[[0; PANEL]; PANEL]; 2]; 2];
        // SAFETY: the caller's CPU has AMX, with the permission (see `run`); every tile read
        // lies inside the padded activations and the packed weights with their slack (checked
        // above, and `amx::tile`'s notes).
        unsafe {
            amx::configure();
            let mut p = panels.start;
            while p < panels.end {
                let np = 2.min(panels.end - p);
                let w = self.w.packed.as_ptr().add(p * size);
                for r0 in (0..m).step_by(2 * PANEL) {
                    let a = self.a.values.as_ptr().add(r0 * stride);
                    let rows = (2 * PANEL).min(m - r0);
                    match (rows > PANEL, np) {
                        (true, 2) => amx::tile::<2, 2>(a, stride, w, size, blocks, &mut sums),
                        (true, _) => amx::tile::<2, 1>(a, stride, w, size, blocks, &mut sums),
                        (false, 2) => amx::tile::<1, 2>(a, stride, w, size, blocks, &mut sums),
                        (false, _) => amx::tile::<1, 1>(a, stride, w, size, blocks, &mut sums),
                    }
                    for (q, panel) in (p..p + np).enumerate() {
                        self.store(panel, r0, rows, |i| &sums[i / PANEL][q][i % PANEL]);
                    }
                }
                p += np;
            }
            amx::release();
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn panels_avx2(&self, panels: std::ops::Range<usize>) {
        self.panels(panels)
    }

    /// Output columns `16 * panels` (clipped to the matrix), a tile of rows and panels at a time.
    #[inline(always)]
    fn panels(&self, panels: std::ops::Range<usize>) {
        let (m, groups) = (self.a.scales.len(), self.w.groups);
        let (tile_rows, tile_panels) = self.kernel.tile();
        let mut sums: TileSums = [[[0i32; PANEL]; MAX_PANELS]; MAX_ROWS];
        let size = groups * PANEL * GROUP;
        let mut p = panels.start;
        while p < panels.end {
            let np = tile_panels.min(panels.end - p);
            let w = &self.w.packed[p * size..(p + np) * size];
            for r0 in (0..m).step_by(tile_rows) {
                let rows = tile_rows.min(m - r0);
                let a = &self.a.values[r0 * self.a.stride..(r0 + rows) * self.a.stride];
                let stride = self.a.stride;
                match self.kernel {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: `kernel_for` checked that the CPU has the kernel's features.
                    Kernel::Vnni => unsafe {
                        vnni::dot_tile(a, stride, rows, w, np, groups, &mut sums)
                    },
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: as above.
                    Kernel::Avx2 => unsafe {
                        avx2::dot_tile(a, stride, rows, w, np, groups, &mut sums)
                    },
                    _ => dot_tile_plain(a, stride, rows, w, np, groups, &mut sums),
                }
                for (q, panel) in (p..p + np).enumerate() {
                    self.store(panel, r0, rows, |i| &sums[i][q]);
                }
            }
            p += np;
        }
    }

    /// `out[r, c] = scale_a[r] * scale_w[c] * (sum - offset * row_sum[c]) + bias[c]` for panel
    /// `p` and rows `r0..r0 + rows`, whose sums `sums_of(i)` gives for row `r0 + i`.
    #[inline(always)]
    fn store<'s>(
        &self,
        p: usize,
        r0: usize,
        rows: usize,
        sums_of: impl Fn(usize) -> &'s [i32; PANEL],
    ) {
        let n = self.w.rows;
        let c0 = p * PANEL;
        let width = PANEL.min(n - c0);
        let row_sums = &self.w.row_sums[c0..c0 + width];
        let scales = &self.w.scales[c0..c0 + width];
        let offset = self.a.offset;
        for i in 0..rows {
            let sa = self.a.scales[r0 + i];
            // SAFETY: row `r0 + i` < m and columns `c0..c0 + width` <= n lie inside `out`
            // (`m * n` values), and no other thread writes these columns.
            let out =
                unsafe { std::slice::from_raw_parts_mut(self.out.0.add((r0 + i) * n + c0), width) };
            let sums = &sums_of(i)[..width];
            for c in 0..width {
                out[c] = (sums[c] - offset * row_sums[c]) as f32 * (sa * scales[c]);
            }
            if let Some(b) = self.bias {
                for (o, b) in out.iter_mut().zip(&b[c0..c0 + width]) {
                    *o += b;
                }
            }
        }
    }
}

/// `sums[i][q][c] = sum_j a[i, j] * w[q][c, j]` for `rows` activation rows `a` (unsigned,
/// `stride` bytes apart) and `np` consecutive 16-row panels `w` of `groups` column groups each:
/// the plain loops, which the compiler vectorises for whatever target they are compiled for.
#[inline(always)]
fn dot_tile_plain(
    a: &[u8],
    stride: usize,
    rows: usize,
    w: &[i8],
    np: usize,
    groups: usize,
    sums: &mut TileSums,
) {
    let size = groups * PANEL * GROUP;
    for (i, sums) in sums.iter_mut().enumerate().take(rows) {
        let a = &a[i * stride..i * stride + groups * GROUP];
        for (q, sums) in sums.iter_mut().enumerate().take(np) {
            let panel = &w[q * size..(q + 1) * size];
            let mut acc = [0i32; PANEL];
            for (g, b) in panel.chunks_exact(PANEL * GROUP).enumerate() {
                let a = &a[g * GROUP..(g + 1) * GROUP];
                for (c, b) in b.chunks_exact(GROUP).enumerate() {
                    let mut s = 0i32;
                    for j in 0..GROUP {
                        s += a[j] as i32 * b[j] as i32;
                    }
                    acc[c] += s;
                }
            }
            *sums = acc;
        }
    }
}

/// A SIMD kernel's `dot_tile` ([`dot_tile_plain`] for the kernel's `features`): checks the sizes
/// its pointer reads rely on and calls its `tile::<R, P>` with the tile's shape as constants, for
/// the listed shapes (the kernel's [`Kernel::tile`] and every smaller one). The caller's CPU must
/// have the features, which `tile` needs too.
#[cfg(target_arch = "x86_64")]
macro_rules! simd_dot_tile {
    ($features:literal, $(($r:literal, $p:literal)),+) => {
        #[target_feature(enable = $features)]
        pub unsafe fn dot_tile(
            a: &[u8],
            stride: usize,
            rows: usize,
            w: &[i8],
            np: usize,
            groups: usize,
            sums: &mut TileSums,
        ) {
            debug_assert!(a.len() >= (rows - 1) * stride + groups * GROUP);
            debug_assert!(w.len() == np * groups * PANEL * GROUP);
            // SAFETY: the caller's CPU has this function's features (see above).
            unsafe {
                match (rows, np) {
                    $(($r, $p) => tile::<$r, $p>(a, stride, w, groups, sums),)+
                    _ => unreachable!("no {rows} x {np} tile in this kernel"),
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use super::{GROUP, PANEL, TileSums};
    use std::arch::x86_64::*;

    // [`super::dot_tile_plain`] with `vpdpbusd`: each step loads every panel's 64 bytes for one
    // column group once and multiplies them by every row's 4 bytes, broadcast.
    simd_dot_tile!(
        "avx512f,avx512bw,avx512vnni",
        (6, 2),
        (5, 2),
        (4, 2),
        (3, 2),
        (2, 2),
        (1, 2),
        (6, 1),
        (5, 1),
        (4, 1),
        (3, 1),
        (2, 1),
        (1, 1)
    );

    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize>(
        a: &[u8],
        stride: usize,
        w: &[i8],
        groups: usize,
        sums: &mut TileSums,
    ) {
        let mut acc = [[_mm512_setzero_si512(); P]; R];
        let (a, b) = (a.as_ptr(), w.as_ptr());
        let size = groups * PANEL * GROUP;
        for g in 0..groups {
            // SAFETY (all pointer reads): group `g < groups` of panel `q < P` is 64 bytes inside
            // `w`, and each row's 4 bytes at `g * 4` lie inside `a` (checked above).
            let mut w = [_mm512_setzero_si512(); P];
            for (q, w) in w.iter_mut().enumerate() {
                *w = unsafe { _mm512_loadu_si512(b.add(q * size + g * PANEL * GROUP) as *const _) };
            }
            for (i, acc) in acc.iter_mut().enumerate() {
                let x = unsafe { (a.add(i * stride + g * GROUP) as *const i32).read_unaligned() };
                let x = _mm512_set1_epi32(x);
                for (acc, w) in acc.iter_mut().zip(&w) {
                    *acc = _mm512_dpbusd_epi32(*acc, x, *w);
                }
            }
        }
        for (acc, sums) in acc.iter().zip(sums.iter_mut()) {
            for (acc, sums) in acc.iter().zip(sums.iter_mut()) {
                // SAFETY: `sums` is 16 i32s, one 512-bit store.
                unsafe { _mm512_storeu_si512(sums.as_mut_ptr() as *mut _, *acc) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{GROUP, PANEL, TileSums};
    use std::arch::x86_64::*;

    // [`super::dot_tile_plain`] for signed activations, with AVX2: each step loads the panel's 64
    // bytes for one column group (two registers of 8 columns x 4 bytes) and their magnitudes
    // once, and for every row broadcasts its 4 bytes, gives them each weight's sign (`vpsignb`),
    // multiplies them by the weights' magnitudes (`vpmaddubsw`, pairs into 16 bits: exact, see
    // the module's notes) and adds the pairs into 32-bit lanes (`vpmaddwd` by ones), one lane
    // per column, as `vpdpbusd` would.
    simd_dot_tile!("avx2", (4, 1), (3, 1), (2, 1), (1, 1));

    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize>(
        a: &[u8],
        stride: usize,
        panel: &[i8],
        groups: usize,
        sums: &mut TileSums,
    ) {
        const { assert!(P == 1, "the AVX2 kernel's tiles are one panel wide") };
        let mut acc = [[_mm256_setzero_si256(); 2]; R];
        let ones = _mm256_set1_epi16(1);
        let (a, b) = (a.as_ptr(), panel.as_ptr());
        for g in 0..groups {
            // SAFETY (all pointer reads): group `g < groups` of the panel is 64 bytes inside
            // `panel`, and each row's 4 bytes at `g * 4` lie inside `a` (checked above).
            let p = unsafe { b.add(g * PANEL * GROUP) } as *const __m256i;
            let w = unsafe { [_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))] };
            let magnitude = [_mm256_abs_epi8(w[0]), _mm256_abs_epi8(w[1])];
            for (i, acc) in acc.iter_mut().enumerate() {
                let x = unsafe { (a.add(i * stride + g * GROUP) as *const i32).read_unaligned() };
                let x = _mm256_set1_epi32(x);
                for q in 0..2 {
                    let signed = _mm256_sign_epi8(x, w[q]);
                    let pairs = _mm256_maddubs_epi16(magnitude[q], signed);
                    acc[q] = _mm256_add_epi32(acc[q], _mm256_madd_epi16(pairs, ones));
                }
            }
        }
        for (acc, sums) in acc.iter().zip(sums.iter_mut()) {
            for (q, acc) in acc.iter().enumerate() {
                // SAFETY: `sums[0][8q..8q + 8]` is 8 i32s, one 256-bit store.
                unsafe { _mm256_storeu_si256(sums[0][8 * q..].as_mut_ptr() as *mut __m256i, *acc) };
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod amx {
    use super::{AMX_ROW_BYTES, PANEL};
    use std::arch::asm;
    use std::sync::OnceLock;

    /// A tile multiplication's sums: `[row tile][panel][row][column]`, as `tilestored` writes them.
    pub type Sums = [[[[i32; PANEL]; PANEL]; 2]; 2];

    /// Whether this CPU has AMX's tiles and int8 products (CPUID leaf 7: `amx-tile`, `amx-int8`)
    /// and Linux lets this process use them: their 8 KiB of register state is saved on context
    /// switches only for processes that ask (`arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)`); an
    /// AMX instruction without the permission is an illegal instruction. Asked once per process.
    pub fn permitted() -> bool {
        static PERMITTED: OnceLock<bool> = OnceLock::new();
        *PERMITTED.get_or_init(|| {
            // CPUID leaf 7 exists wherever the AVX-512 checks before this one passed.
            let leaf = std::arch::x86_64::__cpuid_count(7, 0);
            let has = |bit: u32| (leaf.edx >> bit) & 1 == 1;
            has(24) && has(25) && request_permission()
        })
    }

    #[cfg(target_os = "linux")]
    fn request_permission() -> bool {
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: a system call that only changes this process's permissions.
        unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            ) == 0
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn request_permission() -> bool {
        false
    }

    /// The tile configuration (palette 1): all 8 tiles 16 rows of 64 bytes.
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    const CONFIG: Config = {
        let mut c = [0u8; 64];
        c[0] = 1;
        let mut t = 0;
        while t < 8 {
            c[16 + 2 * t] = AMX_ROW_BYTES as u8; // bytes per row (little-endian u16)
            c[48 + t] = PANEL as u8; // rows
            t += 1;
        }
        Config(c)
    };

    /// Loads the tile configuration on this thread.
    ///
    /// # Safety
    /// The CPU has AMX and the process its permission ([`permitted`]).
    #[inline(always)]
    pub unsafe fn configure() {
        // SAFETY: see above; CONFIG is 64 readable bytes.
        unsafe { asm!("ldtilecfg [{}]", in(reg) CONFIG.0.as_ptr(), options(nostack, readonly)) };
    }

    /// Returns the tiles to their initial state, so that context switches need not save them.
    ///
    /// # Safety
    /// As [`configure`].
    #[inline(always)]
    pub unsafe fn release() {
        // SAFETY: see above.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }

    /// `sums[t][q][i][c] = sum_j a[16 t + i, j] * w[q][c, j]` for `R` tiles of 16 activation
    /// rows (signed bytes, `stride` bytes apart, `blocks * 64` of them per row) and `P` panels of
    /// weights, `size` bytes apart, each `blocks` weight tiles of 16 groups (1 KiB) in a row.
    /// Tiles: sums in 0-3 (`2 t + q`), activations in 4-5, weights in 6-7.
    ///
    /// # Safety
    /// [`configure`] ran on this thread; `16 R` rows of `blocks * 64` bytes are readable at `a`,
    /// and `(P - 1) * size + blocks * 1024` bytes at `w`.
    #[inline(always)]
    pub unsafe fn tile<const R: usize, const P: usize>(
        a: *const u8,
        stride: usize,
        w: *const i8,
        size: usize,
        blocks: usize,
        sums: &mut Sums,
    ) {
        const TILE_BYTES: usize = PANEL * AMX_ROW_BYTES;
        // SAFETY (every asm block): the CPU has AMX with the permission and the tiles are
        // configured; the loads read inside the ranges the caller vouches for, the stores write
        // `sums` (16 rows of 64 bytes per tile).
        unsafe {
            asm!("tilezero tmm0", options(nostack, nomem));
            if P == 2 {
                asm!("tilezero tmm1", options(nostack, nomem));
            }
            if R == 2 {
                asm!("tilezero tmm2", options(nostack, nomem));
                if P == 2 {
                    asm!("tilezero tmm3", options(nostack, nomem));
                }
            }
            for b in 0..blocks {
                let (a, w) = (a.add(b * AMX_ROW_BYTES), w.add(b * TILE_BYTES));
                asm!("tileloadd tmm4, [{p} + {s}]", p = in(reg) a, s = in(reg) stride,
                    options(nostack, readonly));
                asm!("tileloadd tmm6, [{p} + {s}]", p = in(reg) w, s = in(reg) AMX_ROW_BYTES,
                    options(nostack, readonly));
                asm!("tdpbssd tmm0, tmm4, tmm6", options(nostack, nomem));
                if P == 2 {
                    asm!("tileloadd tmm7, [{p} + {s}]", p = in(reg) w.add(size),
                        s = in(reg) AMX_ROW_BYTES, options(nostack, readonly));
                    asm!("tdpbssd tmm1, tmm4, tmm7", options(nostack, nomem));
                }
                if R == 2 {
                    asm!("tileloadd tmm5, [{p} + {s}]", p = in(reg) a.add(PANEL * stride),
                        s = in(reg) stride, options(nostack, readonly));
                    asm!("tdpbssd tmm2, tmm5, tmm6", options(nostack, nomem));
                    if P == 2 {
                        asm!("tdpbssd tmm3, tmm5, tmm7", options(nostack, nomem));
                    }
                }
            }
            let row = AMX_ROW_BYTES;
            asm!("tilestored [{p} + {s}], tmm0", p = in(reg) sums[0][0].as_mut_ptr(),
                s = in(reg) row, options(nostack));
            if P == 2 {
                asm!("tilestored [{p} + {s}], tmm1", p = in(reg) sums[0][1].as_mut_ptr(),
                    s = in(reg) row, options(nostack));
            }
            if R == 2 {
                asm!("tilestored [{p} + {s}], tmm2", p = in(reg) sums[1][0].as_mut_ptr(),
                    s = in(reg) row, options(nostack));
                if P == 2 {
                    asm!("tilestored [{p} + {s}], tmm3", p = in(reg) sums[1][1].as_mut_ptr(),
                        s = in(reg) row, options(nostack));
                }
            }
        }
    }
}
