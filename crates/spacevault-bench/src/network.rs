//! `spacevault bench network`: a network of vaults on this machine, in one
//! process over the in-memory transport or as separate processes on
//! loopback TCP, measured as it runs: how long the vaults take to start
//! and join, whether they agree on every settled block, how long a block
//! takes to reach every vault, memory and CPU per vault, and clients' PUT
//! and GET latency and throughput through the vaults' HTTP APIs.

pub use crate::launch::Mode;
use crate::launch::{io, LaunchOptions, Network};
use crate::machine::Machine;
use crate::profiles::{round_trips, RoundTrips};
use crate::stats::Summary;
use crate::BenchError;
use serde::Serialize;
use spacevault_node::client::Client;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct NetworkBenchOptions {
    pub vaults: usize,
    pub k: u8,
    /// The scheme of every vault's plot and of the chain's proofs.
    pub scheme: spacevault_chain::ProofKind,
    pub slot_ms: u64,
    /// The proof of time's squarings a slot, where not the spec's default.
    pub pot_iterations: Option<u64>,
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
    /// Vaults in one process share the slot outputs they checked
    /// ([`LaunchOptions::shared_slot_checks`]).
    pub shared_slot_checks: bool,
    /// How far apart the vaults are.
    pub distance: crate::profiles::Distance,
    /// Each vault closes unused connections beyond this many.
    pub max_peers: Option<usize>,
    /// Where plots (kept between runs), stores and specs go.
    pub dir: PathBuf,
}

/// CPU and blocks of one phase of the run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Phase {
    pub seconds: f64,
    pub blocks: u64,
    /// The first vault's height when the phase began and when it ended:
    /// the phase's blocks are the heights after the one and up to the
    /// other.
    pub heights: (u64, u64),
    pub cpu_seconds: Option<f64>,
    /// CPU of every vault together for each block made.
    pub cpu_ms_per_block: Option<f64>,
    /// CPU of one vault (the average) in each second of the phase, in
    /// milliseconds: what a vault of its own would cost its machine.
    pub cpu_ms_per_vault_second: Option<f64>,
}

