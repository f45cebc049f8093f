//! The binary as farmers' scripts use it: plotters started together, output
//! piped into `head`, terminals that close, JSON read by programs, several
//! drives of which one is missing.

mod common;

use common::*;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

#[test]
fn plotters_started_together_on_a_fresh_machine_make_every_plot_with_one_key() {
    // One plotter per drive, started at once by a script, with no farmer
    // key yet: they race to create it, share one temp directory, and use
    // the same seed (so their sort temp files would share a name), and the
    // drives' plots must all be made, all for the one key.
    const DRIVES: usize = 6;
    for round in 0..4 {
        let root = tempfile::tempdir().unwrap();
        let config = root.path().join("config");
        let tmp = root.path().join("tmp");
        let drives: Vec<PathBuf> = (0..DRIVES)
            .map(|i| root.path().join(format!("drive{i}")))
            .collect();
        let children: Vec<Guarded> = drives
            .iter()
            .map(|drive| {
                Guarded::spawn(
                    bin()
                        .env("SPACEVAULT_CONFIG_DIR", &config)
                        .args(["plot", "-k", "18", "--strategy", "external"])
                        .args(["--memory", "64MiB", "--threads", "1", "--seed", SEED])
                        .arg("--tmp")
                        .arg(&tmp)
                        .arg("--out")
                        .arg(drive)
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped()),
                )
            })
            .collect();
        let mut keys = Vec::new();
        for (child, drive) in children.into_iter().zip(&drives) {
            let out = child.finish(HUNG);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "round {round}, {drive:?}: {err}");
            let path = String::from_utf8(out.stdout).unwrap();
            let info = json(sv(&config).args(["info", "--json", path.trim()]));
            keys.push(info["farmer_key"].as_str().unwrap().to_string());
        }
        let identity = json(sv(&config).args(["identity", "--json"]));
        let stored = identity["farmer_key"].as_str().unwrap();
        assert!(
            keys.iter().all(|k| k == stored),
            "round {round}: {keys:?}, stored {stored}"
        );
        assert_eq!(names_in(&config), ["farmer.key"], "round {round}");
        assert!(
            names_in(&tmp).is_empty(),
            "round {round}: {:?}",
            names_in(&tmp)
        );
    }
}

#[test]
fn every_stopping_signal_removes_the_unfinished_plot() {
    let cases = [
        ("HUP", libc::SIGHUP, "memory"),
        ("TERM", libc::SIGTERM, "external"),
        ("QUIT", libc::SIGQUIT, "memory"),
        ("USR1", libc::SIGUSR1, "external"),
    ];
    for (signal, number, strategy) in cases {
        let dir = tempfile::tempdir().unwrap();
        let child = Guarded::spawn(
            bin()
                .env("SPACEVAULT_CONFIG_DIR", dir.path())
                .args([
                    "plot",
                    "-k",
                    "26",
                    "--memory",
                    "1GiB",
                    "--strategy",
                    strategy,
                ])
                .args(["--farmer-key", FARMER, "--out"])
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        );
        // Signalled once its temp file is there, i.e. mid-plot.
        let started = wait_until(Duration::from_secs(60), || {
            names_in(dir.path()).iter().any(|n| n.ends_with(".tmp"))
        });
        assert!(started, "{signal}: no temp file appeared");
        child.signal(number);
        let out = child.finish(Duration::from_secs(60));
        let (status, err) = (out.status, String::from_utf8_lossy(&out.stderr));
        if status.success() {
            // It finished first: then the plot must be whole.
            continue;
        }
        assert_eq!(status.code(), Some(128 + number), "{signal}: {err}");
        assert!(err.contains("interrupted"), "{signal}: {err}");
        assert!(
            names_in(dir.path()).is_empty(),
            "{signal} left {:?}",
            names_in(dir.path())
        );
    }
}

