//! `spacevault bench network`: a network of vaults on this machine, in one
//! process over the in-memory transport or as separate processes on
//! loopback TCP, measured as it runs: how long the vaults take to start
//! and join, whether they agree on every settled block, how long a block
//! takes to reach every vault, memory and CPU per vault, and clients' PUT
//! and GET latency and throughput through the vaults' HTTP APIs.

use crate::machine::Machine;
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault::plot::NoProgress;
use spacevault::PlotOptions;
use spacevault_chain::{ChainSpec, Keypair};
use spacevault_node::client::Client;
use spacevault_node::{Node, NodeConfig, TransportKind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the vaults run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// All in this process, over the in-memory transport.
    InProcess,
    /// Each its own process (this program's `node` command) on loopback TCP.
    Processes { exe: PathBuf },
}

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkBenchOptions {
    pub vaults: usize,
    pub k: u8,
    pub slot_ms: u64,
    pub replication: u32,
    /// How long the network runs once the vaults joined before anything
    /// is measured: a new network's first seconds are its vaults finding
    /// each other (connections, Kademlia walks), not its steady state.
    pub settle_seconds: f64,
    /// How long the network runs without clients once it settled.
    pub idle_seconds: f64,
    /// How long the clients work, after the idle phase.
    pub seconds: f64,
    pub clients: usize,
    pub blob_bytes: usize,
    pub mode: Mode,
    /// Where plots (kept between runs), stores and specs go.
    pub dir: PathBuf,
}

/// CPU and blocks of one phase of the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phase {
    pub seconds: f64,
    pub blocks: u64,
    pub cpu_seconds: Option<f64>,
    /// CPU of every vault together for each block made.
    pub cpu_ms_per_block: Option<f64>,
}

impl Phase {
    fn of(seconds: f64, blocks: u64, cpu_seconds: Option<f64>) -> Phase {
        Phase {
            seconds,
            blocks,
            cpu_seconds,
            cpu_ms_per_block: cpu_seconds
                .filter(|_| blocks > 0)
                .map(|c| c * 1000.0 / blocks as f64),
        }
    }
}

/// One kind of client operation's figures.
#[derive(Clone, Debug, Serialize)]
pub struct OpStats {
    pub ok: usize,
    pub errors: usize,
    pub per_second: f64,
    pub latency_ms: Option<Summary>,
}

/// What the benchmark found.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkBench {
    pub machine: Machine,
    pub options: NetworkBenchOptions,
    /// From the first vault's start until every vault listens.
    pub started_seconds: f64,
    /// Until every vault has a peer and has imported a block.
    pub joined_seconds: f64,
    /// When block 1 was due, from the same start: the chain begins once
    /// every vault has had time to start.
    pub first_block_due_seconds: f64,
    pub heights: (u64, u64),
    /// Heights compared across every vault (settled: two slots old).
    pub settled_heights: u64,
    /// Settled heights at which some vault's block differs.
    pub disagreements: u64,
    /// Time from a block's first import (its producer's) to its import by
    /// the last vault, in milliseconds, over the blocks made while the
    /// network settled.
    pub propagation_settling_ms: Option<Summary>,
    /// The same over the blocks made once it settled, while no client
    /// worked.
    pub propagation_idle_ms: Option<Summary>,
    /// The same over the blocks made under the client load.
    pub propagation_load_ms: Option<Summary>,
    /// Every compared height's propagation time in milliseconds.
    pub propagation_by_height: Vec<(u64, f64)>,
    /// Settled blocks that some vault never imported (it synced past them
    /// on another branch, or was behind).
    pub blocks_missing_somewhere: u64,
    pub memory_per_vault_bytes: Option<u64>,
    /// CPU seconds of every vault together, and blocks made, in each phase.
    pub settling: Phase,
    pub idle: Phase,
    pub load: Phase,
    pub put: OpStats,
    pub get: OpStats,
}

fn io(context: &str) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |e| BenchError::io(context.to_string(), e)
}

