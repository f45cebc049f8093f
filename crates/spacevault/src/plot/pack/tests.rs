use super::*;
use crate::plot::xorshift;

#[test]
fn walking_slots_lands_where_dividing_does() {
    for slots in [2u64, 3, 993, 1000] {
        let mut walk = SlotWalk::at(5, slots);
        let mut s = 5;
        for step in (0..2000u64).map(|i| i * 7919 % 301) {
            walk.advance(step, slots);
            s += step;
            assert_eq!(walk, SlotWalk::at(s, slots), "slots {slots}, slot {s}");
        }
    }
}
use crate::format::bits::SlotWriter;
use crate::format::Layout;

/// The obvious way: sort the records by (bucket, nonce), then write each
/// group's slots in order with a [`SlotWriter`].
fn pack_by_sorting(
    parting: &Partitioning,
    index: u64,
    records: &[(usize, u64)],
    counts: &[u32],
    placement: &Placement,
) -> Vec<u8> {
    let layout = &parting.layout;
    let slots = layout.slots_per_region as u64;
    let size = layout.region_size as usize;
    let bpg = layout.buckets_per_group as usize;
    let mut sorted = records.to_vec();
    sorted.sort_unstable();
    let groups = parting.groups(index);
    let first_region = groups.start;
    let is_last = groups.end == layout.group_count();
    // Every region the partition's slots reach, and for the last
    // partition every region the plot has.
    let end_region = if is_last {
        layout.region_count(placement.end)
    } else {
        groups.end.max(placement.end.div_ceil(slots))
    };
    let mut buf = vec![0u8; (end_region - first_region) as usize * size];
    let mut next = 0;
    for (i, g) in groups.enumerate() {
        let group_counts = &counts[i * bpg..((i + 1) * bpg).min(counts.len())];
        let n: usize = group_counts.iter().map(|&c| c as usize).sum();
        let region = &mut buf[(g - first_region) as usize * size..][..size];
        let offset = placement.group_starts[i] - g * slots;
        region[4..8].copy_from_slice(&(offset as u32).to_le_bytes());
        for (j, &c) in group_counts.iter().enumerate() {
            region[REGION_HEADER_SIZE + j] = c as u8;
        }
        let group = &sorted[next..next + n];
        for (s, &(_, x)) in (placement.group_starts[i]..).zip(group) {
            let r = s / slots;
            let j = (s % slots) as usize;
            let region = &mut buf[(r - first_region) as usize * size..][..size];
            let area = &mut region[layout.slot_area_offset()..];
            let mut w = SlotWriter::new(area, j, layout.k as u32);
            w.push(x);
            w.finish();
        }
        next += n;
    }
    if is_last {
        for r in layout.group_count()..end_region {
            let offset = placement.end.saturating_sub(r * slots) as u32;
            buf[(r - first_region) as usize * size + 4..][..4]
                .copy_from_slice(&offset.to_le_bytes());
        }
    }
    buf
}

