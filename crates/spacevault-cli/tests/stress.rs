//! `spacevault stress` on a grid small enough for the test suite.

mod common;

use common::*;
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn stress_runs_a_small_grid_and_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = sv(&dir.path().join("cfg"))
        .args([
            "stress",
            "--vaults",
            "1,3",
            "--clients",
            "1,2",
            "--immutable",
            "4",
            "--mutable",
            "2",
            "--size",
            "2KiB",
            "--in-flight",
            "2",
            "--price-per-hour",
            "0.5",
            // Half the default slot: the grid's register writes settle in
            // half the time.
            "--slot-ms",
            "500",
            "--json",
            "--dir",
        ])
        .arg(dir.path().join("bench"))
        .arg("--out")
        .arg(&out_dir)
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4, "{r}");
    for c in cells {
        let clients = c["clients"].as_u64().unwrap();
        // Each client: 4 blobs and 2 registers, each put and got back.
        assert_eq!(c["operations"].as_u64().unwrap(), clients * 12, "{c}");
        for op in [
            "put_immutable",
            "put_mutable",
            "get_immutable",
            "get_mutable",
        ] {
            assert_eq!(c[op]["errors"], 0, "{c}");
            assert_eq!(c[op]["lost"], 0, "{c}");
            assert_eq!(c[op]["wrong"], 0, "{c}");
        }
        assert_eq!(c["get_immutable"]["ok"].as_u64().unwrap(), clients * 4);
        let seconds = c["seconds"].as_f64().unwrap();
        let cost = c["cost_usd"].as_f64().unwrap();
        assert!((cost - 0.5 * seconds / 3600.0).abs() < 1e-9, "{c}");
    }
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.starts_with("vaults,clients,repeat,seconds"));
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(
        summary.contains("| vaults \\ clients | 1 | 2 |"),
        "{summary}"
    );
    assert!(
        summary.contains("stress --vaults 1,3"),
        "the command is recorded"
    );
    let svg = std::fs::read_to_string(out_dir.join("heatmap-time.svg")).unwrap();
    assert!(svg.contains("concurrent clients") && svg.contains(">240<"));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(json["cells"].as_array().unwrap().len(), 4);
    // Every operation of a run is in its time series, each once.
    for c in cells {
        let bins = c["timeline"]["bins"].as_array().unwrap();
        let finished: u64 = bins
            .iter()
            .map(|b| b["ok"].as_u64().unwrap() + b["failed"].as_u64().unwrap())
            .sum();
        assert_eq!(finished, c["operations"].as_u64().unwrap(), "{c}");
        let (v, n) = (
            c["vaults"].as_u64().unwrap(),
            c["clients"].as_u64().unwrap(),
        );
        let chart = out_dir.join(format!("timelines/v{v}-c{n}-r0.svg"));
        assert!(std::fs::read_to_string(&chart)
            .unwrap()
            .contains("latency (ms)"));
    }
    assert!(summary.contains("## Over the run's time"), "{summary}");
    let series = std::fs::read_to_string(out_dir.join("timeline.csv")).unwrap();
    assert!(series.starts_with("vaults,clients,repeat,start_seconds"));
}

/// A `results.json` as `stress` writes it, cut to what a comparison reads
/// and one field it does not.
fn results(dir: &std::path::Path, cpu: &str, cells: &[(u64, u64, f64, u64)]) {
    let op = |lost| serde_json::json!({"ok": 1, "errors": 0, "lost": lost, "wrong": 0});
    let cells: Vec<Value> = cells
        .iter()
        .map(|&(v, c, seconds, lost)| {
            serde_json::json!({
                "vaults": v, "clients": c, "repeat": 0, "seconds": seconds,
                "put_immutable": op(0), "put_mutable": op(0),
                "get_immutable": op(lost), "get_mutable": op(0),
                "timeline": {"bin_seconds": 1.0, "bins": []},
            })
        })
        .collect();
    let json = serde_json::json!({
        "machine": {"cpu": cpu, "cores": 2, "memory_bytes": 1u64 << 34, "simd": "avx2"},
        "options": {"immutable": 100, "mutable": 100, "size": 1024, "price_per_hour": null},
        "cells": cells,
    });
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("results.json"), json.to_string()).unwrap();
}

