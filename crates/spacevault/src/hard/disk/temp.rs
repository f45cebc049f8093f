//! The disk plotter's temp files: records of fixed-width little-endian
//! fields, appended through a buffer and read back in pieces, and
//! *spills* that scatter records into files by a key's high bits so that
//! each file sorts in memory. Every file is created locked (a cleanup by
//! another plotter leaves it alone) and removed when dropped; what all of
//! them hold at once is counted, for the summary's temp peak.

use crate::plot::files::{create_locked, unique_temp_name};
use crate::plot::PlotError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes a temp file buffers before writing.
pub(super) const BUFFER: usize = 128 << 10;

/// Bytes the temp files hold now, at most at once, and in all written.
#[derive(Debug, Default)]
pub(super) struct Usage {
    live: AtomicU64,
    peak: AtomicU64,
    written: AtomicU64,
}

impl Usage {
    fn add(&self, bytes: u64) {
        let now = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Space taken without writing (a file made longer, sparse).
    fn reserve(&self, bytes: u64) {
        let now = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn wrote(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }

    fn remove(&self, bytes: u64) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// Where a plot's temp files go: their directory, the name they begin
/// with (the plot's, which [`crate::plot::files`] knows as a temp file of
/// spacevault's, so a cleanup finds one a killed plotter left), and
/// their shared count.
pub(super) struct TempPlace {
    pub dir: PathBuf,
    pub prefix: String,
    pub usage: Arc<Usage>,
}

/// The open files a plot may take: the soft limit, raised to the hard
/// one where the system allows (a spill holds up to 512 open at once, and
/// two spills may be open together).
pub(super) fn open_files_allowed() -> u64 {
    // SAFETY: getrlimit and setrlimit read and write the struct passed.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return 1024;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
        limit.rlim_cur
    }
}

/// A stop requested (Ctrl-C) ends the plot at the next piece of a temp
/// file read or written, its files removed.
fn check_stop() -> Result<(), PlotError> {
    if crate::plot::stop_requested() {
        return Err(PlotError::Interrupted);
    }
    Ok(())
}

/// Appends the low `bytes` bytes of `v`, little-endian.
#[inline(always)]
pub(super) fn put(out: &mut Vec<u8>, v: u128, bytes: usize) {
    debug_assert!(bytes == 16 || v >> (8 * bytes) == 0, "{v} in {bytes} bytes");
    out.extend_from_slice(&v.to_le_bytes()[..bytes]);
}

/// The little-endian number in `b` (at most 16 bytes).
#[inline(always)]
pub(super) fn get(b: &[u8]) -> u128 {
    let mut full = [0u8; 16];
    full[..b.len()].copy_from_slice(b);
    u128::from_le_bytes(full)
}

#[inline(always)]
pub(super) fn get64(b: &[u8]) -> u64 {
    get(b) as u64
}

pub(super) fn io_error(what: &str, path: &Path, e: std::io::Error) -> PlotError {
    PlotError::io(format!("{what} {}", path.display()), e)
}

/// One temp file of records, written by appending or at places.
pub(super) struct TempFile {
    path: PathBuf,
    file: File,
    len: u64,
    /// Bytes from the start already read for the last time and given
    /// back to the file system.
    released: AtomicU64,
    buffer: Vec<u8>,
    usage: Arc<Usage>,
}

impl TempFile {
    pub fn create(place: &TempPlace, stem: &str) -> Result<TempFile, PlotError> {
        let path = place.dir.join(unique_temp_name(
            &format!("{}-{stem}", place.prefix),
            "part",
        ));
        let file = create_locked(&path, false).map_err(|e| io_error("creating", &path, e))?;
        Ok(TempFile {
            path,
            file,
            len: 0,
            released: AtomicU64::new(0),
            buffer: Vec::new(),
            usage: place.usage.clone(),
        })
    }

    /// Appends `bytes` after everything appended before: through the
    /// buffer when small, straight to the file when a buffer's worth.
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), PlotError> {
        if bytes.len() >= BUFFER {
            self.write_buffer()?;
            return self.write_end(bytes);
        }
        // Never past BUFFER bytes: a buffer that grew would stay grown.
        if self.buffer.len() + bytes.len() > BUFFER {
            self.write_buffer()?;
        }
        if self.buffer.capacity() == 0 {
            self.buffer.reserve_exact(BUFFER);
        }
        self.buffer.extend_from_slice(bytes);
        Ok(())
    }

    /// Writes what the buffer holds, keeping its memory for what follows
    /// (a buffer allocated anew is pages the kernel clears again).
    fn write_buffer(&mut self) -> Result<(), PlotError> {
        let buffer = std::mem::take(&mut self.buffer);
        let written = self.write_end(&buffer);
        self.buffer = buffer;
        self.buffer.clear();
        written
    }

    fn write_end(&mut self, bytes: &[u8]) -> Result<(), PlotError> {
        check_stop()?;
        if !bytes.is_empty() {
            self.file
                .write_all_at(bytes, self.len)
                .map_err(|e| io_error("writing", &self.path, e))?;
            self.len += bytes.len() as u64;
            self.usage.add(bytes.len() as u64);
        }
        Ok(())
    }

    /// Bytes appended, whether written yet or still in the buffer (or
    /// reserved by [`TempFile::extend_to`]).
    pub fn size(&self) -> u64 {
        self.len + self.buffer.len() as u64
    }

    /// Writes what the buffer holds and gives its memory back: the last
    /// write before the file is read.
    pub fn flush(&mut self) -> Result<(), PlotError> {
        self.write_buffer()?;
        self.buffer = Vec::new();
        Ok(())
    }

    /// Makes the file `len` bytes long (zeros past what was written), for
    /// writing at places.
    pub fn extend_to(&mut self, len: u64) -> Result<(), PlotError> {
        self.flush()?;
        if len > self.len {
            self.file
                .set_len(len)
                .map_err(|e| io_error("sizing", &self.path, e))?;
            self.usage.reserve(len - self.len);
            self.len = len;
        }
        Ok(())
    }

    /// Writes `bytes` at `offset`, inside the file's length.
    pub fn write_at(&self, bytes: &[u8], offset: u64) -> Result<(), PlotError> {
        assert!(offset + bytes.len() as u64 <= self.len && self.buffer.is_empty());
        check_stop()?;
        self.file
            .write_all_at(bytes, offset)
            .map_err(|e| io_error("writing", &self.path, e))?;
        self.usage.wrote(bytes.len() as u64);
        Ok(())
    }

    /// The file's bytes from `offset`, at most `len` of them.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, PlotError> {
        assert!(self.buffer.is_empty(), "read after flush");
        check_stop()?;
        let len = len.min(self.len.saturating_sub(offset));
        let mut bytes = vec![0u8; len as usize];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(|e| io_error("reading", &self.path, e))?;
        Ok(bytes)
    }

