//! Matrix multiplication via gemm crate.
//!
//! Optimizations:
//! - Strided gemm for f32/f64/f16 avoids copying non-contiguous tensors
//! - Enables parallelism for large matrices (with rayon feature)
//! - Batched matmul parallelized across batch dimension

use alloc::vec;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use burn_backend::{DType, Element};
use burn_std::{Bytes, Shape, bf16, f16};

use crate::{FlexTensor, Layout};

/// Types that can be used with gemm-based matmul.
/// Only implement for types that `gemm::gemm` dispatches on via TypeId (f32, f64, f16).
trait GemmScalar: Element + bytemuck::Pod {
    fn zero() -> Self;
    fn one() -> Self;
}

impl GemmScalar for f32 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl GemmScalar for f64 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
}

impl GemmScalar for f16 {
    fn zero() -> Self {
        f16::from_f32(0.0)
    }
    fn one() -> Self {
        f16::from_f32(1.0)
    }
}

/// Checked multiplication for matrix sizes, panics on overflow.
#[inline]
fn checked_size(a: usize, b: usize) -> usize {
    a.checked_mul(b)
        .unwrap_or_else(|| panic!("matmul: matrix size overflow: {a} * {b}"))
}

/// Threshold for enabling parallelism (M*N*K operations).
/// 192^3 = ~7M ops - balance between 128x128 (no parallel) and 256x256 (parallel)
const PARALLEL_THRESHOLD: usize = 192 * 192 * 192;

/// s2s patch: a product whose right-hand side has at least this many elements (K*N: a
/// 256 x 256 weight or larger) is split over the threads whatever M. With few rows (a decoding
/// step of one sentence: 1 to 5 rows) the product is bound by reading the weight from memory,
/// not by arithmetic, and two cores read it about twice as fast as one.
const WEIGHT_PARALLEL_THRESHOLD: usize = 256 * 256;

/// s2s patch: weights packed once per scope instead of once per product.
///
/// gemm computes a row-major `x @ w` as `(w^T x^T)^T`, so the weight is its left-hand side,
/// which it packs into panels on every call: for a decoding step that multiplies a few hundred
/// rows by each weight, that packing is a pass over every weight per step. On a thread inside
/// [`with_packed_weights`], a product whose right-hand side is a shared 2-D matrix (a weight held
/// by a model, and not only by this op) gets a gemm-common `PackedLhs` slot, kept in a
/// process-wide cache (so threads decoding side by side share one packed copy) together with a
/// reference to the matrix's storage: the storage then stays alive, and since burn-flex copies
/// a shared buffer before writing to it, unchanged. Products are the same bit for bit; only
/// where the panels come from changes.
#[cfg(feature = "std")]
mod packed_weights {
    use super::*;
    use burn_std::sync::Arc;
    use core::cell::Cell;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use gemm_common::packed_lhs::PackedLhs;
    use std::sync::Mutex;

    /// More live matrices than this are multiplied as before, packed per product: a model's
    /// weights are far fewer, and the cap bounds what the cache can keep alive.
    const MAX_ENTRIES: usize = 512;

    /// Matrices smaller than this gain nothing from being kept packed.
    const MIN_ELEMENTS: usize = 4096;

    struct Entry {
        storage: Arc<Bytes>,
        offset: usize,
        slot: std::sync::Arc<PackedLhs>,
    }

    /// A matrix's identity: its storage (kept alive by the entry, so never reused meanwhile)
    /// and where in it the matrix starts.
    fn key(storage: &Arc<Bytes>, offset: usize) -> (usize, usize) {
        (Arc::as_ptr(storage) as usize, offset)
    }

    impl Entry {
        fn key(&self) -> (usize, usize) {
            key(&self.storage, self.offset)
        }
    }

    /// The cache, and how many scopes are open on any thread; the last to close empties it.
    static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
    static OPEN_SCOPES: AtomicUsize = AtomicUsize::new(0);

    std::thread_local! {
        /// Whether this thread is inside a scope: only its products use the cache.
        static IN_SCOPE: Cell<bool> = const { Cell::new(false) };
    }

    fn cache() -> std::sync::MutexGuard<'static, Vec<Entry>> {
        // The entries stay consistent even if a holder panicked: take them as they are.
        CACHE
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn with_packed_weights<R>(f: impl FnOnce() -> R) -> R {
        if IN_SCOPE.with(|s| s.get()) {
            return f();
        }
        struct Close;
        impl Drop for Close {
            fn drop(&mut self) {
                IN_SCOPE.with(|s| s.set(false));
                if OPEN_SCOPES.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // Taken out under the lock, freed after it is released.
                    let entries = core::mem::take(&mut *cache());
                    drop(entries);
                }
            }
        }
        OPEN_SCOPES.fetch_add(1, Ordering::AcqRel);
        IN_SCOPE.with(|s| s.set(true));
        let _close = Close;
        f()
    }

    /// The slot for `weight` (starting at `ptr`), made if the weight is new; `None` if the
    /// cache is full. Entries whose storage only the cache still holds are dropped first: no
    /// product can use them again.
    fn slot(weight: &FlexTensor, ptr: *const u8) -> Option<std::sync::Arc<PackedLhs>> {
        let storage = weight.shared_storage();
        let offset = weight.layout().start_offset();
        let wanted = key(storage, offset);
        let mut entries = cache();
        if let Some(e) = entries.iter().find(|e| e.key() == wanted) {
            return Some(e.slot.clone());
        }
        entries.retain(|e| Arc::strong_count(&e.storage) > 1);
        if entries.len() >= MAX_ENTRIES {
            return None;
        }
        let slot = std::sync::Arc::new(PackedLhs::new(ptr));
        entries.push(Entry {
            storage: storage.clone(),
            offset,
            slot: slot.clone(),
        });
        Some(slot)
    }

    pub fn bytes() -> usize {
        cache().iter().map(|e| e.slot.bytes()).sum()
    }

    pub fn with_weight_slot<R>(
        weight: &FlexTensor,
        ptr: *const u8,
        product: impl FnOnce() -> R,
    ) -> R {
        let elements: usize = weight.layout().shape().iter().product();
        let eligible = IN_SCOPE.with(|s| s.get())
            && elements >= MIN_ELEMENTS
            && Arc::strong_count(weight.shared_storage()) >= 2;
        match eligible.then(|| slot(weight, ptr)).flatten() {
            // SAFETY: the cache entry keeps the storage alive while the slot is in it, and a
            // shared buffer is copied before any write, so the matrix at `ptr` stays unchanged;
            // the slot itself lives on in `slot` until the product returns.
            Some(slot) => unsafe { gemm_common::packed_lhs::with_packed_lhs(&slot, product) },
            None => product(),
        }
    }
}

