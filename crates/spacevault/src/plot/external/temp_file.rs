//! The temp file: each round's keys appended by partition and thread
//! (segments), and read back a partition at a time.

use crate::aligned::AlignedBuf;
use crate::plot::closer::Closer;
use crate::plot::files::write_all_vectored_at;
use crate::plot::keys::RangeKeys;
use crate::plot::PlotError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Bytes of temp file a record takes.
pub(super) const TEMP_RECORD: u64 = 4;
/// Segments are padded to whole pages for O_DIRECT.
pub(super) const PAGE: u64 = 4096;
/// Bytes of temp file an epoch mark takes.
pub(super) const MARK: u64 = 4;

/// One round's buffers: a scatter per thread.
pub(super) type RoundBuffers = Vec<RangeKeys>;

/// One round's keys of one partition from one thread: the thread's array,
/// page-padded, then a tail of its overflowed keys and the key count in each
/// epoch from `first_epoch` on, page-padded.
#[derive(Clone, Copy)]
pub(super) struct Segment {
    pub(super) offset: u64,
    /// Keys in the array, in the overflow, and epochs marked.
    pub(super) array: u32,
    pub(super) extra: u32,
    pub(super) epochs: u32,
    pub(super) first_epoch: u64,
}

impl Segment {
    pub(super) fn array_bytes(&self) -> u64 {
        (self.array as u64 * TEMP_RECORD).div_ceil(PAGE) * PAGE
    }

    pub(super) fn tail_bytes(&self) -> u64 {
        (self.extra as u64 * TEMP_RECORD + self.epochs as u64 * MARK).div_ceil(PAGE) * PAGE
    }

    /// The segment's length in the temp file.
    pub(super) fn bytes(&self) -> u64 {
        self.array_bytes() + self.tail_bytes()
    }

    /// Its array, overflow and epoch counts, from its bytes.
    pub(super) fn parts<'b>(&self, bytes: &'b [u8]) -> (&'b [u32], &'b [u32], &'b [u32]) {
        let words = as_words(&bytes[..self.bytes() as usize]);
        let array = &words[..self.array as usize];
        let tail = &words[(self.array_bytes() / TEMP_RECORD) as usize..];
        let (extra, rest) = tail.split_at(self.extra as usize);
        (array, extra, &rest[..self.epochs as usize])
    }
}

/// Page-aligned bytes as native-endian u32 words.
pub(super) fn as_words(bytes: &[u8]) -> &[u32] {
    // SAFETY: every bit pattern is a valid u32; align_to only yields
    // correctly aligned words, and the checks below make sure none is lost.
    let (head, words, tail) = unsafe { bytes.align_to::<u32>() };
    assert!(
        head.is_empty() && tail.is_empty(),
        "segments are page-aligned"
    );
    words
}

/// The temp file; unlinked when dropped, and closed by `closer` (the close
/// frees its blocks, which can take seconds).
pub(super) struct TempFile<'a> {
    pub(super) path: PathBuf,
    pub(super) file: Option<File>,
    pub(super) closer: &'a Closer,
}

impl TempFile<'_> {
    pub(super) fn file(&self) -> &File {
        self.file.as_ref().expect("open until dropped")
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        if let Some(file) = self.file.take() {
            self.closer.close_later(file);
        }
    }
}

/// Each partition's segments in one round.
pub(super) type RoundSegments = Vec<Vec<Segment>>;

/// Reads partition p's segments, one after another, into `buf`. Segments
/// that follow each other in the file (a round's threads) are read at once.
pub(super) fn read_partition(
    file: &File,
    segments: &[RoundSegments],
    p: u64,
    buf: &mut AlignedBuf,
) -> Result<(), PlotError> {
    let segs = || segments.iter().flat_map(|round| &round[p as usize]);
    let total: u64 = segs().map(Segment::bytes).sum();
    if (buf.len() as u64) < total {
        *buf = AlignedBuf::zeroed(total as usize);
    }
    // (file offset, length) of each run of adjacent segments.
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for seg in segs() {
        match runs.last_mut() {
            Some((offset, len)) if *offset + *len == seg.offset => *len += seg.bytes(),
            _ => runs.push((seg.offset, seg.bytes())),
        }
    }
    let mut at = 0usize;
    for (offset, len) in runs {
        file.read_exact_at(&mut buf[at..at + len as usize], offset)
            .map_err(|e| match e.kind() {
                // Only another process could have cut the file short.
                std::io::ErrorKind::UnexpectedEof => PlotError::io(
                    "reading the temp file",
                    std::io::Error::other(format!(
                        "it ends before byte {}, which this plot wrote: another process truncated it",
                        offset + len
                    )),
                ),
                _ => PlotError::io("reading the temp file", e),
            })?;
        at += len as usize;
    }
    Ok(())
}

