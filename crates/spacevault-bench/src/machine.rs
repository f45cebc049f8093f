//! The machine's limits: record hashing on all cores, sequential disk
//! writes and reads, random 4 KiB reads, and process I/O counters.

use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::aligned::{open_read, AlignedBuf};
use spacevault::kernel::Kernel;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What the figures were measured on. A ratio to the machine's own bounds
/// travels between machines; a raw figure does not, and a VM's host can
/// change under it from one day to the next.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// The CPU's model name (`/proc/cpuinfo`), or the architecture.
    pub cpu: String,
    /// Threads this process may run at once.
    pub cores: usize,
    /// Physical memory (`/proc/meminfo`), where known.
    pub memory_bytes: Option<u64>,
    /// The kernel backend spacevault hashes with.
    pub simd: &'static str,
    /// The operating system's kernel release, where known.
    pub os_release: Option<String>,
    /// The size of the system's pool of 2 MiB huge pages
    /// (`vm.nr_hugepages` pages), which the plotter takes its large buffers
    /// from where it has room; null where unknown.
    pub huge_page_pool_bytes: Option<u64>,
}

impl Machine {
    pub fn this() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| std::env::consts::ARCH.to_string());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
        let os_release = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|s| s.trim().to_string());
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
            simd: spacevault::kernel::Backend::active().name(),
            os_release,
            huge_page_pool_bytes: spacevault::aligned::pool_bytes(),
        }
    }

    /// One line for a report's head.
    pub fn describe(&self) -> String {
        let memory = self
            .memory_bytes
            .map(|b| format!(", {:.0} GiB", b as f64 / (1u64 << 30) as f64))
            .unwrap_or_default();
        let pool = match self.huge_page_pool_bytes {
            Some(b) if b > 0 => {
                format!(", huge page pool {:.2} GiB", b as f64 / (1u64 << 30) as f64)
            }
            _ => String::new(),
        };
        format!(
            "{} ({} cores{memory}{pool}, {} kernel)",
            self.cpu, self.cores, self.simd
        )
    }
}

/// Records per second the plotter's own kernel hashes on `threads` threads,
/// measured for about `duration`: the first 4 bytes of each hash
/// ([`Kernel::top_words`]), the least any plot needs (at k <= 36 with
/// AVX-512 the plotter computes no more; elsewhere it takes 8-byte
/// prefixes, so the bound is a little stricter than it must be).
pub fn hash_rate(threads: usize, duration: Duration) -> f64 {
    let kernel = Kernel::new(&[0x5A; 32]);
    rate_on_threads(threads, duration, |t, keep_going| {
        let mut out = vec![0u32; 4096];
        let mut x = (t as u64) << 36;
        let mut done = 0u64;
        let mut sink = 0u64;
        while keep_going() {
            for _ in 0..64 {
                kernel.top_words(x, &mut out);
                sink ^= out[7] as u64;
                x += out.len() as u64;
                done += out.len() as u64;
            }
        }
        std::hint::black_box(sink);
        done
    })
}

/// Records a second that `threads` threads hash together in about
/// `duration`: each runs `hash(thread, keep_going)`, which hashes while
/// `keep_going()` and returns how many records it hashed.
fn rate_on_threads(
    threads: usize,
    duration: Duration,
    hash: impl Fn(usize, &dyn Fn() -> bool) -> u64 + Sync,
) -> f64 {
    let started = Instant::now();
    let keep_going = || started.elapsed() < duration;
    let total: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let hash = &hash;
                s.spawn(move || hash(t, &keep_going))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    total as f64 / started.elapsed().as_secs_f64()
}

/// Records hashed by one `hash_many` call of [`blake3_rate`].
const BLAKE3_BATCH: usize = 1024;

