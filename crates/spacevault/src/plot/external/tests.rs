use super::*;
use crate::format::Layout;
use crate::plot::key_shape::KeyShape;
use crate::plot::NoProgress;

/// Keys with buckets and keys that make phase 2 hash again give the
/// same plot, whether every round goes through the temp file, some
/// stay in memory or all do, and with one phase 2 worker or more (which
/// changes the partitions): in many rounds and partitions with 42 MiB,
/// in one round with 120 MiB. Buffers kept from one plot are reused by
/// the next, as they are for `--count`.
#[test]
fn key_shapes_and_resident_rounds_make_the_same_plot() {
    let layout = Layout::for_k(20).unwrap();
    let kernel = Kernel::new(&[7; 32]);
    let dir = tempfile::tempdir().unwrap();
    let nonces = Some(KeyShape::nonces_only());
    let mut plots = Vec::new();
    let pool = ScatterPool::default();
    // Phase 2's buffers, kept from plot to plot: each plot must come
    // out the same whatever the buffers held before.
    let last_phase = LastPhaseMemory::default();
    let closer = Closer::default();
    for (memory, shape, resident, workers, spares) in [
        (42 << 20, None, Some(0), None, Spares::Free),
        (42 << 20, None, Some(2), None, Spares::Free),
        (42 << 20, None, Some(99), None, Spares::Free),
        (42 << 20, None, Some(1), Some(1), Spares::Free),
        (42 << 20, nonces, Some(0), None, Spares::Pool),
        (42 << 20, nonces, Some(1), None, Spares::Pool),
        (120 << 20, nonces, Some(0), None, Spares::Free),
        (120 << 20, None, None, None, Spares::Free),
    ] {
        let out = File::create(dir.path().join("plot")).unwrap();
        let overrides = Overrides {
            shape,
            resident,
            workers,
        };
        let plan = Plan::new(&layout, 2, memory, &overrides).unwrap();
        let temp = (dir.path(), &closer);
        let sorted = hash_to_temp(plan.clone(), &kernel, 2, temp, &NoProgress, (&pool, spares));
        // Sets that phase 2 does not need are freed or handed on.
        let spare_sets = plan.sets - plan.resident;
        let (handed_on, kept) = match spares {
            Spares::Free => (0, plan.resident),
            Spares::Pool => (spare_sets, plan.sets),
        };
        assert_eq!(pool.kept() as u64, handed_on * 2);
        let pools = (&pool, &last_phase);
        let result = phase_two(sorted.unwrap(), &kernel, &out, &NoProgress, pools).unwrap();
        let (regions, scratch, reads, _) = last_phase.kept_buffers();
        assert!(regions > 0 && reads > 0);
        assert_eq!(scratch, plan.workers + 1);
        assert_eq!(result.rounds, plan.rounds);
        assert_eq!(result.rounds_in_memory, plan.resident);
        assert_eq!(pool.kept() as u64, kept * 2);
        let written = plan.rounds - plan.resident;
        assert!(result.temp_bytes_written >= (written * plan.round).min(1 << 20) * 4);
        assert!(result.temp_bytes_written <= temp_size_of(&plan, 2));
        plots.push((
            result.written.end,
            std::fs::read(dir.path().join("plot")).unwrap(),
        ));
    }
    let plan = Plan::new(&layout, 2, 42 << 20, &Overrides::default()).unwrap();
    assert!(plan.shape.has_buckets());
    assert!(plan.round * 3 < layout.record_count() && plan.parting.count > 10);
    assert!(plots.iter().all(|p| *p == plots[0]), "the plots differ");
    // Nothing is left behind in the temp directory.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1);
}

#[test]
fn phase_one_keeps_phase_two_buffers_only_within_the_limit() {
    let layout = Layout::for_k(20).unwrap();
    let kernel = Kernel::new(&[7; 32]);
    let dir = tempfile::tempdir().unwrap();
    let (pool, closer) = (ScatterPool::default(), Closer::default());
    // At 42 MiB two sets of round buffers take what is left after the
    // reserve; at 400 MiB every round stays in memory with room to spare.
    for (memory, still_kept) in [(42 << 20, false), (400 << 20, true)] {
        let plan = Plan::new(&layout, 2, memory, &Overrides::default()).unwrap();
        let kept = LastPhaseMemory::default();
        let mut buffers = kept.take(&plan.parting);
        buffers.reads = vec![AlignedBuf::zeroed(8 << 20)];
        kept.keep(&plan.parting, buffers);
        assert_eq!(kept.bytes(), 8 << 20);
        let temp = (dir.path(), &closer);
        let pools = (&pool, Spares::Free, &kept);
        let sorted = phase_one(&plan, &kernel, 2, memory, temp, &NoProgress, pools).unwrap();
        assert_eq!(kept.bytes() > 0, still_kept, "{memory} bytes");
        drop(sorted);
    }
}

