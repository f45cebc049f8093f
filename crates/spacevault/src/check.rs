//! Checking a whole plot: header, region checksums, placement, order,
//! completeness, and the hashes of a sample of records (all with `full`).

use crate::aligned::{MappedBuf, Pages};
use crate::format::bits::read_slot;
use crate::format::{Header, Region};
use crate::reader::{PlotFile, RegionBuf};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// How thoroughly to check: `CheckOptions::default()`, then set the fields
/// to change.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct CheckOptions {
    /// Rehash every record, not a sample.
    pub full: bool,
    /// Records to rehash when not `full`.
    pub sample: u64,
}

impl CheckOptions {
    /// Rehash every record.
    pub fn full() -> CheckOptions {
        CheckOptions {
            full: true,
            ..Default::default()
        }
    }

    /// Rehash about `records` records, evenly spread.
    pub fn sampled(records: u64) -> CheckOptions {
        CheckOptions {
            full: false,
            sample: records,
        }
    }
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

/// What `check` learnt of the plot's first invariant: every nonce of
/// `[0, 2^k)` stored exactly once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completeness {
    /// A bitmap of every nonce showed each one present exactly once.
    EveryNonceOnce,
    /// The plot is too large for the bitmap (k above 34): the records
    /// number 2^k, but whether each nonce is among them once is unproven.
    CountMatches,
    /// Nonces are missing or stored more than once (damaged regions' records
    /// could not be read, so their nonces count as missing). `missing` and
    /// `duplicates` are known where the bitmap was used.
    Incomplete {
        records: u64,
        missing: Option<u64>,
        duplicates: Option<u64>,
    },
    /// The walk did not get through the plot (an unreadable header, an I/O
    /// error).
    NotChecked,
}

impl Completeness {
    /// Its name in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Completeness::EveryNonceOnce => "every_nonce_once",
            Completeness::CountMatches => "count_matches",
            Completeness::Incomplete { .. } => "incomplete",
            Completeness::NotChecked => "not_checked",
        }
    }
}

/// Everything `check` found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub path: PathBuf,
    pub header: Option<Header>,
    pub problems: Vec<Problem>,
    pub regions: u64,
    /// Every region a problem names, whatever the problem.
    pub damaged_regions: BTreeSet<u64>,
    /// The regions whose checksum failed: their records could not be read
    /// (a subset of `damaged_regions`).
    pub unreadable_regions: BTreeSet<u64>,
    /// Records read (those of unreadable regions are not).
    pub records: u64,
    pub records_rehashed: u64,
    pub completeness: Completeness,
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

    /// Slots `from .. from + n` of the global slot stream into `out`, None
    /// for each slot whose region is damaged: one region lookup for each
    /// region's run of slots rather than a division and a lookup a slot.
    fn slots(
        &mut self,
        from: u64,
        n: u64,
        out: &mut Vec<Option<u64>>,
        problems: &mut Vec<Problem>,
    ) -> Result<(), crate::ReadError> {
        out.clear();
        let layout = self.plot.header().layout;
        let per_region = layout.slots_per_region as u64;
        let (mut s, end) = (from, from + n);
        while s < end {
            let j = (s % per_region) as usize;
            let run = (per_region - j as u64).min(end - s) as usize;
            match self.region(s / per_region, problems)? {
                None => out.extend(std::iter::repeat_n(None, run)),
                Some(region) => {
                    let area = region.slots();
                    out.extend((j..j + run).map(|j| Some(read_slot(area, j, layout.k as u32))));
                }
            }
            s += run as u64;
        }
        Ok(())
    }

    /// Reports the first non-zero slot of a stretch of padding.
    fn check_padding(
        &mut self,
        slots: std::ops::Range<u64>,
        problems: &mut Vec<Problem>,
    ) -> Result<(), crate::ReadError> {
        let header = self.plot.header();
        let per_region = header.layout.slots_per_region as u64;
        // A group that claims to start past the end of the file is reported
        // by the caller; the padding checked is what the file holds.
        let file_end = header.region_count * per_region;
        let mut values = Vec::new();
        let n = slots.end.min(file_end).saturating_sub(slots.start);
        self.slots(slots.start, n, &mut values, problems)?;
        let first_set = values.iter().position(|v| v.is_some_and(|v| v != 0));
        if let Some(s) = first_set.map(|i| slots.start + i as u64) {
            problems.push(region_problem(
                self.plot.header(),
                s / per_region,
                format!("padding slot {s} is not zero"),
            ));
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
        unreadable_regions: BTreeSet::new(),
        records: 0,
        records_rehashed: 0,
        completeness: Completeness::NotChecked,
    };
    let plot = match open_for_walking(path) {
        Ok(p) => p,
        Err(e) => {
            report.problems.push(Problem {
                region: None,
                what: e.reason(),
            });
            return report;
        }
    };
    report.header = Some(plot.header().clone());
    if let Err(e) = check_regions(&plot, options, &mut report) {
        report.problems.push(Problem {
            region: None,
            what: e.reason(),
        });
    }
    report.damaged_regions = report.problems.iter().filter_map(|p| p.region).collect();
    report
}