/// Direct placement gives the same bytes as sorting and packing in
/// order, for first, middle and last partitions, with spills in and out.
#[test]
fn placing_directly_matches_sorting_then_packing() {
    let mut rng = 0x1234_5678_9ABC_DEF0u64;
    // k = 16 and k = 32 store whole-byte slots; the others OR bits in.
    for (k, target) in [
        (16u8, 1u64 << 12),
        (20, 1 << 14),
        (23, 1 << 17),
        (32, 1 << 14),
        (40, 1 << 14),
    ] {
        let layout = Layout::for_k(k).unwrap();
        let parting = Partitioning::new(layout, target);
        let slots = layout.slots_per_region as u64;
        for index in [0, parting.count / 2, parting.count - 1] {
            let buckets = parting.buckets(index);
            let n_buckets = (buckets.end - buckets.start) as usize;
            let n = n_buckets << (k - layout.bucket_bits);
            // Skewed towards the first buckets so groups overflow.
            let mut records: Vec<(usize, u64)> = (0..n)
                .map(|_| {
                    let a = xorshift(&mut rng) as usize % n_buckets;
                    let b = xorshift(&mut rng) as usize % n_buckets;
                    (a.min(b), xorshift(&mut rng) & ((1 << k) - 1))
                })
                .collect();
            records.sort_unstable_by_key(|r| r.1);
            let mut counts = vec![0u32; n_buckets];
            for r in &records {
                counts[r.0] += 1;
            }
            let previous_end =
                parting.groups(index).start * slots + if index > 0 { slots / 3 } else { 0 };
            let placement = place(&parting, index, &counts, previous_end);
            let want = pack_by_sorting(&parting, index, &records, &counts, &placement);
            // A pool whose buffers hold garbage, as reused ones do.
            let pool = BufPool::default();
            let mut dirty = AlignedBuf::zeroed(want.len() + 4096);
            dirty.fill(0xA5);
            pool.give(dirty);
            // All buckets open at once, or runs of 64 buckets opened in
            // turn with their records (stable within each run).
            for run in [usize::MAX, 64] {
                let mut placer =
                    SlotPlacer::new(&parting, index, &counts, &placement, &pool, Vec::new())
                        .unwrap();
                let mut by_run = records.clone();
                by_run.sort_by_key(|r| r.0 / run.min(n_buckets));
                let mut opened = 0;
                for &(b, x) in &by_run {
                    while opened <= b {
                        opened = (opened + run).min(n_buckets);
                        placer.open_buckets(opened);
                    }
                    placer.put(b, x);
                }
                let (packed, _) = placer.finish(&parting, &counts, &placement).unwrap();
                let size = layout.region_size as usize;
                assert_eq!(packed.regions as usize * size, want.len());
                assert_eq!(
                    &packed.buf[..want.len()],
                    &want[..],
                    "k {k} partition {index}"
                );
                let mut reused = packed.buf;
                reused.fill(0x5A);
                pool.give(reused);
            }
        }
    }
}

/// Runs of keys placed at once give the same bytes as their records
/// placed one by one: in a whole partition (whose cursors cover every
/// bucket a key can name) and in a short last one (whose do not), for
/// bit-packed and whole-byte slots.
#[test]
fn placing_runs_of_keys_matches_placing_each_record() {
    let mut rng = 0x00DD_BA11_u64;
    for (k, target) in [(20u8, 1u64 << 14), (32, 1 << 14)] {
        let layout = Layout::for_k(k).unwrap();
        // A target that leaves the last partition short.
        let parting = Partitioning::new(layout, target + target / 3);
        let shape = crate::plot::key_shape::KeyShape::with_buckets(&parting);
        for index in [0, parting.count - 1] {
            let buckets = parting.buckets(index);
            let n_buckets = (buckets.end - buckets.start) as usize;
            let n = n_buckets << (k - layout.bucket_bits);
            let mut x = xorshift(&mut rng) & ((1 << (k - 1)) - 1);
            let records: Vec<(usize, u64)> = (0..n)
                .map(|_| {
                    x += 1 + xorshift(&mut rng) % 7;
                    (xorshift(&mut rng) as usize % n_buckets, x)
                })
                .collect();
            let mut counts = vec![0u32; n_buckets];
            records.iter().for_each(|r| counts[r.0] += 1);
            let placement = place(&parting, index, &counts, 0);
            let pool = BufPool::default();
            let new = || {
                let mut placer =
                    SlotPlacer::new(&parting, index, &counts, &placement, &pool, Vec::new())
                        .unwrap();
                placer.open_all();
                placer
            };
            let mut one_by_one = new();
            records.iter().for_each(|&(b, x)| one_by_one.put(b, x));
            let mut by_run = new();
            let covers = 1usize << (32 - shape.low_bits) <= by_run.cursors.len();
            assert_eq!(covers, index == 0, "k {k} partition {index}");
            for run in records.chunk_by(|a, b| a.1 >> shape.low_bits == b.1 >> shape.low_bits) {
                let keys: Vec<u32> = run.iter().map(|&(b, x)| shape.key(b as u64, x)).collect();
                by_run.put_keys(&keys, shape, run[0].1 >> shape.low_bits);
            }
            let want = one_by_one.finish(&parting, &counts, &placement).unwrap().0;
            let got = by_run.finish(&parting, &counts, &placement).unwrap().0;
            let len = want.regions as usize * layout.region_size as usize;
            assert_eq!(&got.buf[..len], &want.buf[..len], "k {k} partition {index}");
        }
    }
}

