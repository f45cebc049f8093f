//! NEON registers for the shared kernel in [`super::lanes`].
//!
//! LLVM does not turn the portable `[u32; 4]` lanes into NEON on its own
//! (on aarch64 most of that code stays scalar), so the four lanes are
//! spelled out here with NEON intrinsics.

use super::lanes::{Start, Vector};
use std::arch::aarch64::*;

#[derive(Clone, Copy)]
pub(crate) struct Neon(uint32x4_t);

impl Vector for Neon {
    const LANES: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Neon(vdupq_n_u32(x))
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 4);
        Neon(vld1q_u32(words.as_ptr()))
    }
    #[inline(always)]
    unsafe fn store(self, words: &mut [u32]) {
        assert!(words.len() >= 4);
        vst1q_u32(words.as_mut_ptr(), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Neon(vaddq_u32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Neon(veorq_u32(self.0, other.0))
    }
    // By 16: swap the halves of each word. Otherwise a shift left, then a
    // shift right that inserts into it (SRI), two instructions.
    #[inline(always)]
    unsafe fn rotr16(self) -> Self {
        Neon(vreinterpretq_u32_u16(vrev32q_u16(vreinterpretq_u16_u32(
            self.0,
        ))))
    }
    #[inline(always)]
    unsafe fn rotr12(self) -> Self {
        Neon(vsriq_n_u32::<12>(vshlq_n_u32::<20>(self.0), self.0))
    }
    #[inline(always)]
    unsafe fn rotr8(self) -> Self {
        Neon(vsriq_n_u32::<8>(vshlq_n_u32::<24>(self.0), self.0))
    }
    #[inline(always)]
    unsafe fn rotr7(self) -> Self {
        Neon(vsriq_n_u32::<7>(vshlq_n_u32::<25>(self.0), self.0))
    }
}

#[target_feature(enable = "neon")]
pub(super) unsafe fn prefixes_neon(start: &Start, first: u64, out: &mut [u64]) {
    super::prefixes_generic::<Neon>(start, first, out)
}

#[target_feature(enable = "neon")]
pub(super) unsafe fn prefixes_of_neon(start: &Start, nonces: &[u64], out: &mut [u64]) {
    super::prefixes_of_generic::<Neon>(start, nonces, out)
}

#[target_feature(enable = "neon")]
pub(super) unsafe fn hashes_neon(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    super::hashes_generic::<Neon>(start, nonces, out)
}

#[target_feature(enable = "neon")]
pub(super) unsafe fn blocks_neon(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    super::blocks_generic::<Neon>(key, blocks, out)
}

#[target_feature(enable = "neon")]
pub(super) unsafe fn top_words_neon(start: &Start, first: u64, out: &mut [u32]) {
    super::top_words_generic::<Neon>(start, first, out)
}