#[test]
fn a_closed_terminal_still_cleans_up_when_stderr_is_gone() {
    // A closed SSH session: SIGHUP, and stderr leads nowhere.
    let dir = tempfile::tempdir().unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Guarded::spawn(
        bin()
            .env("SPACEVAULT_CONFIG_DIR", dir.path())
            .args([
                "plot",
                "-k",
                "26",
                "--memory",
                "1GiB",
                "--farmer-key",
                FARMER,
            ])
            .arg("--out")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(writer),
    );
    drop(reader);
    let started = wait_until(Duration::from_secs(60), || {
        names_in(dir.path()).iter().any(|n| n.ends_with(".tmp"))
    });
    assert!(started, "no temp file appeared");
    child.signal(libc::SIGHUP);
    let status = child.wait_with_deadline(Duration::from_secs(60));
    if !status.success() {
        assert_eq!(status.code(), Some(129));
        assert!(
            names_in(dir.path()).is_empty(),
            "{:?}",
            names_in(dir.path())
        );
    }
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let plots: Vec<PathBuf> = ["33", "44", "55"]
        .iter()
        .map(|s| plot_k16_seeded(dir.path(), &s.repeat(32)))
        .collect();
    let proof = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    let proof = proof["best"].to_string();
    let plot = plots[0].to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["check", "--full", d],
        vec!["check", "--json", d],
        vec!["prove", d],
        vec!["prove", "--json", d],
        vec!["info", plot],
        vec!["verify", "--proof", &proof],
        vec!["bench", "lookup", "-n", "10", plot],
        vec!["plot", "-k", "16", "--farmer-key", FARMER, "--out", d],
    ];
    for args in commands {
        // The reader is gone before the first line is written, as with
        // `| head -0`; `| head -1` differs only in when the write fails.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = output_within(
            bin()
                .env("SPACEVAULT_CONFIG_DIR", dir.path())
                .args(&args)
                .stdout(writer)
                .stderr(Stdio::piped()),
            HUNG,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(!err.contains("error"), "{args:?}: {err}");
    }
    // The plot whose path could not be printed is not left half made.
    assert!(names_in(dir.path()).iter().all(|n| !n.ends_with(".tmp")));
}

#[test]
fn limits_are_clean_errors_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plots");
    for (args, says) in [
        (vec!["--threads", "100000"], "four for each core"),
        (vec!["--count", "1000000000"], "at most 100000 plots"),
    ] {
        sv(dir.path())
            .args(["plot", "-k", "20", "--farmer-key", FARMER])
            .args(&args)
            .arg("--out")
            .arg(&out)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(says))
            .stderr(predicate::str::contains("panicked").not());
        assert!(names_in(&out).is_empty(), "{args:?}: {:?}", names_in(&out));
    }
    sv(dir.path())
        .args(["bench", "hash", "--threads", "100000", "--duration", "0.01"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("four for each core"));
    sv(dir.path())
        .args([
            "bench",
            "hash",
            "--processes",
            "100000",
            "--duration",
            "0.01",
        ])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("four for each core"));
}

#[test]
fn proofs_are_read_from_stdin_and_no_larger_than_a_proof_can_be() {
    let dir = tempfile::tempdir().unwrap();
    plot_k16(dir.path());
    let proof = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    sv(dir.path())
        .args(["verify", "--proof", "-"])
        .write_stdin(proof.to_string())
        .assert()
        .success()
        .stdout(predicate::str::starts_with("valid"));
    sv(dir.path())
        .args(["verify", "--proof", "/dev/zero"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("larger than 16 MiB"));
}

#[test]
fn fifos_and_devices_are_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.plot");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path and nothing else.
    let made = unsafe { libc::mkfifo(path.as_ptr(), 0o600) };
    assert_eq!(made, 0, "{}", std::io::Error::last_os_error());
    for args in [
        vec!["info".to_string(), fifo.display().to_string()],
        vec!["check".to_string(), fifo.display().to_string()],
        vec!["check".to_string(), dir.path().display().to_string()],
        vec!["prove".to_string(), fifo.display().to_string()],
        vec!["info".to_string(), "/dev/zero".to_string()],
        vec![
            "bench".to_string(),
            "lookup".to_string(),
            fifo.display().to_string(),
        ],
    ] {
        let out = sv(dir.path())
            .args(&args)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {all}");
        assert!(all.contains("not a regular file"), "{args:?}: {all}");
        assert!(!all.contains("panicked"), "{args:?}: {all}");
    }
}

