//! Finding damage in a table-chain plot: every section against its
//! checksum, the index and the top level's buckets decoded side by side,
//! and top entries' trees rebuilt through the reader and verified (a
//! sample, or all of them). Sections are read in pieces, so that checking
//! a plot takes little memory whatever its size.

use super::format::INDEX_VALUE_BYTES;
use super::park::{bucket_bytes_bound, decode_bucket};
use super::reader::{HardPlotFile, TopEntry, MAX_BUCKET_ENTRIES, MAX_EMPTY_BUCKETS};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What a check found.
#[derive(Clone, Debug, Default)]
pub struct HardCheckReport {
    pub path: PathBuf,
    pub k: Option<u8>,
    /// Entries stored, over all levels.
    pub entries: u64,
    /// Top entries whose trees were rebuilt and verified.
    pub trees_verified: u64,
    /// Hashes a verified tree takes: `2^levels - 1`.
    pub hashes_per_tree: u64,
    pub problems: Vec<String>,
}

impl HardCheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Top entries a sampling check verifies.
pub const SAMPLE_TREES: u64 = 1000;

/// Bytes read at once.
const PIECE: u64 = 8 << 20;

/// Checks a plot; `full` verifies every top entry's tree instead of a
/// sample of [`SAMPLE_TREES`] spread over the level.
pub fn check(path: &Path, full: bool) -> HardCheckReport {
    let mut report = HardCheckReport {
        path: path.to_path_buf(),
        ..Default::default()
    };
    let file = match HardPlotFile::open(path) {
        Ok(f) => f,
        Err(e) => {
            report.problems.push(e.reason());
            return report;
        }
    };
    let (header, layout) = (file.header().clone(), file.layout().clone());
    report.k = Some(header.k);
    report.entries = header.counts().iter().sum();
    report.hashes_per_tree = (1u64 << header.levels) - 1;
    let raw = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            report.problems.push(e.to_string());
            return report;
        }
    };
    let sections = layout
        .sections
        .iter()
        .zip(&header.stored)
        .enumerate()
        .map(|(i, (s, info))| (format!("level {}", i + 2), s.offset, s.bytes, info.crc))
        .chain([(
            "the index".to_string(),
            layout.index.offset,
            layout.index.bytes,
            header.index_crc,
        )]);
    for (name, offset, bytes, crc) in sections {
        match crc_of(&raw, offset, bytes) {
            Ok(c) if c == crc => {}
            Ok(_) => report
                .problems
                .push(format!("{name} is damaged (checksum mismatch)")),
            Err(e) => report.problems.push(format!("{name} cannot be read: {e}")),
        }
    }
    let mut bad = 0u64;
    if let Err(e) = check_top(&file, &raw, full, &mut report, &mut bad) {
        report
            .problems
            .push(format!("the top level cannot be read: {e}"));
    }
    if bad > 0 {
        report
            .problems
            .push(format!("{bad} top entries' trees do not verify"));
    }
    report
}

fn crc_of(raw: &std::fs::File, offset: u64, bytes: u64) -> std::io::Result<u32> {
    let mut hasher = crc32fast::Hasher::new();
    let mut buf = vec![0u8; PIECE.min(bytes) as usize];
    let mut done = 0u64;
    while done < bytes {
        let n = PIECE.min(bytes - done) as usize;
        raw.read_exact_at(&mut buf[..n], offset + done)?;
        hasher.update(&buf[..n]);
        done += n as u64;
    }
    Ok(hasher.finalize())
}

/// A section's bytes, read a piece at a time.
struct Window<'a> {
    raw: &'a std::fs::File,
    end: u64,
    start: u64,
    buf: Vec<u8>,
}

impl Window<'_> {
    fn get(&mut self, offset: u64, len: usize) -> std::io::Result<&[u8]> {
        let inside =
            offset >= self.start && offset + len as u64 <= self.start + self.buf.len() as u64;
        if !inside {
            let n = PIECE.max(len as u64).min(self.end.saturating_sub(offset));
            self.buf.resize(n as usize, 0);
            self.raw.read_exact_at(&mut self.buf, offset)?;
            self.start = offset;
        }
        let at = (offset - self.start) as usize;
        Ok(&self.buf[at..at + len])
    }
}

