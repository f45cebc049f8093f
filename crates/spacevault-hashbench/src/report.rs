//! The suite's results as a table, CSV and Markdown.

use crate::run::Measurement;
use crate::suite::Report;
use std::fmt::Write;

/// 12.3 M/s, 870 k/s.
pub fn rate(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2} G/s", x / 1e9),
        x if x >= 1e6 => format!("{:.2} M/s", x / 1e6),
        x if x >= 1e3 => format!("{:.1} k/s", x / 1e3),
        x => format!("{x:.1} /s"),
    }
}

/// 1.23 GB/s, 456 MB/s (decimal units, as `openssl speed` and the papers use).
pub fn bytes_rate(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} GB/s", x / 1e9)
    } else {
        format!("{:.1} MB/s", x / 1e6)
    }
}

/// 32 B, 1 KiB, 1 MiB.
pub fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn workers(m: &Measurement) -> String {
    if m.processes > 1 {
        format!("{} proc", m.processes)
    } else {
        format!("{} thr", m.threads)
    }
}

/// The human table.
pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} ({} cores, {}), {} s x {} repeats per case",
        r.machine.cpu,
        r.machine.cores,
        r.machine.simd,
        r.settings.duration_seconds,
        r.settings.repeats
    );
    for c in r.checks.iter().filter(|c| !c.passed) {
        let _ = writeln!(
            s,
            "NOT TIMED {}/{}: {}",
            c.algo,
            c.backend,
            c.error.as_deref().unwrap_or("failed its test vectors")
        );
    }
    let _ = writeln!(
        s,
        "{:<12} {:<11} {:>8} {:>8} {:>13} {:>25} {:>12} {:>6}",
        "algorithm", "impl", "size", "workers", "hashes/s", "(min .. max)", "throughput", "eff"
    );
    for m in &r.measurements {
        let h = m.hashes_per_second;
        let _ = writeln!(
            s,
            "{:<12} {:<11} {:>8} {:>8} {:>13} {:>25} {:>12} {:>6}",
            m.algo.name(),
            m.backend.name(),
            size(m.size),
            workers(m),
            rate(h.median),
            format!("({} .. {})", rate(h.min), rate(h.max)),
            bytes_rate(m.bytes_per_second.median),
            m.scaling_efficiency
                .map_or(String::new(), |e| format!("{e:.2}"))
        );
    }
    if !r.memory.is_empty() {
        let _ = writeln!(s, "\npeak memory, one hashing thread in a process of its own (baseline process: {:.1} MiB)", r.memory[0].baseline_rss_bytes as f64 / (1 << 20) as f64);
        for m in &r.memory {
            let _ = writeln!(
                s,
                "{:<12} {:<11} {:>8} {:>9.1} MiB",
                m.algo.name(),
                m.backend.name(),
                size(m.size),
                m.peak_rss_bytes as f64 / (1 << 20) as f64
            );
        }
    }
    s
}

pub const CSV_HEADER: &str = "algorithm,implementation,size_bytes,threads,processes,hashes_per_second_min,hashes_per_second_median,hashes_per_second_max,bytes_per_second_min,bytes_per_second_median,bytes_per_second_max,scaling_efficiency";

pub fn csv(r: &Report) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    for m in &r.measurements {
        let (h, b) = (m.hashes_per_second, m.bytes_per_second);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{:.1},{:.1},{:.1},{:.1},{:.1},{:.1},{}",
            m.algo.name(),
            m.backend.name(),
            m.size,
            m.threads,
            m.processes,
            h.min,
            h.median,
            h.max,
            b.min,
            b.median,
            b.max,
            m.scaling_efficiency
                .map_or(String::new(), |e| format!("{e:.4}"))
        );
    }
    s
}

pub fn markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Machine: {} ({} cores, {} SIMD); {} s x {} repeats per case, median (min to max).\n",
        r.machine.cpu,
        r.machine.cores,
        r.machine.simd,
        r.settings.duration_seconds,
        r.settings.repeats
    );
    let _ = writeln!(s, "| algorithm | implementation | size | workers | hashes/s | min to max | throughput | scaling efficiency |");
    let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for m in &r.measurements {
        let h = m.hashes_per_second;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} to {} | {} | {} |",
            m.algo.name(),
            m.backend.name(),
            size(m.size),
            workers(m),
            rate(h.median),
            rate(h.min),
            rate(h.max),
            bytes_rate(m.bytes_per_second.median),
            m.scaling_efficiency
                .map_or(String::new(), |e| format!("{e:.2}"))
        );
    }
    if !r.memory.is_empty() {
        let _ = writeln!(
            s,
            "\n| algorithm | implementation | size | peak RSS | baseline process |"
        );
        let _ = writeln!(s, "| --- | --- | ---: | ---: | ---: |");
        for m in &r.memory {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.1} MiB | {:.1} MiB |",
                m.algo.name(),
                m.backend.name(),
                size(m.size),
                m.peak_rss_bytes as f64 / (1 << 20) as f64,
                m.baseline_rss_bytes as f64 / (1 << 20) as f64
            );
        }
    }
    s
}
