//! The built binary, end to end: plot, info, prove, verify, check, and the
//! errors a user can run into (the benchmarks are in `bench.rs`).

mod common;

use common::*;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn plot_prove_verify_check_info() {
    let dir = tempfile::tempdir().unwrap();
    let path = plot_k16(dir.path());
    assert!(path.exists());
    assert!(path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("spacevault-k16-"));

    let info = json(sv(dir.path()).args(["info", "--json"]).arg(&path));
    assert_eq!(info["k"], 16);
    assert_eq!(info["farmer_key"], FARMER);
    assert_eq!(info["seed"], SEED);
    assert_eq!(info["records"], 65536);
    assert_eq!(
        info["file_size"].as_u64().unwrap(),
        std::fs::metadata(&path).unwrap().len()
    );

    let proof = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    assert_eq!(proof["plots"].as_array().unwrap().len(), 1);
    assert_eq!(proof["plots"][0]["reads"], 1);
    let best = &proof["best"];
    assert_eq!(best["k"], 16);

    // The whole prove output, one plot's best, and a file all verify.
    let whole = proof.to_string();
    sv(dir.path())
        .args(["verify", "--proof", &whole])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("valid"));
    let proof_file = dir.path().join("proof.json");
    std::fs::write(&proof_file, best.to_string()).unwrap();
    let v = json(
        sv(dir.path())
            .args(["verify", "--json", "--challenge", CHALLENGE, "--proof"])
            .arg(&proof_file),
    );
    assert_eq!(v["valid"], true);
    assert_eq!(v["quality"], best["quality"]);

    // A different challenge, or a forged nonce, is invalid: exit 1 with the reason.
    let other = "ff".repeat(32);
    sv(dir.path())
        .args([
            "verify",
            "--challenge",
            &other,
            "--proof",
            &best.to_string(),
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("different challenge"));
    let mut forged = best.clone();
    forged["nonce"] = Value::from(best["nonce"].as_u64().unwrap() ^ 1);
    sv(dir.path())
        .args(["verify", "--proof", &forged.to_string()])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("invalid"));

    sv(dir.path())
        .args(["check", "--full"])
        .arg(&path)
        .assert()
        .success()
        .stdout(predicate::str::starts_with("ok"));
}

#[test]
fn damage_is_reported_and_other_plots_still_answer() {
    let dir = tempfile::tempdir().unwrap();
    let good = plot_k16(dir.path());
    let bad = plot_k16_seeded(dir.path(), &"33".repeat(32));
    let mut bytes = std::fs::read(&bad).unwrap();
    // Damage every region so any challenge hits it.
    for r in (4096..bytes.len()).step_by(4096) {
        bytes[r + 100] ^= 0xFF;
    }
    std::fs::write(&bad, &bytes).unwrap();
    let foreign = dir.path().join("notes.plot");
    std::fs::write(&foreign, "not a plot at all").unwrap();

    let out = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    assert_eq!(out["plots"].as_array().unwrap().len(), 1);
    assert_eq!(out["plots"][0]["path"], good.to_str().unwrap());
    assert_eq!(out["errors"].as_array().unwrap().len(), 2);

    sv(dir.path())
        .arg("check")
        .arg(&bad)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("DAMAGED")
                .and(predicate::str::contains("region 0 (buckets 0..")),
        );
    let report = json(sv(dir.path()).args(["check", "--json"]).arg(&foreign));
    assert_eq!(report["ok"], false);
    assert_eq!(report["plots"][0]["ok"], false);
    assert_eq!(report["plots"][0]["completeness"], "not_checked");
    assert!(report["plots"][0]["problems"][0]["problem"]
        .as_str()
        .unwrap()
        .contains("not a spacevault plot"));
}