/// Tails staged before they are written, with the arrays between them, in
/// one vectored write.
pub(super) const STAGING_BYTES: usize = 4 << 20;

/// Appends one round to the temp file: for each partition, each thread's
/// array (page-padded, written in place) and tail. Returns the segments by
/// partition.
pub(super) fn write_round(
    file: &File,
    buffers: &RoundBuffers,
    parts: usize,
    offset: &mut u64,
    staging: &mut AlignedBuf,
) -> Result<Vec<Vec<Segment>>, PlotError> {
    let mut segments = Vec::with_capacity(parts);
    let err = |e| PlotError::io("writing the temp file", e);
    // Segments staged (partition, thread, segment), whose bytes start at
    // `batch_start`.
    let mut batch: Vec<(u64, usize, Segment)> = Vec::new();
    let mut batch_start = *offset;
    let mut staged = 0usize;
    for p in 0..parts as u64 {
        let mut segs = Vec::with_capacity(buffers.len());
        for (t, round) in buffers.iter().enumerate() {
            let (_, count) = round.scatter.page_padded_bytes(p);
            let extra: Vec<u32> = round.scatter.records(p).1.collect();
            if count == 0 && extra.is_empty() {
                continue;
            }
            let (first_epoch, counts) = round.marks.counts(p);
            let tail: Vec<u32> = extra.iter().copied().chain(counts).collect();
            let seg = Segment {
                offset: *offset,
                array: count as u32,
                extra: extra.len() as u32,
                epochs: (tail.len() - extra.len()) as u32,
                first_epoch,
            };
            let tail_bytes = seg.tail_bytes() as usize;
            if staged + tail_bytes > staging.len() {
                flush_batch(file, buffers, &mut batch, batch_start, staging).map_err(err)?;
                batch_start = *offset;
                staged = 0;
                if tail_bytes > staging.len() {
                    *staging = AlignedBuf::zeroed(tail_bytes.max(STAGING_BYTES));
                }
            }
            let dst = &mut staging[staged..staged + tail_bytes];
            dst.fill(0);
            for (d, v) in dst.chunks_exact_mut(4).zip(&tail) {
                d.copy_from_slice(&v.to_ne_bytes());
            }
            staged += tail_bytes;
            *offset += seg.bytes();
            batch.push((p, t, seg));
            segs.push(seg);
        }
        segments.push(segs);
    }
    flush_batch(file, buffers, &mut batch, batch_start, staging).map_err(err)?;
    Ok(segments)
}

/// Writes the batch's segments, each its array straight from the scatter
/// and its tail from `staging`, in as few system calls as possible.
pub(super) fn flush_batch(
    file: &File,
    buffers: &RoundBuffers,
    batch: &mut Vec<(u64, usize, Segment)>,
    start: u64,
    staging: &AlignedBuf,
) -> std::io::Result<()> {
    let mut slices: Vec<&[u8]> = Vec::with_capacity(batch.len() * 2);
    let mut staged = 0usize;
    for (p, t, seg) in batch.iter() {
        let (array, _) = buffers[*t].scatter.page_padded_bytes(*p);
        debug_assert_eq!(array.len() as u64, seg.array_bytes());
        slices.push(array);
        let tail = seg.tail_bytes() as usize;
        slices.push(&staging[staged..staged + tail]);
        staged += tail;
    }
    let result = write_all_vectored_at(file, &slices, start);
    batch.clear();
    result
}
