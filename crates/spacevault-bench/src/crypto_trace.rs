//! Crypto traces: every hash, signature and verification one vault
//! performed in a window of time, with when and on what, in a small binary
//! file (docs/PROFILING.md has the format); and the profiling study's three tables
//! from a set of them (tally, concurrency, duplication), with the ideal
//! minimum it wished for.

use crate::BenchError;
use serde::Serialize;
use spacevault_meter::{Kind, Op};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

pub use spacevault_meter::trace::{Trace, TracedOp, MAGIC};

/// Writes a trace to a file of its own.
pub fn write(trace: &Trace, path: &Path) -> Result<(), BenchError> {
    let mut f = std::fs::File::create(path)
        .map_err(|e| BenchError::io(format!("creating {}", path.display()), e))?;
    f.write_all(&trace.encode())
        .map_err(|e| BenchError::io(format!("writing {}", path.display()), e))
}

/// Reads a trace file.
pub fn read(path: &Path) -> Result<Trace, BenchError> {
    let bytes = std::fs::read(path)
        .map_err(|e| BenchError::io(format!("reading {}", path.display()), e))?;
    Trace::decode(&bytes).map_err(|e| BenchError::Invalid(format!("{}: {e}", path.display())))
}

/// Hashes, signatures and verifications.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub hash: u64,
    pub sign: u64,
    pub verify: u64,
}

impl Tally {
    fn add(&mut self, kind: Kind) {
        match kind {
            Kind::Hash => self.hash += 1,
            Kind::Sign => self.sign += 1,
            Kind::Verify => self.verify += 1,
        }
    }
}

/// A vault's repeated work: operations on an input it had already done
/// the same operation on.
#[derive(Clone, Debug, Serialize)]
pub struct Duplication {
    pub vault: u32,
    pub operations: u64,
    pub duplicates: u64,
    /// The share of the vault's crypto time spent on them.
    pub percent_of_time: f64,
    /// Blobs hashed again after a read from disk: necessary, whatever the
    /// input, and never counted as duplicates.
    pub disk_rehashes: u64,
}

/// One operation's necessary count and unit cost.
#[derive(Clone, Debug, Serialize)]
pub struct Necessary {
    pub kind: String,
    pub purpose: String,
    pub operations: u64,
    /// Of them, necessary: each vault's first on each input, and every
    /// re-hash of data read from disk.
    pub necessary: u64,
    /// The median time of one, as measured in the traces.
    pub unit_ns: f64,
}

/// The profiling study's tables and the ideal minimum.
#[derive(Clone, Debug, Serialize)]
pub struct CryptoReport {
    pub vaults: usize,
    pub cores: u32,
    /// From the earliest window start to the latest window end.
    pub window_seconds: f64,
    pub total: Tally,
    pub per_vault: Vec<(u32, Tally)>,
    /// (C, nanoseconds with C operations running at once, all vaults).
    pub concurrency: Vec<(usize, u64)>,
    pub duplication: Vec<Duplication>,
    pub necessary: Vec<Necessary>,
    /// Every operation's time, all vaults, in seconds.
    pub crypto_seconds: f64,
    /// The necessary operations times their unit costs, divided by the
    /// cores: the time the window could not go below.
    pub ideal_minimum_seconds: f64,
}