#[test]
fn a_directory_without_plots_names_the_subdirectories_that_hold_them() {
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk1");
    std::fs::create_dir(&disk).unwrap();
    plot_k16(&disk);
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    sv(dir.path())
        .arg("prove")
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("not searched recursively"))
        .stderr(predicate::str::contains(disk.display().to_string()))
        .stderr(predicate::str::contains("empty").not())
        .stderr(predicate::str::contains("panicked").not());
    sv(dir.path())
        .arg("check")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("ERROR "))
        .stdout(predicate::str::contains("not searched recursively"))
        .stdout(predicate::str::contains(disk.display().to_string()))
        .stdout(predicate::str::contains("empty").not());
    // A directory with no plots below it either gets the plain message.
    sv(dir.path())
        .arg("check")
        .arg(dir.path().join("empty"))
        .assert()
        .code(1)
        .stdout(predicate::str::ends_with("empty: holds no plots\n"));
    // Named, the subdirectory answers.
    sv(dir.path())
        .args(["prove", "--challenge", CHALLENGE])
        .arg(&disk)
        .assert()
        .success();
}

#[test]
fn a_finished_plot_is_not_overwritten_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let path = plot_k16(dir.path());
    let before = std::fs::metadata(&path).unwrap().modified().unwrap();
    plot_cmd(dir.path(), "16", SEED, &[])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("already exists").and(predicate::str::contains("--force")),
        );
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        before
    );
    plot_cmd(dir.path(), "16", SEED, &["--force"])
        .assert()
        .success();
}

