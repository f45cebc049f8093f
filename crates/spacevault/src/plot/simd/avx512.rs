//! The plotter's AVX-512 loops: locating records (dividing by multiplying,
//! or in floating point), hashing, locating and scattering in one loop, and
//! the scatter's streaming stores. Each is `unsafe` because it needs the
//! CPU features [`super::Simd::Avx512`] stands for, and each has a plain
//! twin beside its caller that the tests hold it to.

use crate::kernel::Kernel;
use crate::plot::key_shape::KeyShape;
use crate::plot::lines::{LinePusher, LINE_BYTES};
use crate::plot::partition::Locator;

/// What [`Locator::multiply_constants`] gives and a key's shape needs, in
/// registers: the partition and key of 16 hashes' first words at a time.
#[derive(Clone, Copy)]
struct Locate16 {
    bucket_shift: std::arch::x86_64::__m128i,
    quotient_shift: std::arch::x86_64::__m128i,
    multiplier: std::arch::x86_64::__m512i,
    divisor: std::arch::x86_64::__m512i,
    low_bits: std::arch::x86_64::__m128i,
    low_mask: std::arch::x86_64::__m512i,
}

impl Locate16 {
    /// # Safety
    /// The caller runs with AVX-512F enabled.
    #[inline(always)]
    unsafe fn new(
        (shift, multiplier, quotient_shift, divisor): (u32, u64, u32, u64),
        shape: KeyShape,
    ) -> Locate16 {
        use std::arch::x86_64::*;
        // The bucket is the prefix's top 64 - shift <= 31 bits: all in the
        // first word.
        assert!(shift >= 32);
        Locate16 {
            bucket_shift: _mm_cvtsi64_si128((shift - 32) as i64),
            quotient_shift: _mm_cvtsi64_si128(quotient_shift as i64),
            multiplier: _mm512_set1_epi64(multiplier as i64),
            divisor: _mm512_set1_epi32(divisor as i32),
            low_bits: _mm_cvtsi64_si128(shape.low_bits as i64),
            low_mask: _mm512_set1_epi32((shape.epoch_len() - 1) as u32 as i32),
        }
    }

    /// The partitions and keys of 16 hashes whose first words are `top`
    /// and whose nonces' low 32 bits are `nonces` (only a nonce's low bits
    /// go into a key; they wrap as the nonces do).
    ///
    /// # Safety
    /// As for [`new`](Self::new).
    #[inline(always)]
    unsafe fn locate(
        &self,
        top: std::arch::x86_64::__m512i,
        nonces: std::arch::x86_64::__m512i,
    ) -> (std::arch::x86_64::__m512i, std::arch::x86_64::__m512i) {
        use std::arch::x86_64::*;
        let bucket = _mm512_srl_epi32(top, self.bucket_shift);
        // vpmuludq multiplies the even 32-bit lanes into 64-bit products;
        // the odd lanes are shifted down to be multiplied the same way.
        let even = _mm512_srl_epi64(
            _mm512_mul_epu32(bucket, self.multiplier),
            self.quotient_shift,
        );
        let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(bucket), self.multiplier);
        let odd = _mm512_slli_epi64::<32>(_mm512_srl_epi64(odd, self.quotient_shift));
        let p = _mm512_mask_blend_epi32(0xAAAA, even, odd);
        let local = _mm512_sub_epi32(bucket, _mm512_mullo_epi32(p, self.divisor));
        let key = _mm512_or_si512(
            _mm512_sll_epi32(local, self.low_bits),
            _mm512_and_si512(nonces, self.low_mask),
        );
        (p, key)
    }
}

/// The low 32 bits of the 16 nonces `first ..= first + 15`.
///
/// # Safety
/// The caller runs with AVX-512F enabled.
#[inline(always)]
unsafe fn nonces_16(first: u64) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    _mm512_add_epi32(
        _mm512_set1_epi32(first as u32 as i32),
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    )
}