    /// The whole file, read once; the file is removed, its space given
    /// back before the caller works on what it held.
    pub fn take(self) -> Result<Vec<u8>, PlotError> {
        self.read(0, self.len)
    }

    /// The file's records of `record` bytes, decoded, the file removed.
    pub fn take_records<T>(
        self,
        record: usize,
        decode: impl Fn(&[u8]) -> T,
    ) -> Result<Vec<T>, PlotError> {
        Ok(self.take()?.chunks_exact(record).map(decode).collect())
    }

    /// Gives the file's blocks before `offset` back to the file system
    /// (a hole punched; what was there reads as zeros): a file read once
    /// in order then takes no more space than what is left of it. Where
    /// the file system cannot punch holes, the space stays taken until
    /// the file is dropped.
    pub fn release_before(&self, offset: u64) {
        const BLOCK: u64 = 4096;
        let end = offset.min(self.len) / BLOCK * BLOCK;
        let start = self.released.load(Ordering::Relaxed);
        if end <= start {
            return;
        }
        // SAFETY: fallocate on a valid descriptor with integer arguments.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                start as libc::off_t,
                (end - start) as libc::off_t,
            )
        };
        if rc == 0 {
            self.usage.remove(end - start);
            self.released.store(end, Ordering::Relaxed);
        }
    }

    /// Reads the file `piece` bytes at a time (`piece` a multiple of
    /// the record size keeps records whole).
    pub fn pieces(&self, piece: u64) -> impl Iterator<Item = Result<Vec<u8>, PlotError>> + '_ {
        let piece = piece.max(1);
        (0..self.len.div_ceil(piece)).map(move |i| self.read(i * piece, piece))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        self.usage
            .remove(self.len - self.released.load(Ordering::Relaxed));
    }
}

/// A spill's file and the keys it holds, `[lo, hi)`.
pub(super) type Piece = (TempFile, (u64, u64));

fn file_of(key: u64, shift: u32, files: usize) -> usize {
    ((key >> shift) as usize).min(files - 1)
}