#[test]
fn a_failed_count_run_still_lists_the_plots_it_made() {
    // Plot 2 of the run (seed + 1) exists already: plot 1 is made, and
    // the JSON says so before the run fails.
    let dir = tempfile::tempdir().unwrap();
    let second = format!("23{}", &SEED[2..]);
    plot_k16_seeded(dir.path(), &second);
    let output = plot_cmd(dir.path(), "16", SEED, &["--count", "3", "--json"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("plot 2 of 3"))
        .stderr(predicate::str::contains("already exists"))
        .get_output()
        .clone();
    let made: Value = serde_json::from_slice(&output.stdout).unwrap();
    let made = made.as_array().unwrap();
    assert_eq!(made.len(), 1);
    assert!(Path::new(made[0]["path"].as_str().unwrap()).exists());
    // The plot that was there and plot 1, nothing else.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn count_fills_several_directories_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let out = json(
        sv(dir.path())
            .args([
                "plot",
                "-k",
                "16",
                "--count",
                "3",
                "--json",
                "--farmer-key",
                FARMER,
                "--seed",
                SEED,
            ])
            .arg("--out")
            .arg(&a)
            .arg("--out")
            .arg(&b),
    );
    let plots = out.as_array().unwrap();
    assert_eq!(plots.len(), 3);
    let dirs: Vec<PathBuf> = plots
        .iter()
        .map(|p| {
            PathBuf::from(p["path"].as_str().unwrap())
                .parent()
                .unwrap()
                .to_path_buf()
        })
        .collect();
    assert_eq!(dirs, vec![a.clone(), b.clone(), a.clone()]);
    let ids: std::collections::HashSet<_> = plots
        .iter()
        .map(|p| p["plot_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 3, "each plot has its own seed");
    assert!(plots
        .iter()
        .all(|p| p["records_per_second"].as_f64().unwrap() > 0.0));
}

#[test]
fn a_memory_limit_near_its_floor_warns_of_the_temp_file_and_still_plots() {
    // k = 20 on two threads plans from 42 MiB on; there its temp file may
    // take twice the 4 MiB of keys, with 64 MiB about the keys alone.
    let dir = tempfile::tempdir().unwrap();
    for (memory, warns) in [("42MiB", true), ("64MiB", false)] {
        let args = [
            "--memory",
            memory,
            "--threads",
            "2",
            "--strategy",
            "external",
        ];
        let out = plot_cmd(dir.path(), "20", SEED, &args)
            .arg("--force")
            .assert()
            .success()
            .get_output()
            .clone();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let warned = stderr.contains("warning: with --memory") && stderr.contains("temp file");
        assert_eq!(warned, warns, "{memory}: {stderr}");
    }
    // Below the floor, the error names it.
    let dir = tempfile::tempdir().unwrap();
    let out = plot_cmd(
        dir.path(),
        "20",
        SEED,
        &["--memory", "1MiB", "--threads", "2"],
    )
    .assert()
    .failure()
    .get_output()
    .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("needs at least 42.00 MiB"), "{stderr}");
}

#[test]
fn plots_that_overlap_are_the_plots_made_one_after_another() {
    // Plots that overlap (one sorts while the next hashes: through a temp
    // file in half the memory each, or in memory side by side) are the
    // plots made one by one.
    let dir = tempfile::tempdir().unwrap();
    let runs = [
        ("a", "always", "external", "84MiB"),
        ("b", "never", "external", "84MiB"),
        ("c", "auto", "memory", "256MiB"),
    ];
    let mut made = Vec::new();
    for (out, overlap, strategy, memory) in runs {
        let out = &dir.path().join(out);
        std::fs::create_dir_all(out).unwrap();
        let mut cmd = plot_cmd(out, "20", SEED, &["--count", "3", "--memory", memory]);
        cmd.args(["--strategy", strategy, "--overlap", overlap]);
        let output = cmd.assert().success().get_output().clone();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert!(stderr.contains("[3/3] plotted k=20"), "{stderr}");
        assert!(stderr.contains("3 plots in"), "{stderr}");
        // A plot through a temp file says how much it wrote there.
        let through_temp = stderr.contains(" through its temp file");
        assert_eq!(through_temp, strategy == "external", "{stderr}");
        let paths: Vec<PathBuf> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(PathBuf::from)
            .collect();
        assert_eq!(paths.len(), 3);
        made.push(paths);
    }
    for other in &made[1..] {
        for (x, y) in made[0].iter().zip(other) {
            assert_eq!(x.file_name(), y.file_name(), "plots in order");
            let (x, y) = (std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
            assert!(x[4096..] == y[4096..]);
        }
    }
}

#[test]
fn a_farmer_key_is_made_once_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config");
    let run = || {
        let out = spacevault()
            .env("SPACEVAULT_CONFIG_DIR", &config)
            .args(["plot", "-k", "16", "--json", "--out"])
            .arg(dir.path())
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let v: Value = serde_json::from_slice(&out).unwrap();
        let info = json(spacevault().args(["info", "--json", v[0]["path"].as_str().unwrap()]));
        info["farmer_key"].as_str().unwrap().to_string()
    };
    let first = run();
    assert_eq!(first, run());
    // The file holds the key pair whose public key the plots carry.
    let identity = json(
        spacevault()
            .env("SPACEVAULT_CONFIG_DIR", &config)
            .args(["identity", "--json"]),
    );
    assert_eq!(identity["farmer_key"], first.as_str());
    assert_eq!(identity["can_run_a_node"], true);
    let stored = std::fs::read_to_string(config.join("farmer.key")).unwrap();
    assert!(stored.starts_with("spacevault ed25519 secret key v1\n"));
    // A farmer key file of an earlier spacevault (the key alone) still
    // plots, for that key.
    let old = dir.path().join("old-config");
    std::fs::create_dir_all(&old).unwrap();
    std::fs::write(old.join("farmer.key"), format!("{FARMER}\n")).unwrap();
    let out = spacevault()
        .env("SPACEVAULT_CONFIG_DIR", &old)
        .args(["plot", "-k", "16", "--json", "--out"])
        .arg(dir.path().join("old-plots"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let info = json(spacevault().args(["info", "--json", v[0]["path"].as_str().unwrap()]));
    assert_eq!(info["farmer_key"], FARMER);
}

#[test]
fn bad_input_gets_one_line_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("foreign.plot");
    std::fs::write(&foreign, b"not a plot at all").unwrap();
    let cases: Vec<Vec<String>> = vec![
        vec!["plot".into(), "-k".into(), "12".into()],
        vec!["plot".into(), "-k".into(), "41".into()],
        vec![
            "plot".into(),
            "-k".into(),
            "16".into(),
            "--farmer-key".into(),
            "xyz".into(),
        ],
        vec![
            "plot".into(),
            "-k".into(),
            "16".into(),
            "--out".into(),
            foreign.display().to_string(),
        ],
        vec![
            "plot".into(),
            "-k".into(),
            "16".into(),
            "--memory".into(),
            "lots".into(),
        ],
        vec![
            "plot".into(),
            "-k".into(),
            "20".into(),
            "--memory".into(),
            "1MiB".into(),
            "--strategy".into(),
            "memory".into(),
        ],
        vec![
            "prove".into(),
            "--challenge".into(),
            "abc".into(),
            ".".into(),
        ],
        vec![
            "prove".into(),
            "--challenge".into(),
            CHALLENGE.into(),
            "/nonexistent.plot".into(),
        ],
        vec!["verify".into(), "--proof".into(), "{not json".into()],
        vec![
            "verify".into(),
            "--proof".into(),
            "/nonexistent-proof.json".into(),
        ],
        vec!["info".into(), "/nonexistent.plot".into()],
        vec!["info".into(), foreign.display().to_string()],
        vec!["bench".into(), "lookup".into(), "/nonexistent.plot".into()],
        vec![
            "bench".into(),
            "lookup".into(),
            foreign.display().to_string(),
        ],
    ];
    for args in cases {
        let out = sv(dir.path())
            .current_dir(dir.path())
            .args(&args)
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{args:?}: {err}"
        );
        assert!(!err.trim().is_empty(), "{args:?} printed no error");
        if out.status.code() == Some(1) {
            let errors: Vec<&str> = err
                .lines()
                .filter(|l| !l.starts_with("created a new farmer key"))
                .collect();
            assert_eq!(errors.len(), 1, "{args:?}: {err}");
            assert!(errors[0].starts_with("error: "), "{args:?}: {err}");
            // A cause that the message already gives is not repeated.
            let parts: Vec<&str> = errors[0].split(": ").collect();
            assert!(
                parts.windows(2).all(|w| w[0] != w[1]),
                "{args:?} repeats itself: {err}"
            );
        }
    }
}

#[test]
fn a_killed_plot_leaves_nothing_that_looks_finished() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_plot(dir.path(), &["-k", "26", "--seed", SEED]);
    // Killed mid-plot: once its temp file is there, long before a k = 26
    // plot is done.
    let started = wait_until(Duration::from_secs(60), || {
        names_in(dir.path()).iter().any(|n| is_plot_temp(n))
    });
    assert!(started, "no temp file appeared: {:?}", names_in(dir.path()));
    child.kill();
    let left = names_in(dir.path());
    assert!(left.iter().any(|n| is_plot_temp(n)), "{left:?}");
    assert!(!left.iter().any(|n| n.ends_with(".plot")), "{left:?}");
    // The next run removes the temp file and finishes.
    let path = plot_k16(dir.path());
    assert!(path.exists());
    let left = names_in(dir.path());
    assert!(!left.iter().any(|n| n.ends_with(".tmp")), "{left:?}");
}

