//! What `spacevault stress` writes: a CSV row a run, a Markdown summary
//! (machine, settings, command, the grid of times), and the heatmap of
//! time to run over vaults × clients.

use crate::heatmap::Heatmap;
use crate::stress::{Cell, OpKind, StressReport};
use std::fmt::Write;

pub const CSV_HEADER: &str = "vaults,clients,repeat,seconds,network_start_seconds,operations,errors,lost,wrong,put_immutable_p50_ms,put_immutable_p99_ms,put_mutable_p50_ms,put_mutable_p99_ms,get_immutable_p50_ms,get_immutable_p99_ms,get_mutable_p50_ms,get_mutable_p99_ms,cpu_seconds,cost_usd,reorgs,deepest_reorg,blocks_produced,height,clients_cpu_seconds";

fn opt(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_default()
}

/// One line a run of a cell.
pub fn csv(report: &StressReport) -> String {
    let mut s = format!("{CSV_HEADER}\n");
    for c in &report.cells {
        let lost: usize = OpKind::ALL.iter().map(|&k| c.figures(k).lost).sum();
        let wrong: usize = OpKind::ALL.iter().map(|&k| c.figures(k).wrong).sum();
        let _ = write!(
            s,
            "{},{},{},{:.3},{:.3},{},{},{},{}",
            c.vaults,
            c.clients,
            c.repeat,
            c.seconds,
            c.network_start_seconds,
            c.operations,
            c.errors(),
            lost,
            wrong
        );
        for k in OpKind::ALL {
            let l = c.figures(k).latency_ms;
            let _ = write!(s, ",{},{}", opt(l.map(|l| l.median)), opt(l.map(|l| l.p99)));
        }
        let _ = writeln!(
            s,
            ",{},{},{},{},{},{},{}",
            opt(c.cpu_seconds),
            opt(c.cost_usd),
            c.reorgs,
            c.deepest_reorg,
            c.blocks_produced,
            c.height,
            opt(c.clients_cpu_seconds)
        );
    }
    s
}

/// The heatmap of median time to run, vaults up, clients across.
pub fn heatmap(report: &StressReport, scale_max: f64) -> String {
    let o = &report.options;
    let values = o
        .vaults
        .iter()
        .map(|&v| {
            o.clients
                .iter()
                .map(|&c| report.median_seconds(v, c))
                .collect()
        })
        .collect();
    let failed = o
        .vaults
        .iter()
        .map(|&v| {
            o.clients
                .iter()
                .map(|&c| match report.lost_or_wrong(v, c) {
                    0 => None,
                    n => Some(format!("{n} bad")),
                })
                .collect()
        })
        .collect();
    let subtitle = format!(
        "{}\n{} blobs and {} registers of {} B a client; distance: {}",
        report.machine.describe(),
        o.immutable,
        o.mutable,
        o.size,
        o.distance.name()
    );
    Heatmap {
        title: "Client stress test: time to run",
        subtitle: &subtitle,
        x_label: "concurrent clients",
        y_label: "vaults",
        xs: o.clients.iter().map(|c| c.to_string()).collect(),
        ys: o.vaults.iter().map(|v| v.to_string()).collect(),
        values,
        failed,
        scale_max,
        unit: "seconds",
        failed_note: "red frame: N operations lost or wrong (summary.md)",
    }
    .svg()
}

fn cell_line(c: &Cell) -> String {
    let lat = |k: OpKind| {
        c.figures(k)
            .latency_ms
            .map(|l| format!("{:.1} / {:.1}", l.median, l.p99))
            .unwrap_or_else(|| "–".into())
    };
    let trouble = c.lost_or_wrong() + c.errors();
    let blocks_a_height = if c.height == 0 {
        "–".to_string()
    } else {
        format!("{:.2}", c.blocks_produced as f64 / c.height as f64)
    };
    format!(
        "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} ({}) | {} | {}{} |",
        c.vaults,
        c.clients,
        c.repeat,
        c.seconds,
        c.operations,
        lat(OpKind::PutImmutable),
        lat(OpKind::PutMutable),
        lat(OpKind::GetImmutable),
        lat(OpKind::GetMutable),
        c.reorgs,
        c.deepest_reorg,
        blocks_a_height,
        if trouble == 0 {
            "none".to_string()
        } else {
            format!(
                "**{} errors, {} lost or wrong**",
                c.errors(),
                c.lost_or_wrong()
            )
        },
        c.cost_usd
            .map(|u| format!(" (${u:.5})"))
            .unwrap_or_default()
    )
}

