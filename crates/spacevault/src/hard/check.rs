//! Finding damage in a table-chain plot: every section against its
//! checksum, the index against the top level, and top entries' trees
//! rebuilt and verified (a sample, or all of them).

use super::construction::{line_point_pair, top_prefix};
use super::format::{value_at, Layout};
use super::reader::HardPlotFile;
use super::verify::top_of;
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
    pub problems: Vec<String>,
}

impl HardCheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Top entries a sampling check verifies.
pub const SAMPLE_TREES: u64 = 1000;

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
    let mut levels = Vec::new();
    for (i, section) in layout.sections.iter().enumerate() {
        let level = i + 2;
        match read_section(&file, section.offset, section.bytes) {
            Ok(bytes) if crc32fast::hash(&bytes) == header.stored[i].crc => levels.push(bytes),
            Ok(bytes) => {
                report
                    .problems
                    .push(format!("level {level} is damaged (checksum mismatch)"));
                levels.push(bytes);
            }
            Err(e) => {
                report
                    .problems
                    .push(format!("level {level} cannot be read: {e}"));
                return report;
            }
        }
    }
    match read_section(&file, layout.index.offset, layout.index.bytes) {
        Ok(index) if crc32fast::hash(&index) != header.index_crc => {
            report
                .problems
                .push("the index is damaged (checksum mismatch)".into());
        }
        Ok(index) => check_index(&index, &levels, &layout, &mut report),
        Err(e) => report
            .problems
            .push(format!("the index cannot be read: {e}")),
    }
    verify_trees(&file, &levels, full, &mut report);
    report
}

fn read_section(file: &HardPlotFile, offset: u64, bytes: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; bytes as usize];
    std::fs::File::open(file.path())?.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}

/// The index must start each bucket where its first prefix is.
fn check_index(index: &[u8], levels: &[Vec<u8>], layout: &Layout, report: &mut HardCheckReport) {
    let top = layout.top();
    let shift = top.width - u32::from(layout.k);
    let bucket_shift = layout.k - layout.index_bits;
    let at = |b: usize| u64::from_le_bytes(index[8 * b..8 * b + 8].try_into().unwrap());
    let mut entry = 0u64;
    for bucket in 0..(1usize << layout.index_bits) + 1 {
        while entry < top.count
            && (value_at(levels.last().unwrap(), 0, top.width, entry) >> shift) as u64
                >> bucket_shift
                < bucket as u64
        {
            entry += 1;
        }
        if at(bucket) != entry {
            report.problems.push(format!(
                "the index puts bucket {bucket} at entry {}, the top level at {entry}",
                at(bucket)
            ));
            return;
        }
    }
}

/// Rebuilds top entries' trees from the sections in memory and verifies
/// each, prefix included.
fn verify_trees(file: &HardPlotFile, levels: &[Vec<u8>], full: bool, report: &mut HardCheckReport) {
    let (header, layout) = (file.header(), file.layout());
    let top = layout.top();
    let pair_bits = top.width - u32::from(header.k);
    let step = if full {
        1
    } else {
        (top.count / SAMPLE_TREES).max(1)
    };
    let children = |level: usize, v: u128| -> Option<[u64; 2]> {
        let (a, b) = line_point_pair(v >> 1);
        let bound = if level == 2 {
            1u64 << header.k
        } else {
            layout.sections[level - 3].count
        };
        (a < bound).then_some(if v & 1 == 1 { [a, b] } else { [b, a] })
    };
    let mut bad = 0u64;
    for i in (0..top.count).step_by(step as usize) {
        let raw = value_at(levels.last().unwrap(), 0, top.width, i);
        let prefix = (raw >> pair_bits) as u64;
        let top_level = usize::from(header.levels);
        let Some(mut nodes) = children(top_level, raw & ((1 << pair_bits) - 1)).map(|c| c.to_vec())
        else {
            bad += 1;
            continue;
        };
        let mut ok = true;
        for level in (2..top_level).rev() {
            let section = &layout.sections[level - 2];
            let mut next = Vec::with_capacity(2 * nodes.len());
            for &n in &nodes {
                match (n < section.count)
                    .then(|| children(level, value_at(&levels[level - 2], 0, section.width, n)))
                    .flatten()
                {
                    Some(c) => next.extend(c),
                    None => ok = false,
                }
            }
            if !ok {
                break;
            }
            nodes = next;
        }
        ok = ok
            && top_of(&header.plot_id, header.k, header.levels, &nodes)
                .is_ok_and(|t| top_prefix(t.y) == prefix);
        if ok {
            report.trees_verified += 1;
        } else {
            bad += 1;
        }
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
        assert_eq!(
            report.trees_verified,
            HardPlotFile::open(&path).unwrap().layout().top().count
        );
        let layout = HardPlotFile::open(&path).unwrap().layout().clone();
        // One bit in each section in turn.
        for (i, offset) in layout
            .sections
            .iter()
            .map(|s| s.offset)
            .chain([layout.index.offset])
            .enumerate()
        {
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