/// Records per second the `blake3` crate's SIMD `hash_many` hashes on
/// `threads` threads, measured for about `duration`: each record's whole
/// 32-byte keyed hash of its one-block message, as any plotter built on the
/// stock BLAKE3 implementation would compute it. This is the machine's
/// BLAKE3 hash rate the plot's targets are stated against; [`hash_rate`],
/// spacevault's own kernel computing only what a plot needs, is a stricter
/// bound of its own. Each thread writes its records' messages once and
/// hashes them again and again: the rate is of hashing alone, a little
/// stricter than what a plotter using `hash_many` could reach (it would
/// also write a message for each nonce and the list `hash_many` takes).
/// The portable `hash_many` when the
/// kernel's backend is the portable one (`SPACEVAULT_BACKEND=portable`),
/// else the best this CPU has.
pub fn blake3_rate(threads: usize, duration: Duration) -> f64 {
    let platform = blake3_platform();
    let key = key_words(&[0x5A; 32]);
    rate_on_threads(threads, duration, |t, keep_going| {
        let messages = record_messages((t as u64) << 36, BLAKE3_BATCH);
        let refs: Vec<&[u8; 64]> = messages.iter().collect();
        let mut out = vec![0u8; 32 * BLAKE3_BATCH];
        let mut done = 0u64;
        let mut sink = 0u8;
        while keep_going() {
            for _ in 0..16 {
                hash_records(platform, &key, &refs, &mut out);
                sink ^= out[7];
                done += BLAKE3_BATCH as u64;
            }
        }
        std::hint::black_box(sink);
        done
    })
}

fn blake3_platform() -> blake3::platform::Platform {
    match spacevault::kernel::Backend::active() {
        spacevault::kernel::Backend::Portable => blake3::platform::Platform::portable(),
        _ => blake3::platform::Platform::detect(),
    }
}

fn key_words(key: &[u8; 32]) -> [u32; 8] {
    std::array::from_fn(|i| u32::from_le_bytes(key[4 * i..4 * i + 4].try_into().unwrap()))
}

/// The one-block messages of the records `first..first + count`: the
/// nonce, little-endian, then zeros.
fn record_messages(first: u64, count: usize) -> Vec<[u8; 64]> {
    (first..first + count as u64)
        .map(|nonce| {
            let mut m = [0u8; 64];
            m[..8].copy_from_slice(&nonce.to_le_bytes());
            m
        })
        .collect()
}

/// The keyed hashes of `messages` with the `blake3` crate's `hash_many`,
/// 32 bytes each into `out`.
fn hash_records(
    platform: blake3::platform::Platform,
    key: &[u32; 8],
    messages: &[&[u8; 64]],
    out: &mut [u8],
) {
    // Flags of a keyed hash of one block that is the whole input.
    const CHUNK_START: u8 = 1;
    const CHUNK_END: u8 = 2;
    const ROOT: u8 = 8;
    const KEYED_HASH: u8 = 16;
    platform.hash_many(
        messages,
        key,
        0,
        blake3::IncrementCounter::No,
        KEYED_HASH,
        CHUNK_START,
        CHUNK_END | ROOT,
        out,
    );
}

/// Sequential write and read speed of a directory's disk, bytes per second.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DiskSpeed {
    pub write_bytes_per_second: f64,
    pub read_bytes_per_second: f64,
    /// Whether O_DIRECT was used (else buffered I/O with fsync).
    pub direct: bool,
    pub bytes: u64,
}

/// Reading one file while writing another: what each direction gets while
/// both run, bytes per second. On one disk the two share its bandwidth; on
/// two disks each runs at about its own speed.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ConcurrentSpeed {
    pub read_bytes_per_second: f64,
    pub write_bytes_per_second: f64,
    pub bytes: u64,
}

/// The size of each read and write when measuring the disk: as large as
/// the plotter's own writes (its staging buffers), from buffers in huge
/// pages as the plotter's are (`AlignedBuf::zeroed`): a virtio disk serves
/// small blocks from base pages at a fraction of what it gives the
/// plotter, and the bound would be too loose.
const BLOCK: usize = 4 << 20;

/// Writes `bytes` to a scratch file in `dir` in [`BLOCK`]s (O_DIRECT where
/// possible, fsync at the end), reads it back, and removes it.
pub fn disk_speed(dir: &Path, bytes: u64) -> Result<DiskSpeed, BenchError> {
    let scratch = Scratch::create(dir)?;
    let buf = pattern();
    let blocks = blocks_of(bytes);
    let write = time_writes(&scratch, blocks, &buf, &AtomicU64::new(0))?;
    let read = time_reads(&scratch.path, blocks, &AtomicU64::new(0))?;
    let total = (blocks * BLOCK) as f64;
    Ok(DiskSpeed {
        write_bytes_per_second: total / write,
        read_bytes_per_second: total / read,
        direct: scratch.direct,
        bytes: total as u64,
    })
}