/// The summary a reader opens first.
pub fn markdown(report: &StressReport, command: &str, date: &str) -> String {
    let o = &report.options;
    let mut s = String::new();
    let _ = writeln!(s, "# spacevault stress, {date}\n");
    let _ = writeln!(s, "- machine: {}", report.machine.describe());
    let _ = writeln!(s, "- command: `{command}`");
    let _ = writeln!(
        s,
        "- each client: {} immutable blobs and {} registers of {} bytes, {} operations in flight; PUT everything, then GET everything back",
        o.immutable, o.mutable, o.size, o.in_flight
    );
    match &o.network {
        Some(apis) => {
            let _ = writeln!(
                s,
                "- network: {} vaults already running, attached through their APIs ({}); their plots, proofs and processes are theirs, the chain's {} ms slots and {} copies a blob; {} run(s) a cell",
                apis.len(),
                apis.join(", "),
                o.slot_ms,
                o.replication,
                o.repeats
            );
        }
        None => {
            let _ = writeln!(
                s,
                "- network: k={} plots of the {} scheme, {} ms slots, {} copies a blob, verify cache {}, {}, {} run(s) a cell",
                o.k,
                o.scheme.name(),
                o.slot_ms,
                o.replication,
                if o.verify_cache { "on" } else { "off" },
                match (&o.mode, o.shared_slot_checks) {
                    (crate::launch::Mode::InProcess, true) => "every vault in one process (in-memory transport; each slot's output checked once for all, as vaults on machines of their own each check it once)",
                    (crate::launch::Mode::InProcess, false) => "every vault in one process (in-memory transport; each vault checks every slot's output)",
                    (crate::launch::Mode::Processes { .. }, _) => "a process a vault (loopback TCP)",
                },
                o.repeats
            );
        }
    }
    let _ = writeln!(
        s,
        "- clients: {}",
        match o.clients_mode {
            crate::launch::Mode::InProcess => "in this process",
            crate::launch::Mode::Processes { .. } => {
                "each in a process of its own (`spacevault stress client`), their CPU counted apart"
            }
        }
    );
    if o.network.is_none() {
        let _ = writeln!(
            s,
            "- distance: {}{}",
            o.distance.name(),
            if o.distance.adds_nothing() {
                " (nothing added to the transport)"
            } else {
                " (each vault holds what it reads from a peer for the delay between their regions, with jitter, at the capped rate: applied in the transport, as this kernel has no netem)"
            }
        );
    }
    s.push('\n');
    let _ = writeln!(s, "## Time to run (median seconds), vaults × clients\n");
    let _ = write!(s, "| vaults \\ clients |");
    for c in &o.clients {
        let _ = write!(s, " {c} |");
    }
    let _ = write!(s, "\n|---|");
    for _ in &o.clients {
        let _ = write!(s, "---:|");
    }
    s.push('\n');
    for &v in &o.vaults {
        let _ = write!(s, "| {v} |");
        for &c in &o.clients {
            let bad = report.lost_or_wrong(v, c);
            match report.median_seconds(v, c) {
                Some(t) if bad > 0 => {
                    let _ = write!(s, " {t:.2} **{bad} lost/wrong** |");
                }
                Some(t) => {
                    let _ = write!(s, " {t:.2} |");
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "\n## Every run\n\nLatencies are p50 / p99 in milliseconds over the operations that succeeded. Reorgs: changes of branch in all vaults together from the network's start, and the most blocks one took off a vault's chain. Blocks a height: blocks the vaults signed, all together, for each height of the chain (1 where one proof was eligible in each slot that made a block).\n"
    );
    let _ = writeln!(
        s,
        "| vaults | clients | run | seconds | operations | PUT immutable | PUT mutable | GET immutable | GET mutable | reorgs (deepest) | blocks a height | trouble |"
    );
    let _ = writeln!(
        s,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    for c in &report.cells {
        let _ = writeln!(s, "{}", cell_line(c));
    }
    let cores = report.machine.cores.max(1) as f64;
    let _ = writeln!(
        s,
        "\n## Cryptographic operations during the clients' work\n\nAll vaults together. The last column is every operation's time divided by the machine's {cores} cores: how long the run would take if it did nothing but its crypto, perfectly in parallel.\n"
    );
    let _ = writeln!(
        s,
        "| vaults | clients | run | hashes | signs | verifies | verifies saved by the cache (time) | crypto seconds | ÷ cores, against the time to run |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in &report.cells {
        let (h, _) = c.crypto_of("hash");
        let (g, _) = c.crypto_of("sign");
        let (v, _) = c.crypto_of("verify");
        let total = c.crypto_seconds();
        // A hit saves what a verification of its kind costs on average.
        let (hits, saved) = c
            .crypto
            .iter()
            .filter(|t| t.kind == "verify" && t.count > 0)
            .fold((0, 0.0), |(n, s), t| {
                (
                    n + t.cache_hits,
                    s + t.cache_hits as f64 * t.seconds / t.count as f64,
                )
            });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {h} | {g} | {v} | {hits} ({saved:.4} s) | {total:.4} | {:.4} s of {:.2} s ({:.2}%) |",
            c.vaults,
            c.clients,
            c.repeat,
            total / cores,
            c.seconds,
            100.0 * total / cores / c.seconds.max(1e-9)
        );
    }
    where_the_time_goes(&mut s, report);
    let errors: Vec<String> = report
        .cells
        .iter()
        .flat_map(|c| {
            OpKind::ALL.iter().filter_map(move |&k| {
                c.figures(k).first_error.as_ref().map(|e| {
                    format!(
                        "- {} vaults, {} clients, run {}, {}: {e}",
                        c.vaults,
                        c.clients,
                        c.repeat,
                        k.name()
                    )
                })
            })
        })
        .collect();
    let traced: Vec<&Cell> = report
        .cells
        .iter()
        .filter(|c| c.crypto_trace.is_some())
        .collect();
    if let Some(largest) = traced.iter().max_by_key(|c| (c.vaults, c.clients)) {
        let _ = writeln!(
            s,
            "\n## Time to run against the ideal minimum (crypto traces)\n\nThe ideal minimum: each vault's necessary crypto operations (its first on each input, and every re-hash of data read from disk) times their unit cost measured in the same traces, divided by the cores. Traces are in `traces/`; `spacevault report traces/vV-cC-rR` prints these tables for any cell.\n\n| vaults | clients | run | time to run (s) | crypto (s) | ideal minimum (s) | time ÷ ideal |\n|---:|---:|---:|---:|---:|---:|---:|"
        );
        for c in &traced {
            let t = c.crypto_trace.as_ref().expect("filtered");
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2} | {:.2} | {:.3} | {:.1} |",
                c.vaults,
                c.clients,
                c.repeat,
                c.seconds,
                t.crypto_seconds,
                t.ideal_minimum_seconds,
                c.seconds / t.ideal_minimum_seconds.max(1e-9)
            );
        }
        let _ = writeln!(
            s,
            "\n## Crypto tables for {} vaults × {} clients\n\n{}",
            largest.vaults,
            largest.clients,
            crate::crypto_trace::markdown(largest.crypto_trace.as_ref().expect("filtered"))
        );
    }
    // The largest network has the most pairs of regions to show.
    if let Some(c) = report
        .cells
        .iter()
        .filter(|c| !c.round_trips.is_empty())
        .max_by_key(|c| (c.vaults, c.clients))
    {
        let _ = writeln!(
            s,
            "\n## Round trips between regions ({} vaults × {} clients), median of each vault's last ping of each peer\n",
            c.vaults, c.clients
        );
        for t in &c.round_trips {
            let _ = writeln!(s, "- {}", t.describe());
        }
    }
    over_time(&mut s, report);
    if !errors.is_empty() {
        let _ = writeln!(s, "\n## First error of each kind\n");
        for e in errors {
            let _ = writeln!(s, "{e}");
        }
    }
    s
}

/// Where a run's time-series chart goes, under the output directory.
pub fn timeline_path(c: &Cell) -> String {
    format!("timelines/v{}-c{}-r{}.svg", c.vaults, c.clients, c.repeat)
}

/// Each run's time-series chart: (path under the output directory, SVG).
pub fn timeline_charts(report: &StressReport) -> Vec<(String, String)> {
    report
        .cells
        .iter()
        .map(|c| {
            let title = format!(
                "{} vaults × {} clients, run {}: over the run's time",
                c.vaults, c.clients, c.repeat
            );
            let chart =
                crate::stress_timeline::svg(&c.timeline, &title, &report.machine.describe());
            (timeline_path(c), chart)
        })
        .collect()
}

/// Every run's slices, a row each.
pub fn timeline_csv(report: &StressReport) -> String {
    let mut s =
        String::from("vaults,clients,repeat,start_seconds,seconds,ok,failed,p50_ms,p99_ms\n");
    for c in &report.cells {
        for (i, b) in c.timeline.bins.iter().enumerate() {
            let _ = writeln!(
                s,
                "{},{},{},{:.3},{:.3},{},{},{},{}",
                c.vaults,
                c.clients,
                c.repeat,
                b.start_seconds,
                c.timeline.length(i),
                b.ok,
                b.failed,
                opt(b.p50_ms),
                opt(b.p99_ms)
            );
        }
    }
    s
}

/// Each run's pace at its start and its end, and the chart of the
/// longest run: a machine that slows down part way shows here, not in
/// the averages.
fn over_time(s: &mut String, report: &StressReport) {
    let _ = writeln!(
        s,
        "\n## Over the run's time\n\nSuccessful operations a second in the first and the last quarter of each run, and the range of the median latency over its slices; `timelines/` has a chart a run, `timeline.csv` the slices. The clients PUT everything before they GET it back, so within a run the quarters compare different operations; between machines, settings or repeats of one cell they compare like with like.\n"
    );
    let _ = writeln!(
        s,
        "| vaults | clients | run | slice (s) | first quarter (ops/s) | last quarter (ops/s) | last ÷ first | median latency over slices (ms) | chart |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for c in &report.cells {
        let t = &c.timeline;
        let first = t.rate_between(0.0, 0.25);
        let last = t.rate_between(0.75, 1.0);
        let ratio = match (first, last) {
            (Some(f), Some(l)) if f > 0.0 => format!("{:.2}", l / f),
            _ => "–".into(),
        };
        let range = t
            .p50_range_ms()
            .map(|(lo, hi)| format!("{lo:.1} to {hi:.1}"))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {ratio} | {range} | [svg]({}) |",
            c.vaults,
            c.clients,
            c.repeat,
            t.bin_seconds,
            first
                .map(|f| format!("{f:.1}"))
                .unwrap_or_else(|| "–".into()),
            last.map(|f| format!("{f:.1}"))
                .unwrap_or_else(|| "–".into()),
            timeline_path(c)
        );
    }
    if let Some(longest) = report
        .cells
        .iter()
        .max_by(|a, b| a.seconds.total_cmp(&b.seconds))
    {
        let _ = writeln!(
            s,
            "\nThe longest run, {} vaults × {} clients:\n\n![operations a second and latency over the run]({})",
            longest.vaults,
            longest.clients,
            timeline_path(longest)
        );
    }
}

