//! What the binary's integration tests share: running `spacevault` with a
//! config directory of the test's own, making small plots, reading JSON,
//! and children that cannot outlive their test or hang it.

#![allow(dead_code)]

use assert_cmd::Command;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

pub const FARMER: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const SEED: &str = "2222222222222222222222222222222222222222222222222222222222222222";
pub const CHALLENGE: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

/// Longer than any one command of these tests takes on a slow, busy
/// machine, so that only a hang reaches it: a hung command then fails its
/// test instead of stalling CI.
pub const HUNG: Duration = Duration::from_secs(300);

/// `spacevault`, killed if it runs past [`HUNG`].
pub fn spacevault() -> Command {
    let mut c = Command::cargo_bin("spacevault").unwrap();
    c.timeout(HUNG);
    c
}

pub fn sv(config: &Path) -> Command {
    let mut c = spacevault();
    c.env("SPACEVAULT_CONFIG_DIR", config);
    c
}

/// `spacevault` as a plain command, for children that run beside the test
/// (spawn it with [`Guarded::spawn`]).
pub fn bin() -> std::process::Command {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("spacevault"))
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
pub fn spawn_plot(dir: &Path, args: &[&str]) -> Guarded {
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", dir)
        .arg("plot")
        .args(args)
        .args(["--farmer-key", FARMER, "--out"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    Guarded::spawn(&mut cmd)
}

pub fn json(cmd: &mut Command) -> Value {
    let out = cmd.assert().get_output().stdout.clone();
    serde_json::from_slice(&out)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out)))
}

/// The names in `dir`, sorted.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Polls `done` every 10 ms until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

/// Runs `cmd` to its end, as `Command::output` does, but killed and the
/// test failed if it runs past `limit`.
pub fn output_within(cmd: &mut std::process::Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null());
    Guarded::spawn(cmd).finish(limit)
}

/// A pipe from a child, read on a thread of its own so that the child
/// never stalls on a full pipe, and so that every read here can have a
/// deadline.
struct Pipe {
    chunks: Receiver<Vec<u8>>,
    /// Read and not yet handed out.
    held: Vec<u8>,
    ended: bool,
}

impl Pipe {
    fn new(mut from: impl Read + Send + 'static) -> Pipe {
        let (tx, chunks) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = from.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Pipe {
            chunks,
            held: Vec::new(),
            ended: false,
        }
    }

    /// Takes in what comes before `deadline`; false if it passed first.
    fn take_in(&mut self, deadline: Instant) -> bool {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.chunks.recv_timeout(left) {
            Ok(chunk) => self.held.extend(chunk),
            Err(RecvTimeoutError::Disconnected) => self.ended = true,
            Err(RecvTimeoutError::Timeout) => return false,
        }
        true
    }

