//! `spacevault bench hash`: BLAKE3 against SHA-256, SHA-512 and, as context,
//! SHA3-256 and BLAKE2b, across implementations, message sizes, threads and
//! processes, each implementation checked on test vectors before it is timed.

pub mod algo;
pub mod chart;
pub mod check;
pub mod many;
#[cfg(feature = "openssl")]
pub mod openssl_evp;
pub mod report;
pub mod run;
pub mod suite;

pub use algo::{Algo, Backend};
pub use run::Measurement;