/// s2s patch: runs `f` with every shared 2-D weight it multiplies by packed once, on first use,
/// and the packing reused until `f` returns (see `packed_weights`). For a run of products with
/// the same weights, such as the steps of one search; training changes its weights every step
/// and gains nothing. Nested calls share the outermost scope.
#[cfg(feature = "std")]
pub fn with_packed_weights<R>(f: impl FnOnce() -> R) -> R {
    packed_weights::with_packed_weights(f)
}

/// s2s patch: bytes of packed weights held now (see [`with_packed_weights`]); 0 once the last
/// scope has closed.
#[cfg(feature = "std")]
pub fn packed_weights_bytes() -> usize {
    packed_weights::bytes()
}

#[cfg(feature = "std")]
fn with_weight_slot<R>(weight: &FlexTensor, ptr: *const u8, product: impl FnOnce() -> R) -> R {
    packed_weights::with_weight_slot(weight, ptr, product)
}

#[cfg(not(feature = "std"))]
fn with_weight_slot<R>(_: &FlexTensor, _: *const u8, product: impl FnOnce() -> R) -> R {
    product()
}

/// Threshold for batch-level parallelism (total ops across all batches).
/// Use batch parallelism when individual matrices are small but total work is large.
#[cfg(feature = "rayon")]
const BATCH_PARALLEL_THRESHOLD: usize = 128 * 128 * 128; // ~2M ops total

/// Get parallelism setting based on matrix size.
fn get_parallelism(m: usize, n: usize, k: usize) -> gemm::Parallelism {
    let ops = m.saturating_mul(n).saturating_mul(k);
    // s2s patch: or a large weight (`WEIGHT_PARALLEL_THRESHOLD`).
    if ops >= PARALLEL_THRESHOLD || n.saturating_mul(k) >= WEIGHT_PARALLEL_THRESHOLD {
        #[cfg(feature = "rayon")]
        {
            gemm::Parallelism::Rayon(0) // 0 = use all available threads
        }
        #[cfg(not(feature = "rayon"))]
        {
            gemm::Parallelism::None
        }
    } else {
        gemm::Parallelism::None
    }
}

/// Dispatch matrix multiplication based on dtype.
pub fn matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    assert_eq!(lhs.dtype(), rhs.dtype(), "matmul: dtype mismatch");

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    assert!(lhs_rank >= 2, "matmul requires at least 2D tensors");
    assert!(rhs_rank >= 2, "matmul requires at least 2D tensors");

    // Check inner dimensions match: lhs[..., M, K] x rhs[..., K, N]
    let k_lhs = lhs_shape[lhs_rank - 1];
    let k_rhs = rhs_shape[rhs_rank - 2];
    assert_eq!(k_lhs, k_rhs, "matmul: inner dimensions must match");

    match lhs.dtype() {
        DType::F32 => matmul_gemm::<f32>(lhs, rhs),
        DType::F64 => matmul_gemm::<f64>(lhs, rhs),
        DType::F16 => matmul_gemm::<f16>(lhs, rhs),
        DType::BF16 => matmul_bf16(lhs, rhs),
        _ => panic!("matmul: unsupported dtype {:?}", lhs.dtype()),
    }
}

/// Extract 2D matrix strides from a tensor layout.
/// Returns (row_stride, col_stride) for the last two dimensions.
fn get_2d_strides(layout: &Layout) -> (isize, isize) {
    let strides = layout.strides();
    let ndim = strides.len();
    let row_stride = strides[ndim - 2];
    let col_stride = strides[ndim - 1];
    (row_stride, col_stride)
}

