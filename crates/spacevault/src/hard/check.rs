//! Finding damage in a table-chain plot: every section against its
//! checksum, the index against the top level, and top entries' trees
//! rebuilt through the reader and verified (a sample, or all of them).
//! Sections are read in pieces, so that checking a plot takes little
//! memory whatever its size.

use super::format::value_at;
use super::reader::HardPlotFile;
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
    if let Err(e) = check_index(&file, &raw, &mut report) {
        report
            .problems
            .push(format!("the index cannot be read: {e}"));
    }
    verify_trees(&file, full, &mut report);
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

/// The index must start each bucket where its first prefix is: both read
/// in pieces, side by side.
fn check_index(
    file: &HardPlotFile,
    raw: &std::fs::File,
    report: &mut HardCheckReport,
) -> std::io::Result<()> {
    let layout = file.layout();
    let top = layout.top();
    let pair_bits = top.width - u32::from(layout.k);
    let bucket_shift = layout.k - layout.index_bits;
    let per_piece = (PIECE * 8 / u64::from(top.width)).max(1);
    // The top level's entries, a piece at a time.
    let (mut piece, mut piece_first, mut piece_shift) = (Vec::new(), 0u64, 0u32);
    let mut bucket_of = |i: u64| -> std::io::Result<u64> {
        if piece.is_empty() || i < piece_first || i >= piece_first + per_piece {
            let end = (i + per_piece).min(top.count);
            let (offset, len, shift) = top.range_span(i, end);
            piece = vec![0u8; len];
            raw.read_exact_at(&mut piece, offset)?;
            (piece_first, piece_shift) = (i, shift);
        }
        let value = value_at(&piece, piece_shift, top.width, i - piece_first);
        Ok(((value >> pair_bits) as u64) >> bucket_shift)
    };
    let index_values = layout.index.count;
    let mut entry = 0u64;
    let mut at = 0u64;
    while at < index_values {
        let n = (PIECE / 8).min(index_values - at);
        let mut bytes = vec![0u8; (8 * n) as usize];
        raw.read_exact_at(&mut bytes, layout.index.offset + 8 * at)?;
        for (j, value) in bytes.chunks_exact(8).enumerate() {
            let bucket = at + j as u64;
            while entry < top.count && bucket_of(entry)? < bucket {
                entry += 1;
            }
            let stored = u64::from_le_bytes(value.try_into().unwrap());
            if stored != entry {
                report.problems.push(format!(
                    "the index puts bucket {bucket} at entry {stored}, the top level at {entry}"
                ));
                return Ok(());
            }
        }
        at += n;
    }
    Ok(())
}

/// Rebuilds top entries' trees through the reader and verifies each,
/// prefix included.
fn verify_trees(file: &HardPlotFile, full: bool, report: &mut HardCheckReport) {
    let top = file.layout().top();
    let step = if full {
        1
    } else {
        (top.count / SAMPLE_TREES).max(1)
    };
    let mut bad = 0u64;
    // Every entry a piece at a time, or the sample's entries one by one.
    let piece = if step == 1 { 4096 } else { 1 };
    let mut i = 0;
    while i < top.count {
        let end = (i + piece).min(top.count);
        let entries = match file.top_range(i, end) {
            Ok(e) => e,
            Err(e) => {
                report.problems.push(e.reason());
                return;
            }
        };
        for entry in &entries {
            match file.checked_leaves(entry) {
                Ok(_) => report.trees_verified += 1,
                Err(_) => bad += 1,
            }
        }
        i = if step == 1 { end } else { i + step };
    }
    if bad > 0 {
        report
            .problems
            .push(format!("{bad} top entries' trees do not verify"));
    }
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