impl Phase {
    fn of(seconds: f64, heights: (u64, u64), cpu_seconds: Option<f64>, vaults: usize) -> Phase {
        let blocks = heights.1.saturating_sub(heights.0);
        Phase {
            seconds,
            blocks,
            heights,
            cpu_seconds,
            cpu_ms_per_block: cpu_seconds
                .filter(|_| blocks > 0)
                .map(|c| c * 1000.0 / blocks as f64),
            cpu_ms_per_vault_second: cpu_seconds
                .filter(|_| seconds > 0.0 && vaults > 0)
                .map(|c| c * 1000.0 / seconds / vaults as f64),
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
    /// Blocks signed and changes of branch, from the start to the end.
    pub chain: crate::launch::ChainHealth,
    /// Settled blocks that some vault never imported (it synced past them
    /// on another branch, or was behind).
    pub blocks_missing_somewhere: u64,
    pub memory_per_vault_bytes: Option<u64>,
    /// Peers each vault is connected to at the end of the idle phase.
    pub peers_per_vault: Option<Summary>,
    /// CPU seconds of every vault together, and blocks made, in each phase.
    pub settling: Phase,
    pub idle: Phase,
    pub load: Phase,
    pub put: OpStats,
    pub get: OpStats,
    /// Ping round trips between regions at the end of the idle phase,
    /// beside the profile's.
    pub round_trips: Vec<RoundTrips>,
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
    let network = Network::start(&LaunchOptions {
        vaults: options.vaults,
        k: options.k,
        scheme: options.scheme,
        slot_ms: options.slot_ms,
        pot_iterations: options.pot_iterations,
        replication: options.replication,
        mode: options.mode.clone(),
        plot_cache: options.dir.clone(),
        run_dir: options.dir.join(format!("run-{}", std::process::id())),
        logs_dir: options.dir.join("logs"),
        verify_cache: true,
        shared_slot_checks: options.shared_slot_checks,
        distance: options.distance.clone(),
        trace_crypto: false,
        api_max_requests: spacevault_node::config::MAX_CONCURRENT_REQUESTS,
        audits: None,
        era_blocks: None,
        max_peers: options.max_peers,
    })
    .await?;
    if let Err(e) = network.wait_joined(Duration::from_secs(120)).await {
        network.stop().await;
        return Err(e);
    }
    let joined_seconds = network.elapsed_seconds();
    let memory_per_vault_bytes = network.memory_per_vault_bytes();
    let clients = network.clients.clone();
    let cpu_now = || network.cpu_seconds();
    let head = || network.height(0);
    let hs = head().await?;
    let cpu_s = cpu_now();
    let settle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.settle_seconds)).await;
    let settle_took = settle_started.elapsed().as_secs_f64();
    let h0 = head().await?;
    let cpu0 = cpu_now();
    let idle_started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(options.idle_seconds)).await;
    let idle_took = idle_started.elapsed().as_secs_f64();
    let h1 = head().await?;
    let cpu1 = cpu_now();
    let statuses = network.statuses().await;
    let peers: Vec<f64> = statuses
        .iter()
        .flatten()
        .map(|s| s.peers.len() as f64)
        .collect();
    let peers_per_vault = (!peers.is_empty()).then(|| Summary::of(&peers));
    let round_trips = round_trips(&options.distance.regions(), &network.round_trips(&statuses));
    let load_started = Instant::now();
    let (put, get) = client_load(&clients, options).await;
    let load_took = load_started.elapsed().as_secs_f64();
    let cpu2 = cpu_now();
    let h2 = head().await?;
    let cpu = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| b - a);
    let vaults = options.vaults;
    let settling = Phase::of(settle_took, (hs, h0), cpu(cpu_s, cpu0), vaults);
    let idle = Phase::of(idle_took, (h0, h1), cpu(cpu0, cpu1), vaults);
    let load = Phase::of(load_took, (h1, h2), cpu(cpu1, cpu2), vaults);
    // Two slots for the last blocks to settle, then compare.
    tokio::time::sleep(Duration::from_millis(2 * options.slot_ms)).await;
    let (heights, settled, disagreements, propagation, missing) = agreement(&clients).await;
    let chain = crate::launch::ChainHealth::of(&network.statuses().await);
    let between = |from: u64, to: u64| {
        let ms: Vec<f64> = propagation
            .iter()
            .filter(|(h, _)| (from..to).contains(h))
            .map(|&(_, ms)| ms)
            .collect();
        (!ms.is_empty()).then(|| Summary::of(&ms))
    };
    let (started_seconds, first_block_due_seconds) =
        (network.started_seconds, network.first_block_due_seconds);
    network.stop().await;
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
        chain,
        blocks_missing_somewhere: missing,
        memory_per_vault_bytes,
        peers_per_vault,
        settling,
        idle,
        load,
        put,
        get,
        round_trips,
    })
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
                let put = match via.put(blob.clone()).await {
                    Ok(put) => put,
                    Err(e) => {
                        tracing::warn!(vault = via.url(), error = %e, "a client's PUT failed");
                        put_errors += 1;
                        continue;
                    }
                };
                puts.push(t.elapsed().as_secs_f64() * 1e3);
                let from = &clients[rng.next_u64() as usize % clients.len()];
                let t = Instant::now();
                match from.get(&put.address).await {
                    Ok(got) if got == blob => gets.push(t.elapsed().as_secs_f64() * 1e3),
                    Ok(_) => {
                        tracing::warn!(vault = from.url(), "a client's GET returned other bytes");
                        get_errors += 1;
                    }
                    Err(e) => {
                        tracing::warn!(vault = from.url(), error = %e, "a client's GET failed");
                        get_errors += 1;
                    }
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

/// Heights at every vault, settled heights compared, disagreements, each
/// settled block's propagation time (height, ms), blocks some vault lacks.
async fn agreement(clients: &[Client]) -> ((u64, u64), u64, u64, Vec<(u64, f64)>, u64) {
    let mut heights = Vec::new();
    for c in clients {
        heights.push(c.head().await.map(|h| h.height).unwrap_or(0));
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
            let Ok(block) = c.block(h).await else {
                hashes.push(None);
                continue;
            };
            hashes.push(Some(block.hash));
            times.push(block.received_unix_ms);
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
