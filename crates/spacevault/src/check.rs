//! Checking a whole plot: header, region checksums, placement, order,
//! completeness, and the hashes of a sample of records (all with `full`).

use crate::format::{Header, Region};
use crate::reader::{PlotFile, RegionBuf};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How thoroughly to check.
#[derive(Clone, Copy, Debug)]
pub struct CheckOptions {
    /// Rehash every record, not a sample.
    pub full: bool,
    /// Records to rehash when not `full`.
    pub sample: u64,
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            full: false,
            sample: 1 << 16,
        }
    }
}

/// One thing found wrong, with the region it is in where there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub region: Option<u64>,
    pub what: String,
}

/// Everything `check` found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub path: PathBuf,
    pub header: Option<Header>,
    pub problems: Vec<Problem>,
    pub regions: u64,
    pub damaged_regions: BTreeSet<u64>,
    pub records: u64,
    pub records_rehashed: u64,
    /// Whether completeness (every nonce exactly once) was proven with a
    /// bitmap, rather than counted.
    pub completeness_proven: bool,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Completeness is proven with a bitmap of 2^k bits up to this k (2 GiB).
const MAX_BITMAP_K: u8 = 34;
/// Regions read per read call.
const WINDOW: u64 = 256;

struct Window<'a> {
    plot: &'a PlotFile,
    buf: Option<RegionBuf>,
    checked_until: u64,
    damaged: BTreeSet<u64>,
}

impl<'a> Window<'a> {
    /// Region r, or None when it is damaged.
    fn region(
        &mut self,
        r: u64,
        problems: &mut Vec<Problem>,
    ) -> Result<Option<Region<'_>>, crate::ReadError> {
        self.load(r, problems)?;
        if self.damaged.contains(&r) {
            return Ok(None);
        }
        Ok(Some(
            self.buf.as_ref().unwrap().region(self.plot.header(), r),
        ))
    }

    /// Slot s of the global slot stream, or None when its region is damaged.
    fn slot(
        &mut self,
        s: u64,
        problems: &mut Vec<Problem>,
    ) -> Result<Option<u64>, crate::ReadError> {
        let slots = self.plot.header().layout.slots_per_region as u64;
        Ok(self
            .region(s / slots, problems)?
            .map(|r| r.slot((s % slots) as usize)))
    }

    /// Reports the first non-zero slot of a stretch of padding.
    fn check_padding(
        &mut self,
        slots: std::ops::Range<u64>,
        problems: &mut Vec<Problem>,
    ) -> Result<(), crate::ReadError> {
        let per_region = self.plot.header().layout.slots_per_region as u64;
        for s in slots {
            if self.slot(s, problems)?.is_some_and(|v| v != 0) {
                problems.push(region_problem(
                    self.plot.header(),
                    s / per_region,
                    format!("padding slot {s} is not zero"),
                ));
                break;
            }
        }
        Ok(())
    }

    fn load(&mut self, r: u64, problems: &mut Vec<Problem>) -> Result<(), crate::ReadError> {
        if !self.buf.as_ref().is_some_and(|b| b.contains(r)) {
            let buf = self.plot.read_regions(r, WINDOW)?;
            let header = self.plot.header();
            for q in r.max(self.checked_until)..buf.first + buf.count {
                if !buf.region(header, q).crc_ok() {
                    self.damaged.insert(q);
                    problems.push(region_problem(header, q, "checksum mismatch".into()));
                }
            }
            self.checked_until = self.checked_until.max(buf.first + buf.count);
            self.buf = Some(buf);
        }
        Ok(())
    }
}

fn region_problem(header: &Header, r: u64, what: String) -> Problem {
    let l = &header.layout;
    let what = if r < l.group_count() {
        let first = r * l.buckets_per_group as u64;
        format!(
            "region {r} (buckets {first}..{}): {what}",
            first + l.buckets_in_group(r) as u64
        )
    } else {
        format!("region {r} (tail): {what}")
    };
    Problem {
        region: Some(r),
        what,
    }
}

/// Checks the plot at `path`. I/O errors and a bad header are problems in
/// the report, not errors: the report always says what is wrong.
pub fn check(path: &Path, options: CheckOptions) -> CheckReport {
    let mut report = CheckReport {
        path: path.to_path_buf(),
        header: None,
        problems: Vec::new(),
        regions: 0,
        damaged_regions: BTreeSet::new(),
        records: 0,
        records_rehashed: 0,
        completeness_proven: false,
    };
    let plot = match PlotFile::open(path) {
        Ok(p) => p,
        Err(e) => {
            report.problems.push(Problem {
                region: None,
                what: e.to_string(),
            });
            return report;
        }
    };
    report.header = Some(plot.header().clone());
    if let Err(e) = check_regions(&plot, options, &mut report) {
        report.problems.push(Problem {
            region: None,
            what: e.to_string(),
        });
    }
    report
}