/// The temp file a plot is written to until it is renamed into place.
fn is_plot_temp(name: &str) -> bool {
    name.ends_with(".plot.tmp")
}

#[test]
fn a_plot_that_cannot_fit_fails_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = plot_cmd(dir.path(), "40", SEED, &[])
        .assert()
        .code(1)
        .get_output()
        .clone();
    // No work: nothing written, nothing printed but the one error.
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("not enough free space"),
        "{err}"
    );
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        names_in(dir.path()),
        Vec::<String>::new(),
        "nothing is left behind"
    );
}

#[test]
fn ctrl_c_stops_the_plot_and_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    for strategy in ["memory", "external"] {
        let child = spawn_plot(
            dir.path(),
            &["-k", "26", "--memory", "1GiB", "--strategy", strategy],
        );
        // Interrupted mid-plot, once its temp file is there.
        let started = wait_until(Duration::from_secs(60), || {
            names_in(dir.path()).iter().any(|n| is_plot_temp(n))
        });
        assert!(started, "{strategy}: no temp file appeared");
        child.signal(libc::SIGINT);
        let out = child.finish(Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(0) {
            // The plot finished before the signal: then it must be whole.
            continue;
        }
        assert_eq!(out.status.code(), Some(130), "{strategy}: {err}");
        assert!(err.contains("interrupted"), "{strategy}: {err}");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{strategy} left {left:?}");
    }
}