/// Compute broadcast batch dimensions for batched matmul.
/// Returns (broadcast_shape, lhs_strides, rhs_strides) where strides map
/// output batch index to input batch offset (in matrices).
fn broadcast_batch_dims(
    lhs_batch: &[usize],
    rhs_batch: &[usize],
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    // Pad shorter batch dims with 1s on the left
    let max_len = lhs_batch.len().max(rhs_batch.len());
    let lhs_padded: Vec<usize> = (0..max_len)
        .map(|i| {
            if i < max_len - lhs_batch.len() {
                1
            } else {
                lhs_batch[i - (max_len - lhs_batch.len())]
            }
        })
        .collect();
    let rhs_padded: Vec<usize> = (0..max_len)
        .map(|i| {
            if i < max_len - rhs_batch.len() {
                1
            } else {
                rhs_batch[i - (max_len - rhs_batch.len())]
            }
        })
        .collect();

    // Compute broadcast shape and strides
    let mut broadcast_shape = Vec::with_capacity(max_len);
    let mut lhs_strides = Vec::with_capacity(max_len);
    let mut rhs_strides = Vec::with_capacity(max_len);

    // Compute strides from right to left
    let mut lhs_stride = 1usize;
    let mut rhs_stride = 1usize;
    for i in (0..max_len).rev() {
        let ld = lhs_padded[i];
        let rd = rhs_padded[i];
        debug_assert!(
            ld == rd || ld == 1 || rd == 1,
            "matmul: batch dimensions not broadcastable: {:?} vs {:?}",
            lhs_batch,
            rhs_batch
        );
        broadcast_shape.push(ld.max(rd));
        // Stride is 0 if dimension is 1 (broadcast), otherwise actual stride
        lhs_strides.push(if ld == 1 { 0 } else { lhs_stride });
        rhs_strides.push(if rd == 1 { 0 } else { rhs_stride });
        lhs_stride *= ld;
        rhs_stride *= rd;
    }

    // Reverse to get correct order
    broadcast_shape.reverse();
    lhs_strides.reverse();
    rhs_strides.reverse();

    (broadcast_shape, lhs_strides, rhs_strides)
}

/// Convert a flat batch index to input batch offset using broadcast strides.
#[inline]
fn batch_index_to_offset(b: usize, broadcast_shape: &[usize], strides: &[usize]) -> usize {
    let mut offset = 0;
    let mut remaining = b;
    for i in (0..broadcast_shape.len()).rev() {
        let idx = remaining % broadcast_shape[i];
        offset += idx * strides[i];
        remaining /= broadcast_shape[i];
    }
    offset
}

/// Compute element-level batch strides for a tensor in a broadcast context.
/// Uses the actual layout strides so non-contiguous (transposed/sliced) tensors
/// work without a copy. Dimensions that are broadcast (size 1) get stride 0.
#[allow(clippy::needless_range_loop)]
fn broadcast_batch_elem_strides(
    batch_shape: &[usize],
    layout_strides: &[isize],
    broadcast_len: usize,
) -> Vec<isize> {
    let batch_ndim = batch_shape.len();
    debug_assert!(broadcast_len >= batch_ndim);
    let mut result = vec![0isize; broadcast_len];

    for i in 0..broadcast_len {
        let batch_idx = i as isize - (broadcast_len as isize - batch_ndim as isize);
        if batch_idx >= 0 {
            let bi = batch_idx as usize;
            if batch_shape[bi] > 1 {
                result[i] = layout_strides[bi];
            }
        }
    }

    result
}

/// Convert a flat batch index to an element offset using element-level strides.
#[inline]
fn batch_elem_offset(b: usize, broadcast_shape: &[usize], elem_strides: &[isize]) -> isize {
    let mut offset: isize = 0;
    let mut remaining = b;
    for i in (0..broadcast_shape.len()).rev() {
        let idx = remaining % broadcast_shape[i];
        offset += idx as isize * elem_strides[i];
        remaining /= broadcast_shape[i];
    }
    offset
}

// ============================================================================
// Generic gemm-based matmul (f32, f64, f16)
// ============================================================================

fn matmul_gemm<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_rank = lhs.layout().shape().num_dims();
    let rhs_rank = rhs.layout().shape().num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_strided::<T>(lhs, rhs)
    } else if unit_batch(&lhs) && unit_batch(&rhs) {
        // s2s patch: a batch of one (`[1, m, k] @ [1, k, n]`, as burn's `linear` leaves one
        // sentence's decoding step) is a 2-D product: the 2-D path packs weights once per scope
        // and splits large ones over the threads, the batched path does neither.
        let rank = lhs_rank.max(rhs_rank);
        let out = matmul_2d_strided::<T>(matrix_view(lhs), matrix_view(rhs));
        let mut dims = vec![1; rank - 2];
        dims.extend_from_slice(out.layout().shape());
        let shape = Shape::from(dims);
        out.with_layout(Layout::contiguous(shape))
    } else {
        matmul_batched_gemm::<T>(lhs, rhs)
    }
}

/// s2s patch: whether every dimension before the last two is 1.
fn unit_batch(t: &FlexTensor) -> bool {
    let shape = t.layout().shape();
    shape[..shape.num_dims() - 2].iter().all(|&d| d == 1)
}

/// s2s patch: the last two dimensions of a tensor whose others are all 1, as a 2-D view of the
/// same storage (strides and offset kept, nothing copied).
fn matrix_view(t: FlexTensor) -> FlexTensor {
    let layout = t.layout();
    let rank = layout.shape().num_dims();
    let shape = Shape::from(layout.shape()[rank - 2..].to_vec());
    let strides = layout.strides()[rank - 2..].to_vec();
    let view = Layout::new(shape, strides, layout.start_offset());
    t.with_layout(view)
}