/// The key and plot directory of vault `i`, plotted once and kept in `dir`.
fn vault_plot(dir: &Path, i: usize, k: u8) -> Result<(Keypair, PathBuf), BenchError> {
    let mut secret = [0u8; 32];
    secret[..8].copy_from_slice(&(i as u64 + 1).to_le_bytes());
    secret[8] = 0x5a;
    let key = Keypair::from_secret(&secret);
    let plots = dir.join("plots").join(format!("k{k}-vault{i}"));
    let exists = std::fs::read_dir(&plots)
        .map(|mut d| d.any(|e| e.is_ok_and(|e| e.path().extension().is_some_and(|x| x == "plot"))))
        .unwrap_or(false);
    if !exists {
        std::fs::create_dir_all(&plots).map_err(io("creating the plot cache"))?;
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
        spacevault::plot(
            &PlotOptions::new(k, key.public(), seed),
            &plots,
            &NoProgress,
        )?;
    }
    Ok((key, plots))
}

/// CPU seconds (user and system) of a process, from /proc.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

fn rss_bytes(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
}

/// The vaults as the benchmark drives them.
enum Vaults {
    InProcess(Vec<Node>),
    Processes(Vec<std::process::Child>),
}

/// Runs the benchmark on a tokio runtime of its own.
pub fn run(options: &NetworkBenchOptions) -> Result<NetworkBench, BenchError> {
    if options.vaults == 0 || options.clients == 0 {
        return Err(BenchError::Invalid(
            "--vaults and --clients must be at least 1".into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(io("starting the runtime"))?;
    runtime.block_on(run_async(options))
}

async fn run_async(options: &NetworkBenchOptions) -> Result<NetworkBench, BenchError> {
    let run_dir = options.dir.join(format!("run-{}", std::process::id()));
    std::fs::create_dir_all(&run_dir).map_err(io("creating the benchmark directory"))?;
    let plots: Vec<(Keypair, PathBuf)> = (0..options.vaults)
        .map(|i| vault_plot(&options.dir, i, options.k))
        .collect::<Result<_, _>>()?;
    let mut spec = ChainSpec::new(
        "bench-network",
        // Time for every vault to start and connect before the first block,
        // as a network's first vaults would have: a chain whose first
        // slots find most vaults still dialling is contested by all.
        spacevault_node::now_ms() + 1000 + 40 * options.vaults as u64,
        options.slot_ms,
    );
    spec.min_k = options.k.clamp(spacevault::MIN_K, spacevault::MAX_K);
    spec.replication = options.replication;
    spec.validate()
        .map_err(|e| BenchError::Invalid(e.to_string()))?;
    let rss_before = rss_bytes("self");
    let started = Instant::now();
    let first_block_due_seconds = (spec.genesis_unix_ms + spec.slot_ms)
        .saturating_sub(spacevault_node::now_ms()) as f64
        / 1000.0;
    let (vaults, apis) = match &options.mode {
        Mode::InProcess => start_in_process(&spec, &plots, &run_dir).await?,
        Mode::Processes { exe } => {
            start_processes(exe, &spec, &plots, &run_dir, &options.dir.join("logs"))?
        }
    };
    let started_seconds = started.elapsed().as_secs_f64();
    let clients: Vec<Client> = apis
        .iter()
        .map(|a| Client::new(a).map_err(|e| BenchError::Invalid(e.to_string())))
        .collect::<Result<_, _>>()?;
    // Joined: every vault has a peer (or is alone) and a block.
    let join_deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // Every vault asked at once, for its cheapest answer: asked one
        // after another, 64 busy vaults took seconds a round.
        let asks = clients.iter().map(|c| {
            let c = c.clone();
            tokio::spawn(async move {
                match c.get_path("/health").await {
                    Ok((200, body)) => {
                        let h: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or_default();
                        let height = h["height"].as_u64().unwrap_or(0);
                        (height, h["peers"].as_u64().unwrap_or(0))
                    }
                    _ => (0, 0),
                }
            })
        });
        let alone = clients.len() == 1;
        let mut joined = true;
        for ask in asks.collect::<Vec<_>>() {
            let (height, peers) = ask.await.unwrap_or((0, 0));
            joined &= height >= 1 && (alone || peers >= 1);
        }
        if joined {
            break;
        }
        if Instant::now() > join_deadline {
            stop(vaults).await;
            return Err(BenchError::Invalid(
                "the vaults did not join within 2 minutes".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let joined_seconds = started.elapsed().as_secs_f64();
    let memory_per_vault_bytes = match &vaults {
        Vaults::InProcess(_) => rss_bytes("self")
            .zip(rss_before)
            .map(|(after, before)| after.saturating_sub(before) / options.vaults as u64),
        Vaults::Processes(children) => children
            .iter()
            .map(|c| rss_bytes(&c.id().to_string()))
            .sum::<Option<u64>>()
            .map(|b| b / options.vaults as u64),
    };
    let cpu_now = |vaults: &Vaults| match vaults {
        Vaults::InProcess(_) => cpu_seconds("self"),
        Vaults::Processes(children) => children
            .iter()
            .map(|c| cpu_seconds(&c.id().to_string()))
            .sum(),
    };
    let head = |c: &Client| {
        let c = c.clone();
        async move {
            c.head()
                .await
                .map(|h| h.0)
                .map_err(|e| BenchError::Invalid(e.to_string()))
        }
    };
    let hs = head(&clients[0]).await?;
    let cpu_s = cpu_now(&vaults);
    let settle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.settle_seconds)).await;
    let settle_took = settle_started.elapsed().as_secs_f64();
    let h0 = head(&clients[0]).await?;
    let cpu0 = cpu_now(&vaults);
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.idle_seconds)).await;
    let idle_took = idle_started.elapsed().as_secs_f64();
    let h1 = head(&clients[0]).await?;
    let cpu1 = cpu_now(&vaults);
    let load_started = Instant::now();
    let (put, get) = client_load(&clients, options).await;
    let load_took = load_started.elapsed().as_secs_f64();
    let cpu2 = cpu_now(&vaults);
    let h2 = head(&clients[0]).await?;
    let cpu = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| b - a);
    let settling = Phase::of(settle_took, h0.saturating_sub(hs), cpu(cpu_s, cpu0));
    let idle = Phase::of(idle_took, h1.saturating_sub(h0), cpu(cpu0, cpu1));
    let load = Phase::of(load_took, h2.saturating_sub(h1), cpu(cpu1, cpu2));
    // Two slots for the last blocks to settle, then compare.
    tokio::time::sleep(Duration::from_millis(2 * options.slot_ms)).await;
    let (heights, settled, disagreements, propagation, missing) = agreement(&clients).await;
    let between = |from: u64, to: u64| {
        let ms: Vec<f64> = propagation
            .iter()
            .filter(|(h, _)| (from..to).contains(h))
            .map(|&(_, ms)| ms)
            .collect();
        (!ms.is_empty()).then(|| Summary::of(&ms))
    };
    stop(vaults).await;
    let _ = std::fs::remove_dir_all(&run_dir);
    Ok(NetworkBench {
        machine: Machine::this(),
        options: options.clone(),
        started_seconds,
        joined_seconds,
        first_block_due_seconds,
        heights,
        settled_heights: settled,
        disagreements,
        // A block made at the end of a phase was made in it.
        propagation_settling_ms: between(hs + 1, h0 + 1),
        propagation_idle_ms: between(h0 + 1, h1 + 1),
        propagation_load_ms: between(h1 + 1, h2 + 1),
        propagation_by_height: propagation.clone(),
        blocks_missing_somewhere: missing,
        memory_per_vault_bytes,
        settling,
        idle,
        load,
        put,
        get,
    })
}

/// The vaults that vault `i` bootstraps from: a few earlier ones, near and
/// far, as a network's newcomers would be given different addresses. All
/// from vault 0 would make it every vault's first peer and the one hub
/// of every gossip mesh until discovery spread the connections.
fn bootstrap_of(i: usize) -> Vec<usize> {
    let mut from: Vec<usize> = [i.wrapping_sub(1), i / 2, i / 3]
        .into_iter()
        .filter(|&j| j < i)
        .collect();
    from.dedup();
    from
}

async fn start_in_process(
    spec: &ChainSpec,
    plots: &[(Keypair, PathBuf)],
    dir: &Path,
) -> Result<(Vaults, Vec<String>), BenchError> {
    let mut nodes = Vec::new();
    let mut listening: Vec<Vec<spacevault_node::Address>> = Vec::new();
    for (i, (key, plot_dir)) in plots.iter().enumerate() {
        let mut config = NodeConfig::new(
            spec.clone(),
            key.clone(),
            dir.join(format!("data{i}")),
            TransportKind::Memory,
        );
        config.plots = vec![plot_dir.clone()];
        config.listen = vec!["/memory/0".parse().expect("a memory address")];
        config.bootstrap = bootstrap_of(i)
            .into_iter()
            .flat_map(|j| listening[j].clone())
            .collect();
        config.api = Some("127.0.0.1:0".parse().expect("a socket address"));
        let node = Node::start(config)
            .await
            .map_err(|e| BenchError::Invalid(format!("vault {i}: {e}")))?;
        listening.push(node.listen_addrs(Duration::from_secs(5)).await);
        nodes.push(node);
    }
    let apis = nodes
        .iter()
        .map(|n| format!("http://{}", n.api_addr().expect("an API")))
        .collect();
    Ok((Vaults::InProcess(nodes), apis))
}

fn start_processes(
    exe: &Path,
    spec: &ChainSpec,
    plots: &[(Keypair, PathBuf)],
    dir: &Path,
    logs_dir: &Path,
) -> Result<(Vaults, Vec<String>), BenchError> {
    use std::io::BufRead;
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, spec.to_json()).map_err(io("writing the chain spec"))?;
    let mut children = Vec::new();
    let mut apis = Vec::new();
    let mut listening: Vec<String> = Vec::new();
    let logs = logs_dir.to_path_buf();
    std::fs::create_dir_all(&logs).map_err(io("creating the log directory"))?;
    for (i, (key, plot_dir)) in plots.iter().enumerate() {
        let config = dir.join(format!("config{i}"));
        std::fs::create_dir_all(&config).map_err(io("creating a config directory"))?;
        let key_text = format!(
            "{}\n{}\n",
            spacevault_node::identity::HEADER,
            hex::encode(key.secret())
        );
        std::fs::write(config.join("farmer.key"), key_text).map_err(io("writing a key"))?;
        // Each vault's log is kept beside the plots for after the run.
        let log = std::fs::File::create(logs.join(format!("vault{i}.log")))
            .map_err(io("creating a vault's log"))?;
        let mut cmd = std::process::Command::new(exe);
        cmd.env("SPACEVAULT_CONFIG_DIR", &config)
            .args([
                "node",
                "--listen",
                "/ip4/127.0.0.1/tcp/0",
                "--api",
                "127.0.0.1:0",
                "--plots",
            ])
            .arg(plot_dir)
            .arg("--data")
            .arg(dir.join(format!("data{i}")))
            .arg("--chain")
            .arg(&spec_path)
            .stdout(std::process::Stdio::piped())
            .stderr(log);
        for j in bootstrap_of(i) {
            cmd.args(["--bootstrap", &listening[j]]);
        }
        let mut child = cmd.spawn().map_err(io("starting a vault"))?;
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped")).lines();
        let (mut addr, mut api) = (None, None);
        while addr.is_none() || api.is_none() {
            let Some(Ok(line)) = lines.next() else {
                return Err(BenchError::Invalid(format!(
                    "vault {i} exited before printing its addresses"
                )));
            };
            if let Some(a) = line.strip_prefix("listening") {
                addr.get_or_insert(a.trim().to_string());
            }
            if let Some(a) = line.strip_prefix("api") {
                api = Some(a.trim().to_string());
            }
        }
        // The rest of its output is not needed; reading it keeps the pipe
        // from filling.
        std::thread::spawn(move || lines.for_each(drop));
        listening.push(addr.expect("read above"));
        apis.push(api.expect("read above"));
        children.push(child);
    }
    Ok((Vaults::Processes(children), apis))
}

