//! The writing end of the plotter: merges each partition's spill into the
//! next, seals the regions the merge changed and writes regions in file
//! order. The workers seal every other region ([`seal_settled`]): the
//! writer's thread sets the pace of a plot's last phase, and checksums
//! were a tenth of its time.
//!
//! Partitions smaller than [`STAGING_BYTES`] are gathered into staging
//! buffers in huge pages and written 4 MiB at a time, by a thread of their
//! own ([`WriterBehind`]): a partition of half a MiB written alone from
//! base pages goes at about half the speed of 4 to 8 MiB from huge pages,
//! for several times the system time (see `AlignedBuf::zeroed`), and the
//! copy into the staging buffer costs less than that.

use super::behind::{Done, WriterBehind};
use super::partition::Partitioning;
use crate::aligned::AlignedBuf;
use crate::format::seal;
use crate::format::{Layout, HEADER_SIZE};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

/// Bytes written at once: partitions are staged until this many are.
const STAGING_BYTES: usize = 4 << 20;

/// Writes handed to the writer and not yet done, at most: with one, the
/// writer stopped the workers whenever a buffer filled before the last
/// write was done.
const IN_FLIGHT: usize = 2;

/// Whose buffer a write is from, so that it goes back where it belongs.
enum Owner {
    Staging,
    Pool,
}

pub(crate) struct RegionSink {
    writer: WriterBehind<Owner>,
    layout: Layout,
    /// Regions of the previous partition that reach into the next one.
    carry: Option<(u64, Vec<u8>)>,
    /// Partitions that arrived before their turn.
    waiting: BTreeMap<u64, Packed>,
    next_partition: u64,
    parting: Partitioning,
    /// Settled bytes not yet handed to the writer, which belong at
    /// `staged_at` in the file.
    staging: Option<AlignedBuf>,
    /// Staging buffers back from the writer.
    spare: Vec<AlignedBuf>,
    /// [`STAGING_BYTES`], less in tests.
    staging_bytes: usize,
    staged: usize,
    staged_at: u64,
    /// The first write that failed.
    failed: Option<io::Error>,
    pub regions_written: u64,
    pub bytes_written: u64,
    /// Time spent in the plot file's write calls: set beside the phase's
    /// length, it says whether the disk or the workers set the pace.
    pub write_time: Duration,
}

impl RegionSink {
    #[cfg(test)]
    pub fn new(file: &File, parting: &Partitioning) -> io::Result<Self> {
        RegionSink::with_staging(file, parting, Vec::new())
    }

    /// A sink that stages into `staging` (buffers kept from an earlier
    /// plot) before it allocates any.
    pub fn with_staging(
        file: &File,
        parting: &Partitioning,
        staging: Vec<AlignedBuf>,
    ) -> io::Result<Self> {
        Ok(RegionSink {
            writer: WriterBehind::new(file)?,
            layout: parting.layout,
            carry: None,
            waiting: BTreeMap::new(),
            next_partition: 0,
            parting: parting.clone(),
            staging: None,
            spare: staging,
            staging_bytes: STAGING_BYTES,
            staged: 0,
            staged_at: 0,
            failed: None,
            regions_written: 0,
            bytes_written: 0,
            write_time: Duration::ZERO,
        })
    }

    /// Takes a packed partition in any order; writes (or stages) whatever
    /// is now in order. Buffers go back to `pool` once written or staged;
    /// [`finish`](Self::finish) writes what is left staged.
    pub fn accept(&mut self, packed: Packed, pool: &BufPool) -> io::Result<()> {
        self.waiting.insert(packed.index, packed);
        while let Some(packed) = self.waiting.remove(&self.next_partition) {
            let offset = HEADER_SIZE as u64 + packed.first_region * self.layout.region_size as u64;
            let (buf, len) = self.settle(packed);
            let follows = self.staged == 0 || self.staged_at + self.staged as u64 == offset;
            if !follows || self.staged + len > self.staging_bytes {
                self.hand_out_staged(pool);
            }
            if len >= self.staging_bytes {
                // Long enough to go out at full speed on its own.
                self.hand_out(buf, len, offset, Owner::Pool, pool);
            } else {
                if len > 0 {
                    if self.staged == 0 {
                        self.staged_at = offset;
                    }
                    let at = self.staged;
                    self.staging_buffer()[at..at + len].copy_from_slice(&buf[..len]);
                    self.staged += len;
                }
                pool.give(buf);
            }
            self.next_partition += 1;
        }
        while let Some(done) = self.writer.try_done() {
            self.take_back(done, pool);
        }
        self.failed.take().map_or(Ok(()), Err)
    }

    /// Writes what is staged and waits for every write.
    pub fn finish(&mut self, pool: &BufPool) -> io::Result<()> {
        self.hand_out_staged(pool);
        while let Some(done) = self.writer.wait() {
            self.take_back(done, pool);
        }
        self.failed.take().map_or(Ok(()), Err)
    }

    /// The staging buffers, for the next plot, once [`finish`](Self::finish)
    /// has waited for every write.
    pub fn into_staging(self) -> Vec<AlignedBuf> {
        let RegionSink { spare, staging, .. } = self;
        spare.into_iter().chain(staging).collect()
    }