/// The report of a set of traces (one per vault of one run).
pub fn report(traces: &[Trace]) -> Result<CryptoReport, BenchError> {
    if traces.is_empty() {
        return Err(BenchError::Invalid("no traces to report on".into()));
    }
    let start = traces
        .iter()
        .map(|t| t.window_start_ns)
        .min()
        .expect("some");
    let end = traces.iter().map(|t| t.window_end_ns).max().expect("some");
    let cores = traces.iter().map(|t| t.cores).max().unwrap_or(1).max(1);
    let mut total = Tally::default();
    let mut per_vault = Vec::new();
    let mut duplication = Vec::new();
    let mut durations: HashMap<Op, Vec<u32>> = HashMap::new();
    let mut counts: HashMap<Op, (u64, u64)> = HashMap::new();
    let mut crypto_ns = 0u128;
    for t in traces {
        let mut tally = Tally::default();
        let mut seen: HashSet<(Op, u64)> = HashSet::new();
        let (mut dupes, mut dupe_ns, mut all_ns, mut rehashes) = (0u64, 0u128, 0u128, 0u64);
        for o in &t.ops {
            tally.add(o.op.kind());
            all_ns += o.duration_ns as u128;
            durations.entry(o.op).or_default().push(o.duration_ns);
            let entry = counts.entry(o.op).or_default();
            entry.0 += 1;
            // Data read back from disk must be checked again, whatever was
            // hashed before; an unknown input cannot be called a repeat.
            let necessary = if o.op == Op::HashReread {
                rehashes += 1;
                true
            } else {
                o.input == 0 || seen.insert((o.op, o.input))
            };
            if necessary {
                entry.1 += 1;
            } else {
                dupes += 1;
                dupe_ns += o.duration_ns as u128;
            }
        }
        crypto_ns += all_ns;
        total.hash += tally.hash;
        total.sign += tally.sign;
        total.verify += tally.verify;
        per_vault.push((t.vault, tally));
        duplication.push(Duplication {
            vault: t.vault,
            operations: t.ops.len() as u64,
            duplicates: dupes,
            percent_of_time: if all_ns == 0 {
                0.0
            } else {
                dupe_ns as f64 * 100.0 / all_ns as f64
            },
            disk_rehashes: rehashes,
        });
    }
    let mut necessary: Vec<Necessary> = Op::ALL
        .iter()
        .filter_map(|op| {
            let (operations, needed) = *counts.get(op)?;
            let mut d = durations.remove(op).unwrap_or_default();
            d.sort_unstable();
            Some(Necessary {
                kind: op.kind().name().to_string(),
                purpose: op.purpose().to_string(),
                operations,
                necessary: needed,
                unit_ns: d.get(d.len() / 2).copied().unwrap_or(0) as f64,
            })
        })
        .collect();
    necessary.sort_by(|a, b| (&a.kind, &a.purpose).cmp(&(&b.kind, &b.purpose)));
    let ideal_ns: f64 = necessary
        .iter()
        .map(|n| n.necessary as f64 * n.unit_ns)
        .sum();
    Ok(CryptoReport {
        vaults: traces.len(),
        cores,
        window_seconds: (end - start) as f64 / 1e9,
        total,
        per_vault,
        concurrency: concurrency(traces, start, end),
        duplication,
        necessary,
        crypto_seconds: crypto_ns as f64 / 1e9,
        ideal_minimum_seconds: ideal_ns / cores as f64 / 1e9,
    })
}

/// Time spent with C operations running at once, all vaults together, for
/// C from 0 to the most seen: a sweep over every start and end.
pub fn concurrency(traces: &[Trace], start: u64, end: u64) -> Vec<(usize, u64)> {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for t in traces {
        for o in &t.ops {
            let s = o.start_ns.clamp(start, end);
            let e = (o.start_ns + o.duration_ns as u64).clamp(start, end);
            if e > s {
                events.push((s, 1));
                events.push((e, -1));
            }
        }
    }
    // Ends before starts at one instant: back-to-back operations are not
    // concurrent.
    events.sort_unstable();
    let mut time_at: Vec<u64> = vec![0];
    let (mut running, mut at) = (0i32, start);
    for (t, delta) in events {
        let level = running as usize;
        if time_at.len() <= level {
            time_at.resize(level + 1, 0);
        }
        time_at[level] += t - at;
        at = t;
        running += delta;
    }
    time_at[0] += end.saturating_sub(at);
    time_at.into_iter().enumerate().collect()
}

