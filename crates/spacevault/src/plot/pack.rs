//! From a partition's records to region bytes: sort into buckets, place each
//! group in the slot stream, and pack the slots.

use super::partition::Partitioning;
use super::PlotError;
use crate::aligned::AlignedBuf;
use crate::format::bits::SlotWriter;
use crate::format::REGION_HEADER_SIZE;
use std::sync::Mutex;

/// Bits of a sort key that hold the nonce; the bucket within the partition
/// sits above them.
pub(crate) const NONCE_BITS: u32 = 40;
pub(crate) const NONCE_MASK: u64 = (1 << NONCE_BITS) - 1;

#[inline(always)]
pub(crate) fn sort_key(local_bucket: u64, nonce: u64) -> u64 {
    (local_bucket << NONCE_BITS) | nonce
}

/// A partition's nonces in file order: by bucket, then by nonce.
pub(crate) struct SortedPartition {
    pub index: u64,
    /// Records in each bucket of the partition.
    pub counts: Vec<u32>,
    pub nonces: Vec<u64>,
}

/// Buffers a worker reuses from partition to partition: allocating them
/// afresh would have the kernel fault in and zero gigabytes of pages.
#[derive(Default)]
pub(crate) struct Scratch {
    pub keys: Vec<u64>,
    pub nonces: Vec<u64>,
    pub prefixes: Vec<u64>,
    /// Page-aligned room for O_DIRECT reads.
    pub aligned: Option<AlignedBuf>,
}

/// Packed-region buffers handed back by the writer for reuse.
#[derive(Default)]
pub(crate) struct BufPool(Mutex<Vec<AlignedBuf>>);

impl BufPool {
    /// A zeroed buffer of at least `len` bytes.
    pub fn take(&self, len: usize) -> AlignedBuf {
        let reused = {
            let mut bufs = self.0.lock().unwrap();
            bufs.iter()
                .position(|b| b.len() >= len)
                .map(|i| bufs.swap_remove(i))
        };
        match reused {
            Some(mut b) => {
                b.fill(0);
                b
            }
            None => AlignedBuf::zeroed(len),
        }
    }

    pub fn give(&self, buf: AlignedBuf) {
        let mut bufs = self.0.lock().unwrap();
        if bufs.len() < 16 {
            bufs.push(buf);
        }
    }
}

/// Counting sort by bucket into `out`, whose memory is reused. The sources,
/// taken in order, must list nonces in ascending order: the sort is stable,
/// so each bucket's nonces stay sorted.
pub(crate) fn sort_partition(
    parting: &Partitioning,
    index: u64,
    sources: &[&[u64]],
    mut out: Vec<u64>,
) -> SortedPartition {
    let buckets = parting.buckets(index);
    let bucket_count = (buckets.end - buckets.start) as usize;
    let mut counts = vec![0u32; bucket_count];
    let total: usize = sources.iter().map(|s| s.len()).sum();
    for source in sources {
        for &key in source.iter() {
            counts[(key >> NONCE_BITS) as usize] += 1;
        }
    }
    let mut next = Vec::with_capacity(bucket_count);
    let mut sum = 0usize;
    for &c in &counts {
        next.push(sum);
        sum += c as usize;
    }
    out.clear();
    out.resize(total, 0);
    let mut nonces = out;
    for source in sources {
        for &key in source.iter() {
            let b = (key >> NONCE_BITS) as usize;
            nonces[next[b]] = key & NONCE_MASK;
            next[b] += 1;
        }
    }
    SortedPartition {
        index,
        counts,
        nonces,
    }
}

/// Where each group of a partition starts in the global slot stream.
pub(crate) struct Placement {
    pub group_starts: Vec<u64>,
    /// The slot after the partition's last record.
    pub end: u64,
}

/// Group g starts at `max(g * slots_per_region, end of group g - 1)`.
pub(crate) fn place(
    parting: &Partitioning,
    sorted: &SortedPartition,
    previous_end: u64,
) -> Placement {
    let layout = &parting.layout;
    let slots = layout.slots_per_region as u64;
    let bpg = layout.buckets_per_group as usize;
    let mut end = previous_end;
    let groups = parting.groups(sorted.index);
    let mut group_starts = Vec::with_capacity((groups.end - groups.start) as usize);
    for (i, g) in groups.enumerate() {
        let counts = &sorted.counts[i * bpg..((i + 1) * bpg).min(sorted.counts.len())];
        let n: u64 = counts.iter().map(|&c| c as u64).sum();
        let start = end.max(g * slots);
        group_starts.push(start);
        end = start + n;
    }
    Placement { group_starts, end }
}

/// Packed regions `first_region ..`, unsealed: the checksums are added once
/// the spill from the previous partition is merged in.
pub(crate) struct Packed {
    pub index: u64,
    pub first_region: u64,
    pub regions: u64,
    pub buf: AlignedBuf,
}

/// Packs a placed partition. The last partition also writes the headers of
/// the tail regions that hold the final spill; `end` is then the end of all
/// records.
pub(crate) fn pack(
    parting: &Partitioning,
    sorted: &SortedPartition,
    placement: &Placement,
    pool: &BufPool,
) -> Result<Packed, PlotError> {
    let layout = &parting.layout;
    let slots = layout.slots_per_region as u64;
    let region_size = layout.region_size as usize;
    let k = layout.k as u32;
    let bpg = layout.buckets_per_group as usize;
    let groups = parting.groups(sorted.index);
    let is_last = groups.end == layout.group_count();
    let first_region = groups.start;
    let last_touched = (groups.end - 1).max(placement.end.saturating_sub(1) / slots);
    let end_region = if is_last {
        layout.region_count(placement.end)
    } else {
        last_touched + 1
    };
    let regions = end_region - first_region;
    let mut buf = pool.take(regions as usize * region_size);
    let area = layout.slot_area_offset();

    let mut next_nonce = 0usize;
    for (i, g) in groups.clone().enumerate() {
        let start = placement.group_starts[i];
        let counts = &sorted.counts[i * bpg..((i + 1) * bpg).min(sorted.counts.len())];
        let region = &mut buf[(g - first_region) as usize * region_size..][..region_size];
        region[4..8].copy_from_slice(&((start - g * slots) as u32).to_le_bytes());
        for (j, &c) in counts.iter().enumerate() {
            if c > u8::MAX as u32 {
                return Err(PlotError::BucketOverflow {
                    bucket: parting.buckets(sorted.index).start + (i * bpg + j) as u64,
                    records: c,
                });
            }
            region[REGION_HEADER_SIZE + j] = c as u8;
        }
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        let mut s = start;
        let mut left = &sorted.nonces[next_nonce..next_nonce + n];
        next_nonce += n;
        while !left.is_empty() {
            let r = s / slots;
            let j = (s % slots) as usize;
            let take = left.len().min((slots as usize) - j);
            let region = &mut buf[(r - first_region) as usize * region_size..][..region_size];
            let mut w = SlotWriter::new(&mut region[area..], j, k);
            for &x in &left[..take] {
                w.push(x);
            }
            w.finish();
            left = &left[take..];
            s += take as u64;
        }
    }
    if is_last {
        for r in layout.group_count()..end_region {
            let offset = placement.end.saturating_sub(r * slots);
            let region = &mut buf[(r - first_region) as usize * region_size..][..region_size];
            region[4..8].copy_from_slice(&(offset as u32).to_le_bytes());
        }
    }
    Ok(Packed {
        index: sorted.index,
        first_region,
        regions,
        buf,
    })
}