#[test]
fn stress_compare_ranks_machines_and_draws_them_on_one_scale() {
    let dir = tempfile::tempdir().unwrap();
    let (desk, laptop) = (dir.path().join("desktop"), dir.path().join("laptop"));
    results(&desk, "desk cpu", &[(8, 1, 10.0, 0), (32, 20, 100.0, 0)]);
    // The laptop lost data in a cell the ranking at 32x20 leaves out.
    results(&laptop, "lap cpu", &[(8, 1, 30.0, 2), (32, 20, 150.0, 0)]);
    let out_dir = dir.path().join("cmp");
    let out = sv(&dir.path().join("cfg"))
        .args(["stress", "compare"])
        .arg(&laptop)
        .arg(format!("desk={}", desk.display()))
        .args([
            "--cell",
            "32x20",
            "--price",
            "desk=0.72",
            "--price",
            "laptop=0.18",
        ])
        .arg("--out")
        .arg(&out_dir)
        .args(["--json"])
        .assert()
        .success();
    let c: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(c["labels"], serde_json::json!(["laptop", "desk"]));
    assert_eq!(c["by_time"][0]["label"], "desk");
    assert!((c["by_time"][0]["ratio"].as_f64().unwrap() - 100.0 / 150.0).abs() < 1e-9);
    // 150 s at $0.18 an hour is cheaper than 100 s at $0.72.
    assert_eq!(c["by_cost"][0]["label"], "laptop");
    assert_eq!(c["scale_max"], 200.0);
    for f in [
        "compare.md",
        "compare.json",
        "heatmap-laptop.svg",
        "heatmap-desk.svg",
        "ratio-desk.svg",
    ] {
        assert!(out_dir.join(f).exists(), "{f}");
    }
    let md = std::fs::read_to_string(out_dir.join("compare.md")).unwrap();
    assert!(
        md.contains("| 8 | 1 | 30.00 **2 failed** | 10.00 (0.33) |"),
        "{md}"
    );
    assert!(std::fs::read_to_string(out_dir.join("heatmap-laptop.svg"))
        .unwrap()
        .contains("2 failed"));
    // What cannot be compared says why, in a line.
    for (args, says) in [
        (vec![laptop.display().to_string()], "required"),
        (
            vec![
                laptop.display().to_string(),
                dir.path().join("none").display().to_string(),
            ],
            "reading",
        ),
        (
            vec![
                laptop.display().to_string(),
                desk.display().to_string(),
                "--cell".into(),
                "8x2".into(),
            ],
            "did not run",
        ),
        (
            vec![
                laptop.display().to_string(),
                desk.display().to_string(),
                "--price".into(),
                "x=1".into(),
            ],
            "no run is named x",
        ),
    ] {
        let out = sv(&dir.path().join("cfg"))
            .args(["stress", "compare"])
            .args(&args)
            .arg("--out")
            .arg(&out_dir)
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    std::fs::write(desk.join("results.json"), "{\"cells\": 3}").unwrap();
    let out = sv(&dir.path().join("cfg"))
        .args(["stress", "compare"])
        .arg(&laptop)
        .arg(&desk)
        .arg("--out")
        .arg(&out_dir)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains("not the results.json of a stress run"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn stress_refuses_a_grid_that_would_do_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (args, says) in [
        (vec!["--in-flight", "0"], "--in-flight"),
        (vec!["--immutable", "0", "--mutable", "0"], "do nothing"),
        (vec!["--vaults", "0,2"], "--vaults"),
        (vec!["--scale-max", "0"], "--scale-max"),
        (
            vec!["--latency", "/no/such/matrix"],
            "not lan, continent or global",
        ),
        (vec!["--bandwidth", "fast"], "--bandwidth"),
    ] {
        let out = sv(&dir.path().join("cfg"))
            .arg("stress")
            .args(&args)
            .arg("--out")
            .arg(dir.path().join("out"))
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

/// Runs one traced cell of `vaults` x `clients` (3 blobs and a register a
/// client, `extra` settings) and reads its traces back with `spacevault
/// report --json`: the output directory and the report.
fn traced_cell(
    dir: &std::path::Path,
    vaults: usize,
    clients: usize,
    extra: &[&str],
) -> (std::path::PathBuf, Value) {
    let out_dir = dir.join("out");
    let (v, c) = (vaults.to_string(), clients.to_string());
    sv(&dir.join("cfg"))
        .args([
            "stress",
            "--vaults",
            &v,
            "--clients",
            &c,
            "--immutable",
            "3",
            "--mutable",
            "1",
            "--slot-ms",
            "500",
            "--trace-crypto",
        ])
        .args(extra)
        .arg("--dir")
        .arg(dir.join("bench"))
        .arg("--out")
        .arg(&out_dir)
        .assert()
        .success();
    let traces = out_dir.join("traces").join(format!("v{v}-c{c}-r0"));
    assert_eq!(
        std::fs::read_dir(&traces).unwrap().count(),
        vaults,
        "a trace a vault"
    );
    let out = sv(&dir.join("cfg"))
        .arg("report")
        .arg(&traces)
        .arg("--json")
        .assert()
        .success();
    let report = serde_json::from_slice(&out.get_output().stdout).unwrap();
    (out_dir, report)
}

#[test]
fn a_traced_cell_across_a_continent_reports_seed_004s_tables() {
    let dir = tempfile::tempdir().unwrap();
    let (out_dir, r) = traced_cell(dir.path(), 4, 2, &["--latency", "continent"]);
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    for part in [
        "distance: continent",
        "## Round trips between regions",
        "virginia–california: set 62.0 ms",
        "## Time to run against the ideal minimum",
        "### Concurrency",
    ] {
        assert!(summary.contains(part), "{part}: {summary}");
    }
    assert_eq!(r["vaults"], 4);
    // 6 blobs of 3 were put, each hashed where it arrived: some hashes.
    assert!(r["total"]["hash"].as_u64().unwrap() > 0, "{r}");
    let time_at: u64 = r["concurrency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[1].as_u64().unwrap())
        .sum();
    let window_ns = r["window_seconds"].as_f64().unwrap() * 1e9;
    assert!((time_at as f64 - window_ns).abs() < 1e6, "{r}");
    // A file that is not a trace is named.
    let bad = dir.path().join("bad.svtrace");
    std::fs::write(&bad, b"not a trace").unwrap();
    let out = sv(&dir.path().join("cfg"))
        .arg("report")
        .arg(&bad)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("SVTRACE3"), "{stderr}");
}

#[test]
fn clients_in_processes_of_their_own_report_their_cpu_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = sv(&dir.path().join("cfg"))
        .args([
            "stress",
            "--vaults",
            "2",
            "--clients",
            "3",
            "--clients-mode",
            "processes",
        ])
        .args([
            "--immutable",
            "3",
            "--mutable",
            "1",
            "--slot-ms",
            "500",
            "--json",
        ])
        .arg("--dir")
        .arg(dir.path().join("bench"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let c = &r["cells"][0];
    assert_eq!(c["operations"], 3 * 8, "{c}");
    assert_eq!(c["get_immutable"]["ok"], 9, "{c}");
    assert_eq!(c["get_mutable"]["ok"], 3, "{c}");
    // Each client process's own CPU, and the vaults' (this process's)
    // without it.
    assert!(c["clients_cpu_seconds"].as_f64().unwrap() > 0.0, "{c}");
    assert!(c["cpu_seconds"].as_f64().unwrap() > 0.0, "{c}");
    // The clients' records on the run's clock: every one in its series.
    let finished: u64 = c["timeline"]["bins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["ok"].as_u64().unwrap() + b["failed"].as_u64().unwrap())
        .sum();
    assert_eq!(finished, 24);
    // A job that is not one is refused in a line.
    let out = sv(&dir.path().join("cfg"))
        .args(["stress", "client"])
        .write_stdin("{}")
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(stderr.contains("not a client's"), "{stderr}");
}

#[test]
fn vaults_in_processes_of_their_own_serve_their_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (_, r) = traced_cell(dir.path(), 2, 1, &["--mode", "processes"]);
    assert_eq!(r["vaults"], 2);
    // Three blobs, each hashed where it arrived and at its holders, and a
    // register write signed and verified.
    assert!(r["total"]["hash"].as_u64().unwrap() >= 3, "{r}");
    assert!(r["total"]["verify"].as_u64().unwrap() >= 1, "{r}");
}

/// A process's state letter and parent, from `/proc/PID/stat`; none once
/// it is gone.
fn state_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (name) state ppid …`, where the name may hold anything.
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    Some((state, fields.next()?.parse().ok()?))
}

/// Running, not gone and not a zombie that whoever inherited it has yet
/// to reap.
fn alive(pid: u32) -> bool {
    state_and_parent(pid).is_some_and(|(state, _)| state != "Z")
}

fn live_children_of(parent: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|&pid| state_and_parent(pid).is_some_and(|(s, p)| p == parent && s != "Z"))
        .collect()
}

#[test]
fn vaults_in_processes_of_their_own_die_with_a_killed_stress_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", dir.path().join("cfg"))
        .args(["stress", "--mode", "processes", "--vaults", "2"])
        .args(["--clients", "1", "--repeats", "20", "--dir"])
        .arg(dir.path().join("bench"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut stress = Guarded::spawn(&mut cmd);
    let pid = stress.id();
    let mut vaults = Vec::new();
    let started = wait_until(Duration::from_secs(120), || {
        vaults = live_children_of(pid);
        vaults.len() == 2
    });
    assert!(started, "the run's two vaults did not start: {vaults:?}");
    // SIGKILL: the run has no chance to stop its vaults itself.
    stress.kill();
    let gone = wait_until(Duration::from_secs(30), || {
        !vaults.iter().any(|&v| alive(v))
    });
    assert!(gone, "vaults {vaults:?} outlived the run that started them");
}

#[test]
fn stress_drives_vaults_started_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args(["chain", "init", "--slot-ms", "300", "--replication", "2"])
        // Two plots of k = 16, a block a slot, and a proof of time a
        // loaded machine keeps up with.
        .args(["--initial-records", "131072", "--block-interval-slots", "1"])
        .args(["--pot-iterations", "2000", "--out"])
        .arg(&spec)
        .assert()
        .success();
    let a = start_node(dir.path(), "a", &spec, None);
    let b = start_node(dir.path(), "b", &spec, Some(&a.addr));
    let file = dir.path().join("network.txt");
    std::fs::write(
        &file,
        format!(
            "# two vaults on loopback\n{}\n\n{}  # the second\n",
            a.api, b.api
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let run = |extra: &[&str]| {
        sv(&dir.path().join("cfg"))
            .args(["stress", "--network"])
            .arg(&file)
            .args(["--clients", "1,2", "--immutable", "3", "--mutable", "1"])
            .args(extra)
            .arg("--out")
            .arg(&out_dir)
            .arg("--json")
            .assert()
    };
    let out = run(&[]).success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(r["options"]["vaults"], serde_json::json!([2]));
    // The chain's own settings, not the command's defaults.
    assert_eq!(r["options"]["slot_ms"], 300);
    assert_eq!(r["options"]["replication"], 2);
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{r}");
    for c in cells {
        let clients = c["clients"].as_u64().unwrap();
        assert_eq!(c["operations"].as_u64().unwrap(), clients * 8, "{c}");
        assert_eq!(
            c["get_immutable"]["ok"].as_u64().unwrap(),
            clients * 3,
            "{c}"
        );
        assert_eq!(c["get_mutable"]["ok"].as_u64().unwrap(), clients, "{c}");
        // The vaults' processes and this one's clients, apart.
        assert!(c["cpu_seconds"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["clients_cpu_seconds"].as_f64().is_some(), "{c}");
    }
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("2 vaults already running"), "{summary}");
    // The vaults outlive the run that drove them.
    let c = spacevault_node::client::Client::new(&a.api).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert!(rt.block_on(c.health()).is_ok());
    // A URL nobody answers, or a setting that is the network's, is refused
    // in a line.
    std::fs::write(&file, format!("{}\nhttp://127.0.0.1:9\n", a.api)).unwrap();
    // (With --json the reason is the JSON on stdout.)
    let said = |out: assert_cmd::assert::Assert| {
        let o = out.get_output();
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let text = said(run(&[]).failure());
    assert!(text.contains("http://127.0.0.1:9"), "{text}");
    let text = said(run(&["--vaults", "4"]).failure());
    assert!(text.contains("--vaults"), "{text}");
}