/// Writes a scratch file of `bytes` in `read_dir`, then reads it back while
/// writing as much to a scratch file in `write_dir`, and measures each
/// direction's rate until the first of the two is done.
pub fn concurrent_speed(
    read_dir: &Path,
    write_dir: &Path,
    bytes: u64,
) -> Result<ConcurrentSpeed, BenchError> {
    let blocks = blocks_of(bytes);
    let source = Scratch::create(read_dir)?;
    time_writes(&source, blocks, &pattern(), &AtomicU64::new(0))?;
    let sink = Scratch::create_named(write_dir, "w")?;
    let (read_done, written) = (AtomicU64::new(0), AtomicU64::new(0));
    let started = Instant::now();
    // (seconds, bytes read, bytes written) when the first direction ended.
    let first = std::sync::Mutex::new(None);
    let note_first = || {
        let mut f = first.lock().unwrap();
        if f.is_none() {
            *f = Some((
                started.elapsed().as_secs_f64(),
                read_done.load(Ordering::Relaxed),
                written.load(Ordering::Relaxed),
            ));
        }
    };
    let (r, w) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let r = time_reads(&source.path, blocks, &read_done);
            note_first();
            r
        });
        let w = time_writes(&sink, blocks, &pattern(), &written);
        note_first();
        (reader.join().expect("reader panicked"), w)
    });
    let (read_seconds, write_seconds) = (r?, w?);
    let (seconds, read, written) = first.into_inner().unwrap().expect("noted");
    // A direction that had not finished a block when the other ended (a
    // tiny measurement, or a thread that started late) is timed over its
    // own run: a rate of zero would be no measurement at all.
    let total = (blocks * BLOCK) as f64;
    let rate = |bytes: u64, own_seconds: f64| match bytes {
        0 => total / own_seconds,
        _ => bytes as f64 / seconds,
    };
    Ok(ConcurrentSpeed {
        read_bytes_per_second: rate(read, read_seconds),
        write_bytes_per_second: rate(written, write_seconds),
        bytes: (blocks * BLOCK) as u64,
    })
}

fn blocks_of(bytes: u64) -> usize {
    (bytes as usize).div_ceil(BLOCK).max(1)
}

/// An aligned block of non-zero bytes.
fn pattern() -> AlignedBuf {
    let mut buf = AlignedBuf::zeroed(BLOCK);
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (i * 131 % 251) as u8;
    }
    buf
}

/// A scratch file, removed when dropped.
struct Scratch {
    path: PathBuf,
    file: File,
    /// Whether it was opened with O_DIRECT (else buffered I/O with fsync).
    direct: bool,
}

impl Scratch {
    fn create(dir: &Path) -> Result<Scratch, BenchError> {
        Scratch::create_named(dir, "r")
    }

