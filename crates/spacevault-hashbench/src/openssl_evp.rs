//! The system OpenSSL's digests through its EVP interface, as `openssl
//! speed -evp` calls them. Built with the `openssl` feature only, so that
//! the rest of spacevault installs on machines without OpenSSL's headers.

use crate::algo::Algo;
use openssl::md::Md;
use openssl::md_ctx::MdCtx;

/// OpenSSL's name for the digest of an algorithm it offers here.
fn name(algo: Algo) -> &'static str {
    match algo {
        Algo::Sha256 => "SHA256",
        Algo::Sha512 => "SHA512",
        Algo::Sha3_256 => "SHA3-256",
        Algo::Blake2b => "BLAKE2B-512",
        Algo::Blake3 | Algo::Blake3Many => {
            unreachable!("OpenSSL is offered for SHA-2, SHA-3 and BLAKE2b only")
        }
    }
}

thread_local! {
    /// One explicitly fetched digest and one context per algorithm and
    /// thread, reused as `openssl speed -evp` does. With OpenSSL 3's
    /// built-in `EVP_sha256()` every init looks the algorithm up again,
    /// under a lock that threads contend for.
    static EVP: std::cell::RefCell<Vec<(Algo, Md, MdCtx)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// One message's digest, returning its first byte: the timed path, with a
/// context kept for the thread.
pub fn first_byte(algo: Algo, m: &[u8]) -> u8 {
    EVP.with(|cell| {
        let mut kept = cell.borrow_mut();
        let at = match kept.iter().position(|(a, _, _)| *a == algo) {
            Some(at) => at,
            None => {
                let md = Md::fetch(None, name(algo), None).expect("OpenSSL has the digest");
                kept.push((algo, md, MdCtx::new().expect("OpenSSL digest context")));
                kept.len() - 1
            }
        };
        let (_, md, ctx) = &mut kept[at];
        let mut out = [0u8; 64];
        ctx.digest_init(md).expect("OpenSSL digest init");
        ctx.digest_update(m).expect("OpenSSL digest update");
        ctx.digest_final(&mut out).expect("OpenSSL digest final");
        out[0]
    })
}

/// One message's whole digest through the same EVP calls, for the test
/// vectors.
pub fn digest(algo: Algo, m: &[u8]) -> Vec<u8> {
    let md = Md::fetch(None, name(algo), None).expect("OpenSSL has the digest");
    let mut ctx = MdCtx::new().expect("OpenSSL digest context");
    let mut out = vec![0u8; md.size()];
    ctx.digest_init(&md).expect("OpenSSL digest init");
    ctx.digest_update(m).expect("OpenSSL digest update");
    ctx.digest_final(&mut out).expect("OpenSSL digest final");
    out
}
