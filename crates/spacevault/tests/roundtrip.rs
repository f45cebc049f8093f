//! Plots made by every strategy hold every nonce exactly once, and prove
//! finds what a brute-force search over all nonces finds.

use spacevault::plot::{NoProgress, Phase, Strategy};
use spacevault::{brute_force_best, plot, PlotFile, PlotOptions, Plotter};

fn options(k: u8, strategy: Strategy, seed: u8) -> PlotOptions {
    let mut o = PlotOptions::new(k, [0xF0 ^ seed; 32], [seed; 32]);
    o.strategy = strategy;
    o.threads = 2;
    o
}

fn challenge(i: u64) -> [u8; 32] {
    *blake3::hash(&i.to_le_bytes()).as_bytes()
}

/// Every nonce of the plot, bucket by bucket, through the lookup path.
fn all_nonces(plot: &PlotFile) -> Vec<u64> {
    let layout = plot.header().layout;
    let mut cache = None;
    let mut out = Vec::new();
    for b in 0..layout.bucket_count() {
        let nonces = plot.bucket_nonces(b, &mut cache).unwrap();
        assert!(
            nonces.windows(2).all(|w| w[0] < w[1]),
            "bucket {b} is not in nonce order"
        );
        out.extend(nonces);
    }
    out
}

fn check_plot(o: &PlotOptions, challenges: u64) {
    let dir = tempfile::tempdir().unwrap();
    let summary = plot(o, dir.path(), &NoProgress).unwrap();
    let plot = PlotFile::open(&summary.path).unwrap();
    let h = plot.header();
    assert_eq!(h.k(), o.k);
    assert_eq!(
        summary.bytes,
        std::fs::metadata(&summary.path).unwrap().len()
    );

    let mut nonces = all_nonces(&plot);
    assert_eq!(nonces.len() as u64, 1u64 << o.k, "record count");
    nonces.sort_unstable();
    assert!(
        nonces.iter().enumerate().all(|(i, &x)| i as u64 == x),
        "every nonce exactly once"
    );

    for i in 0..challenges {
        let c = challenge(i);
        let got = plot.prove(&c).unwrap();
        let want = brute_force_best(&h.plot_id, o.k, &c);
        assert_eq!(got.candidate(), want, "challenge {i}");
        assert!(got.reads <= 2, "challenge {i} took {} reads", got.reads);
    }
}

#[test]
fn in_memory_plot_is_complete_and_proves_like_brute_force() {
    check_plot(&options(16, Strategy::Memory, 1), 300);
}

#[test]
fn external_plot_is_complete_and_proves_like_brute_force() {
    let mut o = options(16, Strategy::External, 2);
    o.memory = 48 << 20;
    check_plot(&o, 100);
}

#[test]
fn sparse_buckets_send_the_search_to_neighbours() {
    // Four buckets per record on average: most buckets are empty.
    let mut o = options(16, Strategy::Memory, 3);
    o.bucket_bits = Some(18);
    check_plot(&o, 300);
}

#[test]
fn one_thread_and_many_threads_make_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(17, Strategy::Memory, 4);
    o.threads = 1;
    let a = plot(&o, dir.path(), &NoProgress).unwrap();
    let bytes_a = std::fs::read(&a.path).unwrap();
    o.threads = 3;
    o.force = true;
    let b = plot(&o, dir.path(), &NoProgress).unwrap();
    let bytes_b = std::fs::read(&b.path).unwrap();
    // The header holds the creation time; the regions must be identical.
    assert_eq!(bytes_a[4096..], bytes_b[4096..]);
    o.strategy = Strategy::External;
    o.memory = 48 << 20;
    let c = plot(&o, dir.path(), &NoProgress).unwrap();
    assert_eq!(bytes_a[4096..], std::fs::read(&c.path).unwrap()[4096..]);
}

