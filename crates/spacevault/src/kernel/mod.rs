//! Hashing records many at a time.
//!
//! A record's hash is `keyed_hash(plot_id, LE64(nonce) || 56 zero bytes)`:
//! one BLAKE3 block, so N nonces fill N SIMD lanes with no tree and no
//! message transposition. The backends share one source (`lanes.rs`) compiled
//! with different target features; the `blake3` crate is the reference that
//! the tests hold every backend to.
//!
//! `SPACEVAULT_BACKEND=portable` (or `avx512`, `avx2`, `sse2`, `neon`) picks
//! a backend for the whole process (the command line refuses a value that
//! names none, or one the CPU lacks; the library then takes the best one). The portable backend is what CPUs with none of those run
//! (and the plain twin the others are held to), so the test suite is run
//! with it too.

#[cfg(target_arch = "aarch64")]
mod arm;
mod lanes;
#[cfg(target_arch = "x86_64")]
mod x86;

use lanes::{Portable, Start, Vector};

use std::sync::OnceLock;

/// One way of running the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// 16 lanes in AVX-512 registers.
    Avx512,
    /// 8 lanes in AVX2 registers.
    Avx2,
    /// 4 lanes in SSE2 registers (every x86-64 CPU).
    Sse2,
    /// 4 lanes in NEON registers (aarch64).
    Neon,
    /// 4 lanes in plain Rust, for any CPU (what the compiler makes of it is
    /// partly scalar).
    Portable,
}

impl Backend {
    /// Every backend this build knows, best first.
    pub const ALL: [Backend; 5] = [
        Backend::Avx512,
        Backend::Avx2,
        Backend::Sse2,
        Backend::Neon,
        Backend::Portable,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Avx512 => "avx512",
            Backend::Avx2 => "avx2",
            Backend::Sse2 => "sse2",
            Backend::Neon => "neon",
            Backend::Portable => "portable",
        }
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// Messages hashed side by side.
    pub fn lanes(self) -> usize {
        match self {
            Backend::Avx512 => 16,
            Backend::Avx2 => 8,
            Backend::Sse2 | Backend::Neon | Backend::Portable => 4,
        }
    }

    /// Whether this CPU can run the backend.
    pub fn is_supported(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
            }
            #[cfg(target_arch = "x86_64")]
            Backend::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Backend::Sse2 => std::arch::is_x86_feature_detected!("sse2"),
            #[cfg(target_arch = "aarch64")]
            Backend::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            Backend::Portable => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// The best backend this CPU supports.
    pub fn detect() -> Backend {
        Backend::ALL
            .into_iter()
            .find(|b| b.is_supported())
            .unwrap_or(Backend::Portable)
    }

    /// The backend this process uses: the one [`BACKEND_ENV`] names if the
    /// CPU has it, otherwise the best one detected.
    pub fn active() -> Backend {
        static ACTIVE: OnceLock<Backend> = OnceLock::new();
        *ACTIVE.get_or_init(|| match backend_setting() {
            Ok(Some(b)) if b.is_supported() => b,
            _ => Backend::detect(),
        })
    }
}

/// The environment variable that picks a backend for the whole process.
pub const BACKEND_ENV: &str = "SPACEVAULT_BACKEND";

/// The backend [`BACKEND_ENV`] asks for: none when it is unset or empty.
/// A value that names no backend, or one this CPU cannot run, is the error,
/// in words for a program to refuse it with (the library itself then uses
/// the best backend detected).
pub fn backend_setting() -> Result<Option<Backend>, String> {
    let value = match std::env::var(BACKEND_ENV) {
        Err(_) => return Ok(None),
        Ok(v) if v.is_empty() => return Ok(None),
        Ok(v) => v,
    };
    let runnable: Vec<&str> = Backend::ALL
        .into_iter()
        .filter(|b| b.is_supported())
        .map(Backend::name)
        .collect();
    match Backend::from_name(&value) {
        Some(b) if b.is_supported() => Ok(Some(b)),
        Some(_) => Err(format!(
            "{BACKEND_ENV} is `{value}`, which this CPU cannot run: use {}",
            runnable.join(", ")
        )),
        None => Err(format!(
            "{BACKEND_ENV} is `{value}`, which names no backend: use {}",
            runnable.join(", ")
        )),
    }
}

/// The key of one plot, ready to hash its records.
#[derive(Clone)]
pub struct Kernel {
    key: [u32; 8],
    start: Start,
    backend: Backend,
}

