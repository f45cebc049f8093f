//! AVX-512 and AVX2 registers for the shared kernel in [`super::lanes`].

use super::lanes::{Start, Vector};
use std::arch::x86_64::*;

#[derive(Clone, Copy)]
pub(crate) struct Avx512(__m512i);

impl Vector for Avx512 {
    const LANES: usize = 16;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Avx512(_mm512_set1_epi32(x as i32))
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 16);
        Avx512(_mm512_loadu_si512(words.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn store(self, words: &mut [u32]) {
        assert!(words.len() >= 16);
        _mm512_storeu_si512(words.as_mut_ptr().cast(), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Avx512(_mm512_add_epi32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Avx512(_mm512_xor_si512(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn rotr16(self) -> Self {
        Avx512(_mm512_ror_epi32::<16>(self.0))
    }
    #[inline(always)]
    unsafe fn rotr12(self) -> Self {
        Avx512(_mm512_ror_epi32::<12>(self.0))
    }
    #[inline(always)]
    unsafe fn rotr8(self) -> Self {
        Avx512(_mm512_ror_epi32::<8>(self.0))
    }
    #[inline(always)]
    unsafe fn rotr7(self) -> Self {
        Avx512(_mm512_ror_epi32::<7>(self.0))
    }
}

#[derive(Clone, Copy)]
pub(crate) struct Avx2(__m256i);

impl Vector for Avx2 {
    const LANES: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Avx2(_mm256_set1_epi32(x as i32))
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 8);
        Avx2(_mm256_loadu_si256(words.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn store(self, words: &mut [u32]) {
        assert!(words.len() >= 8);
        _mm256_storeu_si256(words.as_mut_ptr().cast(), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Avx2(_mm256_add_epi32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Avx2(_mm256_xor_si256(self.0, other.0))
    }
    // Rotations by whole bytes are one byte shuffle; the others two shifts.
    #[inline(always)]
    unsafe fn rotr16(self) -> Self {
        let mask = _mm256_set_epi8(
            13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2, 13, 12, 15, 14, 9, 8, 11, 10, 5,
            4, 7, 6, 1, 0, 3, 2,
        );
        Avx2(_mm256_shuffle_epi8(self.0, mask))
    }
    #[inline(always)]
    unsafe fn rotr12(self) -> Self {
        Avx2(_mm256_or_si256(
            _mm256_srli_epi32::<12>(self.0),
            _mm256_slli_epi32::<20>(self.0),
        ))
    }
    #[inline(always)]
    unsafe fn rotr8(self) -> Self {
        let mask = _mm256_set_epi8(
            12, 15, 14, 13, 8, 11, 10, 9, 4, 7, 6, 5, 0, 3, 2, 1, 12, 15, 14, 13, 8, 11, 10, 9, 4,
            7, 6, 5, 0, 3, 2, 1,
        );
        Avx2(_mm256_shuffle_epi8(self.0, mask))
    }
    #[inline(always)]
    unsafe fn rotr7(self) -> Self {
        Avx2(_mm256_or_si256(
            _mm256_srli_epi32::<7>(self.0),
            _mm256_slli_epi32::<25>(self.0),
        ))
    }
}

/// Four lanes in SSE2, which every x86-64 CPU has: for those without AVX2
/// (older servers, many low-power NAS boards), where the plain Rust lanes
/// come out partly scalar.
#[derive(Clone, Copy)]
pub(crate) struct Sse2(__m128i);

impl Vector for Sse2 {
    const LANES: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        Sse2(_mm_set1_epi32(x as i32))
    }
    #[inline(always)]
    unsafe fn load(words: &[u32]) -> Self {
        assert!(words.len() >= 4);
        Sse2(_mm_loadu_si128(words.as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn store(self, words: &mut [u32]) {
        assert!(words.len() >= 4);
        _mm_storeu_si128(words.as_mut_ptr().cast(), self.0)
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Sse2(_mm_add_epi32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Sse2(_mm_xor_si128(self.0, other.0))
    }
    // By 16: swap the 16-bit halves of each word, two shuffles; SSE2 has no
    // byte shuffle, so the others are two shifts and an or.
    #[inline(always)]
    unsafe fn rotr16(self) -> Self {
        const SWAP: i32 = 0b10_11_00_01;
        Sse2(_mm_shufflehi_epi16::<SWAP>(_mm_shufflelo_epi16::<SWAP>(
            self.0,
        )))
    }
    #[inline(always)]
    unsafe fn rotr12(self) -> Self {
        Sse2(_mm_or_si128(
            _mm_srli_epi32::<12>(self.0),
            _mm_slli_epi32::<20>(self.0),
        ))
    }
    #[inline(always)]
    unsafe fn rotr8(self) -> Self {
        Sse2(_mm_or_si128(
            _mm_srli_epi32::<8>(self.0),
            _mm_slli_epi32::<24>(self.0),
        ))
    }
    #[inline(always)]
    unsafe fn rotr7(self) -> Self {
        Sse2(_mm_or_si128(
            _mm_srli_epi32::<7>(self.0),
            _mm_slli_epi32::<25>(self.0),
        ))
    }
}

#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn prefixes_avx512(start: &Start, first: u64, out: &mut [u64]) {
    super::prefixes_generic::<Avx512>(start, first, out)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn prefixes_avx2(start: &Start, first: u64, out: &mut [u64]) {
    super::prefixes_generic::<Avx2>(start, first, out)
}

#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn hashes_avx512(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    super::hashes_generic::<Avx512>(start, nonces, out)
}

#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn blocks_avx512(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    super::blocks_generic::<Avx512>(key, blocks, out)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn blocks_avx2(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    super::blocks_generic::<Avx2>(key, blocks, out)
}

#[target_feature(enable = "sse2")]
pub(super) unsafe fn blocks_sse2(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    super::blocks_generic::<Sse2>(key, blocks, out)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn hashes_avx2(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    super::hashes_generic::<Avx2>(start, nonces, out)
}

#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn prefixes_of_avx512(start: &Start, nonces: &[u64], out: &mut [u64]) {
    super::prefixes_of_generic::<Avx512>(start, nonces, out)
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn prefixes_of_avx2(start: &Start, nonces: &[u64], out: &mut [u64]) {
    super::prefixes_of_generic::<Avx2>(start, nonces, out)
}

#[target_feature(enable = "sse2")]
pub(super) unsafe fn prefixes_sse2(start: &Start, first: u64, out: &mut [u64]) {
    super::prefixes_generic::<Sse2>(start, first, out)
}

#[target_feature(enable = "sse2")]
pub(super) unsafe fn hashes_sse2(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    super::hashes_generic::<Sse2>(start, nonces, out)
}

#[target_feature(enable = "sse2")]
pub(super) unsafe fn prefixes_of_sse2(start: &Start, nonces: &[u64], out: &mut [u64]) {
    super::prefixes_of_generic::<Sse2>(start, nonces, out)
}

#[target_feature(enable = "avx512f,avx512vl")]
pub(super) unsafe fn top_words_avx512(start: &Start, first: u64, out: &mut [u32]) {
    let mut chunks = out.chunks_exact_mut(16);
    let mut x = first;
    for chunk in &mut chunks {
        _mm512_storeu_si512(chunk.as_mut_ptr().cast(), top_words_16(start, x));
        x = x.wrapping_add(16);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut tmp = [0u32; 16];
        _mm512_storeu_si512(tmp.as_mut_ptr().cast(), top_words_16(start, x));
        let len = rest.len();
        rest.copy_from_slice(&tmp[..len]);
    }
}

#[target_feature(enable = "avx2")]
pub(super) unsafe fn top_words_avx2(start: &Start, first: u64, out: &mut [u32]) {
    super::top_words_generic::<Avx2>(start, first, out)
}

#[target_feature(enable = "sse2")]
pub(super) unsafe fn top_words_sse2(start: &Start, first: u64, out: &mut [u32]) {
    super::top_words_generic::<Sse2>(start, first, out)
}

/// The first 4 bytes, read big-endian, of the hashes of the 16 nonces
/// `first ..= first + 15`, in a register: the generic lanes would store
/// the word and swap its bytes one lane at a time.
///
/// # Safety
/// The caller runs with AVX-512F and AVX-512VL enabled.
#[inline(always)]
pub(super) unsafe fn top_words_16(start: &Start, first: u64) -> __m512i {
    let base = _mm512_set1_epi32(first as u32 as i32);
    let lo = _mm512_add_epi32(
        base,
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    );
    // Lanes past a multiple of 2^32 carry into the high word.
    let carried = _mm512_cmplt_epu32_mask(lo, base);
    let high = _mm512_set1_epi32((first >> 32) as u32 as i32);
    let hi = _mm512_mask_add_epi32(high, carried, high, _mm512_set1_epi32(1));
    let h = super::lanes::hash_records(start, Avx512(lo), Avx512(hi));
    // Byte swap without AVX-512BW's byte shuffle: bytes 3 and 1 from a
    // rotation right by 8, bytes 2 and 0 from one left by 8.
    let w = h[0].0;
    _mm512_ternarylogic_epi32::<0xE4>(
        _mm512_ror_epi32::<8>(w),
        _mm512_rol_epi32::<8>(w),
        _mm512_set1_epi32(0xFF00_FF00u32 as i32),
    )
}
