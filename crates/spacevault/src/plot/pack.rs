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
    pub tmp: Vec<u64>,
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

/// Partitions up to this many records are sorted in one pass; larger ones
/// first split into chunks of buckets whose output fits in L2.
const ONE_PASS_RECORDS: usize = 1 << 18;
const CHUNK_BUCKETS_LOG2: u32 = 11;

/// Counting sort of sort keys by bucket into `out`, whose memory is reused
/// (as is `tmp`'s). `counts` holds the keys per bucket, counted by the
/// caller while it made them. `keys` must list nonces in ascending order:
/// the sort is stable, so each bucket's nonces stay sorted.
pub(crate) fn sort_partition(
    index: u64,
    keys: &[u64],
    counts: Vec<u32>,
    tmp: &mut Vec<u64>,
    mut out: Vec<u64>,
) -> SortedPartition {
    let bucket_count = counts.len();
    debug_assert_eq!(
        counts.iter().map(|&c| c as usize).sum::<usize>(),
        keys.len()
    );
    let mut next = Vec::with_capacity(bucket_count);
    let mut sum = 0usize;
    for &c in &counts {
        next.push(sum);
        sum += c as usize;
    }
    let total = keys.len();
    let one_pass = total <= ONE_PASS_RECORDS || bucket_count <= 1 << CHUNK_BUCKETS_LOG2;
    // Where each chunk of buckets starts, for the two-pass sort.
    let mut chunk_next: Vec<usize> = if one_pass {
        Vec::new()
    } else {
        (0..bucket_count)
            .step_by(1 << CHUNK_BUCKETS_LOG2)
            .map(|b| next[b])
            .collect()
    };
    out.clear();
    out.reserve(total);
    let spare = &mut out.spare_capacity_mut()[..total];
    let mut place = |key: u64| {
        let b = (key >> NONCE_BITS) as usize;
        spare[next[b]].write(key & NONCE_MASK);
        next[b] += 1;
    };
    if one_pass {
        keys.iter().for_each(|&k| place(k));
    } else {
        // Pass 1: stable split into chunks of buckets, a few dozen streams.
        let shift = NONCE_BITS + CHUNK_BUCKETS_LOG2;
        tmp.clear();
        tmp.reserve(total);
        let staged = &mut tmp.spare_capacity_mut()[..total];
        for &key in keys {
            let c = (key >> shift) as usize;
            staged[chunk_next[c]].write(key);
            chunk_next[c] += 1;
        }
        // SAFETY: as for `out` below: every one of the `total` places was
        // written once.
        unsafe { tmp.set_len(total) };
        // Pass 2: each chunk's records land in a window that fits in L2.
        tmp.iter().for_each(|&k| place(k));
    }
    // SAFETY: the counting sort wrote each of the first `total` elements
    // exactly once (the counts sum to `total`).
    unsafe { out.set_len(total) };
    SortedPartition {
        index,
        counts,
        nonces: out,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Layout;

    /// Sorting by (bucket, nonce) the obvious way must agree with both the
    /// one-pass and the two-pass counting sort.
    #[test]
    fn counting_sort_matches_a_plain_sort() {
        for (k, target) in [(20u8, 1u64 << 14), (20, 1 << 20)] {
            let layout = Layout::for_k(k).unwrap();
            let parting = Partitioning::new(layout, target);
            let p = parting.count / 2;
            let buckets = parting.buckets(p).end - parting.buckets(p).start;
            let mut rng = 0x1234_5678_9ABC_DEF0u64;
            let keys: Vec<u64> = (0..(target as usize).min(300_000))
                .map(|i| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    sort_key(rng % buckets, i as u64)
                })
                .collect();
            let mut want = keys.clone();
            want.sort_unstable();
            let mut counts = vec![0u32; buckets as usize];
            for k in &keys {
                counts[(k >> NONCE_BITS) as usize] += 1;
            }
            let mut tmp = Vec::new();
            let sorted = sort_partition(p, &keys, counts.clone(), &mut tmp, vec![7; 3]);
            let want_nonces: Vec<u64> = want.iter().map(|k| k & NONCE_MASK).collect();
            assert_eq!(sorted.nonces, want_nonces, "k {k} target {target}");
            assert_eq!(sorted.counts, counts);
        }
    }
}