impl Kernel {
    /// A kernel for `plot_id` on the process's active backend.
    pub fn new(plot_id: &[u8; 32]) -> Kernel {
        Kernel::with_backend(plot_id, Backend::active())
    }

    /// A kernel on a chosen backend; one the CPU lacks is replaced by the best
    /// one it has.
    pub fn with_backend(plot_id: &[u8; 32], backend: Backend) -> Kernel {
        let backend = if backend.is_supported() {
            backend
        } else {
            Backend::detect()
        };
        let mut key = [0u32; 8];
        for (i, w) in key.iter_mut().enumerate() {
            *w = u32::from_le_bytes(plot_id[4 * i..4 * i + 4].try_into().unwrap());
        }
        Kernel {
            key,
            start: Start::new(&key),
            backend,
        }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// `out[i]` = the first 4 bytes, big-endian, of the hash of nonce
    /// `first + i`: the least a plotter of up to 2^32 buckets needs from
    /// each hash. The kernel skips what only the other words need (two of
    /// the last round's eight mixing steps), so this is the hash rate a
    /// plot's time is measured against.
    pub fn top_words(&self, first: u64, out: &mut [u32]) {
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel only holds a backend the CPU supports.
            Backend::Avx512 => unsafe { x86::top_words_avx512(&self.start, first, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Avx2 => unsafe { x86::top_words_avx2(&self.start, first, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Sse2 => unsafe { x86::top_words_sse2(&self.start, first, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Backend::Neon => unsafe { arm::top_words_neon(&self.start, first, out) },
            // SAFETY: the portable vector needs no target feature.
            _ => unsafe { top_words_generic::<Portable>(&self.start, first, out) },
        }
    }

    /// The first 4 bytes, big-endian, of the hashes of the 16 nonces
    /// `first ..= first + 15`, in a register: for loops that do more with
    /// each register than store it (the plotter's hash, locate and scatter
    /// loop, `plot/keys.rs`).
    ///
    /// # Safety
    /// The kernel's backend is [`Backend::Avx512`], and the caller runs with
    /// AVX-512F and AVX-512VL enabled.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) unsafe fn top_words_16(&self, first: u64) -> std::arch::x86_64::__m512i {
        debug_assert_eq!(self.backend, Backend::Avx512);
        x86::top_words_16(&self.start, first)
    }

    /// `out[i]` = the first 8 bytes, big-endian, of the hash of nonce `first + i`.
    pub fn prefixes(&self, first: u64, out: &mut [u64]) {
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel only holds a backend the CPU supports.
            Backend::Avx512 => unsafe { x86::prefixes_avx512(&self.start, first, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Avx2 => unsafe { x86::prefixes_avx2(&self.start, first, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Sse2 => unsafe { x86::prefixes_sse2(&self.start, first, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Backend::Neon => unsafe { arm::prefixes_neon(&self.start, first, out) },
            // SAFETY: the portable vector needs no target feature.
            _ => unsafe { prefixes_generic::<Portable>(&self.start, first, out) },
        }
    }

    /// `out[i]` = the first 8 bytes, big-endian, of the hash of `nonces[i]`.
    pub fn prefixes_of(&self, nonces: &[u64], out: &mut [u64]) {
        assert_eq!(nonces.len(), out.len());
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel only holds a backend the CPU supports.
            Backend::Avx512 => unsafe { x86::prefixes_of_avx512(&self.start, nonces, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Avx2 => unsafe { x86::prefixes_of_avx2(&self.start, nonces, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Sse2 => unsafe { x86::prefixes_of_sse2(&self.start, nonces, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Backend::Neon => unsafe { arm::prefixes_of_neon(&self.start, nonces, out) },
            // SAFETY: the portable vector needs no target feature.
            _ => unsafe { prefixes_of_generic::<Portable>(&self.start, nonces, out) },
        }
    }

    /// `out[i]` = the whole hash of `nonces[i]`.
    pub fn hashes(&self, nonces: &[u64], out: &mut [[u8; 32]]) {
        assert_eq!(nonces.len(), out.len());
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel only holds a backend the CPU supports.
            Backend::Avx512 => unsafe { x86::hashes_avx512(&self.start, nonces, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Avx2 => unsafe { x86::hashes_avx2(&self.start, nonces, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Sse2 => unsafe { x86::hashes_sse2(&self.start, nonces, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Backend::Neon => unsafe { arm::hashes_neon(&self.start, nonces, out) },
            // SAFETY: as above.
            _ => unsafe { hashes_generic::<Portable>(&self.start, nonces, out) },
        }
    }

    /// `out[i]` = `keyed_hash(plot_id, blocks[i])`: whole 64-byte
    /// messages under the kernel's key, as the table-chain scheme's joins
    /// hash them.
    pub fn hash_blocks(&self, blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
        assert_eq!(blocks.len(), out.len());
        let key = &self.key;
        match self.backend {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a kernel only holds a backend the CPU supports.
            Backend::Avx512 => unsafe { x86::blocks_avx512(key, blocks, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Avx2 => unsafe { x86::blocks_avx2(key, blocks, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Backend::Sse2 => unsafe { x86::blocks_sse2(key, blocks, out) },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: as above.
            Backend::Neon => unsafe { arm::blocks_neon(key, blocks, out) },
            // SAFETY: the portable vector needs no target feature.
            _ => unsafe { blocks_generic::<Portable>(key, blocks, out) },
        }
    }

    /// The hash of one nonce.
    pub fn hash(&self, nonce: u64) -> [u8; 32] {
        let mut out = [[0u8; 32]; 1];
        self.hashes(&[nonce], &mut out);
        out[0]
    }
}

/// # Safety
/// The caller runs with `V`'s target features enabled.
#[inline(always)]
unsafe fn prefixes_generic<V: Vector>(start: &Start, first: u64, out: &mut [u64]) {
    let n = V::LANES;
    let mut chunks = out.chunks_exact_mut(n);
    let mut x = first;
    for chunk in &mut chunks {
        lanes::prefixes_consecutive::<V>(start, x, chunk);
        x = x.wrapping_add(n as u64);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut tmp = [0u64; 16];
        lanes::prefixes_consecutive::<V>(start, x, &mut tmp);
        let len = rest.len();
        rest.copy_from_slice(&tmp[..len]);
    }
}

/// # Safety
/// As for [`prefixes_generic`].
#[inline(always)]
unsafe fn top_words_generic<V: Vector>(start: &Start, first: u64, out: &mut [u32]) {
    let n = V::LANES;
    let mut chunks = out.chunks_exact_mut(n);
    let mut x = first;
    for chunk in &mut chunks {
        lanes::top_words_consecutive::<V>(start, x, chunk);
        x = x.wrapping_add(n as u64);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut tmp = [0u32; 16];
        lanes::top_words_consecutive::<V>(start, x, &mut tmp);
        let len = rest.len();
        rest.copy_from_slice(&tmp[..len]);
    }
}

/// # Safety
/// As for [`prefixes_generic`].
#[inline(always)]
unsafe fn prefixes_of_generic<V: Vector>(start: &Start, nonces: &[u64], out: &mut [u64]) {
    let n = V::LANES;
    let mut ins = nonces.chunks_exact(n);
    let mut outs = out.chunks_exact_mut(n);
    for (i, o) in (&mut ins).zip(&mut outs) {
        lanes::prefixes_of::<V>(start, i, o);
    }
    let (i, o) = (ins.remainder(), outs.into_remainder());
    if !i.is_empty() {
        let mut nonces = [0u64; 16];
        nonces[..i.len()].copy_from_slice(i);
        let mut tmp = [0u64; 16];
        lanes::prefixes_of::<V>(start, &nonces, &mut tmp);
        let len = o.len();
        o.copy_from_slice(&tmp[..len]);
    }
}

/// # Safety
/// As for [`prefixes_generic`].
#[inline(always)]
unsafe fn hashes_generic<V: Vector>(start: &Start, nonces: &[u64], out: &mut [[u8; 32]]) {
    let n = V::LANES;
    let mut ins = nonces.chunks_exact(n);
    let mut outs = out.chunks_exact_mut(n);
    for (i, o) in (&mut ins).zip(&mut outs) {
        lanes::hashes::<V>(start, i, o);
    }
    let (i, o) = (ins.remainder(), outs.into_remainder());
    if !i.is_empty() {
        let mut nonces = [0u64; 16];
        nonces[..i.len()].copy_from_slice(i);
        let mut tmp = [[0u8; 32]; 16];
        lanes::hashes::<V>(start, &nonces, &mut tmp);
        let len = o.len();
        o.copy_from_slice(&tmp[..len]);
    }
}

/// # Safety
/// As for [`prefixes_generic`].
#[inline(always)]
unsafe fn blocks_generic<V: Vector>(key: &[u32; 8], blocks: &[[u8; 64]], out: &mut [[u8; 32]]) {
    let n = V::LANES;
    let mut ins = blocks.chunks_exact(n);
    let mut outs = out.chunks_exact_mut(n);
    for (i, o) in (&mut ins).zip(&mut outs) {
        lanes::blocks::<V>(key, i, o);
    }
    let (i, o) = (ins.remainder(), outs.into_remainder());
    if !i.is_empty() {
        let mut tail = [[0u8; 64]; 16];
        tail[..i.len()].copy_from_slice(i);
        let mut tmp = [[0u8; 32]; 16];
        lanes::blocks::<V>(key, &tail, &mut tmp);
        let len = o.len();
        o.copy_from_slice(&tmp[..len]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_blocks_hash_as_blake3_keyed_hash_on_every_backend() {
        let k = key(5);
        let blocks: Vec<[u8; 64]> = (0..37u32)
            .map(|i| {
                let mut b = [0u8; 64];
                for (j, byte) in b.iter_mut().enumerate() {
                    *byte = (i as u8)
                        .wrapping_mul(31)
                        .wrapping_add((j as u8).wrapping_mul(7));
                }
                b
            })
            .collect();
        let expected: Vec<[u8; 32]> = blocks
            .iter()
            .map(|b| *blake3::keyed_hash(&k, b).as_bytes())
            .collect();
        for backend in Backend::ALL {
            if !backend.is_supported() {
                continue;
            }
            let kernel = Kernel::with_backend(&k, backend);
            for n in [0usize, 1, 15, 16, 17, 37] {
                let mut out = vec![[0u8; 32]; n];
                kernel.hash_blocks(&blocks[..n], &mut out);
                assert_eq!(out, expected[..n], "{} n {n}", backend.name());
            }
        }
    }

    fn reference(key: &[u8; 32], nonce: u64) -> [u8; 32] {
        let mut msg = [0u8; 64];
        msg[..8].copy_from_slice(&nonce.to_le_bytes());
        *blake3::keyed_hash(key, &msg).as_bytes()
    }

    fn key(seed: u8) -> [u8; 32] {
        *blake3::hash(&[seed]).as_bytes()
    }

    /// CI runs the library's tests once for each backend the machine has,
    /// through the environment: each run must really use the one it names,
    /// or it tests another and passes for the wrong reason.
    #[test]
    fn the_backend_in_use_is_the_one_asked_for() {
        match backend_setting() {
            Ok(Some(asked)) => {
                assert_eq!(Backend::active(), asked);
                assert_eq!(Kernel::new(&key(1)).backend(), asked);
            }
            Ok(None) => assert_eq!(Backend::active(), Backend::detect()),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn every_supported_backend_matches_the_blake3_crate() {
        for backend in Backend::ALL.into_iter().filter(|b| b.is_supported()) {
            for seed in 0..4u8 {
                let k = key(seed);
                let kernel = Kernel::with_backend(&k, backend);
                assert_eq!(kernel.backend(), backend);
                // Nonces near 2^32 exercise the high message word.
                for first in [0u64, 1, 0xFFFF_FFF0, (1u64 << 40) - 37] {
                    let mut pre = vec![0u64; 37];
                    kernel.prefixes(first, &mut pre);
                    let nonces_any: Vec<u64> = (first..first + 37).rev().collect();
                    let mut pre_any = vec![0u64; 37];
                    kernel.prefixes_of(&nonces_any, &mut pre_any);
                    pre_any.reverse();
                    assert_eq!(pre_any, pre);
                    let mut top = vec![0u32; 37];
                    kernel.top_words(first, &mut top);
                    let high: Vec<u32> = pre.iter().map(|&p| (p >> 32) as u32).collect();
                    assert_eq!(top, high, "{backend:?} top words from {first}");
                    let nonces: Vec<u64> = (first..first + 37).collect();
                    let mut full = vec![[0u8; 32]; 37];
                    kernel.hashes(&nonces, &mut full);
                    for (i, &x) in nonces.iter().enumerate() {
                        let want = reference(&k, x);
                        assert_eq!(full[i], want, "{backend:?} nonce {x}");
                        assert_eq!(pre[i], u64::from_be_bytes(want[..8].try_into().unwrap()));
                    }
                }
            }
        }
    }

    #[test]
    fn empty_and_short_batches() {
        let kernel = Kernel::new(&key(9));
        kernel.prefixes(5, &mut []);
        kernel.hashes(&[], &mut []);
        assert_eq!(kernel.hash(5), reference(&key(9), 5));
    }
}