/// Opens the plot with O_DIRECT where the file system and the layout
/// allow: the walk reads every byte once, and through the page cache a
/// quarter of its time went to the kernel copying, besides filling the cache with a
/// file nobody reads again soon. Regions smaller than 4 KiB may not be
/// aligned as O_DIRECT needs on every disk, so such plots are read buffered.
fn open_for_walking(path: &Path) -> Result<PlotFile, crate::ReadError> {
    let plot = PlotFile::open_with(path, crate::reader::ReadMode::Direct)?;
    if plot.header().layout.region_size < 4096 {
        return PlotFile::open(path);
    }
    Ok(plot)
}

fn check_regions(
    plot: &PlotFile,
    options: CheckOptions,
    report: &mut CheckReport,
) -> Result<(), crate::ReadError> {
    let l = plot.header().layout;
    let n_records = l.record_count();
    let mut window = Window {
        plot,
        buf: None,
        checked_until: 0,
        damaged: BTreeSet::new(),
    };
    let mut problems = Vec::new();
    let use_bitmap = l.k <= MAX_BITMAP_K;
    let mut seen = Bitmap::new(if use_bitmap { n_records } else { 0 }).map_err(|source| {
        crate::ReadError::Io {
            path: plot.path().to_path_buf(),
            cause: std::io::Error::new(
                source.kind(),
                format!("allocating the completeness bitmap: {source}"),
            ),
        }
    })?;
    let step = if options.full {
        1
    } else {
        (n_records / options.sample.max(1)).max(1)
    };
    let mut to_hash: Vec<(u64, u64)> = Vec::with_capacity(HASH_BATCH);
    let seen = std::thread::scope(|scope| {
        // Records are rehashed on other threads, and marked in the bitmap on
        // another, while this one walks the regions.
        let (batches, hashers) = rehash_pool(scope, plot);
        let (to_marker, marked) = std::sync::mpsc::sync_channel::<Vec<u64>>(4);
        let marker = scope.spawn(move || {
            for batch in marked {
                batch.into_iter().for_each(|x| seen.mark(x));
            }
            seen
        });
        let mut marks = MarkQueue {
            batch: Vec::with_capacity(MARK_SEND),
            to_marker,
        };
        let result = walk_groups(
            plot,
            &mut window,
            &mut problems,
            use_bitmap.then_some(&mut marks),
            step,
            &mut to_hash,
            &batches,
            report,
        );
        if !to_hash.is_empty() {
            let _ = batches.send(std::mem::take(&mut to_hash));
        }
        drop(batches);
        marks.send();
        drop(marks);
        for hasher in hashers {
            let (found, rehashed) = hasher.join().expect("rehashing thread panicked");
            problems.extend(found);
            report.records_rehashed += rehashed;
        }
        let seen = marker.join().expect("marking thread panicked");
        result.map(|()| seen)
    });
    match seen {
        Ok(seen) => finish(report, window, problems, seen, use_bitmap),
        // What was found before the error stands.
        Err(e) => {
            report.unreadable_regions = window.damaged;
            report.problems.extend(problems);
            Err(e)
        }
    }
}

/// Records rehashed in one batch.
const HASH_BATCH: usize = 4096;

/// Nonces handed to the marking thread at once. Not a power of two: every
/// plot's last batch is then a partial one, which the tests see sent.
const MARK_SEND: usize = 50_000;

