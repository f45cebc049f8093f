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