fn check_regions(
    plot: &PlotFile,
    options: CheckOptions,
    report: &mut CheckReport,
) -> Result<(), crate::ReadError> {
    let header = plot.header().clone();
    let l = header.layout;
    let slots = l.slots_per_region as u64;
    let n_records = l.record_count();
    let mut window = Window {
        plot,
        buf: None,
        checked_until: 0,
        damaged: BTreeSet::new(),
    };
    let mut problems = Vec::new();
    let use_bitmap = l.k <= MAX_BITMAP_K;
    let mut seen = if use_bitmap {
        vec![0u64; (n_records as usize).div_ceil(64)]
    } else {
        Vec::new()
    };
    let mut duplicates = 0u64;
    let step = if options.full {
        1
    } else {
        (n_records / options.sample.max(1)).max(1)
    };
    let mut to_hash: Vec<(u64, u64)> = Vec::new();
    let rehash = |batch: &mut Vec<(u64, u64)>, problems: &mut Vec<Problem>, rehashed: &mut u64| {
        let nonces: Vec<u64> = batch.iter().map(|&(x, _)| x).collect();
        let mut prefixes = vec![0u64; nonces.len()];
        plot.kernel.prefixes_of(&nonces, &mut prefixes);
        for (&(nonce, bucket), &prefix) in batch.iter().zip(prefixes.iter()) {
            if l.bucket_of_prefix(prefix) != bucket {
                let r = l.group_of_bucket(bucket);
                problems.push(region_problem(
                    &header,
                    r,
                    format!("nonce {nonce} is stored in bucket {bucket}, but hashes elsewhere"),
                ));
            }
        }
        *rehashed += batch.len() as u64;
        batch.clear();
    };

    // `end` is where the previous group ended; None after a damaged header
    // region, until a readable one tells us again.
    let mut end: Option<u64> = Some(0);
    let mut index = 0u64;
    for g in 0..header.region_count {
        let Some(region) = window.region(g, &mut problems)? else {
            end = None;
            continue;
        };
        let start = g * slots + region.group_offset() as u64;
        let expected = end.map_or(start, |e| e.max(g * slots));
        if start != expected {
            problems.push(region_problem(
                &header,
                g,
                format!("group starts at slot {start}, expected {expected}"),
            ));
        }
        if g >= l.group_count() {
            if region.counts().iter().any(|&c| c != 0) {
                problems.push(region_problem(
                    &header,
                    g,
                    "a tail region has bucket counts".into(),
                ));
            }
            continue;
        }
        let counts: Vec<u8> = region.counts()[..l.buckets_in_group(g) as usize].to_vec();
        let stray_counts = region.counts()[counts.len()..].iter().any(|&c| c != 0);
        if stray_counts {
            problems.push(region_problem(
                &header,
                g,
                "counts past the last bucket are not zero".into(),
            ));
        }
        // Padding between the previous group and this one must be zero.
        if let Some(e) = end.filter(|&e| start.saturating_sub(e) <= 2 * slots) {
            window.check_padding(e..start, &mut problems)?;
        }
        let mut s = start;
        for (i, &c) in counts.iter().enumerate() {
            let bucket = g * l.buckets_per_group as u64 + i as u64;
            let mut previous: Option<u64> = None;
            for _ in 0..c {
                let r = s / slots;
                if r >= header.region_count {
                    problems.push(region_problem(
                        &header,
                        g,
                        "records reach past the last region".into(),
                    ));
                    return finish(report, window, problems, seen, duplicates, use_bitmap);
                }
                let Some(nonce) = window.slot(s, &mut problems)? else {
                    s += 1;
                    continue;
                };
                s += 1;
                report.records += 1;
                if nonce >= n_records {
                    problems.push(region_problem(
                        &header,
                        r,
                        format!("nonce {nonce} is out of range"),
                    ));
                    continue;
                }
                if previous.is_some_and(|p| p >= nonce) {
                    problems.push(region_problem(
                        &header,
                        r,
                        format!("bucket {bucket} is out of order"),
                    ));
                }
                previous = Some(nonce);
                if use_bitmap {
                    let (w, bit) = ((nonce / 64) as usize, nonce % 64);
                    if seen[w] >> bit & 1 == 1 {
                        duplicates += 1;
                    }
                    seen[w] |= 1 << bit;
                }
                if index.is_multiple_of(step) {
                    to_hash.push((nonce, bucket));
                    if to_hash.len() >= 4096 {
                        rehash(&mut to_hash, &mut problems, &mut report.records_rehashed);
                    }
                }
                index += 1;
            }
        }
        end = Some(s);
    }
    rehash(&mut to_hash, &mut problems, &mut report.records_rehashed);
    if let Some(e) = end {
        if l.region_count(e) != header.region_count {
            problems.push(Problem {
                region: None,
                what: format!(
                    "the plot has {} regions, its records need {}",
                    header.region_count,
                    l.region_count(e)
                ),
            });
        }
        // Slots after the last record must be zero.
        window.check_padding(e..header.region_count * slots, &mut problems)?;
    }
    finish(report, window, problems, seen, duplicates, use_bitmap)
}

fn finish(
    report: &mut CheckReport,
    window: Window,
    mut problems: Vec<Problem>,
    seen: Vec<u64>,
    duplicates: u64,
    use_bitmap: bool,
) -> Result<(), crate::ReadError> {
    let header = report.header.as_ref().unwrap();
    let n = header.record_count();
    report.regions = header.region_count;
    if use_bitmap {
        let present: u64 = seen.iter().map(|w| w.count_ones() as u64).sum();
        if present != n {
            problems.push(Problem {
                region: None,
                what: format!("{} of {n} nonces are missing", n - present),
            });
        }
        if duplicates > 0 {
            problems.push(Problem {
                region: None,
                what: format!("{duplicates} records are duplicates"),
            });
        }
        report.completeness_proven = true;
    } else if report.records != n {
        problems.push(Problem {
            region: None,
            what: format!("the plot holds {} records, expected {n}", report.records),
        });
    }
    report.damaged_regions = window.damaged;
    report.problems.extend(problems);
    Ok(())
}