/// Replaces each hash's first word in `parts` (nonces from `first` on) by
/// its partition, and writes its key, 16 lanes at a time (`parts` and
/// `keys` hold a multiple of 16), dividing by multiplying as
/// [`Locator::multiply_constants`] says.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn locate_top_words(
    constants: (u32, u64, u32, u64),
    shape: KeyShape,
    first: u64,
    parts: &mut [u32],
    keys: &mut [u32],
) {
    use std::arch::x86_64::*;
    assert!(parts.len() == keys.len() && parts.len().is_multiple_of(16));
    let locate = Locate16::new(constants, shape);
    let mut nonces = nonces_16(first);
    let sixteen = _mm512_set1_epi32(16);
    for i in (0..parts.len()).step_by(16) {
        // SAFETY: i + 16 <= the length of both slices.
        let top = _mm512_loadu_si512(parts.as_ptr().add(i).cast());
        let (p, key) = locate.locate(top, nonces);
        _mm512_storeu_si512(parts.as_mut_ptr().add(i).cast(), p);
        _mm512_storeu_si512(keys.as_mut_ptr().add(i).cast(), key);
        nonces = _mm512_add_epi32(nonces, sixteen);
    }
}

/// Hashes, locates and pushes 16 nonces at a time from `first` on, as
/// `keys::hash_and_locate` then `Scatter::push_block` would, but in one loop:
/// each step pushes the previous step's 16 records while hashing the next
/// 16. Hashing keeps the vector units busy and pushing the loads and
/// stores, and the CPU runs the two side by side; called one after the
/// other, each loop left the other's units idle. Writes every record's
/// partition and key to `parts` and `keys` (which hold a multiple of 16)
/// and returns how many it pushed: all of them, or those before the first
/// that fills a line its partition's array has no room for.
///
/// # Safety
/// The kernel's backend is AVX-512, whose features the CPU has.
#[target_feature(enable = "avx512f,avx512vl")]
pub(crate) unsafe fn hash_locate_and_push(
    kernel: &Kernel,
    constants: (u32, u64, u32, u64),
    shape: KeyShape,
    first: u64,
    parts: &mut [u32],
    keys: &mut [u32],
    pusher: &mut LinePusher<'_>,
) -> usize {
    use std::arch::x86_64::*;
    let n = parts.len();
    assert!(keys.len() == n && n.is_multiple_of(16));
    let locate = Locate16::new(constants, shape);
    let limit = _mm512_set1_epi32(pusher.parts() as i32);
    let (mut pushed, mut blocked) = (0, false);
    for i in (0..n).step_by(16) {
        let x = first.wrapping_add(i as u64);
        let (p, key) = locate.locate(kernel.top_words_16(x), nonces_16(x));
        // The pusher's safety rests on this, which the division's proof
        // (beside `Locator::multiply_constants`) promises.
        assert_eq!(
            _mm512_cmpge_epu32_mask(p, limit),
            0,
            "partition out of range"
        );
        _mm512_storeu_si512(parts.as_mut_ptr().add(i).cast(), p);
        _mm512_storeu_si512(keys.as_mut_ptr().add(i).cast(), key);
        if i > 0 && !blocked {
            let got = push_fitting(pusher, &parts[i - 16..i], &keys[i - 16..i]);
            pushed += got;
            blocked = got < 16;
        }
    }
    if n > 0 && !blocked {
        pushed += push_fitting(pusher, &parts[n - 16..], &keys[n - 16..]);
    }
    pushed
}

/// `keys::locate_block` eight lanes at a time, dividing in floating point as
/// [`Locator::locate_f64`] does (the compiler does not vectorise its
/// conversions on its own: they saturate in Rust).
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn locate_block(
    locator: &Locator,
    shape: KeyShape,
    first: u64,
    prefixes: &[u64],
    parts: &mut [u32],
    keys: &mut [u32],
) {
    let (shift, inverse, divisor) = locator.f64_constants();
    let divide = lanes::Float::new(*locator, inverse, divisor);
    lanes::locate(&divide, shift, shape, first, prefixes, parts, keys);
}