#[test]
fn check_json_fields_mean_what_they_say() {
    let dir = tempfile::tempdir().unwrap();
    let good = plot_k16(dir.path());
    let bad = plot_k16_seeded(dir.path(), &"33".repeat(32));
    let mut bytes = std::fs::read(&bad).unwrap();
    // A broken checksum in region 2, and a leftover temp file beside.
    bytes[4096 + 2 * 4096 + 300] ^= 0x04;
    std::fs::write(&bad, &bytes).unwrap();
    let stale = dir.path().join("spacevault-k16-abcd.plot.tmp");
    std::fs::write(&stale, vec![0u8; 5000]).unwrap();

    let report = json(
        sv(dir.path())
            .args(["check", "--json", "--full"])
            .arg(dir.path()),
    );
    assert_eq!(report["ok"], false);
    assert_eq!(report["errors"].as_array().unwrap().len(), 0);
    let plots = report["plots"].as_array().unwrap();
    let find = |p: &Path| {
        plots
            .iter()
            .find(|e| e["path"] == p.to_str().unwrap())
            .unwrap()
            .clone()
    };
    let g = find(&good);
    assert_eq!(g["ok"], true);
    assert_eq!(g["completeness"], "every_nonce_once");
    assert_eq!(g["nonces_missing"], 0);
    assert_eq!(g["damaged_regions"], Value::Array(vec![]));
    let b = find(&bad);
    assert_eq!(b["ok"], false);
    assert_eq!(b["completeness"], "incomplete");
    assert!(b["nonces_missing"].as_u64().unwrap() > 0);
    assert_eq!(b["unreadable_regions"], serde_json::json!([2]));
    // Every region a problem names is among the damaged ones.
    let damaged: Vec<u64> = b["damaged_regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect();
    for p in b["problems"].as_array().unwrap() {
        if let Some(r) = p["region"].as_u64() {
            assert!(damaged.contains(&r), "{p} not in {damaged:?}");
        }
    }
    assert_eq!(
        report["temp_files"],
        serde_json::json!([{"path": stale.to_str().unwrap(), "bytes": 5000, "in_use": false}])
    );
    sv(dir.path())
        .arg("check")
        .arg(dir.path())
        .assert()
        .code(1)
        .stdout(predicate::str::contains("left by an interrupted plot"));
}

#[test]
fn json_errors_are_json_on_stdout_too() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.plot");
    let m = missing.to_str().unwrap();
    for args in [
        vec!["info", "--json", m],
        vec!["verify", "--json", "--proof", "{not json"],
        vec!["verify", "--json", "--proof", "[]"],
        vec!["prove", "--json", "--challenge", "abc", m],
        vec!["bench", "lookup", "--json", m],
        vec!["plot", "--json", "-k", "99"],
        vec!["check", "--json", "--no-such-flag"],
    ] {
        let out = sv(dir.path()).args(&args).output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: stdout is not JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        let message = v["error"]
            .as_str()
            .unwrap_or_else(|| panic!("{args:?}: {v}"));
        assert!(!message.is_empty());
        assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
    // A command that answers with JSON still has one document on stdout
    // when it fails: prove of a missing path lists it among its errors.
    let v = json(sv(dir.path()).args(["prove", "--json", m]));
    assert_eq!(v["errors"][0]["error"], "does not exist");
}

#[test]
fn verify_checks_every_entry_of_a_prove_document() {
    let dir = tempfile::tempdir().unwrap();
    for seed in ["33", "44", "55"] {
        plot_k16_seeded(dir.path(), &seed.repeat(32));
    }
    let doc = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    let v = json(sv(dir.path()).args(["verify", "--json", "--proof", &doc.to_string()]));
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(
        v["verified"],
        serde_json::json!(["best", "plots[0]", "plots[1]", "plots[2]"])
    );
    // An entry other than best changed: the document is invalid, and the
    // reason names the entry.
    let mut forged = doc.clone();
    let n = forged["plots"][1]["nonce"].as_u64().unwrap();
    forged["plots"][1]["nonce"] = Value::from(n ^ 1);
    sv(dir.path())
        .args(["verify", "--proof", &forged.to_string()])
        .assert()
        .code(1)
        .stdout(predicate::str::starts_with("invalid: plots[1]: "));
    // A best that is not the best of the entries.
    let worst = doc["plots"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|p| p["distance"].as_str().unwrap().to_string())
        .unwrap()
        .clone();
    let mut demoted = doc.clone();
    demoted["best"] = worst;
    sv(dir.path())
        .args(["verify", "--proof", &demoted.to_string()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("a plot's entry beats it"));
    // A document for another challenge than its entries claim.
    let mut moved = doc.clone();
    moved["challenge"] = Value::from("ff".repeat(32));
    sv(dir.path())
        .args(["verify", "--proof", &moved.to_string()])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("different challenge"));
}

#[test]
fn malformed_proofs_are_explained_in_the_users_words() {
    let dir = tempfile::tempdir().unwrap();
    plot_k16(dir.path());
    let doc = json(
        sv(dir.path())
            .args(["prove", "--json", "--challenge", CHALLENGE])
            .arg(dir.path()),
    );
    let best = &doc["best"];
    let mut no_seed = best.clone();
    no_seed.as_object_mut().unwrap().remove("seed");
    let mut k_text = best.clone();
    k_text["k"] = Value::from("sixteen");
    for (proof, says) in [
        (
            format!("[{best}]"),
            "must be a JSON object with farmer_key, seed, k and nonce",
        ),
        (no_seed.to_string(), "has no seed"),
        (k_text.to_string(), "k must be a number, not a string"),
    ] {
        let out = sv(dir.path())
            .args(["verify", "--proof", &proof])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1));
        assert!(err.contains(says), "{proof}: {err}");
        assert!(
            !err.contains("invalid type") && !err.contains("expected"),
            "{err}"
        );
    }
}

