//! What the binary's integration tests share: running `spacevault` with a
//! config directory of the test's own, making small plots, reading JSON.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

pub const FARMER: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const SEED: &str = "2222222222222222222222222222222222222222222222222222222222222222";
pub const CHALLENGE: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

pub fn sv(config: &Path) -> Command {
    let mut c = Command::cargo_bin("spacevault").unwrap();
    c.env("SPACEVAULT_CONFIG_DIR", config);
    c
}

/// `spacevault plot -k K --farmer-key FARMER --seed SEED --out DIR` and any
/// further arguments.
pub fn plot_cmd(dir: &Path, k: &str, seed: &str, extra: &[&str]) -> Command {
    let mut c = sv(dir);
    c.args(["plot", "-k", k, "--farmer-key", FARMER, "--seed", seed])
        .args(extra)
        .arg("--out")
        .arg(dir);
    c
}

/// Plots k=16 with `seed` into `dir`; returns the printed path.
pub fn plot_k16_seeded(dir: &Path, seed: &str) -> PathBuf {
    let out = plot_cmd(dir, "16", seed, &[])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    PathBuf::from(String::from_utf8(out).unwrap().trim())
}

pub fn plot_k16(dir: &Path) -> PathBuf {
    plot_k16_seeded(dir, SEED)
}

/// A plot running in the background into `dir`, its stderr captured.
pub fn spawn_plot(dir: &Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("spacevault"))
        .env("SPACEVAULT_CONFIG_DIR", dir)
        .arg("plot")
        .args(args)
        .args(["--farmer-key", FARMER, "--out"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends SIGINT to `child`, as Ctrl-C does.
pub fn interrupt(child: &std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

pub fn json(cmd: &mut Command) -> Value {
    let out = cmd.assert().get_output().stdout.clone();
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out)))
}