/// The AVX-512 loop of [`locate_block`]. Everything here is inlined
/// into that `target_feature` function, which is what lets the intrinsics
/// inline.
mod lanes {
    use super::{KeyShape, Locator};
    use std::arch::x86_64::*;

    pub(super) struct Float {
        locator: Locator,
        inverse: __m512d,
        divisor: __m512d,
    }

    impl Float {
        #[inline(always)]
        pub unsafe fn new(locator: Locator, inverse: f64, divisor: f64) -> Float {
            Float {
                locator,
                inverse: _mm512_set1_pd(inverse),
                divisor: _mm512_set1_pd(divisor),
            }
        }

        /// Eight buckets (u64 lanes) into eight (partition, bucket within
        /// it). Every value is an integer below 2^53, so exact in an f64;
        /// the quotient's estimate is off by at most one, and the
        /// remainder's sign and size show which way.
        #[inline(always)]
        unsafe fn lanes(&self, bucket: __m512i) -> (__m512i, __m512i) {
            let (zero, one) = (_mm512_setzero_pd(), _mm512_set1_pd(1.0));
            let bucket = _mm512_cvtepu64_pd(bucket);
            let mut p = _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(
                _mm512_mul_pd(bucket, self.inverse),
            );
            let mut local = _mm512_sub_pd(bucket, _mm512_mul_pd(p, self.divisor));
            let below = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(local, zero);
            p = _mm512_mask_sub_pd(p, below, p, one);
            local = _mm512_mask_add_pd(local, below, local, self.divisor);
            let over = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(local, self.divisor);
            p = _mm512_mask_add_pd(p, over, p, one);
            local = _mm512_mask_sub_pd(local, over, local, self.divisor);
            (_mm512_cvttpd_epu64(p), _mm512_cvttpd_epu64(local))
        }

        /// The same for one hash prefix.
        #[inline(always)]
        fn one(&self, prefix: u64) -> (u64, u64) {
            self.locator.locate_f64(prefix)
        }
    }

    /// The partition and key of each of a block of nonces from `first` on.
    #[inline(always)]
    pub(super) unsafe fn locate(
        divide: &Float,
        shift: u32,
        shape: KeyShape,
        first: u64,
        prefixes: &[u64],
        parts: &mut [u32],
        keys: &mut [u32],
    ) {
        let n = prefixes.len().min(parts.len()).min(keys.len());
        let bucket_shift = _mm_cvtsi64_si128(shift as i64);
        let low_bits = _mm_cvtsi64_si128(shape.low_bits as i64);
        let low_mask = _mm512_set1_epi64((shape.epoch_len() - 1) as i64);
        let mut nonces = _mm512_add_epi64(
            _mm512_set1_epi64(first as i64),
            _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
        );
        let eight = _mm512_set1_epi64(8);
        let whole = n / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: i + 8 <= n, the length of all three slices.
            let prefix = _mm512_loadu_si512(prefixes.as_ptr().add(i).cast());
            let (p, local) = divide.lanes(_mm512_srl_epi64(prefix, bucket_shift));
            let key = _mm512_or_si512(
                _mm512_sll_epi64(local, low_bits),
                _mm512_and_si512(nonces, low_mask),
            );
            _mm256_storeu_si256(parts.as_mut_ptr().add(i).cast(), _mm512_cvtepi64_epi32(p));
            _mm256_storeu_si256(keys.as_mut_ptr().add(i).cast(), _mm512_cvtepi64_epi32(key));
            nonces = _mm512_add_epi64(nonces, eight);
        }
        for i in whole..n {
            let (p, local) = divide.one(prefixes[i]);
            parts[i] = p as u32;
            keys[i] = shape.key(local, first + i as u64);
        }
    }
}