/// Records gathered for a spill's files by one thread, in memory.
#[derive(Clone)]
pub(super) struct Gathered {
    parts: Vec<Vec<u8>>,
    shift: u32,
}

impl Gathered {
    /// Where a record of `key` goes: the caller appends its fields (in
    /// place, so that fields of constant widths are copied as such).
    pub fn part(&mut self, key: u64) -> &mut Vec<u8> {
        let b = file_of(key, self.shift, self.parts.len());
        &mut self.parts[b]
    }
}

/// Records scattered into `2^log2` files by the high bits of a key of
/// `key_bits` bits: file `b` holds the keys of `[b, b + 1) · 2^shift`,
/// so the files in order hold the keys in order.
pub(super) struct Spill {
    files: Vec<TempFile>,
    shift: u32,
}

impl Spill {
    pub fn create(
        place: &TempPlace,
        stem: &str,
        log2: u32,
        key_bits: u32,
    ) -> Result<Spill, PlotError> {
        let files = (0..1usize << log2)
            .map(|b| TempFile::create(place, &format!("{stem}{b}")))
            .collect::<Result<_, _>>()?;
        Ok(Spill {
            files,
            shift: key_bits.saturating_sub(log2),
        })
    }

    /// The keys file `b` holds: `[b, b + 1) · 2^shift`.
    pub fn key_range(&self, b: usize) -> (u64, u64) {
        let lo = (b as u64) << self.shift;
        (lo, lo + (1u64 << self.shift))
    }

    /// Empty buffers, one a file, for a thread to gather records into
    /// (the order of records within a file does not matter: each file is
    /// sorted by a total order when read back).
    pub fn gatherer(&self) -> Gathered {
        Gathered {
            parts: vec![Vec::new(); self.files.len()],
            shift: self.shift,
        }
    }

    /// Appends what a thread gathered.
    pub fn absorb(&mut self, gathered: Gathered) -> Result<(), PlotError> {
        for (file, part) in self.files.iter_mut().zip(gathered.parts) {
            file.append(&part)?;
        }
        Ok(())
    }

    /// The files, written out, in key order, each with its key range.
    pub fn finish(mut self) -> Result<Vec<Piece>, PlotError> {
        for f in &mut self.files {
            f.flush()?;
        }
        let ranges: Vec<_> = (0..self.files.len()).map(|b| self.key_range(b)).collect();
        Ok(self.files.into_iter().zip(ranges).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_at_their_widths() {
        let mut out = Vec::new();
        put(&mut out, 0x12_3456_789A, 5);
        put(&mut out, 7, 2);
        put(&mut out, u128::MAX, 16);
        assert_eq!(out.len(), 23);
        assert_eq!(get64(&out[..5]), 0x12_3456_789A);
        assert_eq!(get(&out[5..7]), 7);
        assert_eq!(get(&out[7..]), u128::MAX);
    }

    #[test]
    fn a_spill_keeps_keys_in_file_order_and_its_files_go_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let usage = Arc::new(Usage::default());
        let place = TempPlace {
            dir: dir.path().to_path_buf(),
            prefix: "spacevault-k16-test".into(),
            usage: usage.clone(),
        };
        let mut spill = Spill::create(&place, "t", 2, 10).unwrap();
        let keys: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 1024).collect();
        // Gathered by two threads apart, absorbed one after the other.
        let mut gathered = [spill.gatherer(), spill.gatherer()];
        for (i, &key) in keys.iter().enumerate() {
            let mut r = Vec::new();
            put(&mut r, u128::from(key), 2);
            gathered[i % 2].part(key).extend_from_slice(&r);
        }
        for g in gathered {
            spill.absorb(g).unwrap();
        }
        let files = spill.finish().unwrap();
        assert_eq!(files.len(), 4);
        assert_eq!(usage.peak(), 10_000);
        let mut seen = 0;
        for (file, (lo, hi)) in &files {
            let bytes = file.read(0, u64::MAX).unwrap();
            for r in bytes.chunks(2) {
                let key = get64(r);
                assert!((*lo..*hi).contains(&key), "{key} outside {lo}..{hi}");
                seen += 1;
            }
        }
        assert_eq!(seen, keys.len());
        let temps = crate::plot::files::temps_in(dir.path());
        assert_eq!(temps.len(), 4, "seen as spacevault's temp files");
        assert!(temps.iter().all(|t| t.2), "and as live");
        drop(files);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