/// The report as Markdown: the profiling study's three tables, the necessary
/// operations, and the ideal minimum beside the window.
pub fn markdown(r: &CryptoReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} vaults, a window of {:.2} s, {} cores\n",
        r.vaults, r.window_seconds, r.cores
    );
    let _ = writeln!(
        s,
        "### Tally\n\n| | hash | sign | verify |\n|---|---:|---:|---:|"
    );
    let row = |s: &mut String, name: &str, t: &Tally| {
        let _ = writeln!(s, "| {name} | {} | {} | {} |", t.hash, t.sign, t.verify);
    };
    row(&mut s, "total", &r.total);
    for (v, t) in &r.per_vault {
        row(&mut s, &format!("vault {v}"), t);
    }
    let window_ns = (r.window_seconds * 1e9).max(1.0);
    let _ = writeln!(
        s,
        "\n### Concurrency: time with C operations running at once, all vaults\n\n| C | time (ms) | percent |\n|---:|---:|---:|"
    );
    for (c, ns) in &r.concurrency {
        let _ = writeln!(
            s,
            "| {c} | {:.1} | {:.1} |",
            *ns as f64 / 1e6,
            *ns as f64 * 100.0 / window_ns
        );
    }
    let _ = writeln!(
        s,
        "\n### Duplication: a vault's operations on an input it had already done the same operation on\n\nData read back from disk is hashed again whatever was hashed before: those re-hashes are necessary and counted apart.\n\n| vault | operations | duplicates | % of its crypto time | disk re-hashes |\n|---:|---:|---:|---:|---:|"
    );
    for d in &r.duplication {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {} |",
            d.vault, d.operations, d.duplicates, d.percent_of_time, d.disk_rehashes
        );
    }
    let _ = writeln!(
        s,
        "\n### The ideal minimum: necessary operations × unit cost ÷ cores\n\nNecessary: each vault's first operation on each input, and every re-hash of data read from disk. Unit cost: the median time of one, measured in these traces.\n\n| kind | purpose | operations | necessary | unit (µs) | necessary time (s) |\n|---|---|---:|---:|---:|---:|"
    );
    for n in &r.necessary {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2} | {:.3} |",
            n.kind,
            n.purpose,
            n.operations,
            n.necessary,
            n.unit_ns / 1e3,
            n.necessary as f64 * n.unit_ns / 1e9
        );
    }
    let _ = writeln!(
        s,
        "\nCrypto time {:.2} s in all; the ideal minimum {:.3} s on {} cores; the window {:.2} s, {:.1}× the ideal minimum.",
        r.crypto_seconds,
        r.ideal_minimum_seconds,
        r.cores,
        r.window_seconds,
        r.window_seconds / r.ideal_minimum_seconds.max(1e-9)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(vault: u32, ops: Vec<TracedOp>) -> Trace {
        Trace {
            vault,
            cores: 2,
            window_start_ns: 1_000,
            window_end_ns: 2_000,
            ops,
        }
    }

    #[test]
    fn concurrency_sums_to_the_window_and_counts_overlaps() {
        // Vault 0: [1100, 1300); vault 1: [1200, 1400) and [1400, 1500).
        let traces = [
            trace(0, vec![TracedOp::new(Op::HashData, 1_100, 200, 1)]),
            trace(
                1,
                vec![
                    TracedOp::new(Op::HashData, 1_200, 200, 2),
                    TracedOp::new(Op::HashData, 1_400, 100, 3),
                ],
            ),
        ];
        let c = concurrency(&traces, 1_000, 2_000);
        // 0 at once: 1000-1100 and 1500-2000; 1: 1100-1200, 1300-1500; 2: 1200-1300.
        assert_eq!(c, vec![(0, 600), (1, 300), (2, 100)]);
        assert_eq!(c.iter().map(|x| x.1).sum::<u64>(), 1_000);
    }

    #[test]
    fn duplicates_are_repeats_on_one_vault_and_disk_rehashes_never_are() {
        let traces = [
            trace(
                0,
                vec![
                    TracedOp::new(Op::VerifyTx, 1_100, 100, 7),
                    TracedOp::new(Op::VerifyTx, 1_300, 100, 7),
                    TracedOp::new(Op::HashReread, 1_400, 10, 5),
                    TracedOp::new(Op::HashReread, 1_500, 10, 5),
                    TracedOp::new(Op::HashBlock, 1_600, 10, 0),
                    TracedOp::new(Op::HashBlock, 1_700, 10, 0),
                ],
            ),
            // Another vault verifying the same signature is not a repeat.
            trace(1, vec![TracedOp::new(Op::VerifyTx, 1_100, 100, 7)]),
        ];
        let r = report(&traces).unwrap();
        assert_eq!(
            r.total,
            Tally {
                hash: 4,
                sign: 0,
                verify: 3
            }
        );
        let d0 = &r.duplication[0];
        assert_eq!((d0.duplicates, d0.disk_rehashes), (1, 2));
        // 100 of 240 ns.
        assert!((d0.percent_of_time - 100.0 * 100.0 / 240.0).abs() < 1e-9);
        assert_eq!(r.duplication[1].duplicates, 0);
        let verify = r.necessary.iter().find(|n| n.purpose == "tx").unwrap();
        assert_eq!(
            (verify.operations, verify.necessary, verify.unit_ns),
            (3, 2, 100.0)
        );
        // Necessary: 2 verifies of 100 ns, 2 re-reads of 10, 2 block
        // hashes of 10: 240 ns on 2 cores.
        assert!((r.ideal_minimum_seconds - 120e-9).abs() < 1e-15);
        assert!((r.window_seconds - 1e-6).abs() < 1e-15);
    }
}
