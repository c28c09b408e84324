//! s2s patch: a left-hand side packed once and reused by later products.
//!
//! `gemm_basic_generic` packs the left-hand side into `MR`-row panels (one per `kc`-deep block)
//! on every call. A caller that multiplies by the same matrix many times (a weight, once per
//! decoding step) can offer a [`PackedLhs`] slot with [`with_packed_lhs`]: the first product
//! whose left-hand side starts at the slot's address packs the whole matrix into the slot, and
//! later ones, on any thread, with the same matrix, shape, strides and blocking read the panels
//! from there.
//! The panels are exactly those `pack_lhs` writes per call, so products are unchanged.

use crate::{pack_operands::pack_lhs, simd::Simd, Ptr};
use core::any::TypeId;
use core::cell::Cell;
use dyn_stack::{MemBuffer, StackReq};
use std::sync::OnceLock;

/// What a packing depends on besides the matrix's address (the slot's `source`): its shape and
/// strides, the element type and the kernel's panel geometry and depth blocking.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct PackKey {
    m: usize,
    k: usize,
    lhs_cs: isize,
    lhs_rs: isize,
    mr: usize,
    n: usize,
    kc: usize,
    ty: TypeId,
}

/// Storage for one matrix's packed panels, shared by the threads that multiply by it. Empty
/// until a product packs into it; after that it serves products with the same packing, and
/// others pack per call as usual.
pub struct PackedLhs {
    /// The only left-hand side this slot may hold: the caller guarantees that the memory there
    /// does not change while the slot is alive.
    source: usize,
    packed: OnceLock<(PackKey, MemBuffer)>,
}

impl PackedLhs {
    /// An empty slot for the matrix starting at `source`.
    pub fn new<T>(source: *const T) -> Self {
        Self {
            source: source as usize,
            packed: OnceLock::new(),
        }
    }

    /// Bytes held by the packed panels.
    pub fn bytes(&self) -> usize {
        self.packed.get().map_or(0, |(_, buf)| buf.len())
    }
}

std::thread_local! {
    static SLOT: Cell<*const PackedLhs> = const { Cell::new(core::ptr::null()) };
}

/// Runs `f` with `slot` offered to the products `f` runs on this thread.
///
/// # Safety
/// The matrix at the slot's source must stay alive and unchanged for as long as the slot is
/// (the caller keeps the matrix alive and immutable, or drops the slot first).
pub unsafe fn with_packed_lhs<R>(slot: &PackedLhs, f: impl FnOnce() -> R) -> R {
    struct Restore(*const PackedLhs);
    impl Drop for Restore {
        fn drop(&mut self) {
            SLOT.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SLOT.with(|s| s.replace(slot as *const PackedLhs)));
    f()
}

/// The packed panels of `lhs` for this product, packing them into the offered slot first if it
/// is still empty, and the length of one depth block's panels (block `b` starts `b` lengths
/// in); null if no slot is offered for `lhs`, or if it holds another packing.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn packed_lhs<S: Simd, T: Copy + 'static, const N: usize, const MR: usize>(
    simd: S,
    m: usize,
    k: usize,
    kc: usize,
    lhs: Ptr<T>,
    lhs_cs: isize,
    lhs_rs: isize,
    align: usize,
) -> (*const T, usize) {
    let none = (core::ptr::null(), 0);
    let slot = SLOT.with(|s| s.get());
    if slot.is_null() {
        return none;
    }
    // SAFETY: `with_packed_lhs` holds the reference for as long as the pointer is set.
    let slot = unsafe { &*slot };
    if slot.source != lhs.0 as usize {
        return none;
    }
    let key = PackKey {
        m,
        k,
        lhs_cs,
        lhs_rs,
        mr: MR,
        n: N,
        kc,
        ty: TypeId::of::<T>(),
    };
    let panel_stride = kc * MR;
    let block_len = panel_stride * m.div_ceil(MR);
    if slot.packed.get().is_none() {
        let blocks = k.div_ceil(kc);
        let mut buf = MemBuffer::new(StackReq::new_aligned::<T>(block_len * blocks, align));
        let dst = buf.as_mut_ptr() as *mut T;
        for b in 0..blocks {
            let depth = b * kc;
            unsafe {
                pack_lhs::<T, N, MR, _>(
                    simd,
                    m,
                    kc.min(k - depth),
                    Ptr(dst.add(b * block_len)),
                    lhs.wrapping_offset(depth as isize * lhs_cs),
                    lhs_cs,
                    lhs_rs,
                    panel_stride,
                );
            }
        }
        // Another thread may have filled the slot meanwhile: then its packing is used if it is
        // this one, and this buffer is dropped.
        let _ = slot.packed.set((key, buf));
    }
    match slot.packed.get() {
        Some((packed_key, buf)) if *packed_key == key => (buf.as_ptr() as *const T, block_len),
        _ => none,
    }
}