#[test]
fn ctrl_c_stops_a_hard_plot_through_temp_files_and_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn_plot(
        dir.path(),
        &["--scheme", "hard", "-k", "23", "--strategy", "external"],
    );
    // The temp files carry the plot's name, as a cleanup knows them.
    let started = wait_until(Duration::from_secs(60), || {
        names_in(dir.path())
            .iter()
            .any(|n| n.starts_with("spacevault-k23-") && n.ends_with(".part.tmp"))
    });
    assert!(started, "no temp file appeared");
    child.signal(libc::SIGINT);
    let out = child.finish(Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    // A k = 23 plot takes seconds; the signal comes within milliseconds
    // of its first temp file, so it must stop the plot, not wait for it.
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(names_in(dir.path()), Vec::<String>::new(), "files left");
}

#[test]
fn ctrl_c_during_overlapping_plots_keeps_only_the_finished_ones() {
    // Through temp files, each in half the memory; in memory, two at once.
    let external = ["--memory", "200MiB", "--strategy", "external"];
    let in_memory = ["--memory", "1GiB", "--strategy", "memory"];
    for args in [external, in_memory] {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = bin();
        cmd.env("SPACEVAULT_CONFIG_DIR", dir.path())
            .args(["plot", "-k", "26"])
            .args(args)
            .args(["--count", "6", "--overlap", "always", "--seed", SEED])
            .args(["--farmer-key", FARMER, "--out"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = Guarded::spawn(&mut cmd);
        // Interrupted once a plot is finished and the next ones are under
        // way: the first path printed.
        let mut printed = child.read_until(HUNG, |_| true);
        child.signal(libc::SIGINT);
        let out = child.finish(Duration::from_secs(60));
        printed.extend(
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .map(String::from),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path().to_string_lossy().into_owned())
            .filter(|p| !p.ends_with("farmer.key"))
            .collect();
        left.sort();
        let mut finished = printed.clone();
        finished.sort();
        // Every file left is a plot that was reported finished, and every
        // plot reported is there; nothing half-made remains.
        assert_eq!(left, finished, "{args:?}: {err}");
        if out.status.code() != Some(0) {
            assert_eq!(out.status.code(), Some(130), "{args:?}: {err}");
            assert!(printed.len() < 6);
        }
        for plot in &printed {
            sv(dir.path()).args(["check", plot]).assert().success();
        }
    }
}

/// What keeps a hung or failed test from leaving processes behind: a
/// child whose test panics is killed and reaped with it.
#[test]
fn a_failed_tests_children_are_killed_with_it() {
    let (pid_tx, pid_rx) = std::sync::mpsc::channel();
    let test = std::thread::spawn(move || {
        let child = Guarded::spawn(std::process::Command::new("sleep").arg("600"));
        pid_tx.send(child.id()).unwrap();
        panic!("a failing test");
    });
    assert!(test.join().is_err());
    let pid = pid_rx.recv().unwrap();
    // The child was reaped, so its pid may already be another process's:
    // only a `sleep 600` there would be it.
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(
        cmdline != b"sleep\x00600\x00",
        "process {pid} outlived its test"
    );
}

/// The hard scheme end to end: a k = 16 table-chain plot made, shown,
/// checked, and its proof (beside a plain plot's, ranked on one scale)
/// verified; a changed leaf is invalid, and the plot is not overwritten.
#[test]
fn hard_plots_plot_prove_verify_check_info() {
    let dir = tempfile::tempdir().unwrap();
    let plain = plot_k16(dir.path());
    let out = sv(dir.path())
        .args(["plot", "--scheme", "hard", "-k", "16", "--threads", "2"])
        .args(["--farmer-key", FARMER, "--seed", SEED, "--out"])
        .arg(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains("plotted k=16 hard"))
        .get_output()
        .stdout
        .clone();
    let hard = PathBuf::from(String::from_utf8(out).unwrap().trim());
    assert!(hard.exists() && hard != plain);

    let info = json(sv(dir.path()).args(["info", "--json"]).arg(&hard));
    assert_eq!(
        (
            info["scheme"].as_str(),
            info["k"].as_u64(),
            info["levels"].as_u64()
        ),
        (Some("hard"), Some(16), Some(5))
    );
    assert_eq!(info["stored"].as_array().unwrap().len(), 4);

    let proof = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    let plots = proof["plots"].as_array().unwrap();
    assert_eq!(plots.len(), 2);
    let hard_entry = plots.iter().find(|p| p["scheme"] == "hard").unwrap();
    assert_eq!(hard_entry["leaves"].as_array().unwrap().len(), 16);
    assert!(hard_entry["reads"].as_u64().unwrap() <= 6);
    sv(dir.path())
        .args(["verify", "--proof", &proof.to_string()])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("valid"));
    let mut bad = hard_entry.clone();
    bad["leaves"][5] = (bad["leaves"][5].as_u64().unwrap() ^ 1).into();
    sv(dir.path())
        .args(["verify", "--proof", &bad.to_string()])
        .assert()
        .failure()
        .stdout(predicate::str::contains("do not match"));

    let check = json(
        sv(dir.path())
            .args(["check", "--json", "--full"])
            .arg(dir.path()),
    );
    assert_eq!(check["ok"], true);
    let hard_check = check["plots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["scheme"] == "hard")
        .unwrap()
        .clone();
    assert!(hard_check["records_rehashed"].as_u64().unwrap() > 0);

    sv(dir.path())
        .args([
            "plot",
            "--scheme",
            "hard",
            "-k",
            "16",
            "--farmer-key",
            FARMER,
            "--seed",
            SEED,
            "--out",
        ])
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("already exists"));
    sv(dir.path())
        .args(["plot", "--scheme", "hard", "-k", "33", "--out"])
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("not supported by the hard scheme"));
}

