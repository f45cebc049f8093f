//! Cache hints for loops whose next data is known to come from memory the
//! cache has not seen. Only hints: they never fault, wherever they point,
//! and on targets without them they do nothing.

/// Asks for the line holding `p` to be brought into L1 for reading.
#[inline(always)]
pub(crate) fn for_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints the cache; SSE is part of x86-64.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p.cast());
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: PRFM is a hint that never faults and touches no register
    // but its address operand.
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

/// Asks for the line holding `p` to be brought into L1 to be written. On
/// x86-64 the intrinsic becomes PREFETCHT0 unless the build enables the
/// `prfchw` feature (ours does not); a PREFETCHW made phase 2's filing,
/// its only user, slower.
#[inline(always)]
pub(crate) fn for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as for `for_read`.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        _mm_prefetch::<_MM_HINT_ET0>(p.cast());
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as for `for_read`.
    unsafe {
        std::arch::asm!("prfm pstl1keep, [{0}]", in(reg) p, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}