#[test]
fn external_plot_in_many_rounds_matches_the_in_memory_plot() {
    // 42 MiB: 2 MiB of round buffers for 2^20 records: several rounds,
    // dozens of partitions, the temp file written and read back in pieces.
    // 176 MiB: one round, kept in memory for phase 2 (no temp file),
    // partitions of thousands of buckets that phase 2 splits into windows.
    let dir = tempfile::tempdir().unwrap();
    let mut o = options(20, Strategy::Memory, 5);
    let memory_plot = plot(&o, dir.path(), &NoProgress).unwrap();
    let want = std::fs::read(&memory_plot.path).unwrap();
    for memory in [42 << 20, 176 << 20] {
        o.strategy = Strategy::External;
        o.memory = memory;
        o.force = true;
        let external_plot = plot(&o, dir.path(), &NoProgress).unwrap();
        let written = external_plot.stats.rounds - external_plot.stats.rounds_in_memory;
        assert_eq!(written > 0, external_plot.temp_bytes_written > 0);
        if memory == 42 << 20 {
            assert!(written > 1 && external_plot.temp_bytes_written >= 4 << 20);
        } else {
            assert_eq!(
                (
                    external_plot.stats.rounds,
                    external_plot.stats.rounds_in_memory
                ),
                (1, 1)
            );
        }
        let got = std::fs::read(&external_plot.path).unwrap();
        assert_eq!(want.len(), got.len());
        assert!(
            want[4096..] == got[4096..],
            "external ({memory} bytes of memory) and in-memory plots differ"
        );
    }
}

#[test]
fn a_plotter_reusing_its_buffers_makes_the_same_plots_as_fresh_ones() {
    // Each plot after the first reuses the buffers the previous one filled
    // (and a change of strategy or k frees them): every file must still be
    // the one a fresh process makes.
    let dir = tempfile::tempdir().unwrap();
    let fresh_dir = tempfile::tempdir().unwrap();
    let plotter = Plotter::default();
    let external = |seed: u8| {
        let mut o = options(18, Strategy::External, seed);
        o.memory = 42 << 20;
        o
    };
    let runs = [
        options(18, Strategy::Memory, 6),
        options(18, Strategy::Memory, 7),
        external(8),
        external(9),
        options(17, Strategy::Memory, 10),
        options(18, Strategy::Memory, 11),
    ];
    // Which runs find all the buffers they need left by the run before
    // (None: some, as an external plot keeps only its resident rounds').
    let reuses = [
        Some(false),
        Some(true),
        Some(false),
        None,
        Some(false),
        Some(false),
    ];
    assert!(plotter.holds_no_buffers());
    for (o, reuses) in runs.into_iter().zip(reuses) {
        let reused = plotter.plot(&o, dir.path(), &NoProgress).unwrap();
        // A plot in memory leaves its buffers for the next.
        if o.strategy == Strategy::Memory {
            assert!(!plotter.holds_no_buffers(), "seed {}", o.seed[0]);
        }
        let fresh = plot(&o, fresh_dir.path(), &NoProgress).unwrap();
        // Only new buffers are brought into use, in a phase of their own.
        assert!(fresh.stats.fresh_memory_bytes > 0);
        // Both plots write their regions, in their last phase.
        for summary in [&reused, &fresh] {
            let last = summary.stats.phases.last().unwrap();
            assert_eq!(last.0, Phase::Writing);
            assert!(summary.stats.file_write_seconds > 0.0);
            assert!(summary.stats.file_write_seconds <= last.1);
        }
        assert_eq!(fresh.stats.phases[0].0, Phase::FirstTouch);
        if let Some(reuses) = reuses {
            assert_eq!(
                reused.stats.fresh_memory_bytes == 0,
                reuses,
                "seed {}",
                o.seed[0]
            );
            assert_eq!(reused.stats.first_touch_seconds() == 0.0, reuses);
        }
        let (a, b) = (
            std::fs::read(&reused.path).unwrap(),
            std::fs::read(&fresh.path).unwrap(),
        );
        assert!(a[4096..] == b[4096..], "plot of seed {} differs", o.seed[0]);
    }
}
