//! Process-wide malloc policy for tensor workloads on the CPU, applied by the `s2s` binary (and by
//! the probes in `examples/`); a library leaves it to the program.
//!
//! glibc serves every allocation above its mmap threshold (at most 32 MiB) with a fresh `mmap`
//! and gives it back with `munmap` on free. A training step allocates and frees logits-sized
//! buffers (batch x length x vocabulary, ~41 MiB at batch 64, length 20, vocabulary 8000) several
//! times, so every step paid ~16k page faults plus the kernel's zeroing of each page: 17% of a
//! Transformer training step in a `perf` profile. Serving large blocks from the heap and never
//! trimming it lets freed buffers be reused at the cost of keeping the peak resident
//! (`s2s bench`: training steps 8-28% faster, peak memory ~7% higher; docs/performance.md).
//!
//! That only holds for the main arena. Other threads (decoding and training workers) get arenas
//! built from 64 MiB mmap-ed sub-heaps, and glibc unmaps a sub-heap as soon as it is empty, trim
//! threshold or not: a beam-5 batch then paid 100-160k page faults. One arena for all threads
//! keeps every freed block for reuse; the lock it adds is taken once per tensor buffer, not per
//! element (Transformer and RNNsearch beam 5: ~52k page faults per process instead of 100-260k,
//! lower peak memory, CPU time within noise of before or lower; docs/performance.md).

/// Applies the policy; call once, first thing in `main`, before other threads exist. A no-op
/// outside glibc.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes malloc's parameters; it is called before any thread starts.
    unsafe {
        // No mmap-backed chunks: large blocks come from the heap and are reused after free.
        libc::mallopt(libc::M_MMAP_MAX, 0);
        // Never give the heap's top back to the kernel (each give-back means faults later).
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
        // Every thread allocates from the main arena, so the two rules above hold for all.
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