/// A hard plot through temp files (`--strategy external --tmp`) is the
/// file the in-memory plotter makes, leaves no temp file, says where it
/// went, and checks in full; too small a --memory is one clear line.
#[test]
fn hard_plots_through_temp_files_are_the_in_memory_plots() {
    let dir = tempfile::tempdir().unwrap();
    let (memory, disk, tmp) = (
        dir.path().join("memory"),
        dir.path().join("disk"),
        dir.path().join("tmp"),
    );
    for d in [&memory, &disk, &tmp] {
        std::fs::create_dir(d).unwrap();
    }
    let plot = |out: &std::path::Path, extra: &[&str]| {
        json(
            sv(dir.path())
                .args(["plot", "--scheme", "hard", "-k", "17", "--threads", "2"])
                .args(["--farmer-key", FARMER, "--seed", SEED, "--json"])
                .args(extra)
                .arg("--out")
                .arg(out),
        )
    };
    let in_memory = plot(&memory, &["--strategy", "memory"]);
    let tmp_arg = tmp.to_str().unwrap();
    let on_disk = plot(&disk, &["--strategy", "external", "--tmp", tmp_arg]);
    assert_eq!(in_memory[0]["strategy"], "memory");
    assert_eq!(on_disk[0]["strategy"], "external");
    assert!(on_disk[0]["temp_peak_bytes"].as_u64().unwrap() > 0);
    let read = |p: &serde_json::Value| std::fs::read(p["path"].as_str().unwrap()).unwrap();
    let (a, b) = (read(&in_memory[0]), read(&on_disk[0]));
    // Past the header, which holds the time each was made.
    assert!(
        a.len() == b.len() && a[4096..] == b[4096..],
        "the files differ"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "temp files left"
    );

    let check = json(
        sv(dir.path())
            .args(["check", "--json", "--full"])
            .arg(&disk),
    );
    assert_eq!(check["ok"], true);

    sv(dir.path())
        .args([
            "plot", "--scheme", "hard", "-k", "17", "--memory", "1MiB", "--out",
        ])
        .arg(&tmp)
        .assert()
        .failure()
        .stderr(predicate::str::contains("memory").and(predicate::str::contains("panicked").not()));
}