/// 2D matmul with strided support: [M, K] x [K, N] -> [M, N]
fn matmul_2d_strided<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let (lhs_row_stride, lhs_col_stride) = get_2d_strides(lhs.layout());
    let (rhs_row_stride, rhs_col_stride) = get_2d_strides(rhs.layout());

    let lhs_data: &[T] = lhs.storage();
    let rhs_data: &[T] = rhs.storage();
    let lhs_ptr = unsafe { lhs_data.as_ptr().add(lhs.layout().start_offset()) };
    let rhs_ptr = unsafe { rhs_data.as_ptr().add(rhs.layout().start_offset()) };

    let out_shape = Shape::from(vec![m, n]);
    if k == 0 {
        return FlexTensor::empty(out_shape, T::dtype());
    }
    let mut out_data = uninit_buffer::<T>(checked_size(m, n));

    let parallelism = get_parallelism(m, n, k);

    let out_ptr = out_data.as_mut_ptr() as *mut T;
    // s2s patch: gemm runs a one-row product (gemv) on one thread whatever `parallelism` says;
    // for a large weight, split its columns over the threads instead (each output element is
    // computed as before, by the same kernel, so the result is unchanged).
    #[cfg(feature = "rayon")]
    if m == 1 && n > 1 && n.saturating_mul(k) >= WEIGHT_PARALLEL_THRESHOLD {
        let threads = rayon::current_num_threads().min(n / 64).max(1);
        if threads > 1 {
            #[derive(Clone, Copy)]
            struct Ptrs<T>(*const T, *const T, *mut T);
            // SAFETY: the threads read the shared inputs and write disjoint output columns.
            unsafe impl<T> Send for Ptrs<T> {}
            unsafe impl<T> Sync for Ptrs<T> {}
            impl<T> Ptrs<T> {
                // A method, so that a closure captures the whole (Send) struct, not its fields.
                fn get(self) -> (*const T, *const T, *mut T) {
                    (self.0, self.1, self.2)
                }
            }
            let ptrs = Ptrs(lhs_ptr, rhs_ptr, out_ptr);
            let chunk = n.div_ceil(threads).next_multiple_of(16);
            rayon::scope(|scope| {
                for start in (0..n).step_by(chunk) {
                    let cols = chunk.min(n - start);
                    scope.spawn(move |_| {
                        let (lhs_ptr, rhs_ptr, out_ptr) = ptrs.get();
                        unsafe {
                            gemm_call(
                                1,
                                cols,
                                k,
                                out_ptr.add(start),
                                1,
                                n as isize,
                                lhs_ptr,
                                lhs_col_stride,
                                lhs_row_stride,
                                rhs_ptr.offset(start as isize * rhs_col_stride),
                                rhs_col_stride,
                                rhs_row_stride,
                                gemm::Parallelism::None,
                            );
                        }
                    });
                }
            });
            // SAFETY: the column blocks cover all n elements of the one row (k > 0).
            let out_data = unsafe { assume_init(out_data) };
            return FlexTensor::new(
                Bytes::from_elems(out_data),
                Layout::contiguous(out_shape),
                T::dtype(),
            );
        }
    }
    let product = || unsafe {
        gemm_call(
            m,
            n,
            k,
            out_ptr,
            1,
            n as isize,
            lhs_ptr,
            lhs_col_stride,
            lhs_row_stride,
            rhs_ptr,
            rhs_col_stride,
            rhs_row_stride,
            parallelism,
        );
    };
    // s2s patch: a weight packed once per scope (`with_packed_weights`); gemv-shaped products
    // (one row or one column) never pack, so they are left out.
    if m > 1 && n > 1 {
        with_weight_slot(&rhs, rhs_ptr as *const u8, product);
    } else {
        product();
    }

    // SAFETY: gemm wrote all m x n elements (k > 0, read_dst = false).
    let out_data = unsafe { assume_init(out_data) };
    FlexTensor::new(Bytes::from_elems(out_data), Layout::contiguous(out_shape), T::dtype())
}

/// s2s patch: an output buffer for gemm, which writes every element (`read_dst = false`) when
/// `k > 0`. Unlike `FlexTensor::empty` it is not zeroed first: for a logits-sized product that
/// zeroing was a whole extra pass over memory, and with heap blocks reused it is a real `memset`.
fn uninit_buffer<T>(len: usize) -> Vec<MaybeUninit<T>> {
    let mut v = Vec::with_capacity(len);
    // SAFETY: `MaybeUninit` needs no initialisation, and the capacity is `len`.
    unsafe { v.set_len(len) };
    v
}

/// # Safety
/// Every element of `v` has been written.
unsafe fn assume_init<T>(v: Vec<MaybeUninit<T>>) -> Vec<T> {
    let mut v = core::mem::ManuallyDrop::new(v);
    // SAFETY: same allocation, length and capacity; `MaybeUninit<T>` has `T`'s layout, and the
    // caller guarantees initialisation.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr() as *mut T, v.len(), v.capacity()) }
}

