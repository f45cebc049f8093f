//! Quick single-thread rate of each kernel backend against blake3's own
//! `hash_many` on the same one-block keyed messages.
use spacevault::kernel::{Backend, Kernel};
use std::time::Instant;

fn main() {
    let key = [7u8; 32];
    let n: u64 = 1 << 24;
    let mut buf = vec![0u64; 4096];
    for backend in Backend::ALL.into_iter().filter(|b| b.is_supported()) {
        let k = Kernel::with_backend(&key, backend);
        let t = Instant::now();
        let mut acc = 0u64;
        let mut x = 0;
        while x < n {
            k.prefixes(x, &mut buf);
            acc ^= buf[17];
            x += buf.len() as u64;
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:10} {:7.1} M/s  ({acc:x})",
            backend.name(),
            n as f64 / s / 1e6
        );
    }
    let platform = blake3::platform::Platform::detect();
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        *w = u32::from_le_bytes(key[4 * i..4 * i + 4].try_into().unwrap());
    }
    let mut msgs = vec![[0u8; 64]; 4096];
    let mut out = vec![0u8; 4096 * 32];
    let t = Instant::now();
    let mut x = 0u64;
    while x < n {
        for (i, m) in msgs.iter_mut().enumerate() {
            m[..8].copy_from_slice(&(x + i as u64).to_le_bytes());
        }
        let refs: Vec<&[u8; 64]> = msgs.iter().collect();
        platform.hash_many(
            &refs,
            &words,
            0,
            blake3::IncrementCounter::No,
            16 | 8,
            1,
            2,
            &mut out,
        );
        x += 4096;
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "{:10} {:7.1} M/s  ({:x})",
        "hash_many",
        n as f64 / s / 1e6,
        out[5]
    );
}
