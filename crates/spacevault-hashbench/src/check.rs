//! Each implementation checked on published test vectors before it is
//! timed, and the many-at-once paths against the one-message path.

use crate::algo::{Algo, Backend};

/// One message's digest with the single-message API of an implementation.
pub fn digest(algo: Algo, backend: Backend, msg: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    match (algo, backend) {
        (Algo::Blake3, _) | (Algo::Blake3Many, _) => blake3::hash(msg).as_bytes().to_vec(),
        (Algo::Sha256, Backend::Ring) => ring::digest::digest(&ring::digest::SHA256, msg)
            .as_ref()
            .to_vec(),
        (Algo::Sha512, Backend::Ring) => ring::digest::digest(&ring::digest::SHA512, msg)
            .as_ref()
            .to_vec(),
        #[cfg(feature = "openssl")]
        (algo, Backend::OpenSsl) => crate::openssl_evp::digest(algo, msg),
        (Algo::Sha256, _) => sha2::Sha256::digest(msg).to_vec(),
        (Algo::Sha512, _) => sha2::Sha512::digest(msg).to_vec(),
        (Algo::Sha3_256, _) => sha3::Sha3_256::digest(msg).to_vec(),
        (Algo::Blake2b, _) => blake2::Blake2b512::digest(msg).to_vec(),
    }
}

/// Published test vectors: (message, digest in hex).
pub fn vectors(algo: Algo) -> Vec<(Vec<u8>, &'static str)> {
    let million_a = vec![b'a'; 1_000_000];
    match algo {
        Algo::Blake3 | Algo::Blake3Many => vec![
            (b"".to_vec(), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
            (b"abc".to_vec(), "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"),
        ],
        Algo::Sha256 => vec![
            (b"".to_vec(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            (b"abc".to_vec(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (million_a, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        ],
        Algo::Sha512 => vec![
            (
                b"abc".to_vec(),
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
            ),
            (
                million_a,
                "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973ebde0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
            ),
        ],
        Algo::Sha3_256 => vec![
            (b"".to_vec(), "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"),
            (b"abc".to_vec(), "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"),
        ],
        Algo::Blake2b => vec![(
            b"abc".to_vec(),
            "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d17d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923",
        )],
    }
}

/// Checks an implementation on the test vectors, and the many-at-once
/// paths against the single-message path on the sizes they take. Returns
/// what failed.
pub fn self_check(algo: Algo, backend: Backend) -> Result<(), String> {
    for (msg, want) in vectors(algo) {
        let got = hex::encode(digest(algo, backend, &msg));
        if got != want {
            return Err(format!(
                "{algo}/{backend}: digest of a {}-byte vector is {got}, expected {want}",
                msg.len()
            ));
        }
    }
    if algo == Algo::Blake3Many {
        crate::many::check(backend)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_passes_its_vectors() {
        for algo in Algo::ALL {
            for &backend in algo.backends() {
                self_check(algo, backend).unwrap();
            }
        }
    }
}