/// Strided gemm call for one matrix. Wraps `gemm::gemm` with GemmScalar zero/one.
#[inline]
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_call<T: GemmScalar>(
    m: usize,
    n: usize,
    k: usize,
    out: *mut T,
    out_cs: isize,
    out_rs: isize,
    lhs: *const T,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const T,
    rhs_cs: isize,
    rhs_rs: isize,
    parallelism: gemm::Parallelism,
) {
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out,
            out_cs,
            out_rs,
            false,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            T::zero(),
            T::one(),
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Batched matmul: [B..., M, K] x [B..., K, N] -> [B..., M, N]
/// Supports broadcasting on batch dimensions and strided (non-contiguous) inputs.
fn matmul_batched_gemm<T: GemmScalar>(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    let (broadcast_shape, _, _) = broadcast_batch_dims(&lhs_batch, &rhs_batch);
    let batch_size: usize = broadcast_shape.iter().product();
    let broadcast_len = broadcast_shape.len();

    let lhs_batch_strides =
        broadcast_batch_elem_strides(&lhs_batch, lhs.layout().strides(), broadcast_len);
    let rhs_batch_strides =
        broadcast_batch_elem_strides(&rhs_batch, rhs.layout().strides(), broadcast_len);

    let (lhs_row_stride, lhs_col_stride) = get_2d_strides(lhs.layout());
    let (rhs_row_stride, rhs_col_stride) = get_2d_strides(rhs.layout());

    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    if k == 0 || batch_size == 0 {
        return FlexTensor::empty(out_shape, T::dtype());
    }
    let mut out_buffer = uninit_buffer::<T>(checked_size(batch_size, out_matrix_size));

    let lhs_data: &[T] = lhs.storage();
    let rhs_data: &[T] = rhs.storage();
    let lhs_start = lhs.layout().start_offset() as isize;
    let rhs_start = rhs.layout().start_offset() as isize;
    let out_data: &mut [MaybeUninit<T>] = &mut out_buffer;

    let per_matrix_ops = m.saturating_mul(n).saturating_mul(k);

    // Closure: run gemm for one batch slice at the given pointers
    let run_one = |out_ptr: *mut T, b: usize, parallelism: gemm::Parallelism| {
        let lhs_off = lhs_start + batch_elem_offset(b, &broadcast_shape, &lhs_batch_strides);
        let rhs_off = rhs_start + batch_elem_offset(b, &broadcast_shape, &rhs_batch_strides);
        unsafe {
            gemm_call::<T>(
                m,
                n,
                k,
                out_ptr,
                1,
                n as isize,
                lhs_data.as_ptr().offset(lhs_off),
                lhs_col_stride,
                lhs_row_stride,
                rhs_data.as_ptr().offset(rhs_off),
                rhs_col_stride,
                rhs_row_stride,
                parallelism,
            );
        }
    };

    // Strategy:
    // 1. Large matrices: let gemm parallelize internally
    // 2. Small matrices, large batch: parallelize batch loop
    // 3. Small total work: single-threaded
    #[cfg(feature = "rayon")]
    {
        let total_ops = batch_size.saturating_mul(per_matrix_ops);
        let prefer_batch_parallel = batch_size >= 4 && total_ops >= BATCH_PARALLEL_THRESHOLD;

        if per_matrix_ops >= PARALLEL_THRESHOLD && !prefer_batch_parallel {
            let parallelism = gemm::Parallelism::Rayon(0);
            for b in 0..batch_size {
                run_one(out_data[b * out_matrix_size..].as_mut_ptr() as *mut T, b, parallelism);
            }
        } else if total_ops >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 {
            use rayon::prelude::*;

            out_data
                .par_chunks_mut(out_matrix_size)
                .enumerate()
                .for_each(|(b, out_chunk)| {
                    run_one(out_chunk.as_mut_ptr() as *mut T, b, gemm::Parallelism::None);
                });
        } else {
            for b in 0..batch_size {
                run_one(
                    out_data[b * out_matrix_size..].as_mut_ptr() as *mut T,
                    b,
                    gemm::Parallelism::None,
                );
            }
        }
    }

    #[cfg(not(feature = "rayon"))]
    {
        let _ = per_matrix_ops;
        for b in 0..batch_size {
            run_one(
                out_data[b * out_matrix_size..].as_mut_ptr() as *mut T,
                b,
                gemm::Parallelism::None,
            );
        }
    }

    // SAFETY: every batch's m x n block was written by gemm (k > 0, read_dst = false).
    let out_data = unsafe { assume_init(out_buffer) };
    FlexTensor::new(Bytes::from_elems(out_data), Layout::contiguous(out_shape), T::dtype())
}

// ============================================================================
// bf16 matmul (via f32 conversion)
// ============================================================================

fn matmul_bf16(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    // Convert bf16 -> f32
    let lhs_f32: Vec<f32> = lhs.storage::<bf16>().iter().map(|x| x.to_f32()).collect();
    let rhs_f32: Vec<f32> = rhs.storage::<bf16>().iter().map(|x| x.to_f32()).collect();

    // Create f32 tensors
    let lhs_f32_tensor = FlexTensor::new(
        Bytes::from_elems(lhs_f32),
        Layout::contiguous(lhs_shape.clone()),
        DType::F32,
    );
    let rhs_f32_tensor = FlexTensor::new(
        Bytes::from_elems(rhs_f32),
        Layout::contiguous(rhs_shape.clone()),
        DType::F32,
    );

    // Compute matmul in f32
    let result_f32 = matmul_gemm::<f32>(lhs_f32_tensor, rhs_f32_tensor);

    // Convert f32 -> bf16
    let result_bf16: Vec<bf16> = result_f32
        .storage::<f32>()
        .iter()
        .map(|x| bf16::from_f32(*x))
        .collect();

    FlexTensor::new(
        Bytes::from_elems(result_bf16),
        result_f32.layout().clone(),
        DType::BF16,
    )
}

// ============================================================================
// Integer matmul (naive, with optional SIMD for i32)
// ============================================================================

/// Integer matrix multiplication dispatch.
pub fn int_matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    assert_eq!(lhs.dtype(), rhs.dtype(), "int_matmul: dtype mismatch");

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    assert!(lhs_rank >= 2, "int_matmul requires at least 2D tensors");
    assert!(rhs_rank >= 2, "int_matmul requires at least 2D tensors");

    let k_lhs = lhs_shape[lhs_rank - 1];
    let k_rhs = rhs_shape[rhs_rank - 2];
    assert_eq!(k_lhs, k_rhs, "int_matmul: inner dimensions must match");

    match lhs.dtype() {
        DType::I32 => matmul_i32(lhs, rhs),
        DType::I64 => matmul_i64(lhs, rhs),
        _ => panic!("int_matmul: unsupported dtype {:?}", lhs.dtype()),
    }
}

/// i32 matmul using naive triple loop with SIMD dot product.
fn matmul_i32(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_i32(&lhs, &rhs)
    } else {
        matmul_batched_i32(lhs, rhs)
    }
}

