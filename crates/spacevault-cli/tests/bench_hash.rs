//! `spacevault bench hash`: a tiny run of every algorithm, exports that parse
//! back, and clear errors for bad arguments.

mod common;

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn sv() -> Command {
    common::spacevault()
}

const TINY: [&str; 6] = ["--duration", "0.01", "--repeats", "1", "--threads", "1,2"];

#[test]
fn a_tiny_run_of_every_algorithm_exports_json_that_parses() {
    let out = sv()
        .args([
            "bench",
            "hash",
            "--json",
            "--size",
            "64,1KiB",
            "--processes",
            "2",
        ])
        .args(TINY)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["passed"] == true), "{checks:?}");
    let ms = v["measurements"].as_array().unwrap();
    for algo in [
        "blake3",
        "blake3-many",
        "sha256",
        "sha512",
        "sha3-256",
        "blake2b",
    ] {
        assert!(ms.iter().any(|m| m["algo"] == algo), "{algo} missing");
    }
    let mut backends = vec!["blake3", "spacevault", "rustcrypto", "ring"];
    if cfg!(feature = "openssl") {
        backends.push("openssl");
    }
    for backend in backends {
        assert!(
            ms.iter().any(|m| m["backend"] == backend),
            "{backend} missing"
        );
    }
    assert!(ms.iter().any(|m| m["processes"] == 2));
    for m in ms {
        let h = &m["hashes_per_second"];
        assert!(h["min"].as_f64().unwrap() > 0.0);
        assert!(
            h["min"].as_f64() <= h["median"].as_f64() && h["median"].as_f64() <= h["max"].as_f64()
        );
        assert!(m["scaling_efficiency"].as_f64().unwrap() > 0.0);
    }
    assert!(!v["memory"].as_array().unwrap().is_empty());
    assert!(v["memory"][0]["peak_rss_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn csv_markdown_and_charts() {
    let out = sv()
        .args([
            "bench",
            "hash",
            "--csv",
            "--algo",
            "blake3,sha256",
            "--size",
            "32,1KiB",
        ])
        .args(TINY)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "algorithm");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // blake3: 2 sizes x 2 thread counts; sha256: 2 implementations (3 with
    // OpenSSL) x 2 x 2.
    let sha256_backends = if cfg!(feature = "openssl") { 3 } else { 2 };
    assert_eq!(rows.len(), 4 + sha256_backends * 4);
    assert!(rows
        .iter()
        .all(|r| r.len() == header.len() && r[6].parse::<f64>().unwrap() > 0.0));

    sv().args([
        "bench",
        "hash",
        "--markdown",
        "--algo",
        "blake2b",
        "--size",
        "80",
    ])
    .args(TINY)
    .assert()
    .success()
    .stdout(
        predicate::str::contains("| algorithm | implementation |")
            .and(predicate::str::contains("| blake2b | rustcrypto | 80 B |")),
    );

    let dir = tempfile::tempdir().unwrap();
    sv().args([
        "bench",
        "hash",
        "--algo",
        "blake3,sha512",
        "--backend",
        "blake3,ring",
        "--size",
        "64,1KiB",
        "--chart",
    ])
    .arg(dir.path())
    .args(TINY)
    .assert()
    .success();
    for name in ["threads-64B.svg", "threads-1024B.svg", "sizes.svg"] {
        let svg = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("</svg>") && svg.contains("sha512"),
            "{name}"
        );
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    for (args, says) in [
        (vec!["--algo", "md5"], "unknown algorithm 'md5'"),
        (
            vec!["--backend", "gcrypt"],
            "unknown implementation 'gcrypt'",
        ),
        (vec!["--size", "lots"], "not a size"),
        (vec!["--threads", "0"], "--threads"),
        (vec!["--duration", "0"], "--duration"),
        (vec!["--repeats", "0"], "--repeats"),
        (vec!["--processes", "1"], "--processes"),
        (
            vec!["--algo", "sha3-256", "--backend", "ring"],
            "no selected algorithm",
        ),
    ] {
        let out = sv()
            .args(["bench", "hash"])
            .args(&args)
            .assert()
            .failure()
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn openssl_is_there_exactly_when_built_with_it() {
    let run = sv()
        .args([
            "bench",
            "hash",
            "--algo",
            "sha256",
            "--backend",
            "openssl",
            "--size",
            "64",
        ])
        .args(TINY)
        .assert();
    if cfg!(feature = "openssl") {
        run.success();
    } else {
        run.code(1)
            .stderr(predicate::str::contains(
                "built without the openssl implementation",
            ))
            .stderr(predicate::str::contains("--features openssl"));
    }
}
