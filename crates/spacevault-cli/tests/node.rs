//! Vaults as separate processes on loopback TCP: `chain init`, two nodes,
//! the client's PUT, GET, set and read, and a clean stop.

mod common;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn client(dir: &Path, vault: &Vault, args: &[&str]) -> std::process::Output {
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", dir.join("cfg-client"))
        .args(["client", "--api", &vault.api])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    output_within(&mut cmd, Duration::from_secs(60))
}

fn head(dir: &Path, vault: &Vault) -> Option<(u64, String)> {
    let out = client(dir, vault, &["head", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).ok()?;
    Some((v["height"].as_u64()?, v["hash"].as_str()?.to_string()))
}

fn get_json(vault: &Vault, path: &str) -> Option<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let c = spacevault_node::client::Client::new(&vault.api).unwrap();
    let asked = c.get_path(path);
    let (status, body) = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(60), asked).await })
        .expect("the vault answered within a minute")
        .ok()?;
    if status != 200 {
        return None;
    }
    serde_json::from_slice(&body).ok()
}

fn block_hash(vault: &Vault, height: u64) -> Option<String> {
    let v = get_json(vault, &format!("/v1/blocks/{height}"))?;
    v["hash"].as_str().map(String::from)
}

#[test]
fn two_vaults_on_loopback_agree_and_keep_data() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args([
            "chain",
            "init",
            "--slot-ms",
            "300",
            "--replication",
            "2",
            // Two plots of k = 16, a block a slot, and a proof of time a
            // loaded machine keeps up with.
            "--initial-records",
            "131072",
            "--block-interval-slots",
            "1",
            "--pot-iterations",
            "2000",
            // Vault a farms a plain plot, vault b a table-chain one.
            "--schemes",
            "plain,hard",
            "--out",
        ])
        .arg(&spec)
        .assert()
        .success();
    sv(&dir.path().join("cfg-b"))
        .args(["plot", "-k", "16", "--scheme", "hard", "--out"])
        .arg(dir.path().join("plots-b"))
        .assert()
        .success();
    // A second init does not overwrite the network's spec.
    sv(dir.path())
        .args(["chain", "init", "--out"])
        .arg(&spec)
        .assert()
        .code(1);
    let a = start_node(dir.path(), "a", &spec, None);
    let b = start_node(dir.path(), "b", &spec, Some(&a.addr));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (ha, hb) = (head(dir.path(), &a), head(dir.path(), &b));
        if ha.as_ref().is_some_and(|h| h.0 >= 5) && hb.as_ref().is_some_and(|h| h.0 >= 5) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the vaults did not grow the chain: {ha:?} {hb:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    for h in 1..=3 {
        let (x, y) = (block_hash(&a, h), block_hash(&b, h));
        assert!(x.is_some() && x == y, "height {h}: {x:?} {y:?}");
    }
    // Vault b farms its table-chain plot, and its blocks carry proofs of
    // kind 2 that vault a took: each vault wins about half the blocks.
    let status = get_json(&b, "/v1/status").expect("b's status");
    assert_eq!(status["plots"][0]["scheme"], "hard", "{status}");
    assert_eq!(status["skipped_plots"], serde_json::json!([]), "{status}");
    let b_key = status["farmer_key"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut next = 1;
    let b_block = 'found: loop {
        let top = head(dir.path(), &a).map_or(0, |h| h.0);
        while next <= top {
            let block = get_json(&a, &format!("/v1/blocks/{next}"));
            next += 1;
            if let Some(block) = block.filter(|v| v["producer"] == b_key.as_str()) {
                break 'found block;
            }
        }
        assert!(Instant::now() < deadline, "no block of b's up to {top}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let proof = &b_block["proof"];
    assert_eq!(proof["kind"], 2, "{b_block}");
    assert_eq!(
        proof["leaves"].as_array().map(Vec::len),
        Some(16),
        "{b_block}"
    );
    assert!(proof.get("nonce").is_none(), "{b_block}");

    // A blob put through one vault is read through the other.
    let file = dir.path().join("data.bin");
    let blob: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&file, &blob).unwrap();
    let put = client(dir.path(), &a, &["put", file.to_str().unwrap(), "--json"]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let v: Value = serde_json::from_slice(&put.stdout).unwrap();
    assert_eq!(
        (&v["copies"], &v["parts"], &v["manifests"]),
        (&2.into(), &1.into(), &0.into())
    );
    let address = v["address"].as_str().unwrap();
    let got = dir.path().join("got.bin");
    let get = client(
        dir.path(),
        &b,
        &["get", address, "--out", got.to_str().unwrap()],
    );
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert_eq!(std::fs::read(&got).unwrap(), blob);

    // A file of three blobs, through a client that checks the vaults'
    // chain against the spec; read back through the other vault.
    let big: Vec<u8> = (0..2_500_000u32).map(|i| (i * 13 % 253) as u8).collect();
    std::fs::write(&file, &big).unwrap();
    let spec_arg = spec.to_str().unwrap();
    let put = client(
        dir.path(),
        &a,
        &["--chain", spec_arg, "put", file.to_str().unwrap(), "--json"],
    );
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let v: Value = serde_json::from_slice(&put.stdout).unwrap();
    assert_eq!((&v["parts"], &v["manifests"]), (&3.into(), &1.into()));
    assert_eq!(v["blake3"], hex::encode(blake3::hash(&big).as_bytes()));
    let address = v["address"].as_str().unwrap();
    let get = client(
        dir.path(),
        &b,
        &[
            "--chain",
            spec_arg,
            "get",
            address,
            "--out",
            got.to_str().unwrap(),
        ],
    );
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert!(
        std::fs::read(&got).unwrap() == big,
        "the file read back differs"
    );
    // A vault on another chain than the spec given is refused.
    let other = dir.path().join("other.json");
    sv(dir.path())
        .args([
            "chain",
            "init",
            "--slot-ms",
            "500",
            "--pot-iterations",
            "2000",
            "--out",
        ])
        .arg(&other)
        .assert()
        .success();
    let refused = client(
        dir.path(),
        &b,
        &[
            "--chain",
            other.to_str().unwrap(),
            "put",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains("not ") && err.contains("of the chain spec given"),
        "{err}"
    );

    // A register set through one vault is read through the other.
    let set = client(dir.path(), &b, &["set", "greeting", "hello", "--json"]);
    assert!(
        set.status.success(),
        "{}",
        String::from_utf8_lossy(&set.stderr)
    );
    let v: Value = serde_json::from_slice(&set.stdout).unwrap();
    let owner = v["owner"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let read = client(dir.path(), &a, &["read", &format!("{owner}/greeting")]);
        if read.status.success() {
            assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), "hello");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}",
            String::from_utf8_lossy(&read.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Bad input: a clear error, not a panic.
    let bad = client(dir.path(), &a, &["get", "not-an-address"]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("'not-an-address' is not a blob address"),
        "{err}"
    );

    // SIGTERM stops a vault cleanly, SIGINT too; the exit status is
    // 128 + the signal's number, as the README's table says.
    for (v, signal) in [(a, libc::SIGTERM), (b, libc::SIGINT)] {
        v.child.signal(signal);
        let out = v.child.finish(Duration::from_secs(60));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128 + signal), "{err}");
        assert!(err.contains("stopped"), "{err}");
        assert!(!err.contains("error: "), "{err}");
    }
}

/// `bench network` of three vaults on plots of `scheme`, its report.
fn small_network(dir: &std::path::Path, scheme: &str) -> Value {
    let out = sv(&dir.join("cfg"))
        .args([
            "bench",
            "network",
            "--scheme",
            scheme,
            "--vaults",
            "3",
            "-k",
            "16",
            "--slot-ms",
            "500",
            // A timekeeper a debug build keeps up with on a busy machine.
            "--pot-iterations",
            "500",
            // Long enough for a dozen blocks at one every two slots on
            // average: three heights settle all but once in thousands.
            "--settle-seconds",
            "4",
            "--idle-seconds",
            "6",
            "--seconds",
            "1",
            "--clients",
            "2",
            "--json",
            "--dir",
        ])
        .arg(dir.join("bench"))
        .assert()
        .success();
    serde_json::from_slice(&out.get_output().stdout).unwrap()
}

/// What every small network's report must show: agreement, settled
/// heights, and every PUT and GET answered.
fn assert_agreed_and_served(r: &Value) {
    assert_eq!(r["disagreements"], 0, "{r}");
    assert!(r["settled_heights"].as_u64().unwrap() >= 2, "{r}");
    for op in ["put", "get"] {
        assert!(r[op]["ok"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r[op]["errors"], 0, "{r}");
    }
}

/// Vaults farming table-chain plots on a chain that takes only those
/// agree, make blocks and keep data as plain ones do.
#[test]
fn bench_network_runs_vaults_on_the_hard_scheme() {
    let dir = tempfile::tempdir().unwrap();
    let r = small_network(dir.path(), "hard");
    assert_agreed_and_served(&r);
    let plots: Vec<_> = std::fs::read_dir(dir.path().join("bench/plots"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        plots.len() == 3 && plots.iter().all(|p| p.starts_with("hard-k16-")),
        "{plots:?}"
    );
}

#[test]
fn bench_network_runs_a_small_network_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = small_network(dir.path(), "plain");
    assert_agreed_and_served(&r);
    // Blocks come at random (a block every two slots on average): an idle
    // phase may have none, or only blocks of the last two heights, which
    // are not yet settled, and then reports no propagation.
    let heights = |phase: &str| {
        let h = r[phase]["heights"].as_array().unwrap();
        (h[0].as_u64().unwrap(), h[1].as_u64().unwrap())
    };
    let (began, ended) = heights("idle");
    assert_eq!(r["idle"]["blocks"].as_u64().unwrap(), ended - began, "{r}");
    assert_eq!(r["blocks_missing_somewhere"], 0, "{r}");
    let settled = r["settled_heights"].as_u64().unwrap();
    assert_eq!(
        r["propagation_idle_ms"]["p99"].as_f64().is_some(),
        began < ended.min(settled),
        "{r}"
    );
    let by_height = r["propagation_by_height"].as_array().unwrap();
    let settled = r["settled_heights"].as_u64().unwrap();
    assert!(
        !by_height.is_empty() && by_height.len() as u64 <= settled,
        "{r}"
    );
    // The plots are kept for the next run; the stores are not.
    let kept: Vec<_> = std::fs::read_dir(dir.path().join("bench"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(kept, vec!["plots".to_string()]);
}

#[test]
fn a_vault_refuses_at_once_a_listen_port_another_program_holds() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args(["chain", "init", "--out"])
        .arg(&spec)
        .assert()
        .success();
    let plots = dir.path().join("plots");
    sv(dir.path())
        .args(["plot", "-k", "16", "--out"])
        .arg(&plots)
        .assert()
        .success();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let listen = format!("/ip4/127.0.0.1/tcp/{port}");
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", dir.path().join("cfg"))
        .args([
            "node",
            "--listen",
            &listen,
            "--api",
            "127.0.0.1:0",
            "--plots",
        ])
        .arg(&plots)
        .arg("--data")
        .arg(dir.path().join("data"))
        .arg("--chain")
        .arg(&spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = output_within(&mut cmd, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("the port is in use"), "stderr: {stderr}");
    assert!(stderr.contains(&listen), "stderr: {stderr}");
    drop(held);
}

#[test]
fn a_bootstrap_nobody_answers_is_a_warning_with_its_reason_and_the_status_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args(["chain", "init", "--out"])
        .arg(&spec)
        .assert()
        .success();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let boot = format!("/ip4/127.0.0.1/tcp/{}", closed.local_addr().unwrap().port());
    drop(closed);
    let vault = start_node(dir.path(), "a", &spec, Some(&boot));
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let status = get_json(&vault, "/v1/status").expect("a status");
        if status["bootstrap"][0]["error"].is_string() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "no bootstrap failure in {status}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status["bootstrap"][0]["address"], boot.as_str());
    assert_eq!(status["bootstrap"][0]["reached"], false);
    let why = status["bootstrap"][0]["error"]
        .as_str()
        .unwrap()
        .to_lowercase();
    assert!(why.contains("refused"), "{why}");
    assert_eq!(status["peers"].as_array().map(Vec::len), Some(0));
    vault.child.signal(libc::SIGINT);
    let out = vault.child.finish(Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot reach the bootstrap address") && stderr.contains(&boot),
        "{stderr}"
    );
}

#[test]
fn a_file_past_one_blob_goes_in_parts_and_one_fewer_vaults_took_prints_its_address_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args([
            "chain",
            "init",
            "--slot-ms",
            "300",
            "--replication",
            "2",
            // Two plots of k = 16, a block a slot, and a proof of time a
            // loaded machine keeps up with.
            "--initial-records",
            "131072",
            "--block-interval-slots",
            "1",
            "--pot-iterations",
            "2000",
            "--out",
        ])
        .arg(&spec)
        .assert()
        .success();
    let a = start_node(dir.path(), "a", &spec, None);
    let mut b = start_node(dir.path(), "b", &spec, Some(&a.addr));
    let deadline = Instant::now() + Duration::from_secs(60);
    while get_json(&a, "/v1/status").and_then(|s| s["vaults"].as_u64()) != Some(2) {
        assert!(Instant::now() < deadline, "a never heard of b");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Over the chain's 1 MiB: stored as two parts and a manifest.
    let big = dir.path().join("big");
    std::fs::write(&big, vec![7u8; (1 << 20) + 1]).unwrap();
    let out = client(dir.path(), &a, &["put", big.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("stored 1.00 MiB in 2 parts and 1 manifest, each on at least 2 of 2 vaults"),
        "{err}"
    );
    // A file that claims more than the reader allows is refused before a
    // byte is written, and nothing is left where it would have gone.
    let big_address = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let got = dir.path().join("got-big");
    let out = client(
        dir.path(),
        &a,
        &[
            "get",
            &big_address,
            "--out",
            got.to_str().unwrap(),
            "--max-size",
            "1MiB",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("claims 1048577 bytes, more than the 1048576 allowed"),
        "{err}"
    );
    assert!(!got.exists());
    assert!(std::fs::read_dir(dir.path()).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".partial")));
    // b dies; a learns of it only when its Store to b fails.
    b.child.kill();
    let small = dir.path().join("small");
    std::fs::write(&small, b"kept by one vault of two").unwrap();
    let out = client(dir.path(), &a, &["put", small.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("stored on 1 of 2 vaults"), "{err}");
    let address = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_eq!(
        address,
        hex::encode(spacevault_chain::blob_address(b"kept by one vault of two"))
    );
    let out = client(dir.path(), &a, &["get", &address]);
    assert_eq!(out.stdout, b"kept by one vault of two");
}

#[test]
fn a_get_stopped_by_a_signal_leaves_no_partial_file_and_the_old_one_as_it_was() {
    // A "vault" that takes connections and never answers: the GET waits
    // with its partial file open until the signal comes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let api = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kept.bin");
    std::fs::write(&out, b"what was there").unwrap();
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", dir.path().join("cfg"))
        .args(["client", "--api", &api, "get", &"ab".repeat(32), "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = common::Guarded::spawn(&mut cmd);
    let partial = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".partial"))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !partial() {
        assert!(Instant::now() < deadline, "the partial file never appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.signal(libc::SIGTERM);
    let done = child.finish(Duration::from_secs(60));
    assert_eq!(done.status.code(), Some(128 + libc::SIGTERM));
    assert!(!partial(), "the partial file was left");
    assert_eq!(std::fs::read(&out).unwrap(), b"what was there");
}

/// `bench data` of five vaults: blobs and a file of several go in and come
/// back whole, the vaults' audits are answered and pass, and the blobs of
/// the vault that vanishes are back at R copies among the others.
#[test]
fn bench_data_stores_audits_and_copies_a_vanished_holders_blobs_again() {
    let dir = tempfile::tempdir().unwrap();
    let out = sv(&dir.path().join("cfg"))
        .args([
            "bench",
            "data",
            "--vaults",
            "5",
            "-k",
            "16",
            "--slot-ms",
            "500",
            "--replication",
            "3",
            "--clients",
            "2",
            "--size",
            "64KiB",
            "--seconds",
            "1",
            "--file-size",
            "2100KiB",
            "--audit-interval-ms",
            "300",
            "--era-blocks",
            "0",
            "--recovery-limit",
            "90",
            "--json",
            "--chart",
        ])
        .arg(dir.path().join("recovery.svg"))
        .arg("--dir")
        .arg(dir.path().join("bench"))
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(r["put"]["ok"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["put"]["errors"], 0, "{r}");
    assert_eq!(r["get"]["ok"], r["put"]["ok"], "{r}");
    assert_eq!(r["get"]["errors"], 0, "{r}");
    assert_eq!(r["copies"]["min"], 3.0, "{r}");
    assert_eq!(r["file"]["equal"], true, "{r}");
    assert_eq!(r["file"]["parts"], 3, "{r}");
    assert!(r["audits"]["passed"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["audits"]["answer_bytes"].as_f64().unwrap() > 0.0, "{r}");
    let v = &r["recovery"];
    assert!(v["blobs_it_kept"].as_u64().unwrap() > 0, "{r}");
    assert!(v["back_seconds"].is_number(), "{r}");
    assert_eq!(v["short_at_end"], 0, "{r}");
    let svg = std::fs::read_to_string(dir.path().join("recovery.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("every blob back at R"),
        "{svg}"
    );
}