/// The UTC date of a Unix time, `YYYY-MM-DD` (the civil calendar from a
/// day count, as Howard Hinnant's `civil_from_days`).
pub fn utc_date(unix_seconds: u64) -> String {
    let z = (unix_seconds / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// About the shortest a run can take waiting on the chain alone: the
/// register writes go in rounds of `in_flight`, and each is answered a
/// block to include it and `SETTLED_DEPTH` more after it was sent, each
/// block the chain's interval of slots on average (the launcher keeps the
/// spec's default; an attached network has its own; blocks come at random,
/// so a run may be a little quicker or slower). The blobs' share is milliseconds.
pub fn slot_floor_seconds(o: &crate::stress::StressOptions) -> f64 {
    let rounds = o.mutable.div_ceil(o.in_flight.max(1));
    let blocks = rounds as u64 * (spacevault_node::api::SETTLED_DEPTH + 1);
    let slots = blocks * block_interval_slots(o);
    slots as f64 * o.slot_ms as f64 / 1000.0
}

/// Slots a block on average: the attached network's, or the spec's
/// default that the launcher keeps.
fn block_interval_slots(o: &crate::stress::StressOptions) -> u64 {
    o.block_interval_slots
        .unwrap_or(spacevault_chain::spec::DEFAULT_BLOCK_INTERVAL_SLOTS)
}

/// Each cell's time beside what bounds it from below: the slots its
/// register writes wait for, the machine's cores kept busy, and the part
/// of that which was cryptography.
fn where_the_time_goes(s: &mut String, report: &StressReport) {
    let cores = report.machine.cores.max(1) as f64;
    let floor = slot_floor_seconds(&report.options);
    let _ = writeln!(
        s,
        "\n## Where the time goes\n\nSlot floor: {floor:.1} s for every cell, the register writes' rounds ({} writes, {} in flight) times {} blocks each (a block to include a write, {} more to settle it) of {} slots each on average: whatever the machine, a run at these settings waits about this long on the chain (blocks come at random, so a little more or less). CPU busy: every vault's CPU time during the clients' work divided by the {cores} cores; near 100% of the time to run, the run is bound by the CPU, and what that time is spent on beyond its crypto is messaging (gossip, requests, the HTTP API), storage and the async runtime (for attached vaults, the sum of their processes' CPU over this machine's cores). Clients' CPU: the client processes' CPU time, or this process's during the work where the vaults run apart from it (their own processes, or attached), and its share of the vaults' and clients' together. Ideal minimum: the necessary crypto alone (traced cells only).\n",
        report.options.mutable,
        report.options.in_flight,
        spacevault_node::api::SETTLED_DEPTH + 1,
        spacevault_node::api::SETTLED_DEPTH,
        block_interval_slots(&report.options),
    );
    let _ = writeln!(
        s,
        "| vaults | clients | run | time to run (s) | ÷ slot floor | CPU busy (s, % of the time) | of which crypto (s) | clients' CPU (s, share) | ideal minimum (s) |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for c in &report.cells {
        let busy = match c.cpu_seconds {
            Some(cpu) => format!(
                "{:.2} ({:.0}%)",
                cpu / cores,
                100.0 * cpu / cores / c.seconds.max(1e-9)
            ),
            None => "–".into(),
        };
        let crypto = c.crypto_seconds();
        let ideal = c
            .crypto_trace
            .as_ref()
            .map(|t| format!("{:.2}", t.ideal_minimum_seconds))
            .unwrap_or_else(|| "–".into());
        let over_floor = if floor > 0.0 {
            format!("{:.1}", c.seconds / floor)
        } else {
            "–".into()
        };
        let clients = match (c.clients_cpu_seconds, c.cpu_seconds) {
            (Some(own), Some(vaults)) if own + vaults > 0.0 => {
                format!("{own:.2} ({:.1}%)", 100.0 * own / (own + vaults))
            }
            (Some(own), _) => format!("{own:.2}"),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.2} | {over_floor} | {busy} | {:.2} | {clients} | {ideal} |",
            c.vaults,
            c.clients,
            c.repeat,
            c.seconds,
            crypto / cores,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_of_known_days() {
        assert_eq!(utc_date(0), "1970-01-01");
        assert_eq!(utc_date(951_782_400), "2000-02-29");
        assert_eq!(utc_date(1_795_564_800 + 86_399), "2026-11-25");
    }

    #[test]
    fn the_slot_floor_is_the_register_rounds_times_three_slots() {
        let mut o = crate::stress::StressOptions {
            vaults: vec![1],
            clients: vec![1],
            immutable: 100,
            mutable: 100,
            size: 1024,
            in_flight: 8,
            k: 16,
            scheme: spacevault_chain::ProofKind::Plain,
            slot_ms: 500,
            pot_iterations: None,
            replication: 4,
            mode: crate::launch::Mode::InProcess,
            repeats: 1,
            price_per_hour: None,
            verify_cache: true,
            shared_slot_checks: true,
            distance: Default::default(),
            trace_dir: None,
            dir: "x".into(),
            network: None,
            block_interval_slots: None,
            clients_mode: crate::launch::Mode::InProcess,
        };
        // 13 rounds (the last of 4 writes), 3 blocks of 2 slots each.
        assert_eq!(slot_floor_seconds(&o), 39.0);
        o.in_flight = 100;
        assert_eq!(slot_floor_seconds(&o), 3.0);
        // An attached network's block a slot.
        o.block_interval_slots = Some(1);
        assert_eq!(slot_floor_seconds(&o), 1.5);
        o.mutable = 0;
        assert_eq!(slot_floor_seconds(&o), 0.0);
    }
}