async fn stop(vaults: Vaults) {
    match vaults {
        Vaults::InProcess(nodes) => {
            for n in nodes {
                n.stop().await;
            }
        }
        Vaults::Processes(children) => {
            for c in &children {
                // SAFETY: kill has no memory effects.
                unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            }
            for mut c in children {
                let _ = c.wait();
            }
        }
    }
}

/// `clients` concurrent clients, each putting a blob through one vault and
/// getting it back through another, for the set time.
async fn client_load(clients: &[Client], options: &NetworkBenchOptions) -> (OpStats, OpStats) {
    let until = Instant::now() + Duration::from_secs_f64(options.seconds);
    let mut tasks = Vec::new();
    for c in 0..options.clients {
        let clients = clients.to_vec();
        let size = options.blob_bytes;
        tasks.push(tokio::spawn(async move {
            let mut rng = crate::machine::SplitMix(c as u64 + 1);
            let (mut puts, mut gets) = (Vec::new(), Vec::new());
            let (mut put_errors, mut get_errors) = (0usize, 0usize);
            while Instant::now() < until {
                let mut blob = vec![0u8; size];
                for chunk in blob.chunks_mut(8) {
                    let r = rng.next_u64().to_le_bytes();
                    chunk.copy_from_slice(&r[..chunk.len()]);
                }
                let via = &clients[rng.next_u64() as usize % clients.len()];
                let t = Instant::now();
                let Ok(put) = via.put(blob.clone()).await else {
                    put_errors += 1;
                    continue;
                };
                puts.push(t.elapsed().as_secs_f64() * 1e3);
                let from = &clients[rng.next_u64() as usize % clients.len()];
                let t = Instant::now();
                match from.get(&put.address).await {
                    Ok(got) if got == blob => gets.push(t.elapsed().as_secs_f64() * 1e3),
                    _ => get_errors += 1,
                }
            }
            (puts, gets, put_errors, get_errors)
        }));
    }
    let (mut puts, mut gets, mut pe, mut ge) = (Vec::new(), Vec::new(), 0, 0);
    for t in tasks {
        if let Ok((p, g, a, b)) = t.await {
            puts.extend(p);
            gets.extend(g);
            pe += a;
            ge += b;
        }
    }
    let stats = |v: Vec<f64>, errors| OpStats {
        ok: v.len(),
        errors,
        per_second: v.len() as f64 / options.seconds,
        latency_ms: (!v.is_empty()).then(|| Summary::of(&v)),
    };
    (stats(puts, pe), stats(gets, ge))
}