    /// The buffer being staged into: one back from the writer, or a new one.
    /// At most [`IN_FLIGHT`] are being written and one is being filled, so
    /// no more than that are ever made.
    fn staging_buffer(&mut self) -> &mut AlignedBuf {
        let bytes = self.staging_bytes;
        let spare = &mut self.spare;
        self.staging
            .get_or_insert_with(|| spare.pop().unwrap_or_else(|| AlignedBuf::zeroed(bytes)))
    }

    fn hand_out_staged(&mut self, pool: &BufPool) {
        if self.staged > 0 {
            let staging = self.staging.take().expect("staged bytes have a buffer");
            self.hand_out(staging, self.staged, self.staged_at, Owner::Staging, pool);
            self.staged = 0;
        }
    }

    /// Hands `buf[..len]` to the writer once fewer than [`IN_FLIGHT`]
    /// writes are under way.
    fn hand_out(&mut self, buf: AlignedBuf, len: usize, offset: u64, owner: Owner, pool: &BufPool) {
        while self.writer.in_flight() >= IN_FLIGHT {
            let done = self.writer.wait().expect("a write is in flight");
            self.take_back(done, pool);
        }
        self.regions_written += (len / self.layout.region_size as usize) as u64;
        self.bytes_written += len as u64;
        self.writer.submit(buf, len, offset, owner);
    }

    fn take_back(&mut self, done: Done<Owner>, pool: &BufPool) {
        self.write_time += done.seconds;
        if let Err(e) = done.result {
            self.failed.get_or_insert(e);
        }
        match done.tag {
            Owner::Staging => self.spare.push(done.buf),
            Owner::Pool => pool.give(done.buf),
        }
    }

    /// Merges the previous partition's spill into `packed`, the next in
    /// file order, seals what the merge changed and keeps its own spill for
    /// the next. Returns its buffer and the length of its bytes to write.
    fn settle(&mut self, mut packed: Packed) -> (AlignedBuf, usize) {
        let size = self.layout.region_size as usize;
        let mut merged_regions = 0;
        if let Some((first, bytes)) = self.carry.take() {
            merged_regions = bytes.len().div_ceil(size);
            assert_eq!(
                first, packed.first_region,
                "spill lands on the next partition's first region"
            );
            for (dst, src) in packed.buf.iter_mut().zip(bytes.iter()) {
                *dst |= *src;
            }
            if bytes.len() > packed.regions as usize * size {
                // A spill longer than the whole next partition: astronomically
                // rare, but it must not be lost.
                let mut merged = AlignedBuf::zeroed(bytes.len());
                merged[..packed.regions as usize * size]
                    .copy_from_slice(&packed.buf[..packed.regions as usize * size]);
                for (dst, src) in merged
                    .iter_mut()
                    .zip(bytes.iter())
                    .skip(packed.regions as usize * size)
                {
                    *dst |= *src;
                }
                packed.buf = merged;
                packed.regions = (bytes.len() / size) as u64;
            }
        }
        let final_regions = final_regions(&self.parting, &packed) as usize;
        let final_end = packed.first_region + final_regions as u64;
        let end = packed.first_region + packed.regions;
        // The worker sealed all but the regions a spill can reach.
        for r in 0..merged_regions.max(1).min(final_regions) {
            seal(&mut packed.buf[r * size..(r + 1) * size]);
        }
        if final_end < end {
            let rest = packed.buf[final_regions * size..packed.regions as usize * size].to_vec();
            self.carry = Some((final_end, rest));
        }
        (packed.buf, final_regions * size)
    }

    /// Whether every partition arrived and nothing is left unwritten.
    pub fn is_complete(&self) -> bool {
        self.waiting.is_empty()
            && self.carry.is_none()
            && self.staged == 0
            && self.writer.in_flight() == 0
    }
}

/// Regions of `packed`, from its first, whose bytes are its own: the rest
/// spill into the next partition's first regions and are written with it.
fn final_regions(parting: &Partitioning, packed: &Packed) -> u64 {
    let end = packed.first_region + packed.regions;
    let final_end = if packed.index + 1 < parting.count {
        parting.groups(packed.index + 1).start.min(end)
    } else {
        end
    };
    final_end - packed.first_region
}

/// Seals a packed partition's regions that no spill can change: all its own
/// but the first, into which the previous partition's spill is merged (the
/// sink seals that one, and any other a long spill reaches).
pub(crate) fn seal_settled(parting: &Partitioning, packed: &mut Packed) {
    let size = parting.layout.region_size as usize;
    for r in 1..final_regions(parting, packed) as usize {
        seal(&mut packed.buf[r * size..(r + 1) * size]);
    }
}

/// Packed regions `first_region ..`, unsealed: the checksums are added once
/// the spill from the previous partition is merged in.
pub(crate) struct Packed {
    pub index: u64,
    pub first_region: u64,
    pub regions: u64,
    pub buf: AlignedBuf,
}

/// Packed-region buffers handed back by the writer for reuse.
#[derive(Default)]
pub(crate) struct BufPool(Mutex<Vec<AlignedBuf>>);

