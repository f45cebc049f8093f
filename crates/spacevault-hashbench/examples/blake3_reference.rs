//! The reference figure `bench hash` is checked against for BLAKE3 on large
//! inputs: the `blake3` crate's own multi-threaded hashing of 1 MiB
//! messages (`Hasher::update_rayon`), on every core.
//!
//! `cargo run --release -p spacevault-hashbench --example blake3_reference`

use std::time::{Duration, Instant};

fn main() {
    let message: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    let run = Duration::from_secs(2);
    for threads in [
        1,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    ] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let (count, secs) = pool.install(|| {
            let started = Instant::now();
            let mut count = 0u64;
            let mut sink = 0u8;
            while started.elapsed() < run {
                let mut h = blake3::Hasher::new();
                h.update_rayon(&message);
                sink ^= h.finalize().as_bytes()[0];
                count += 1;
            }
            std::hint::black_box(sink);
            (count, started.elapsed().as_secs_f64())
        });
        println!(
            "blake3 update_rayon, 1 MiB, {threads} thread(s): {:.2} GB/s",
            count as f64 * message.len() as f64 / secs / 1e9
        );
    }
}