#[test]
fn one_missing_drive_does_not_stop_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("disk1");
    let empty = dir.path().join("disk2");
    std::fs::create_dir_all(&empty).unwrap();
    plot_k16(&good);
    let links = dir.path().join("disk3");
    std::fs::create_dir_all(&links).unwrap();
    std::os::unix::fs::symlink("/nonexistent/x.plot", links.join("gone.plot")).unwrap();
    let missing = dir.path().join("unplugged");
    let out = sv(dir.path())
        .args(["prove", "--challenge", CHALLENGE])
        .args([&good, &missing, &empty, &links])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("best: "));
    assert!(
        err.contains(&format!("skipped {}: does not exist", missing.display())),
        "{err}"
    );
    assert!(
        err.contains(&format!("skipped {}: holds no plots", empty.display())),
        "{err}"
    );
    assert!(
        err.contains("gone.plot: a symbolic link to /nonexistent/x.plot, which does not exist"),
        "{err}"
    );
    // check reports them too, and fails for them.
    sv(dir.path())
        .arg("check")
        .args([&good, &missing])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("ok "))
        .stdout(predicate::str::contains("does not exist"));
    // Nothing anywhere: one error line naming each path.
    sv(dir.path())
        .arg("prove")
        .args([&missing, &empty])
        .assert()
        .code(1)
        .stderr(predicate::str::starts_with("error: no plot answered: "))
        .stderr(predicate::str::contains("holds no plots"));
}

#[test]
fn an_empty_config_dir_variable_counts_as_unset() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    output_within(
        bin()
            .env("SPACEVAULT_CONFIG_DIR", "")
            .env_remove("XDG_CONFIG_HOME")
            .env("HOME", &home)
            .current_dir(&work)
            .args(["plot", "-k", "16", "--out", "plots"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        HUNG,
    );
    assert!(home.join(".config/spacevault/farmer.key").exists());
    assert!(!work.join("farmer.key").exists());
    // The output directory the README's example names is made for it.
    assert_eq!(std::fs::read_dir(work.join("plots")).unwrap().count(), 1);
}

#[test]
fn inputs_that_are_not_regular_files_are_refused_before_they_are_read() {
    // /dev/zero as a chain spec grew memory without end; a FIFO hung.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("spec.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid path; mkfifo has no memory effects.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (spec, kind) in [
        (Path::new("/dev/zero"), "character device"),
        (fifo.as_path(), "FIFO"),
        (dir.path(), "directory"),
    ] {
        sv(dir.path())
            .args(["node", "--data"])
            .arg(dir.path().join("data"))
            .arg("--chain")
            .arg(spec)
            .assert()
            .code(1)
            .stderr(predicate::str::contains(format!(
                "the chain spec {} is not a regular file (a {kind})",
                spec.display()
            )));
    }
    // A spec far larger than any spec: refused, not read whole.
    let big = dir.path().join("big.json");
    std::fs::write(&big, vec![b' '; 100 << 10]).unwrap();
    sv(dir.path())
        .args(["node", "--data"])
        .arg(dir.path().join("data"))
        .arg("--chain")
        .arg(&big)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("is larger than"));
    // A bound of no request at all: refused before anything is read.
    sv(dir.path())
        .args(["node", "--data"])
        .arg(dir.path().join("data"))
        .args(["--chain", "/nonexistent.json", "--api-max-requests", "0"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--api-max-requests 0 would refuse every request",
        ));
    // Fewer peers kept than a vault looks for: it would close and redial
    // forever. Refused by the node and by the network benchmark.
    sv(dir.path())
        .args(["node", "--data"])
        .arg(dir.path().join("data"))
        .args(["--chain", "/nonexistent.json", "--max-peers", "3"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "--max-peers 3 is below the 12 peers a vault looks for",
        ));
    sv(dir.path())
        .args(["bench", "network", "--max-peers", "0"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--max-peers 0 is below the 12"));
    // A client PUT of a device: refused before any vault is asked.
    sv(dir.path())
        .args(["client", "--api", "http://127.0.0.1:9", "put", "/dev/zero"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "the file /dev/zero is not a regular file (a character device)",
        ));
}

#[test]
fn a_checkpoint_that_is_not_height_and_hash_is_refused_with_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, why) in [
        ("12", "is not HEIGHT:HASH"),
        ("12:abcd", "is not a block hash (64 hex digits)"),
        ("0:00", "the genesis needs no checkpoint"),
    ] {
        sv(dir.path())
            .args(["node", "--data"])
            .arg(dir.path().join("data"))
            .args(["--chain", "/nonexistent.json", "--checkpoint", bad])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(why));
    }
}