/// Appends `keys[i]` to partition `parts[i]`, in turn: a full line goes
/// out in 64-byte non-temporal stores, inline, its last record from a
/// register and never stored into the line. The generic path calls out
/// for every full line (it cannot inline the AVX-512 store into code
/// built without AVX-512), saving six registers and checking bounds
/// once a line, and it stored the last record before loading the line,
/// which perf showed as a stall on the store. In a profile of phase 1
/// at k = 32 (`phase1_speed` in `keys.rs`), the scatter's share against
/// hashing went from 0.121 to 0.106. Returns the records pushed: all of
/// them, or those before the first that fills a line its partition's
/// array has no room for (left to `Scatter::push_block`, which moves
/// it to the overflow).
///
/// # Safety
/// AVX-512F must be present and enabled in the caller; every partition
/// in `parts` must be below `pusher.parts()`.
#[inline(always)]
pub(crate) unsafe fn push_fitting(
    pusher: &mut LinePusher<'_>,
    parts: &[u32],
    keys: &[u32],
) -> usize {
    const LINE: usize = LINE_BYTES / 4;
    for (i, (&p, &key)) in parts.iter().zip(keys).enumerate() {
        let p = p as usize;
        let n = *pusher.line_fill.add(p) as usize;
        let line = pusher.lines.add(p * LINE);
        if n + 1 < LINE {
            *line.add(n) = key;
            *pusher.line_fill.add(p) = (n + 1) as u8;
            continue;
        }
        let f = *pusher.fills.add(p);
        if f + LINE > pusher.cap {
            return i;
        }
        // The last record is not stored in the line: a load of the line
        // right after a store into it waits for that store to reach the
        // cache (the mask does not spare the wait), so it comes from a
        // register.
        // Each partition's array starts on a line and f is a whole
        // number of lines, so the stores are aligned as they must be.
        stream_line(pusher.base.add(p * pusher.cap + f), line, key);
        *pusher.fills.add(p) = f + LINE;
        *pusher.line_fill.add(p) = 0;
    }
    parts.len()
}

/// [`push_fitting`] as a function of its own, for
/// `Scatter::push_block`.
///
/// # Safety
/// AVX-512F must be present; every partition in `parts` must be below
/// `pusher.parts()`.
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn push_fitting_lines(
    pusher: &mut LinePusher<'_>,
    parts: &[u32],
    keys: &[u32],
) -> usize {
    push_fitting(pusher, parts, keys)
}

#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn largest(parts: &[u32]) -> u32 {
    use std::arch::x86_64::*;
    let mut chunks = parts.chunks_exact(16);
    let mut top = _mm512_setzero_si512();
    for chunk in &mut chunks {
        // SAFETY: the chunk holds 16 u32s; unaligned loads are allowed.
        top = _mm512_max_epu32(top, _mm512_loadu_si512(chunk.as_ptr().cast()));
    }
    let rest = chunks.remainder().iter().copied().max().unwrap_or(0);
    _mm512_reduce_max_epu32(top).max(rest)
}

/// A line of u32 records, all but the last read from `src` and the last
/// given, in non-temporal 64-byte stores. Inlined into the AVX-512 push
/// (a call there would save registers once a line).
#[target_feature(enable = "avx512f")]
#[inline]
pub(crate) unsafe fn stream_line(dst: *mut u32, src: *const u32, last: u32) {
    use std::arch::x86_64::*;
    const LINE: usize = LINE_BYTES / 4;
    for c in 0..LINE / 16 - 1 {
        _mm512_stream_si512(
            dst.add(16 * c).cast(),
            _mm512_loadu_si512(src.add(16 * c).cast()),
        );
    }
    let line = _mm512_mask_loadu_epi32(
        _mm512_set1_epi32(last as i32),
        0x7fff,
        src.add(LINE - 16).cast(),
    );
    _mm512_stream_si512(dst.add(LINE - 16).cast(), line);
}