    fn create_named(dir: &Path, name: &str) -> Result<Scratch, BenchError> {
        let path = dir.join(format!(
            ".spacevault-bench-{}-{name}.tmp",
            std::process::id()
        ));
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(true).create(true).truncate(true);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(&path)
        };
        let (file, direct) = match open(true) {
            Ok(f) => (f, true),
            Err(_) => (
                open(false)
                    .map_err(|e| BenchError::io(format!("creating {}", path.display()), e))?,
                false,
            ),
        };
        Ok(Scratch { path, file, direct })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Seconds to write `blocks` blocks and fsync, counting bytes in `done`.
fn time_writes(
    scratch: &Scratch,
    blocks: usize,
    buf: &[u8],
    done: &AtomicU64,
) -> Result<f64, BenchError> {
    let err = |e| BenchError::io("measuring disk write speed", e);
    let started = Instant::now();
    for i in 0..blocks {
        // A stop asked for by a signal ends the measurement too; the
        // scratch file goes with it.
        if spacevault::plot::stop_requested() {
            return Err(spacevault::PlotError::Interrupted.into());
        }
        scratch
            .file
            .write_all_at(buf, (i * BLOCK) as u64)
            .map_err(err)?;
        done.fetch_add(BLOCK as u64, Ordering::Relaxed);
    }
    scratch.file.sync_all().map_err(err)?;
    Ok(started.elapsed().as_secs_f64())
}

/// Reads in flight at once when measuring: as many as phase 2 of an
/// external plot keeps (its two reader threads), since two readers read a
/// file faster than one while another file is written.
const READERS: usize = 2;

/// Seconds to read `blocks` blocks (O_DIRECT where possible) with
/// [`READERS`] threads, each taking the next block nobody has taken (so
/// together they read in order), counting bytes in `done`.
fn time_reads(path: &Path, blocks: usize, done: &AtomicU64) -> Result<f64, BenchError> {
    let (file, _) = open_read_direct(path)?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..READERS)
            .map(|_| {
                s.spawn(|| -> Result<(), BenchError> {
                    let mut buf = pattern();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= blocks {
                            return Ok(());
                        }
                        file.read_exact_at(&mut buf, (i * BLOCK) as u64)
                            .map_err(|e| BenchError::io("measuring disk read speed", e))?;
                        done.fetch_add(BLOCK as u64, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        readers
            .into_iter()
            .try_for_each(|r| r.join().expect("reader panicked"))
    })?;
    Ok(started.elapsed().as_secs_f64())
}

fn open_read_direct(path: &Path) -> Result<(std::fs::File, bool), BenchError> {
    open_read(path, true).map_err(|e| BenchError::io(format!("opening {}", path.display()), e))
}

/// Latency of random 4 KiB reads of a file, in microseconds, with O_DIRECT
/// where the file system allows it (so the page cache does not answer).
pub fn random_read_latency(
    path: &Path,
    reads: usize,
    seed: u64,
) -> Result<(Summary, bool), BenchError> {
    let (file, direct) = open_read_direct(path)?;
    let size = file
        .metadata()
        .map_err(|e| BenchError::io("reading file size", e))?
        .len();
    let pages = (size / 4096).max(1);
    let mut buf = AlignedBuf::zeroed(4096);
    let mut rng = SplitMix(seed);
    let mut samples = Vec::with_capacity(reads);
    for _ in 0..reads {
        let offset = (rng.next_u64() % pages) * 4096;
        let t = Instant::now();
        file.read_at(&mut buf, offset)
            .map_err(|e| BenchError::io("random reads", e))?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    Ok((Summary::of(&samples), direct))
}

/// Drops the kernel's page cache; false when not allowed (not root).
pub fn drop_page_cache() -> bool {
    // SAFETY: sync has no memory effects.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3\n").is_ok()
}

/// This process's I/O counters from /proc/self/io.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct IoCounters {
    /// Bytes this process caused to be read from storage.
    pub read_bytes: u64,
    /// Bytes this process caused to be written to storage.
    pub write_bytes: u64,
    /// Bytes passed to read-like and write-like system calls.
    pub rchar: u64,
    pub wchar: u64,
    /// Written bytes the kernel never had to write (files deleted while
    /// still in the page cache).
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    pub fn now() -> Option<IoCounters> {
        let text = std::fs::read_to_string("/proc/self/io").ok()?;
        let mut c = IoCounters::default();
        for line in text.lines() {
            let (name, value) = line.split_once(':')?;
            let v: u64 = value.trim().parse().ok()?;
            match name {
                "read_bytes" => c.read_bytes = v,
                "write_bytes" => c.write_bytes = v,
                "rchar" => c.rchar = v,
                "wchar" => c.wchar = v,
                "cancelled_write_bytes" => c.cancelled_write_bytes = v,
                _ => {}
            }
        }
        Some(c)
    }

    pub fn since(&self, before: &IoCounters) -> IoCounters {
        IoCounters {
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            rchar: self.rchar.saturating_sub(before.rchar),
            wchar: self.wchar.saturating_sub(before.wchar),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(before.cancelled_write_bytes),
        }
    }
}

/// Peak resident memory of this process (VmHWM), in bytes.
pub fn peak_rss() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Resets the peak resident memory counter, so a later [`peak_rss`]
/// measures only what follows. False where the kernel does not allow it.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A small deterministic generator for benchmark inputs.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for c in b.chunks_mut(8) {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blake3_bound_hashes_the_records_the_plot_hashes() {
        let key = [7u8; 32];
        let first = (1u64 << 33) - 5;
        let messages = record_messages(first, 40);
        let refs: Vec<&[u8; 64]> = messages.iter().collect();
        let mut out = vec![0u8; 32 * 40];
        for platform in [blake3::platform::Platform::portable(), blake3_platform()] {
            out.fill(0);
            hash_records(platform, &key_words(&key), &refs, &mut out);
            for (i, hash) in out.chunks_exact(32).enumerate() {
                let nonce = first + i as u64;
                assert_eq!(hash, spacevault::construction::record_hash(&key, nonce));
            }
        }
    }

    #[test]
    fn the_blake3_rate_counts_hashes() {
        let rate = blake3_rate(1, Duration::from_millis(50));
        assert!(rate > 0.0 && rate.is_finite(), "{rate}");
    }
}
