//! A whole comparison: check every implementation, then sweep sizes, threads
//! and processes, then measure each implementation's peak memory in a
//! process of its own.

use crate::algo::{Algo, Backend};
use crate::check::self_check;
use crate::run::{measure, timed, Measurement, Spread};
use serde::{Deserialize, Serialize};
use spacevault_bench::machine::peak_rss;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    pub algos: Vec<Algo>,
    pub backends: Option<Vec<Backend>>,
    pub sizes: Vec<usize>,
    pub threads: Vec<usize>,
    pub processes: usize,
    pub duration_seconds: f64,
    pub warmup_seconds: f64,
    pub repeats: usize,
}

impl Settings {
    /// The (algorithm, implementation) pairs selected.
    pub fn pairs(&self) -> Vec<(Algo, Backend)> {
        let mut out = Vec::new();
        for &a in &self.algos {
            for &b in a.backends() {
                if self.backends.as_ref().is_none_or(|bs| bs.contains(&b)) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// Every case to time, in order: (algo, backend, size, threads, processes).
    pub fn cases(&self, passed: &[(Algo, Backend)]) -> Vec<(Algo, Backend, usize, usize, usize)> {
        let mut out = Vec::new();
        for &(a, b) in passed {
            for &size in &self.sizes {
                if !a.supports_size(b, size) {
                    continue;
                }
                for &t in &self.threads {
                    out.push((a, b, size, t, 1));
                }
                if self.processes > 1 {
                    out.push((a, b, size, 1, self.processes));
                }
            }
        }
        out
    }

    /// Seconds one case takes.
    pub fn seconds_per_case(&self) -> f64 {
        self.warmup_seconds + self.duration_seconds * self.repeats as f64
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    pub algo: Algo,
    pub backend: Backend,
    pub passed: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MemoryFigure {
    pub algo: Algo,
    pub backend: Backend,
    pub size: usize,
    /// Peak resident memory of a process hashing with one thread.
    pub peak_rss_bytes: u64,
    /// The same process's peak with no hashing at all, for comparison.
    pub baseline_rss_bytes: u64,
}

pub use spacevault_bench::machine::Machine;

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub settings: Settings,
    pub machine: Machine,
    pub checks: Vec<CheckResult>,
    pub measurements: Vec<Measurement>,
    pub memory: Vec<MemoryFigure>,
}

/// One child process's share of a processes run, or of a memory probe.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerRequest {
    pub algo: String,
    pub backend: String,
    pub size: usize,
    pub threads: usize,
    pub duration_seconds: f64,
    /// Start hashing at this Unix time, so that all processes run together.
    pub start_at_unix_nanos: u128,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerReport {
    pub hashes: u64,
    pub seconds: f64,
    pub peak_rss_bytes: u64,
}

/// Runs a worker's request in this process (the child side).
pub fn run_worker(req: &WorkerRequest) -> Result<WorkerReport, String> {
    let algo =
        Algo::from_name(&req.algo).ok_or_else(|| format!("unknown algorithm {}", req.algo))?;
    let backend = Backend::from_name(&req.backend)
        .ok_or_else(|| format!("unknown backend {}", req.backend))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    if req.start_at_unix_nanos > now {
        std::thread::sleep(Duration::from_nanos((req.start_at_unix_nanos - now) as u64));
    }
    let (hashes, seconds) = if req.threads == 0 {
        (0, 0.0)
    } else {
        timed(
            algo,
            backend,
            req.size,
            req.threads,
            Duration::from_secs_f64(req.duration_seconds),
        )
    };
    Ok(WorkerReport {
        hashes,
        seconds,
        peak_rss_bytes: peak_rss().unwrap_or(0),
    })
}

/// How to start a worker process: the program and the arguments before the
/// request (`spacevault bench hash-worker`).
pub struct Spawner<'a> {
    pub program: &'a Path,
    pub args: &'a [&'a str],
}

impl Spawner<'_> {
    /// Starts `n` workers together and waits for their reports.
    pub fn run(&self, req: &WorkerRequest, n: usize) -> Result<Vec<WorkerReport>, String> {
        let json = serde_json::to_string(req).map_err(|e| e.to_string())?;
        let children: Vec<_> = (0..n)
            .map(|_| {
                Command::new(self.program)
                    .args(self.args)
                    .arg(&json)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("starting a worker process: {e}"))
            })
            .collect::<Result<_, _>>()?;
        children
            .into_iter()
            .map(|c| {
                let out = c
                    .wait_with_output()
                    .map_err(|e| format!("waiting for a worker: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "a worker process failed: {}",
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                serde_json::from_slice(&out.stdout)
                    .map_err(|e| format!("a worker's report is not JSON: {e}"))
            })
            .collect()
    }
}

/// Progress of a suite: case `done` of `total`, what runs now, seconds left.
pub trait SuiteProgress {
    fn case(&self, done: usize, total: usize, what: &str, seconds_left: f64);
}

pub fn run(
    settings: Settings,
    spawner: &Spawner,
    progress: &dyn SuiteProgress,
) -> Result<Report, String> {
    let mut checks = Vec::new();
    let mut passed = Vec::new();
    for (a, b) in settings.pairs() {
        let r = self_check(a, b);
        if r.is_ok() {
            passed.push((a, b));
        }
        checks.push(CheckResult {
            algo: a,
            backend: b,
            passed: r.is_ok(),
            error: r.err(),
        });
    }
    let cases = settings.cases(&passed);
    let duration = Duration::from_secs_f64(settings.duration_seconds);
    let warmup = Duration::from_secs_f64(settings.warmup_seconds);
    let memory_probe_seconds = 0.3;
    let total_seconds = cases.len() as f64 * settings.seconds_per_case()
        + passed.len() as f64 * memory_probe_seconds;
    let started = Instant::now();
    let mut measurements = Vec::new();
    for (i, &(a, b, size, threads, processes)) in cases.iter().enumerate() {
        let what = if processes > 1 {
            format!("{a}/{b} {size} B, {processes} processes")
        } else {
            format!(
                "{a}/{b} {size} B, {threads} thread{}",
                if threads == 1 { "" } else { "s" }
            )
        };
        let left = (total_seconds - started.elapsed().as_secs_f64()).max(0.0);
        progress.case(i, cases.len(), &what, left);
        let m = if processes > 1 {
            measure_processes(spawner, a, b, size, processes, &settings)?
        } else {
            measure(a, b, size, threads, duration, warmup, settings.repeats)
        };
        measurements.push(m);
    }
    fill_efficiency(&mut measurements);

    let mut memory = Vec::new();
    let largest = settings.sizes.iter().copied().max().unwrap_or(64);
    let baseline = probe(spawner, Algo::Blake3, Backend::Blake3, 64, 0, 0.0)?;
    for &(a, b) in &passed {
        let size = if a.supports_size(b, largest) {
            largest
        } else {
            *settings
                .sizes
                .iter()
                .filter(|&&s| a.supports_size(b, s))
                .max()
                .unwrap_or(&64)
        };
        if !a.supports_size(b, size) {
            continue;
        }
        progress.case(
            cases.len(),
            cases.len(),
            &format!("peak memory of {a}/{b}"),
            0.0,
        );
        let r = probe(spawner, a, b, size, 1, memory_probe_seconds)?;
        memory.push(MemoryFigure {
            algo: a,
            backend: b,
            size,
            peak_rss_bytes: r.peak_rss_bytes,
            baseline_rss_bytes: baseline.peak_rss_bytes,
        });
    }
    Ok(Report {
        settings,
        machine: Machine::this(),
        checks,
        measurements,
        memory,
    })
}

fn probe(
    spawner: &Spawner,
    a: Algo,
    b: Backend,
    size: usize,
    threads: usize,
    seconds: f64,
) -> Result<WorkerReport, String> {
    let req = WorkerRequest {
        algo: a.name().into(),
        backend: b.name().into(),
        size,
        threads,
        duration_seconds: seconds,
        start_at_unix_nanos: 0,
    };
    Ok(spawner.run(&req, 1)?.remove(0))
}

fn measure_processes(
    spawner: &Spawner,
    a: Algo,
    b: Backend,
    size: usize,
    n: usize,
    s: &Settings,
) -> Result<Measurement, String> {
    let mut rates = Vec::new();
    for _ in 0..s.repeats.max(1) {
        // Give every process time to start before the common start time.
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            + 150_000_000;
        let req = WorkerRequest {
            algo: a.name().into(),
            backend: b.name().into(),
            size,
            threads: 1,
            duration_seconds: s.duration_seconds,
            start_at_unix_nanos: start,
        };
        let reports = spawner.run(&req, n)?;
        rates.push(
            reports
                .iter()
                .map(|r| r.hashes as f64 / r.seconds)
                .sum::<f64>(),
        );
    }
    let bytes: Vec<f64> = rates.iter().map(|r| r * size as f64).collect();
    Ok(Measurement {
        algo: a,
        backend: b,
        size,
        threads: 1,
        processes: n,
        hashes_per_second: Spread::of(&rates),
        bytes_per_second: Spread::of(&bytes),
        scaling_efficiency: None,
    })
}

/// Per-worker rate over the single-thread rate of the same case.
fn fill_efficiency(ms: &mut [Measurement]) {
    let singles: Vec<(Algo, Backend, usize, f64)> = ms
        .iter()
        .filter(|m| m.threads == 1 && m.processes == 1)
        .map(|m| (m.algo, m.backend, m.size, m.hashes_per_second.median))
        .collect();
    for m in ms.iter_mut() {
        let workers = (m.threads * m.processes) as f64;
        if let Some(&(_, _, _, one)) = singles
            .iter()
            .find(|s| s.0 == m.algo && s.1 == m.backend && s.2 == m.size)
        {
            m.scaling_efficiency = Some(m.hashes_per_second.median / workers / one);
        }
    }
}