    /// The next line, without its newline; none at the end of the output.
    fn line(&mut self, deadline: Instant) -> Result<Option<String>, ()> {
        loop {
            if let Some(at) = self.held.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.held.drain(..=at).take(at).collect();
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            if self.ended {
                if self.held.is_empty() {
                    return Ok(None);
                }
                let line = std::mem::take(&mut self.held);
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            if !self.take_in(deadline) {
                return Err(());
            }
        }
    }

    /// Everything to the end of the output; what came so far, as the
    /// error, if the deadline passes first (a process that holds the pipe
    /// open still).
    fn rest(&mut self, deadline: Instant) -> Result<Vec<u8>, Vec<u8>> {
        while !self.ended {
            if !self.take_in(deadline) {
                return Err(std::mem::take(&mut self.held));
            }
        }
        Ok(std::mem::take(&mut self.held))
    }
}

/// A child process the test owns. Dropped, by the test's end or by its
/// panic, the child is killed and reaped, so that no process outlives a
/// failed test to hold CI up. Its piped stdout and stderr are read as
/// they come, and every wait has a deadline.
pub struct Guarded {
    child: Child,
    stdout: Option<Pipe>,
    stderr: Option<Pipe>,
}

impl Guarded {
    pub fn spawn(cmd: &mut std::process::Command) -> Guarded {
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        let stdout = child.stdout.take().map(Pipe::new);
        let stderr = child.stderr.take().map(Pipe::new);
        Guarded {
            child,
            stdout,
            stderr,
        }
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (`libc::SIGINT` is Ctrl-C's).
    pub fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill has no memory effects.
        let sent = unsafe { libc::kill(self.child.id() as libc::pid_t, signal) };
        assert_eq!(
            sent,
            0,
            "signal {signal}: {}",
            std::io::Error::last_os_error()
        );
    }

    /// SIGKILL, and reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Lines of stdout up to the first for which `stop` holds, that one
    /// last; fails the test if the output ends or `limit` passes first.
    pub fn read_until(
        &mut self,
        limit: Duration,
        mut stop: impl FnMut(&str) -> bool,
    ) -> Vec<String> {
        let deadline = Instant::now() + limit;
        let mut lines = Vec::new();
        loop {
            let pipe = self.stdout.as_mut().expect("stdout is piped");
            match pipe.line(deadline) {
                Ok(Some(line)) => {
                    let done = stop(&line);
                    lines.push(line);
                    if done {
                        return lines;
                    }
                }
                Ok(None) => panic!(
                    "the output ended before the line looked for: {lines:?}{}",
                    self.stderr_so_far()
                ),
                Err(()) => panic!(
                    "no line looked for within {limit:?}: {lines:?}{}",
                    self.stderr_so_far()
                ),
            }
        }
    }

    /// The exit status; fails the test (and the guard kills the child) if
    /// it has not exited within `limit`.
    pub fn wait_with_deadline(&mut self, limit: Duration) -> ExitStatus {
        if wait_until(limit, || self.child.try_wait().unwrap().is_some()) {
            return self.child.wait().unwrap();
        }
        panic!(
            "the process did not exit within {limit:?}{}",
            self.stderr_so_far()
        );
    }

    /// Waits for the exit within `limit`, then what is left of stdout and
    /// stderr (empty where not piped).
    pub fn finish(mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        let status = self.wait_with_deadline(limit);
        // Exited; a pipe still open belongs to a process it left behind.
        let rest = |pipe: Option<&mut Pipe>, name: &str| match pipe {
            None => Vec::new(),
            Some(pipe) => pipe
                .rest(deadline.max(Instant::now() + Duration::from_secs(10)))
                .unwrap_or_else(|_| panic!("{name} is still open after the exit")),
        };
        let stdout = rest(self.stdout.as_mut(), "stdout");
        let stderr = rest(self.stderr.as_mut(), "stderr");
        Output {
            status,
            stdout,
            stderr,
        }
    }

    /// Stderr as far as it came, for a failure's message.
    fn stderr_so_far(&mut self) -> String {
        let Some(pipe) = self.stderr.as_mut() else {
            return String::new();
        };
        let soon = Instant::now() + Duration::from_millis(100);
        let text = match pipe.rest(soon) {
            Ok(all) | Err(all) => all,
        };
        format!("; stderr: {}", String::from_utf8_lossy(&text))
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A `spacevault node` running as a process of its own.
pub struct Vault {
    pub child: Guarded,
    pub addr: String,
    pub api: String,
}

/// Starts `spacevault node` on loopback (plotting for it first, once, in
/// `dir/plots-NAME`) and reads the addresses it prints.
pub fn start_node(dir: &Path, name: &str, spec: &Path, bootstrap: Option<&str>) -> Vault {
    let config = dir.join(format!("cfg-{name}"));
    let plots = dir.join(format!("plots-{name}"));
    if !plots.exists() {
        sv(&config)
            .args(["plot", "-k", "16", "--out"])
            .arg(&plots)
            .assert()
            .success();
    }
    let mut cmd = bin();
    cmd.env("SPACEVAULT_CONFIG_DIR", &config)
        .args([
            "node",
            "--listen",
            "/ip4/127.0.0.1/tcp/0",
            "--api",
            "127.0.0.1:0",
            "--json",
            "--plots",
        ])
        .arg(&plots)
        .arg("--data")
        .arg(dir.join(format!("data-{name}")))
        .arg("--chain")
        .arg(spec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The first vault of a network keeps its time.
    match bootstrap {
        Some(b) => cmd.args(["--bootstrap", b]),
        None => cmd.arg("--timekeeper"),
    };
    let mut child = Guarded::spawn(&mut cmd);
    // `--json`: one line saying where it is.
    let line = child
        .read_until(Duration::from_secs(60), |_| true)
        .remove(0);
    let started: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
    Vault {
        child,
        addr: started["listen"][0]
            .as_str()
            .expect("an address")
            .to_string(),
        api: started["api"].as_str().expect("an API").to_string(),
    }
}