/// Heights, heights compared, disagreements, propagation times (ms) and
/// blocks some vault lacks, over every vault's canonical chain.
/// Heights at every vault, settled heights compared, disagreements, each
/// settled block's propagation time (height, ms), blocks some vault lacks.
async fn agreement(clients: &[Client]) -> ((u64, u64), u64, u64, Vec<(u64, f64)>, u64) {
    let mut heights = Vec::new();
    for c in clients {
        heights.push(c.head().await.map(|h| h.0).unwrap_or(0));
    }
    let (low, high) = (
        heights.iter().copied().min().unwrap_or(0),
        heights.iter().copied().max().unwrap_or(0),
    );
    let settled = low.saturating_sub(2);
    let (mut disagreements, mut missing, mut propagation) = (0, 0, Vec::new());
    for h in 1..=settled {
        let mut hashes = Vec::new();
        let mut times = Vec::new();
        for c in clients {
            let Ok((200, body)) = c.get_path(&format!("/v1/blocks/{h}")).await else {
                hashes.push(None);
                continue;
            };
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            hashes.push(v["hash"].as_str().map(String::from));
            times.push(v["received_unix_ms"].as_u64());
        }
        if hashes.iter().any(|x| x.is_none() || *x != hashes[0]) {
            disagreements += 1;
            continue;
        }
        if times.iter().any(|t| t.is_none()) {
            missing += 1;
            continue;
        }
        let times: Vec<u64> = times.into_iter().flatten().collect();
        let first = *times.iter().min().expect("vaults");
        let last = *times.iter().max().expect("vaults");
        propagation.push((h, (last - first) as f64));
    }
    ((low, high), settled, disagreements, propagation, missing)
}
