//! `spacevault bench hash`: the hash function comparison.

use crate::size::parse_size;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use spacevault::plot::max_threads;
use spacevault_hashbench::suite::{self, Settings, Spawner, SuiteProgress, WorkerRequest};
use spacevault_hashbench::{chart, report, Algo, Backend};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct BenchHashArgs {
    /// Algorithms, comma-separated: blake3, blake3-many, sha256, sha512, sha3-256, blake2b (default: all).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub algo: Vec<String>,
    /// Implementations, comma-separated: blake3, spacevault, rustcrypto, ring, openssl (default: all that each algorithm has).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub backend: Vec<String>,
    /// Message sizes, comma-separated, e.g. 32,64,80,1KiB,1MiB (the default).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_size)]
    pub size: Vec<u64>,
    /// Thread counts, comma-separated (default: 1 up to the number of cores).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Also run N independent single-threaded processes together and sum them.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub processes: usize,
    /// Seconds each repeat runs.
    #[arg(long, value_name = "SECS", default_value_t = 0.1)]
    pub duration: f64,
    /// Repeats per case (min, median and max are reported).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub repeats: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Print CSV.
    #[arg(long)]
    pub csv: bool,
    /// Print a Markdown table.
    #[arg(long)]
    pub markdown: bool,
    /// Write SVG charts into this directory.
    #[arg(long, value_name = "DIR")]
    pub chart: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct HashWorkerArgs {
    /// The request, as JSON.
    pub request: String,
}

struct Line {
    show: bool,
}

impl SuiteProgress for Line {
    fn case(&self, done: usize, total: usize, what: &str, seconds_left: f64) {
        if self.show {
            eprint!(
                "\r\x1b[2K[{}/{}] {what}  ~{:.0} s left",
                (done + 1).min(total),
                total,
                seconds_left
            );
            let _ = std::io::stderr().flush();
        }
    }
}

pub fn settings_from(a: &BenchHashArgs) -> Result<Settings> {
    let algos = if a.algo.is_empty() {
        Algo::ALL.to_vec()
    } else {
        a.algo
            .iter()
            .map(|n| Algo::from_name(n.trim()).ok_or_else(|| anyhow!("unknown algorithm '{n}' (use blake3, blake3-many, sha256, sha512, sha3-256, blake2b)")))
            .collect::<Result<_>>()?
    };
    let backends = if a.backend.is_empty() {
        None
    } else {
        Some(
            a.backend
                .iter()
                .map(|n| Backend::from_name(n.trim()).ok_or_else(|| anyhow!("unknown implementation '{n}' (use blake3, spacevault, rustcrypto, ring, openssl)")))
                .collect::<Result<Vec<_>>>()?,
        )
    };
    if let Some(missing) = backends.iter().flatten().find(|b| !b.built()) {
        bail!(
            "this spacevault was built without the {missing} implementation: build it with `--features openssl` (it needs OpenSSL's headers, Debian's libssl-dev)"
        );
    }
    let sizes: Vec<usize> = if a.size.is_empty() {
        vec![32, 64, 80, 1024, 1 << 20]
    } else {
        a.size.iter().map(|&s| s as usize).collect()
    };
    if sizes.contains(&0) || sizes.iter().any(|&s| s > 1 << 30) {
        bail!("message sizes must be from 1 byte to 1 GiB");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if a.threads.is_empty() {
        (1..=cores).collect()
    } else {
        a.threads.clone()
    };
    // Oversubscribing the cores is worth measuring, but only so far: the
    // plotter's bound keeps a typo from starting 100000 threads.
    if let Some(&t) = threads.iter().find(|&&t| t == 0 || t > max_threads()) {
        bail!(
            "--threads {t}: use 1 to {} (four for each core)",
            max_threads()
        );
    }
    if a.processes > max_threads() {
        bail!(
            "--processes {}: use at most {} (four for each core)",
            a.processes,
            max_threads()
        );
    }
    if !(a.duration > 0.0 && a.duration <= 600.0) {
        bail!("--duration must be more than 0 and at most 600 seconds");
    }
    if a.repeats == 0 {
        bail!("--repeats must be at least 1");
    }
    if a.processes == 1 {
        bail!("--processes must be 0 (none) or at least 2");
    }
    let s = Settings {
        algos,
        backends,
        sizes,
        threads,
        processes: a.processes,
        duration_seconds: a.duration,
        warmup_seconds: (a.duration / 3.0).min(0.1),
        repeats: a.repeats,
    };
    if s.pairs().is_empty() {
        bail!("no selected algorithm has a selected implementation");
    }
    Ok(s)
}

pub fn run(a: BenchHashArgs) -> Result<()> {
    let settings = settings_from(&a)?;
    if let Some(dir) = &a.chart {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let exe = std::env::current_exe().context("finding this program to start worker processes")?;
    let spawner = Spawner {
        program: &exe,
        args: &["bench", "hash-worker"],
    };
    let line = Line {
        show: std::io::stderr().is_terminal(),
    };
    let r = suite::run(settings, &spawner, &line).map_err(|e| anyhow!(e))?;
    if line.show {
        eprint!("\r\x1b[2K");
    }
    if let Some(dir) = &a.chart {
        let mut png = true;
        for (name, svg) in chart::charts(&r) {
            let path = dir.join(&name);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
            errln!("wrote {}", path.display());
            if png && !chart::png_from_svg(&path, &path.with_extension("png")) {
                errln!("no PNG copies: install rsvg-convert (Debian: librsvg2-bin) for them");
                png = false;
            }
        }
    }
    if a.json {
        super::print_json(&r)?;
    } else if a.csv {
        print!("{}", report::csv(&r));
    } else if a.markdown {
        print!("{}", report::markdown(&r));
    } else {
        print!("{}", report::table(&r));
    }
    if r.checks.iter().any(|c| !c.passed) {
        bail!("some implementations failed their test vectors and were not timed");
    }
    Ok(())
}

pub fn worker(a: HashWorkerArgs) -> Result<()> {
    let req: WorkerRequest =
        serde_json::from_str(&a.request).context("the worker request is not valid JSON")?;
    let report = suite::run_worker(&req).map_err(|e| anyhow!(e))?;
    outln!("{}", serde_json::to_string(&report)?);
    Ok(())
}