/// 2D i32 matmul: [M, K] x [K, N] -> [M, N]
/// Transposes rhs to enable contiguous access for dot product.
fn matmul_2d_i32(lhs: &FlexTensor, rhs: &FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let lhs_data: &[i32] = lhs.storage();
    let rhs_data: &[i32] = rhs.storage();

    // Transpose rhs [K, N] -> [N, K] for contiguous column access
    let mut rhs_t = vec![0i32; k * n];
    for i in 0..k {
        for j in 0..n {
            rhs_t[j * k + i] = rhs_data[i * n + j];
        }
    }

    let mut output = vec![0i32; m * n];

    #[cfg(feature = "rayon")]
    if m * k * n >= PARALLEL_THRESHOLD && m > 1 && n > 0 {
        use rayon::prelude::*;
        // A few tasks per thread keeps SIMD dispatch per chunk rather than per
        // row, which matters for tall-skinny shapes with small n * k, while
        // leaving rayon room to balance load.
        let rows_per_task = m.div_ceil(4 * rayon::current_num_threads()).max(1);
        output
            .par_chunks_mut(rows_per_task * n)
            .enumerate()
            .for_each(|(task, out)| {
                let row_start = task * rows_per_task;
                let rows = out.len() / n;
                let lhs = &lhs_data[row_start * k..(row_start + rows) * k];
                matmul_rows_i32(lhs, &rhs_t, out, rows, n, k);
            });
    } else {
        matmul_rows_i32(lhs_data, &rhs_t, &mut output, m, n, k);
    }
    #[cfg(not(feature = "rayon"))]
    matmul_rows_i32(lhs_data, &rhs_t, &mut output, m, n, k);

    let out_shape = Shape::from(vec![m, n]);
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I32,
    )
}

/// `out[i * n + j] = dot(lhs row i, rhs_t row j)` for an `[m, k]` lhs and an
/// `[n, k]` transposed rhs. Uses macerator SIMD when the `simd` feature is
/// enabled, dispatching once for the whole block rather than per element.
#[inline]
fn matmul_rows_i32(lhs: &[i32], rhs_t: &[i32], out: &mut [i32], m: usize, n: usize, k: usize) {
    #[cfg(feature = "simd")]
    matmul_rows_i32_simd(lhs, rhs_t, out, m, n, k);

    #[cfg(not(feature = "simd"))]
    matmul_rows_i32_with(lhs, rhs_t, out, m, n, k, dot_i32_scalar);
}

#[inline(always)]
fn matmul_rows_i32_with(
    lhs: &[i32],
    rhs_t: &[i32],
    out: &mut [i32],
    m: usize,
    n: usize,
    k: usize,
    dot: impl Fn(&[i32], &[i32]) -> i32,
) {
    for i in 0..m {
        let lhs_row = &lhs[i * k..(i + 1) * k];
        for j in 0..n {
            out[i * n + j] = dot(lhs_row, &rhs_t[j * k..(j + 1) * k]);
        }
    }
}

#[cfg(feature = "simd")]
#[macerator::with_simd]
fn matmul_rows_i32_simd<S: macerator::Simd>(
    lhs: &[i32],
    rhs_t: &[i32],
    out: &mut [i32],
    m: usize,
    n: usize,
    k: usize,
) {
    matmul_rows_i32_with(lhs, rhs_t, out, m, n, k, dot_i32_simd::<S>);
}

#[cfg(not(feature = "simd"))]
#[inline]
fn dot_i32_scalar(a: &[i32], b: &[i32]) -> i32 {
    let mut sum = 0i32;
    for i in 0..a.len() {
        sum = sum.wrapping_add(a[i].wrapping_mul(b[i]));
    }
    sum
}

#[cfg(feature = "simd")]
#[inline(always)]
fn dot_i32_simd<S: macerator::Simd>(a: &[i32], b: &[i32]) -> i32 {
    use macerator::{Scalar, VMulAdd, vload_unaligned};

    let lanes = i32::lanes::<S>();
    let len = a.len();
    let simd_len = len / lanes * lanes;
    let mut acc = 0i32.splat::<S>();

    let mut i = 0;
    while i < simd_len {
        let va = unsafe { vload_unaligned(a.as_ptr().add(i)) };
        let vb = unsafe { vload_unaligned(b.as_ptr().add(i)) };
        acc = i32::vmul_add(va, vb, acc);
        i += lanes;
    }

    let mut sum = acc.reduce_add();
    while i < len {
        sum = sum.wrapping_add(a[i].wrapping_mul(b[i]));
        i += 1;
    }
    sum
}