/// Moving a cursor on by n records at once lands where n single moves
/// do, from every slot of a region, across region ends.
#[test]
fn moving_a_cursor_on_matches_moving_it_a_slot_at_a_time() {
    let layout = Layout::for_k(32).unwrap();
    let parting = Partitioning::new(layout, 1 << 14);
    let buckets = parting.buckets(0);
    let counts = vec![32u32; (buckets.end - buckets.start) as usize];
    let placement = place(&parting, 0, &counts, 0);
    let pool = BufPool::default();
    let placer = SlotPlacer::new(&parting, 0, &counts, &placement, &pool, Vec::new()).unwrap();
    let slots = placer.slots;
    let step = |c: u64| {
        if c & LEFT_MASK > 1 {
            c + ((placer.k as u64) << LEFT_BITS) - 1
        } else {
            placer.next_region(((c >> LEFT_BITS) / 8) as usize)
        }
    };
    for j in (0..slots).step_by(7).chain(slots - 3..slots) {
        let start = placer.cursor_of(SlotWalk { region: 1, j });
        assert_eq!(placer.slot_of(start), slots + j);
        let mut c = start;
        for n in 0..slots + 5 {
            assert_eq!(placer.moved_on(start, n), c, "from slot {j}, {n} on");
            c = step(c);
        }
    }
}

#[test]
fn a_bucket_with_a_record_too_many_or_few_is_refused() {
    let layout = Layout::for_k(18).unwrap();
    let parting = Partitioning::new(layout, 1 << 12);
    let n_buckets = (parting.buckets(1).end - parting.buckets(1).start) as usize;
    let counts = vec![2u32; n_buckets];
    let placement = place(&parting, 1, &counts, 0);
    let pool = BufPool::default();
    for extra in [false, true] {
        let mut placer =
            SlotPlacer::new(&parting, 1, &counts, &placement, &pool, Vec::new()).unwrap();
        placer.open_all();
        for b in 0..n_buckets {
            placer.put(b, 1);
            if b != 3 || extra {
                placer.put(b, 2);
            }
        }
        if extra {
            placer.put(5, 3);
        }
        assert!(matches!(
            placer.finish(&parting, &counts, &placement),
            Err(PlotError::Inconsistent(_))
        ));
    }
}

/// Slot writes are not bounds-checked one by one: a bucket given far
/// more records than it counted, or records for the padding cursors,
/// must still write only within the buffer (the debug build checks
/// every write) and be refused.
#[test]
fn records_beyond_the_counts_stay_in_the_buffer_and_are_refused() {
    let layout = Layout::for_k(18).unwrap();
    let parting = Partitioning::new(layout, 3000);
    let slots = layout.slots_per_region as usize;
    let pool = BufPool::default();
    for index in [0, parting.count - 1] {
        let buckets = parting.buckets(index);
        let n_buckets = (buckets.end - buckets.start) as usize;
        let counts = vec![1u32; n_buckets];
        let placement = place(&parting, index, &counts, 0);
        let new = || SlotPlacer::new(&parting, index, &counts, &placement, &pool, Vec::new());
        let mut placer = new().unwrap();
        assert!(placer.cursors.len() > n_buckets, "the cursors are padded");
        placer.open_all();
        for _ in 0..3 * slots {
            placer.put(n_buckets - 1, u64::MAX);
        }
        assert!(placer.finish(&parting, &counts, &placement).is_err());

        let mut placer = new().unwrap();
        placer.open_all();
        (0..n_buckets).for_each(|b| placer.put(b, b as u64));
        // Entries of no bucket bits: all for the last padding cursor.
        let last = placer.cursors.len() - 1;
        placer.put_entries(last, &vec![5; 2 * slots], 32, 0);
        assert!(matches!(
            placer.finish(&parting, &counts, &placement),
            Err(PlotError::Inconsistent(_))
        ));
    }
}

#[test]
#[should_panic(expected = "beyond the cursors")]
fn a_run_of_entries_naming_buckets_past_the_cursors_is_refused() {
    let layout = Layout::for_k(18).unwrap();
    let parting = Partitioning::new(layout, 3000);
    let buckets = parting.buckets(0);
    let counts = vec![1u32; (buckets.end - buckets.start) as usize];
    let placement = place(&parting, 0, &counts, 0);
    let pool = BufPool::default();
    let mut placer = SlotPlacer::new(&parting, 0, &counts, &placement, &pool, Vec::new()).unwrap();
    // Entries of 4 bucket bits name 16 buckets from the last cursor on.
    let last = placer.cursors.len() - 1;
    placer.put_entries(last, &[0], 28, 0);
}