/// Walks the index and the top level's buckets side by side: the index
/// must start at (0, 0), end at the level's count and length, and never
/// go back; each bucket must decode to its entries exactly, and no
/// aligned block of [`MAX_EMPTY_BUCKETS`] be empty (a lookup would stop
/// there). The trees of every entry (`full`, or a level no larger than
/// the sample) or of [`SAMPLE_TREES`] spread over the level are rebuilt
/// and verified; those that fail are counted in `bad`.
fn check_top(
    file: &HardPlotFile,
    raw: &std::fs::File,
    full: bool,
    report: &mut HardCheckReport,
    bad: &mut u64,
) -> std::io::Result<()> {
    let layout = file.layout();
    let top = *layout.top();
    let (k, bits) = (layout.k, layout.bucket_bits);
    let every = full || top.count <= SAMPLE_TREES;
    // The sample: entries s · count / SAMPLE_TREES.
    let mut sample = (0..SAMPLE_TREES)
        .map(|s| s * top.count / SAMPLE_TREES)
        .peekable();
    let mut window = Window {
        raw,
        end: top.offset + top.bytes,
        start: 0,
        buf: Vec::new(),
    };
    let mut block_has_entries = false;
    let values = layout.index.count;
    let mut previous: Option<(u64, u64)> = None;
    let mut at = 0u64;
    while at < values {
        let n = (PIECE / INDEX_VALUE_BYTES).min(values - at);
        let mut bytes = vec![0u8; (INDEX_VALUE_BYTES * n) as usize];
        raw.read_exact_at(&mut bytes, layout.index.offset + INDEX_VALUE_BYTES * at)?;
        for (j, value) in bytes.chunks_exact(INDEX_VALUE_BYTES as usize).enumerate() {
            let i = at + j as u64;
            let first = u64::from_le_bytes(value[..8].try_into().unwrap());
            let offset = u64::from_le_bytes(value[8..].try_into().unwrap());
            let Some((start, from)) = previous else {
                if (first, offset) != (0, 0) {
                    report
                        .problems
                        .push(format!("the index starts at entry {first}, byte {offset}"));
                    return Ok(());
                }
                previous = Some((first, offset));
                continue;
            };
            let bucket = i - 1;
            let count = first.wrapping_sub(start);
            if first < start
                || offset < from
                || first > top.count
                || offset > top.bytes
                || count > MAX_BUCKET_ENTRIES
                || offset - from > bucket_bytes_bound(count, top.width, k - bits)
            {
                report.problems.push(format!(
                    "the index puts bucket {bucket} at entries {start}..{first}, bytes {from}..{offset}"
                ));
                return Ok(());
            }
            let bucket_bytes = window.get(top.offset + from, (offset - from) as usize)?;
            let entries = match decode_bucket(bucket_bytes, count, k - bits, top.width) {
                Ok(e) => e,
                Err(what) => {
                    report
                        .problems
                        .push(format!("bucket {bucket} of the top level: {what}"));
                    return Ok(());
                }
            };
            let mut chosen = Vec::new();
            while let Some(s) = sample.next_if(|&s| s < first) {
                chosen.push(s);
            }
            for (index, (low, value)) in (start..).zip(entries) {
                if !every && !chosen.contains(&index) {
                    continue;
                }
                let entry = TopEntry {
                    index,
                    prefix: bucket << (k - bits) | low,
                    value,
                };
                match file.checked_leaves(&entry) {
                    Ok(_) => report.trees_verified += 1,
                    Err(_) => *bad += 1,
                }
            }
            block_has_entries |= count > 0;
            if (bucket + 1).is_multiple_of(MAX_EMPTY_BUCKETS) {
                if !block_has_entries && top.count > 0 {
                    report.problems.push(format!(
                        "buckets {}..={bucket} of the top level are all empty",
                        bucket + 1 - MAX_EMPTY_BUCKETS
                    ));
                    return Ok(());
                }
                block_has_entries = false;
            }
            previous = Some((first, offset));
        }
        at += n;
    }
    if previous != Some((top.count, top.bytes)) {
        report.problems.push(format!(
            "the index ends at {previous:?}, the top level at entry {}, byte {}",
            top.count, top.bytes
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sound_plot_checks_and_a_flipped_bit_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = super::super::HardPlotOptions::new(16, [1; 32], [9; 32]);
        options.threads = 2;
        let path = super::super::plot(&options, dir.path()).unwrap().path;
        let report = check(&path, true);
        assert!(report.is_ok(), "{:?}", report.problems);
        let layout = HardPlotFile::open(&path).unwrap().layout().clone();
        assert_eq!(report.trees_verified, layout.top().count);
        assert!(check(&path, false).trees_verified >= SAMPLE_TREES);
        // One bit in each section in turn.
        let offsets = layout.sections.iter().map(|s| s.offset);
        for (i, offset) in offsets.chain([layout.index.offset]).enumerate() {
            let mut bytes = std::fs::read(&path).unwrap();
            bytes[offset as usize + 100] ^= 0x10;
            let damaged = dir.path().join(format!("damaged-{i}.plot"));
            std::fs::write(&damaged, &bytes).unwrap();
            let report = check(&damaged, false);
            assert!(
                report
                    .problems
                    .iter()
                    .any(|p| p.contains("checksum mismatch")),
                "section {i}: {:?}",
                report.problems
            );
        }
    }
}