/// Batched i32 matmul: [B..., M, K] x [B..., K, N] -> [B..., M, N]
///
/// Uses naive triple-loop with SIMD dot product and batch-level parallelism.
fn matmul_batched_i32(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    let (broadcast_shape, lhs_strides, rhs_strides) = broadcast_batch_dims(&lhs_batch, &rhs_batch);

    let batch_size: usize = broadcast_shape.iter().product();
    let rhs_batch_size: usize = rhs_batch.iter().product();
    let lhs_matrix_size = checked_size(m, k);
    let rhs_matrix_size = checked_size(k, n);
    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    let lhs_data: &[i32] = lhs.storage();
    let rhs_data: &[i32] = rhs.storage();

    // Transpose rhs per actual rhs batch: [B_rhs, K, N] -> [B_rhs, N, K]
    let mut rhs_transposed = vec![0i32; rhs_batch_size * n * k];
    for b in 0..rhs_batch_size {
        let src_offset = b * rhs_matrix_size;
        let dst_offset = b * n * k;
        for i in 0..k {
            for j in 0..n {
                rhs_transposed[dst_offset + j * k + i] = rhs_data[src_offset + i * n + j];
            }
        }
    }

    let mut output = vec![0i32; batch_size * out_matrix_size];

    let run_one = |b: usize, out_slice: &mut [i32]| {
        let lhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &lhs_strides);
        let rhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &rhs_strides);
        let lhs_offset = lhs_batch_idx * lhs_matrix_size;
        let rhs_t_offset = rhs_batch_idx * n * k;

        let lhs_slice = &lhs_data[lhs_offset..lhs_offset + lhs_matrix_size];
        let rhs_t_slice = &rhs_transposed[rhs_t_offset..rhs_t_offset + n * k];

        matmul_rows_i32(lhs_slice, rhs_t_slice, out_slice, m, n, k);
    };

    #[cfg(feature = "rayon")]
    if batch_size * m * k * n >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 && out_matrix_size > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(out_matrix_size)
            .enumerate()
            .for_each(|(b, out_slice)| run_one(b, out_slice));
    } else {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }

    #[cfg(not(feature = "rayon"))]
    {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }

    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I32,
    )
}

/// i64 matmul using naive triple loop.
fn matmul_i64(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs = lhs.to_contiguous();
    let rhs = rhs.to_contiguous();

    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    if lhs_rank == 2 && rhs_rank == 2 {
        matmul_2d_i64(&lhs, &rhs)
    } else {
        matmul_batched_i64(lhs, rhs)
    }
}

/// 2D i64 matmul: [M, K] x [K, N] -> [M, N]
fn matmul_2d_i64(lhs: &FlexTensor, rhs: &FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();

    let m = lhs_shape[0];
    let k = lhs_shape[1];
    let n = rhs_shape[1];

    let lhs_data: &[i64] = lhs.storage();
    let rhs_data: &[i64] = rhs.storage();

    let mut output = vec![0i64; m * n];

    let run_row = |i: usize, row_out: &mut [i64]| {
        let lhs_row = &lhs_data[i * k..(i + 1) * k];
        for j in 0..n {
            let mut sum = 0i64;
            for l in 0..k {
                sum = sum.wrapping_add(lhs_row[l].wrapping_mul(rhs_data[l * n + j]));
            }
            row_out[j] = sum;
        }
    };

    #[cfg(feature = "rayon")]
    if m * k * n >= PARALLEL_THRESHOLD && m > 1 && n > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, row_out)| run_row(i, row_out));
    } else {
        for i in 0..m {
            let row_start = i * n;
            run_row(i, &mut output[row_start..row_start + n]);
        }
    }
    #[cfg(not(feature = "rayon"))]
    for i in 0..m {
        let row_start = i * n;
        run_row(i, &mut output[row_start..row_start + n]);
    }

    let out_shape = Shape::from(vec![m, n]);
    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I64,
    )
}

/// Batched i64 matmul with broadcast support
fn matmul_batched_i64(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
    let lhs_shape = lhs.layout().shape();
    let rhs_shape = rhs.layout().shape();
    let lhs_rank = lhs_shape.num_dims();
    let rhs_rank = rhs_shape.num_dims();

    let m = lhs_shape[lhs_rank - 2];
    let k = lhs_shape[lhs_rank - 1];
    let n = rhs_shape[rhs_rank - 1];

    let lhs_batch: Vec<usize> = lhs_shape[..lhs_rank - 2].to_vec();
    let rhs_batch: Vec<usize> = rhs_shape[..rhs_rank - 2].to_vec();

    // Compute broadcast batch dimensions
    let (broadcast_shape, lhs_strides, rhs_strides) = broadcast_batch_dims(&lhs_batch, &rhs_batch);

    let batch_size: usize = broadcast_shape.iter().product();
    let lhs_matrix_size = checked_size(m, k);
    let rhs_matrix_size = checked_size(k, n);
    let out_matrix_size = checked_size(m, n);

    let mut out_dims = broadcast_shape.clone();
    out_dims.push(m);
    out_dims.push(n);
    let out_shape = Shape::from(out_dims);

    let lhs_data: &[i64] = lhs.storage();
    let rhs_data: &[i64] = rhs.storage();

    let mut output = vec![0i64; batch_size * out_matrix_size];

    let run_one = |b: usize, out_slice: &mut [i64]| {
        let lhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &lhs_strides);
        let rhs_batch_idx = batch_index_to_offset(b, &broadcast_shape, &rhs_strides);
        let lhs_offset = lhs_batch_idx * lhs_matrix_size;
        let rhs_offset = rhs_batch_idx * rhs_matrix_size;

        for i in 0..m {
            for j in 0..n {
                let mut sum = 0i64;
                for l in 0..k {
                    let lhs_idx = lhs_offset + i * k + l;
                    let rhs_idx = rhs_offset + l * n + j;
                    sum = sum.wrapping_add(lhs_data[lhs_idx].wrapping_mul(rhs_data[rhs_idx]));
                }
                out_slice[i * n + j] = sum;
            }
        }
    };

    #[cfg(feature = "rayon")]
    if batch_size * m * k * n >= BATCH_PARALLEL_THRESHOLD && batch_size > 1 && out_matrix_size > 0 {
        use rayon::prelude::*;
        output
            .par_chunks_mut(out_matrix_size)
            .enumerate()
            .for_each(|(b, out_slice)| run_one(b, out_slice));
    } else {
        for b in 0..batch_size {
            let offset = b * out_matrix_size;
            run_one(b, &mut output[offset..offset + out_matrix_size]);
        }
    }
    #[cfg(not(feature = "rayon"))]
    for b in 0..batch_size {
        let offset = b * out_matrix_size;
        run_one(b, &mut output[offset..offset + out_matrix_size]);
    }

    FlexTensor::new(
        Bytes::from_elems(output),
        Layout::contiguous(out_shape),
        DType::I64,
    )
}

