//! Timing one case: an algorithm, an implementation, a message size and a
//! number of threads, for a fixed time, with a warm-up and repeats.

use crate::algo::{Algo, Backend};
use crate::many;
use serde::Serialize;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What one thread hashes, over and over.
struct Workload {
    algo: Algo,
    backend: Backend,
    size: usize,
    messages: Vec<u8>,
    out: Vec<u8>,
    nonces: Vec<u64>,
    hashes: Vec<[u8; 32]>,
    kernel: Option<spacevault::kernel::Kernel>,
    counter: u64,
    sink: u8,
}

impl Workload {
    fn new(algo: Algo, backend: Backend, size: usize, seed: u64) -> Workload {
        // Batches of about 64 KiB of input, and at least 64 messages.
        let batch = (65536 / size.max(1))
            .clamp(1, 4096)
            .max(if size <= 1024 { 64 } else { 1 });
        let messages = (0..size * if algo == Algo::Blake3Many { batch } else { 1 })
            .map(|i| (i as u64 * 31 + seed) as u8)
            .collect();
        Workload {
            algo,
            backend,
            size,
            messages,
            out: vec![0u8; batch * 32],
            nonces: (0..batch as u64).collect(),
            hashes: vec![[0u8; 32]; batch],
            kernel: (backend == Backend::Spacevault).then(many::kernel),
            counter: seed << 40,
            sink: 0,
        }
    }

    /// Hashes one batch; returns how many messages.
    #[inline(never)]
    fn batch(&mut self) -> u64 {
        match (self.algo, self.backend) {
            (Algo::Blake3Many, Backend::Spacevault) => {
                for n in self.nonces.iter_mut() {
                    *n = self.counter;
                    self.counter += 1;
                }
                self.kernel
                    .as_ref()
                    .unwrap()
                    .hashes(&self.nonces, &mut self.hashes);
                self.sink ^= self.hashes[self.hashes.len() - 1][0];
                self.nonces.len() as u64
            }
            (Algo::Blake3Many, _) => {
                let count = self.messages.len() / self.size;
                for m in self.messages.chunks_mut(self.size) {
                    m[..8].copy_from_slice(&self.counter.to_le_bytes());
                    self.counter += 1;
                }
                many::hash_many(
                    blake3::platform::Platform::detect(),
                    self.size,
                    &self.messages,
                    &mut self.out[..count * 32],
                );
                self.sink ^= self.out[0];
                count as u64
            }
            _ => {
                let hash = one_message(self.algo, self.backend);
                let reps = (65536 / self.size.max(1)).clamp(1, 1024);
                let n = self.size.min(8);
                for _ in 0..reps {
                    self.messages[..n].copy_from_slice(&self.counter.to_le_bytes()[..n]);
                    self.counter += 1;
                    self.sink ^= hash(black_box(&self.messages));
                }
                reps as u64
            }
        }
    }
}

/// A function hashing one message with one implementation, returning one
/// byte of the digest so the work cannot be optimised away.
fn one_message(algo: Algo, backend: Backend) -> fn(&[u8]) -> u8 {
    use sha2::Digest as _;
    match (algo, backend) {
        (Algo::Sha256, Backend::Ring) => {
            |m| ring::digest::digest(&ring::digest::SHA256, m).as_ref()[0]
        }
        (Algo::Sha512, Backend::Ring) => {
            |m| ring::digest::digest(&ring::digest::SHA512, m).as_ref()[0]
        }
        #[cfg(feature = "openssl")]
        (Algo::Sha256, Backend::OpenSsl) => |m| crate::openssl_evp::first_byte(Algo::Sha256, m),
        #[cfg(feature = "openssl")]
        (Algo::Sha512, Backend::OpenSsl) => |m| crate::openssl_evp::first_byte(Algo::Sha512, m),
        #[cfg(feature = "openssl")]
        (Algo::Sha3_256, Backend::OpenSsl) => |m| crate::openssl_evp::first_byte(Algo::Sha3_256, m),
        #[cfg(feature = "openssl")]
        (Algo::Blake2b, Backend::OpenSsl) => |m| crate::openssl_evp::first_byte(Algo::Blake2b, m),
        (Algo::Sha256, _) => |m| sha2::Sha256::digest(m)[0],
        (Algo::Sha512, _) => |m| sha2::Sha512::digest(m)[0],
        (Algo::Sha3_256, _) => |m| sha3::Sha3_256::digest(m)[0],
        (Algo::Blake2b, _) => |m| blake2::Blake2b512::digest(m)[0],
        (Algo::Blake3, _) | (Algo::Blake3Many, _) => |m| blake3::hash(m).as_bytes()[0],
    }
}

/// Messages hashed by `threads` threads in about `duration`, and the
/// seconds it took.
pub fn timed(
    algo: Algo,
    backend: Backend,
    size: usize,
    threads: usize,
    duration: Duration,
) -> (u64, f64) {
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let total: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let stop = &stop;
                s.spawn(move || {
                    let mut w = Workload::new(algo, backend, size, t as u64 + 1);
                    // At least one batch, even for a thread that only got a
                    // core after the time was up (a loaded machine): the
                    // elapsed time counts until every thread is done.
                    let mut done = w.batch();
                    while !stop.load(Ordering::Relaxed) {
                        done += w.batch();
                    }
                    black_box(w.sink);
                    done
                })
            })
            .collect();
        std::thread::sleep(duration);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("hash thread panicked"))
            .sum()
    });
    (total, started.elapsed().as_secs_f64())
}

/// Min, median and max over repeats.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        Spread {
            min: v[0],
            median: v[v.len() / 2],
            max: v[v.len() - 1],
        }
    }
}

/// One case, measured.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub algo: Algo,
    pub backend: Backend,
    pub size: usize,
    pub threads: usize,
    pub processes: usize,
    pub hashes_per_second: Spread,
    pub bytes_per_second: Spread,
    /// Median rate per thread (or process) over the single-thread median:
    /// 1.0 is perfect scaling. Filled in when the sweep has a 1-thread case.
    pub scaling_efficiency: Option<f64>,
}

/// Times one case in this process: a warm-up, then `repeats` runs.
pub fn measure(
    algo: Algo,
    backend: Backend,
    size: usize,
    threads: usize,
    duration: Duration,
    warmup: Duration,
    repeats: usize,
) -> Measurement {
    if !warmup.is_zero() {
        timed(algo, backend, size, threads, warmup);
    }
    let rates: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            let (n, secs) = timed(algo, backend, size, threads, duration);
            n as f64 / secs
        })
        .collect();
    let bytes: Vec<f64> = rates.iter().map(|r| r * size as f64).collect();
    Measurement {
        algo,
        backend,
        size,
        threads,
        processes: 1,
        hashes_per_second: Spread::of(&rates),
        bytes_per_second: Spread::of(&bytes),
        scaling_efficiency: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_run_of_every_case_completes() {
        for algo in Algo::ALL {
            for &backend in algo.backends() {
                for size in [32usize, 64, 1024] {
                    if !algo.supports_size(backend, size) {
                        continue;
                    }
                    let m = measure(
                        algo,
                        backend,
                        size,
                        2,
                        Duration::from_millis(5),
                        Duration::ZERO,
                        2,
                    );
                    assert!(m.hashes_per_second.min > 0.0, "{algo}/{backend}/{size}");
                    assert!(m.hashes_per_second.min <= m.hashes_per_second.median);
                    assert_eq!(
                        m.bytes_per_second.median,
                        m.hashes_per_second.median * size as f64
                    );
                }
            }
        }
    }
}
