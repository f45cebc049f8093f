//! Which SIMD level the plotter's own loops run at, decided once per plot,
//! as BLAKE3's `platform.rs` decides for its hashing. The kernel hashes on
//! whatever backend it was given (`kernel/`); the loops around it (locating
//! a record's partition, scattering keys, streaming whole lines to memory)
//! have an AVX-512 form, all in [`avx512`], and a plain one beside their
//! callers, which is what every other CPU runs and what the tests compare
//! the AVX-512 form with.

use crate::kernel::{Backend, Kernel};

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

/// The plotter's SIMD level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    /// AVX-512F and VL, which the kernel's AVX-512 backend needs too;
    /// `dq`: AVX-512DQ as well, for the floating-point division.
    #[cfg(target_arch = "x86_64")]
    Avx512 { dq: bool },
    /// Plain Rust (with SSE2's streaming stores on x86-64).
    Plain,
}

impl Simd {
    /// The level for plots hashed on `backend`: AVX-512 exactly when the
    /// kernel runs it, so that `SPACEVAULT_BACKEND` switches both.
    pub fn for_backend(backend: Backend) -> Simd {
        match backend {
            #[cfg(target_arch = "x86_64")]
            Backend::Avx512 if backend.is_supported() => Simd::Avx512 {
                dq: std::arch::is_x86_feature_detected!("avx512dq"),
            },
            _ => Simd::Plain,
        }
    }

    /// The level for a plot hashed by `kernel`.
    pub fn of(kernel: &Kernel) -> Simd {
        Simd::for_backend(kernel.backend())
    }

    /// Every level this CPU runs, for tests that compare them.
    #[cfg(test)]
    pub fn all_here() -> Vec<Simd> {
        let mut all = vec![Simd::Plain];
        let best = Simd::for_backend(Backend::Avx512);
        if best != Simd::Plain {
            all.push(best);
        }
        all
    }
}
