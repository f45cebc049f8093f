//! BLAKE3 on many one-chunk messages at once: spacevault's record kernel (16
//! one-block messages in AVX-512 lanes) and the `blake3` crate's `hash_many`.

use crate::algo::Backend;
use blake3::platform::Platform;
use blake3::IncrementCounter;

const KEY: [u8; 32] = *b"spacevault hash benchmark key 01";
const CHUNK_START: u8 = 1;
const CHUNK_END: u8 = 2;
const ROOT: u8 = 8;

/// The unkeyed BLAKE3 IV as key words, for `hash_many`.
fn iv_words() -> [u32; 8] {
    [
        0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB,
        0x5BE0CD19,
    ]
}

/// Hashes `messages` (each `size` bytes, laid end to end) with `hash_many`
/// into `out` (32 bytes each). `size` is a multiple of 64 up to 1024.
pub fn hash_many(platform: Platform, size: usize, messages: &[u8], out: &mut [u8]) {
    macro_rules! go {
        ($n:literal) => {{
            let refs: Vec<&[u8; $n]> = messages
                .chunks_exact($n)
                .map(|c| c.try_into().unwrap())
                .collect();
            platform.hash_many(
                &refs,
                &iv_words(),
                0,
                IncrementCounter::No,
                0,
                CHUNK_START,
                CHUNK_END | ROOT,
                out,
            )
        }};
    }
    match size {
        64 => go!(64),
        128 => go!(128),
        192 => go!(192),
        256 => go!(256),
        320 => go!(320),
        384 => go!(384),
        448 => go!(448),
        512 => go!(512),
        576 => go!(576),
        640 => go!(640),
        704 => go!(704),
        768 => go!(768),
        832 => go!(832),
        896 => go!(896),
        960 => go!(960),
        1024 => go!(1024),
        _ => panic!("hash_many takes whole blocks of one chunk, not {size} bytes"),
    }
}

/// The plotter's kernel: keyed hashes of `LE64(nonce) || 56 zero bytes`.
pub fn kernel() -> spacevault::kernel::Kernel {
    spacevault::kernel::Kernel::new(&KEY)
}

/// Checks the many-at-once paths against the `blake3` crate one message at a time.
pub fn check(backend: Backend) -> Result<(), String> {
    match backend {
        Backend::Spacevault => {
            let k = kernel();
            let nonces: Vec<u64> = (0..37).map(|i| i * 0x9E37_79B9 + 5).collect();
            let mut out = vec![[0u8; 32]; nonces.len()];
            k.hashes(&nonces, &mut out);
            for (x, h) in nonces.iter().zip(out.iter()) {
                let mut msg = [0u8; 64];
                msg[..8].copy_from_slice(&x.to_le_bytes());
                if blake3::keyed_hash(&KEY, &msg).as_bytes() != h {
                    return Err(format!("blake3-many/spacevault: nonce {x} hashes differently from the blake3 crate"));
                }
            }
            Ok(())
        }
        Backend::Blake3 => {
            for size in [64usize, 128, 1024] {
                let messages: Vec<u8> = (0..size * 19).map(|i| (i * 7 % 251) as u8).collect();
                let mut out = vec![0u8; 19 * 32];
                hash_many(Platform::detect(), size, &messages, &mut out);
                for (m, h) in messages.chunks(size).zip(out.chunks(32)) {
                    if blake3::hash(m).as_bytes() != h {
                        return Err(format!("blake3-many/blake3: hash_many of {size}-byte messages differs from blake3::hash"));
                    }
                }
            }
            Ok(())
        }
        other => Err(format!("blake3-many has no {other} implementation")),
    }
}