/// Buffers a pool keeps at most.
const POOLED: usize = 16;

impl BufPool {
    /// A pool holding `bufs` to begin with.
    pub fn with(mut bufs: Vec<AlignedBuf>) -> BufPool {
        bufs.truncate(POOLED);
        BufPool(Mutex::new(bufs))
    }

    /// The buffers held now.
    pub fn into_buffers(self) -> Vec<AlignedBuf> {
        self.0.into_inner().unwrap()
    }

    /// A buffer of at least `len` bytes whose contents are left as they are.
    pub fn take(&self, len: usize) -> AlignedBuf {
        let reused = {
            let mut bufs = self.0.lock().unwrap();
            bufs.iter()
                .position(|b| b.len() >= len)
                .map(|i| bufs.swap_remove(i))
        };
        reused.unwrap_or_else(|| AlignedBuf::zeroed(len))
    }

    pub fn give(&self, buf: AlignedBuf) {
        let mut bufs = self.0.lock().unwrap();
        if bufs.len() < POOLED {
            bufs.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Layout;
    use crate::plot::xorshift;

    /// Partitions of random bytes in their checksum-free parts, each
    /// reaching `spills[p]` regions past its own groups (the last one's
    /// extra regions being tail regions), handed to the sink out of order
    /// and sealed as the pipeline seals them, give the same file as ORing
    /// every partition's regions into place and sealing each region once at
    /// the end.
    fn sink_matches_merging_everything_first(
        parting: &Partitioning,
        spills: &[u64],
        seed: u64,
        staging_bytes: usize,
    ) {
        let layout = parting.layout;
        assert_eq!(
            parting.count as usize,
            spills.len(),
            "one spill a partition"
        );
        let size = layout.region_size as usize;
        let mut rng = seed;
        let packed: Vec<Packed> = (0..parting.count)
            .map(|p| {
                let groups = parting.groups(p);
                let regions = groups.end - groups.start + spills[p as usize];
                let mut buf = AlignedBuf::zeroed(regions as usize * size);
                for region in buf.chunks_mut(size) {
                    // Sparse bits, as slots of two partitions never overlap
                    // in a real plot; ORed here all the same.
                    region[4..].fill_with(|| (xorshift(&mut rng) & 0x11) as u8);
                }
                Packed {
                    index: p,
                    first_region: groups.start,
                    regions,
                    buf,
                }
            })
            .collect();

        let regions_in_file = packed
            .iter()
            .map(|p| p.first_region + p.regions)
            .max()
            .unwrap();
        let mut expected = vec![0u8; regions_in_file as usize * size];
        for p in &packed {
            let at = p.first_region as usize * size;
            for (dst, src) in expected[at..].iter_mut().zip(p.buf.iter()) {
                *dst |= *src;
            }
        }
        expected.chunks_mut(size).for_each(seal);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plot");
        let file = File::create(&path).unwrap();
        let pool = BufPool::default();
        let mut sink = RegionSink::new(&file, parting).unwrap();
        sink.staging_bytes = staging_bytes;
        let mut order: Vec<Packed> = packed;
        // Out of order: pairs swapped, the last first.
        order.rotate_right(1);
        for pair in order[1..].chunks_mut(2) {
            pair.reverse();
        }
        for mut p in order {
            seal_settled(parting, &mut p);
            sink.accept(p, &pool).unwrap();
        }
        if staging_bytes == STAGING_BYTES {
            assert!(!sink.is_complete(), "the partitions wait in staging");
        }
        sink.finish(&pool).unwrap();
        assert!(sink.is_complete());
        let written = std::fs::read(&path).unwrap();
        assert_eq!(written.len(), HEADER_SIZE + expected.len());
        assert_eq!(sink.bytes_written as usize, expected.len());
        for (r, (got, want)) in written[HEADER_SIZE..]
            .chunks(size)
            .zip(expected.chunks(size))
            .enumerate()
        {
            assert!(got == want, "region {r} differs (spills {spills:?})");
        }
    }

    #[test]
    fn the_sink_writes_what_merging_every_spill_first_gives() {
        let parting = Partitioning::new(Layout::for_k(16).unwrap(), 1 << 12);
        let count = parting.count as usize;
        assert!(count >= 4, "several partitions");
        // No spills; a one-region spill out of every partition; spills of
        // two regions (into the next partition's second region); a spill
        // longer than the whole next partition; and tail regions after the
        // last.
        let mut cases = vec![vec![0; count], vec![1; count], vec![2; count]];
        let mut long = vec![0; count];
        long[1] = parting.groups_per_part + 2;
        long[count - 1] = 3;
        cases.push(long);
        // Staging that holds every partition, and staging of a few regions,
        // so that it fills up mid-plot and whole partitions outgrow it.
        let size = parting.layout.region_size as usize;
        for staging_bytes in [STAGING_BYTES, 3 * size] {
            for (i, spills) in cases.iter().enumerate() {
                sink_matches_merging_everything_first(
                    &parting,
                    spills,
                    0x9E37_79B9 + i as u64,
                    staging_bytes,
                );
            }
        }
    }
}