/// Nonces on their way to the completeness bitmap. A thread of its own
/// marks them: a mark misses the cache nearly every time, and marking on
/// the walking thread took as long as the rest of the walk.
struct MarkQueue {
    batch: Vec<u64>,
    to_marker: std::sync::mpsc::SyncSender<Vec<u64>>,
}

impl MarkQueue {
    fn push(&mut self, x: u64) {
        self.batch.push(x);
        if self.batch.len() == MARK_SEND {
            self.send();
        }
    }

    fn send(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(MARK_SEND));
        // The marker only stops when this sender is dropped.
        let _ = self.to_marker.send(batch);
    }
}

type Batches = std::sync::mpsc::SyncSender<Vec<(u64, u64)>>;
type Hasher<'scope> = std::thread::ScopedJoinHandle<'scope, (Vec<Problem>, u64)>;

/// Threads that rehash batches of `(nonce, bucket)` and report each record
/// that does not hash into its bucket; each returns its problems and the
/// records it rehashed.
fn rehash_pool<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    plot: &'scope PlotFile,
) -> (Batches, Vec<Hasher<'scope>>) {
    let threads =
        std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1));
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(u64, u64)>>(threads * 2);
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let hashers = (0..threads)
        .map(|_| {
            let rx = rx.clone();
            scope.spawn(move || {
                let (mut problems, mut rehashed) = (Vec::new(), 0u64);
                let (mut nonces, mut prefixes) = (Vec::new(), Vec::new());
                loop {
                    let batch = match rx.lock().unwrap().recv() {
                        Ok(b) => b,
                        Err(_) => return (problems, rehashed),
                    };
                    nonces.clear();
                    nonces.extend(batch.iter().map(|&(x, _)| x));
                    prefixes.resize(nonces.len(), 0);
                    plot.kernel.prefixes_of(&nonces, &mut prefixes);
                    let header = plot.header();
                    let l = &header.layout;
                    for (&(nonce, bucket), &prefix) in batch.iter().zip(prefixes.iter()) {
                        if l.bucket_of_prefix(prefix) != bucket {
                            problems.push(region_problem(
                                header,
                                l.group_of_bucket(bucket),
                                format!(
                                    "nonce {nonce} is stored in bucket {bucket}, but hashes elsewhere"
                                ),
                            ));
                        }
                    }
                    rehashed += batch.len() as u64;
                }
            })
        })
        .collect();
    (tx, hashers)
}

/// Walks every region in order: placement, counts, padding, order and
/// completeness, queueing every `step`-th record for rehashing.
#[allow(clippy::too_many_arguments)]
fn walk_groups(
    plot: &PlotFile,
    window: &mut Window,
    problems: &mut Vec<Problem>,
    mut seen: Option<&mut MarkQueue>,
    step: u64,
    to_hash: &mut Vec<(u64, u64)>,
    batches: &Batches,
    report: &mut CheckReport,
) -> Result<(), crate::ReadError> {
    let header = plot.header().clone();
    let l = header.layout;
    let slots = l.slots_per_region as u64;
    let n_records = l.record_count();
    let mut decoded: Vec<Option<u64>> = Vec::new();
    // `end` is where the previous group ended; None after a damaged header
    // region, until a readable one tells us again.
    let mut end: Option<u64> = Some(0);
    let mut index = 0u64;
    for g in 0..header.region_count {
        let Some(region) = window.region(g, problems)? else {
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
            window.check_padding(e..start, problems)?;
        }
        // The group's slots, decoded up to the end of the file.
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let file_end = header.region_count * slots;
        let available = total.min(file_end.saturating_sub(start));
        window.slots(start, available, &mut decoded, problems)?;
        let mut s = start;
        let mut values = decoded.iter();
        for (i, &c) in counts.iter().enumerate() {
            let bucket = g * l.buckets_per_group as u64 + i as u64;
            let mut previous: Option<u64> = None;
            for _ in 0..c {
                let slot = s;
                let Some(&value) = values.next() else {
                    problems.push(region_problem(
                        &header,
                        g,
                        "records reach past the last region".into(),
                    ));
                    return Ok(());
                };
                s += 1;
                let Some(nonce) = value else {
                    continue;
                };
                report.records += 1;
                if nonce >= n_records {
                    problems.push(region_problem(
                        &header,
                        slot / slots,
                        format!("nonce {nonce} is out of range"),
                    ));
                    continue;
                }
                if previous.is_some_and(|p| p >= nonce) {
                    problems.push(region_problem(
                        &header,
                        slot / slots,
                        format!("bucket {bucket} is out of order"),
                    ));
                }
                previous = Some(nonce);
                if let Some(seen) = seen.as_deref_mut() {
                    seen.push(nonce);
                }
                if index.is_multiple_of(step) {
                    to_hash.push((nonce, bucket));
                    if to_hash.len() >= HASH_BATCH {
                        let full = std::mem::replace(to_hash, Vec::with_capacity(HASH_BATCH));
                        // The hashers only stop when this sender is dropped.
                        let _ = batches.send(full);
                    }
                }
                index += 1;
            }
        }
        end = Some(s);
    }
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
        window.check_padding(e..header.region_count * slots, problems)?;
    }
    Ok(())
}

