//! The hash functions and implementations being compared, by name.

use serde::Serialize;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algo {
    Blake3,
    /// BLAKE3 on many one-block (64-byte) messages at once, in SIMD lanes.
    Blake3Many,
    Sha256,
    Sha512,
    Sha3_256,
    Blake2b,
}

impl Algo {
    pub const ALL: [Algo; 6] = [
        Algo::Blake3,
        Algo::Blake3Many,
        Algo::Sha256,
        Algo::Sha512,
        Algo::Sha3_256,
        Algo::Blake2b,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algo::Blake3 => "blake3",
            Algo::Blake3Many => "blake3-many",
            Algo::Sha256 => "sha256",
            Algo::Sha512 => "sha512",
            Algo::Sha3_256 => "sha3-256",
            Algo::Blake2b => "blake2b",
        }
    }

    pub fn from_name(s: &str) -> Option<Algo> {
        Algo::ALL.into_iter().find(|a| a.name() == s)
    }

    /// The implementations offered for this algorithm in this build
    /// (OpenSSL only with the `openssl` feature).
    pub fn backends(self) -> &'static [Backend] {
        #[cfg(feature = "openssl")]
        const SHA2: &[Backend] = &[Backend::RustCrypto, Backend::Ring, Backend::OpenSsl];
        #[cfg(not(feature = "openssl"))]
        const SHA2: &[Backend] = &[Backend::RustCrypto, Backend::Ring];
        #[cfg(feature = "openssl")]
        const OTHERS: &[Backend] = &[Backend::RustCrypto, Backend::OpenSsl];
        #[cfg(not(feature = "openssl"))]
        const OTHERS: &[Backend] = &[Backend::RustCrypto];
        match self {
            Algo::Blake3 => &[Backend::Blake3],
            Algo::Blake3Many => &[Backend::Spacevault, Backend::Blake3],
            Algo::Sha256 | Algo::Sha512 => SHA2,
            Algo::Sha3_256 | Algo::Blake2b => OTHERS,
        }
    }

    /// Message sizes the algorithm can take with this backend; None means any.
    pub fn supports_size(self, backend: Backend, size: usize) -> bool {
        match (self, backend) {
            // The plotter's kernel hashes one-block records only.
            (Algo::Blake3Many, Backend::Spacevault) => size == 64,
            // blake3's hash_many takes whole blocks of one chunk.
            (Algo::Blake3Many, Backend::Blake3) => {
                size > 0 && size <= 1024 && size.is_multiple_of(64)
            }
            _ => true,
        }
    }
}

impl fmt::Display for Algo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// The `blake3` crate (its SIMD `hash_many` for blake3-many).
    Blake3,
    /// spacevault's own record kernel (blake3-many at 64 bytes).
    Spacevault,
    /// RustCrypto: `sha2`, `sha3`, `blake2`.
    RustCrypto,
    Ring,
    /// The system OpenSSL, the papers' choice (with the `openssl` feature).
    OpenSsl,
}

impl Backend {
    pub const ALL: [Backend; 5] = [
        Backend::Blake3,
        Backend::Spacevault,
        Backend::RustCrypto,
        Backend::Ring,
        Backend::OpenSsl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Blake3 => "blake3",
            Backend::Spacevault => "spacevault",
            Backend::RustCrypto => "rustcrypto",
            Backend::Ring => "ring",
            Backend::OpenSsl => "openssl",
        }
    }

    pub fn from_name(s: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == s)
    }

    /// Whether this build has the implementation.
    pub fn built(self) -> bool {
        self != Backend::OpenSsl || cfg!(feature = "openssl")
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// Serialized by the names the command line takes.
impl Serialize for Algo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Algo::ALL {
            assert_eq!(Algo::from_name(a.name()), Some(a));
        }
        for b in Backend::ALL {
            assert_eq!(Backend::from_name(b.name()), Some(b));
        }
        assert_eq!(Algo::from_name("md5"), None);
    }
}