// ============================================================================
// Tests
// ============================================================================

// Tests kept here exercise flex-specific behavior of the matmul kernel:
// dtype-specific storage paths (F64, F16, BF16) that the generic
// FloatElem-parameterized backend-tests cannot reach. Plain contiguous
// F32/I32/I64 matmul, stride-through-matmul variants (transposed /
// swap_dims / broadcast-transposed), and other generic coverage have
// been migrated to burn-backend-tests so they run against every backend.
// When adding new tests, keep them here only if they probe a flex
// dtype-storage path; otherwise add them to
// crates/burn-backend-tests/tests/tensor/float/ops/matmul.rs.
#[cfg(test)]
mod tests {
    use alloc::vec;
    use burn_backend::TensorData;
    use burn_backend::ops::FloatTensorOps;
    use burn_std::{bf16, f16};

    use crate::{Flex, FlexTensor};

    #[test]
    fn test_matmul_f64() {
        let lhs = FlexTensor::from_data(TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(vec![5.0f64, 6.0, 7.0, 8.0], [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<f64> = result.into_data().try_into_vec().unwrap();

        assert_eq!(values, vec![19.0, 22.0, 43.0, 50.0]);
    }

    #[test]
    fn test_matmul_f16() {
        let lhs_vals: Vec<f16> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .copied()
            .map(f16::from_f32)
            .collect();
        let rhs_vals: Vec<f16> = [5.0f32, 6.0, 7.0, 8.0]
            .iter()
            .copied()
            .map(f16::from_f32)
            .collect();

        let lhs = FlexTensor::from_data(TensorData::new(lhs_vals, [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(rhs_vals, [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<f16> = result.into_data().try_into_vec().unwrap();

        let expected = [19.0f32, 22.0, 43.0, 50.0];
        for (a, e) in values.iter().zip(expected.iter()) {
            assert!((a.to_f32() - e).abs() < 0.1, "f16 matmul mismatch");
        }
    }

    #[test]
    fn test_matmul_bf16() {
        let lhs_vals: Vec<bf16> = [1.0f32, 2.0, 3.0, 4.0]
            .iter()
            .copied()
            .map(bf16::from_f32)
            .collect();
        let rhs_vals: Vec<bf16> = [5.0f32, 6.0, 7.0, 8.0]
            .iter()
            .copied()
            .map(bf16::from_f32)
            .collect();

        let lhs = FlexTensor::from_data(TensorData::new(lhs_vals, [2, 2]));
        let rhs = FlexTensor::from_data(TensorData::new(rhs_vals, [2, 2]));

        let result = Flex::float_matmul(lhs, rhs);
        let values: Vec<bf16> = result.into_data().try_into_vec().unwrap();

        let expected = [19.0f32, 22.0, 43.0, 50.0];
        for (a, e) in values.iter().zip(expected.iter()) {
            assert!((a.to_f32() - e).abs() < 0.5, "bf16 matmul mismatch");
        }
    }

    #[test]
    fn test_matmul_batched_transposed_f64() {
        // Non-contiguous (swap_dims) batched matmul on the F64 dtype path.
        let q_data = TensorData::new(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [2, 2, 2]);
        let k_data = TensorData::new(vec![1.0f64, 0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 2.0], [2, 2, 2]);

        let q = FlexTensor::from_data(q_data.clone());
        let k = FlexTensor::from_data(k_data.clone());
        let k_t = k.transpose(1, 2);
        let result = Flex::float_matmul(q, k_t);

        let q2 = FlexTensor::from_data(q_data);
        let k2 = FlexTensor::from_data(k_data)
            .transpose(1, 2)
            .to_contiguous();
        let expected = Flex::float_matmul(q2, k2);

        let values: Vec<f64> = result.into_data().try_into_vec().unwrap();
        let expected: Vec<f64> = expected.into_data().try_into_vec().unwrap();
        assert_eq!(values, expected);
    }

    #[test]
    fn test_matmul_batched_transposed_f16() {
        // Non-contiguous (swap_dims) batched matmul on the F16 dtype path.
        let f = f16::from_f32;
        let q_data = TensorData::new(
            vec![
                f(1.0),
                f(2.0),
                f(3.0),
                f(4.0),
                f(5.0),
                f(6.0),
                f(7.0),
                f(8.0),
            ],
            [2, 2, 2],
        );
        let k_data = TensorData::new(
            vec![
                f(1.0),
                f(0.0),
                f(0.0),
                f(1.0),
                f(2.0),
                f(0.0),
                f(0.0),
                f(2.0),
            ],
            [2, 2, 2],
        );

        let q = FlexTensor::from_data(q_data.clone());
        let k = FlexTensor::from_data(k_data.clone());
        let k_t = k.transpose(1, 2);
        let result = Flex::float_matmul(q, k_t);

        let q2 = FlexTensor::from_data(q_data);
        let k2 = FlexTensor::from_data(k_data)
            .transpose(1, 2)
            .to_contiguous();
        let expected = Flex::float_matmul(q2, k2);

        let values: Vec<f16> = result.into_data().try_into_vec().unwrap();
        let expected: Vec<f16> = expected.into_data().try_into_vec().unwrap();
        assert_eq!(values, expected);
    }
}