fn finish(
    report: &mut CheckReport,
    window: Window,
    mut problems: Vec<Problem>,
    mut seen: Bitmap,
    use_bitmap: bool,
) -> Result<(), crate::ReadError> {
    let header = report.header.as_ref().unwrap();
    let n = header.record_count();
    report.regions = header.region_count;
    report.completeness = if use_bitmap {
        let (present, duplicates) = seen.finish();
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
        match (present == n, duplicates) {
            (true, 0) => Completeness::EveryNonceOnce,
            _ => Completeness::Incomplete {
                records: report.records,
                missing: Some(n - present),
                duplicates: Some(duplicates),
            },
        }
    } else if report.records != n {
        problems.push(Problem {
            region: None,
            what: format!("the plot holds {} records, expected {n}", report.records),
        });
        Completeness::Incomplete {
            records: report.records,
            missing: None,
            duplicates: None,
        }
    } else {
        Completeness::CountMatches
    };
    report.unreadable_regions = window.damaged;
    report.problems.extend(problems);
    Ok(())
}

/// One bit per nonce, marked as records are met. Nonces arrive in random
/// order, so every mark is a cache miss: marks are queued and the queue's
/// words fetched all at once before they are marked, so that the misses
/// overlap instead of following one another.
struct Bitmap {
    /// In huge pages where the system allows, so that random marks miss the
    /// cache but rarely the TLB.
    words: MappedBuf<u64>,
    queued: Vec<u64>,
    duplicates: u64,
}

/// Marks queued before the words are fetched.
const MARK_BATCH: usize = 1024;

impl Bitmap {
    fn new(bits: u64) -> std::io::Result<Bitmap> {
        Ok(Bitmap {
            words: MappedBuf::zeroed((bits as usize).div_ceil(64), Pages::Huge)?,
            queued: Vec::with_capacity(MARK_BATCH),
            duplicates: 0,
        })
    }

    /// Marks nonce `x` (below the bitmap's size).
    fn mark(&mut self, x: u64) {
        self.queued.push(x);
        if self.queued.len() == MARK_BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        for &x in &self.queued {
            if let Some(word) = self.words.get((x / 64) as usize) {
                crate::prefetch::for_read(word);
            }
        }
        for &x in &self.queued {
            let (w, bit) = ((x / 64) as usize, x % 64);
            if self.words[w] >> bit & 1 == 1 {
                self.duplicates += 1;
            }
            self.words[w] |= 1 << bit;
        }
        self.queued.clear();
    }

    /// (nonces present, duplicate records).
    fn finish(&mut self) -> (u64, u64) {
        self.flush();
        let present = self.words.iter().map(|w| w.count_ones() as u64).sum();
        (present, self.duplicates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_counts_nonces_and_duplicates_across_batches() {
        let mut b = Bitmap::new(10_000).unwrap();
        let mut plain = vec![0u32; 10_000];
        for i in 0..5000u64 {
            let x = i * 7919 % 10_000;
            b.mark(x);
            plain[x as usize] += 1;
            if i % 3 == 0 {
                b.mark(x);
                plain[x as usize] += 1;
            }
        }
        let present = plain.iter().filter(|&&c| c > 0).count() as u64;
        let duplicates: u64 = plain.iter().map(|&c| c.saturating_sub(1) as u64).sum();
        assert_eq!(b.finish(), (present, duplicates));
    }
}