#[test]
fn memory_to_spare_keeps_rounds_out_of_the_temp_file() {
    // k = 32 with 4 GiB: rounds of 2^28 records, 1 GiB each; phase 2
    // sets aside 960 MiB for partitions of 2^23 records, so two rounds
    // stay in memory.
    let layout = Layout::for_k(32).unwrap();
    let plan = Plan::new(&layout, 2, 4 << 30, &Overrides::default()).unwrap();
    assert_eq!((plan.round, plan.rounds, plan.workers), (1 << 28, 16, 2));
    assert!((510..=515).contains(&plan.parting.count));
    assert_eq!((plan.resident, plan.sets), (2, 2));
    // With half of that, as plots that overlap get: 19 rounds, one of
    // them kept.
    let plan = Plan::new(&layout, 2, 2 << 30, &Overrides::default()).unwrap();
    assert_eq!((plan.rounds, plan.resident, plan.sets), (19, 1, 2));
    // k = 30 with 1 GiB: two sets of about 490 MiB in phase 1, and
    // one of them fits beside phase 2's 240 MiB.
    let layout = Layout::for_k(30).unwrap();
    let plan = Plan::new(&layout, 2, 1 << 30, &Overrides::default()).unwrap();
    assert_eq!((plan.resident, plan.sets), (1, 2));
    // With 256 MiB phase 2 needs all of it: no round stays.
    let plan = Plan::new(&layout, 2, 256 << 20, &Overrides::default()).unwrap();
    assert_eq!((plan.resident, plan.sets), (0, 2));
    // The temp file shrinks by the rounds kept.
    let full = temp_size_of(
        &Plan {
            resident: 0,
            ..plan
        },
        2,
    );
    assert!(temp_size(&Layout::for_k(32).unwrap(), 2, 4 << 30).unwrap() < full * 4);
}

#[test]
fn a_limit_too_small_says_the_least_that_works() {
    // Checked against the planner itself, to the MiB: machines from
    // one thread to many, plots from small to large.
    for (k, threads) in [(20u8, 1usize), (26, 2), (32, 2), (32, 4), (34, 64)] {
        let layout = Layout::for_k(k).unwrap();
        let plan = |memory| Plan::new(&layout, threads, memory, &Overrides::default());
        let Err(PlotError::MemoryTooSmall { given, needed }) = plan(1 << 20) else {
            panic!("k {k}, {threads} threads: 1 MiB was enough");
        };
        assert_eq!(given, 1 << 20);
        assert!(plan(needed).is_ok(), "k {k}, {threads} threads: {needed}");
        assert!(
            plan(needed - (1 << 20)).is_err(),
            "k {k}, {threads} threads"
        );
        // Not the figure of a partitioning for 1 MiB (65536 partitions
        // at k = 32, 2.1 GiB with four threads): at most a few hundred
        // MiB up to k = 32, on up to four threads.
        if threads <= 4 {
            assert!(needed <= 320 << 20, "k {k}, {threads} threads: {needed}");
        }
    }
}

#[test]
fn many_threads_keep_the_temp_files_padding_small() {
    // Every round, partition and hashing thread has a page-padded
    // segment. With one phase 2 worker a thread and rounds of 2^28,
    // k = 34 on 192 threads with 64 GiB wrote 3.8 bytes of temp file a
    // plot byte, k = 36 15.5; larger rounds and fewer workers, when
    // that is what keeps partitions large, bring both below 1.
    for (k, threads, memory_gib) in [(34u8, 192usize, 64u64), (36, 192, 64), (34, 64, 64)] {
        let layout = Layout::for_k(k).unwrap();
        let plan = Plan::new(&layout, threads, memory_gib << 30, &Overrides::default()).unwrap();
        let overhead = temp_overhead(&plan, threads);
        assert!(overhead <= MAX_TEMP_OVERHEAD, "k {k}: {overhead}");
        let plot_bytes = layout.record_count() * (k as u64 + 1) / 8;
        assert!(temp_size_of(&plan, threads) < plot_bytes, "k {k}");
        assert!(plan.workers >= 8, "k {k}: {} workers", plan.workers);
    }
    // Where padding is small, every thread is a phase 2 worker.
    let plan = Plan::new(
        &Layout::for_k(32).unwrap(),
        16,
        16 << 30,
        &Overrides::default(),
    );
    assert_eq!(plan.unwrap().workers, 16);
}

#[test]
fn marks_decide_the_key_shape() {
    // k = 32 in 2^21-record partitions: an eighth of a byte of marks a
    // record, so the keys carry buckets; k = 34: half a byte, so not.
    for (k, buckets) in [(32u8, true), (34, false)] {
        let parting = partitioning(&Layout::for_k(k).unwrap(), 2, 4 << 30);
        assert_eq!(temp_shape(&parting).has_buckets(), buckets, "k {k}");
    }
}
