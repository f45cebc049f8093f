//! `spacevault stress`: the client stress test of a network of vaults,
//! over a grid of network sizes and client counts. Each cell starts a fresh
//! network of V vaults; then C clients each PUT their immutable blobs and
//! their mutable registers, then GET every one of them back, through the
//! vaults' HTTP APIs on loopback as a user's client does. A cell's time to
//! run is from the clients' start to the last client's end; every answer is
//! checked, and a blob or register that does not come back as it was put
//! is counted as lost or wrong, never averaged away.

use crate::launch::{LaunchOptions, Mode, Network};
use crate::machine::Machine;
use crate::profiles::{round_trips, RoundTrips};
use crate::stats::Summary;
use crate::stress_client::{figures_of, unix_ns, ClientWork, Record};
pub use crate::stress_client::{run_job, ClientAnswer, ClientJob, OpFigures, OpKind};
use crate::stress_timeline::Timeline;
use crate::BenchError;
use serde::Serialize;
use spacevault_node::client::Client;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The largest blob a vault takes (docs/PROTOCOL.md).
const MAX_BLOB_BYTES: usize = 1 << 20;

/// The grid and the work of each client.
#[derive(Clone, Debug, Serialize)]
pub struct StressOptions {
    pub vaults: Vec<usize>,
    pub clients: Vec<usize>,
    /// Immutable blobs each client PUTs and GETs.
    pub immutable: usize,
    /// Registers each client writes and reads.
    pub mutable: usize,
    /// Each blob's size; a register's value is as long, at most the
    /// chain's limit on register values.
    pub size: usize,
    /// Operations each client keeps outstanding at once.
    pub in_flight: usize,
    pub k: u8,
    /// The scheme of every vault's plot and of the chain's proofs.
    pub scheme: spacevault_chain::ProofKind,
    pub slot_ms: u64,
    /// The proof of time's squarings a slot, where not the spec's default.
    pub pot_iterations: Option<u64>,
    pub replication: u32,
    pub mode: Mode,
    /// Runs of each cell.
    pub repeats: usize,
    /// Rent of the machine, for each cell's cost.
    pub price_per_hour: Option<f64>,
    /// The vaults remember signatures they verified.
    pub verify_cache: bool,
    /// Vaults in one process share the slot outputs they checked
    /// ([`LaunchOptions::shared_slot_checks`]).
    pub shared_slot_checks: bool,
    /// How far apart the vaults are.
    pub distance: crate::profiles::Distance,
    /// Where each cell's crypto traces go (one file a vault); none: no
    /// tracing.
    pub trace_dir: Option<PathBuf>,
    /// Plot cache and the networks' stores.
    pub dir: PathBuf,
    /// The API URLs of vaults already running (started by hand, or on
    /// other machines) to drive instead of starting a network a cell: the
    /// grid's only network size is their count, and the chain's own
    /// slots and copies replace `slot_ms` and `replication`.
    pub network: Option<Vec<String>>,
    /// Slots a block on average, where not the spec's default: a running
    /// network's own.
    pub block_interval_slots: Option<u64>,
    /// Where the clients run: in this process, or each in a process of its
    /// own (`exe stress client`), whose CPU is then theirs alone.
    pub clients_mode: Mode,
}

/// One run of one cell of the grid.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub vaults: usize,
    pub clients: usize,
    pub repeat: usize,
    /// From the first client's start to the last client's end.
    pub seconds: f64,
    /// The network's start and join before the clients began.
    pub network_start_seconds: f64,
    pub operations: usize,
    pub put_immutable: OpFigures,
    pub put_mutable: OpFigures,
    pub get_immutable: OpFigures,
    pub get_mutable: OpFigures,
    /// CPU seconds of every vault together during the clients' work.
    pub cpu_seconds: Option<f64>,
    /// CPU seconds of the clients during their work, where the vaults run
    /// apart from them (processes of their own, or attached).
    pub clients_cpu_seconds: Option<f64>,
    /// The vaults' cryptographic operations during the clients' work, all
    /// vaults together, by kind and purpose.
    pub crypto: Vec<CryptoTotal>,
    /// `seconds` at the machine's price.
    pub cost_usd: Option<f64>,
    /// Ping round trips between regions at the clients' end, beside the
    /// profile's.
    pub round_trips: Vec<RoundTrips>,
    /// Changes of branch in every vault together, from the network's start
    /// to the clients' end.
    pub reorgs: u64,
    /// The most blocks one change of branch took off a vault's chain.
    pub deepest_reorg: u64,
    /// Blocks signed by all vaults together, from the network's start to
    /// the clients' end.
    pub blocks_produced: u64,
    /// The highest head then.
    pub height: u64,
    /// The profiling study's tables from the cell's crypto traces, when traced.
    pub crypto_trace: Option<crate::crypto_trace::CryptoReport>,
    /// What finished when, over the run's time.
    pub timeline: Timeline,
}

impl Cell {
    pub fn figures(&self, kind: OpKind) -> &OpFigures {
        match kind {
            OpKind::PutImmutable => &self.put_immutable,
            OpKind::PutMutable => &self.put_mutable,
            OpKind::GetImmutable => &self.get_immutable,
            OpKind::GetMutable => &self.get_mutable,
        }
    }

    /// Data that did not come back as it was put: what no average may hide.
    pub fn lost_or_wrong(&self) -> usize {
        OpKind::ALL
            .iter()
            .map(|&k| self.figures(k).lost + self.figures(k).wrong)
            .sum()
    }

    pub fn errors(&self) -> usize {
        OpKind::ALL.iter().map(|&k| self.figures(k).errors).sum()
    }
}

/// One kind and purpose of cryptographic operation, summed over vaults.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CryptoTotal {
    pub kind: String,
    pub purpose: String,
    pub count: u64,
    pub seconds: f64,
    /// Verifications answered from the vaults' caches instead.
    pub cache_hits: u64,
}

impl Cell {
    /// Operations and seconds of one kind (hash, sign, verify).
    pub fn crypto_of(&self, kind: &str) -> (u64, f64) {
        self.crypto
            .iter()
            .filter(|c| c.kind == kind)
            .fold((0, 0.0), |(n, s), c| (n + c.count, s + c.seconds))
    }

    /// Seconds of every crypto operation, all kinds together.
    pub fn crypto_seconds(&self) -> f64 {
        ["hash", "sign", "verify"]
            .iter()
            .map(|k| self.crypto_of(k).1)
            .sum()
    }
}

/// Every vault's crypto counters, summed.
async fn crypto_totals(clients: &[Client]) -> Vec<CryptoTotal> {
    let mut totals: Vec<CryptoTotal> = Vec::new();
    for c in clients {
        let Ok(answer) = c.crypto().await else {
            continue;
        };
        for op in answer.operations {
            let (kind, purpose) = (op.kind.as_str(), op.purpose.as_str());
            let (count, seconds, cache_hits) = (op.count, op.seconds, op.cache_hits);
            match totals
                .iter_mut()
                .find(|t| t.kind == kind && t.purpose == purpose)
            {
                Some(t) => {
                    t.count += count;
                    t.seconds += seconds;
                    t.cache_hits += cache_hits;
                }
                None => totals.push(CryptoTotal {
                    kind: kind.into(),
                    purpose: purpose.into(),
                    count,
                    seconds,
                    cache_hits,
                }),
            }
        }
    }
    totals
}

/// `after` less `before`, by kind and purpose.
fn crypto_between(before: &[CryptoTotal], after: &[CryptoTotal]) -> Vec<CryptoTotal> {
    after
        .iter()
        .map(|a| {
            let b = before
                .iter()
                .find(|b| b.kind == a.kind && b.purpose == a.purpose);
            CryptoTotal {
                count: a.count - b.map_or(0, |b| b.count.min(a.count)),
                seconds: (a.seconds - b.map_or(0.0, |b| b.seconds)).max(0.0),
                cache_hits: a.cache_hits - b.map_or(0, |b| b.cache_hits.min(a.cache_hits)),
                ..a.clone()
            }
        })
        .collect()
}

/// The whole grid's results.
#[derive(Clone, Debug, Serialize)]
pub struct StressReport {
    pub machine: Machine,
    pub options: StressOptions,
    pub cells: Vec<Cell>,
}

impl StressReport {
    /// The median time to run of each (vaults, clients) cell over its
    /// repeats, in the grid's order.
    pub fn median_seconds(&self, vaults: usize, clients: usize) -> Option<f64> {
        let runs: Vec<f64> = self
            .cells
            .iter()
            .filter(|c| c.vaults == vaults && c.clients == clients)
            .map(|c| c.seconds)
            .collect();
        (!runs.is_empty()).then(|| Summary::of(&runs).median)
    }

    /// Lost or wrong data over every repeat of a cell.
    pub fn lost_or_wrong(&self, vaults: usize, clients: usize) -> usize {
        self.cells
            .iter()
            .filter(|c| c.vaults == vaults && c.clients == clients)
            .map(Cell::lost_or_wrong)
            .sum()
    }
}

/// Where the grid is, for a progress line.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub vaults: usize,
    pub clients: usize,
    pub repeat: usize,
    pub elapsed: Duration,
}

impl StressOptions {
    pub fn validate(&self) -> Result<(), BenchError> {
        let bad = |m: &str| Err(BenchError::Invalid(m.into()));
        if self.vaults.is_empty() || self.vaults.contains(&0) {
            return bad("--vaults needs sizes of at least 1");
        }
        if self.clients.is_empty() || self.clients.contains(&0) {
            return bad("--clients needs counts of at least 1");
        }
        if self.immutable + self.mutable == 0 {
            return bad("--immutable and --mutable are both 0: the clients would do nothing");
        }
        if self.size == 0 || self.size > MAX_BLOB_BYTES {
            return bad("--size must be 1 byte to 1 MiB");
        }
        if self.in_flight == 0 {
            return bad("--in-flight must be at least 1");
        }
        if self.repeats == 0 {
            return bad("--repeats must be at least 1");
        }
        if let Some(apis) = &self.network {
            if apis.is_empty() {
                return bad("the network file names no vault");
            }
            if self.vaults != [apis.len()] {
                return bad("a grid over a running network has its size alone");
            }
        }
        Ok(())
    }

    /// Every run the grid holds, in the order they run: small networks
    /// and light loads first, so that a grid cut short has its easy end.
    pub fn runs(&self) -> Vec<(usize, usize, usize)> {
        let mut runs = Vec::new();
        for &v in &self.vaults {
            for &c in &self.clients {
                for r in 0..self.repeats {
                    runs.push((v, c, r));
                }
            }
        }
        runs
    }
}

/// Runs the grid on a tokio runtime of its own, telling `progress` before
/// each run.
pub fn run(
    options: &StressOptions,
    progress: &dyn Fn(Progress),
) -> Result<StressReport, BenchError> {
    options.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(crate::launch::io("starting the runtime"))?;
    // A running network's own settings are the run's: asked once, before
    // any cell, so that a wrong URL or a vault on another chain stops it
    // at once.
    let mut options = options.clone();
    if let Some(apis) = &options.network {
        let network = runtime.block_on(Network::attach(apis, options.trace_dir.is_some()))?;
        options.slot_ms = network.spec.slot_ms;
        options.replication = network.spec.replication;
        options.block_interval_slots = Some(network.spec.block_interval_slots);
    }
    let options = &options;
    let runs = options.runs();
    let started = Instant::now();
    let mut cells = Vec::new();
    for (done, &(vaults, clients, repeat)) in runs.iter().enumerate() {
        progress(Progress {
            done,
            total: runs.len(),
            vaults,
            clients,
            repeat,
            elapsed: started.elapsed(),
        });
        cells.push(runtime.block_on(run_cell(options, vaults, clients, repeat))?);
    }
    Ok(StressReport {
        machine: Machine::this(),
        options: options.clone(),
        cells,
    })
}

/// Each vault's bound of API requests under way in a cell: what its
/// clients can have in flight (PUTs from its own, GETs from the previous
/// vault's), and never below the default. The grid measures the vaults'
/// work; a bound below the load would measure their admission control.
fn api_bound(clients: usize, vaults: usize, in_flight: usize) -> usize {
    let per_vault = clients.div_ceil(vaults.max(1));
    (2 * per_vault * in_flight.max(1)).max(spacevault_node::config::MAX_CONCURRENT_REQUESTS)
}

async fn run_cell(
    options: &StressOptions,
    vaults: usize,
    clients: usize,
    repeat: usize,
) -> Result<Cell, BenchError> {
    let network = match &options.network {
        Some(apis) => Network::attach(apis, options.trace_dir.is_some()).await?,
        None => Network::start(&launch_options(options, vaults, clients, repeat)).await?,
    };
    if let Err(e) = network.wait_joined(Duration::from_secs(120)).await {
        network.stop().await;
        return Err(e);
    }
    let network_start_seconds = network.elapsed_seconds();
    let crypto_before = crypto_totals(&network.clients).await;
    let chain_id = network.spec.chain_id();
    let value_bytes = options
        .size
        .min(network.spec.max_register_value_bytes as usize);
    // The traces cover the clients' work only, as the profiling study's did.
    let _ = network.take_traces((0, 0)).await;
    let window_start = unix_ns();
    // The CPU of the clients' work alone: asking every vault for its
    // counters and status before and after takes seconds of a loaded
    // machine's time in a large network.
    let cpu_before = network.vaults_cpu_seconds().await;
    let clients_cpu_before = network.clients_cpu_seconds();
    let started = Instant::now();
    let (records, client_processes_cpu) = match run_clients(
        options,
        &network,
        (vaults, clients),
        chain_id,
        value_bytes,
        started,
    )
    .await
    {
        Ok(records) => records,
        Err(e) => {
            network.stop().await;
            return Err(e);
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    // Clients in processes of their own say what they used; else, where
    // the vaults run apart, this process's CPU is the clients'.
    let clients_cpu_seconds = match options.clients_mode {
        Mode::Processes { .. } => client_processes_cpu,
        Mode::InProcess => clients_cpu_before
            .zip(network.clients_cpu_seconds())
            .map(|(a, b)| b - a),
    };
    let cpu_seconds = cpu_before
        .zip(network.vaults_cpu_seconds().await)
        .map(|(a, b)| b - a);
    let traces = match network.take_traces((window_start, unix_ns())).await {
        Ok(traces) => traces,
        Err(e) => {
            network.stop().await;
            return Err(e);
        }
    };
    let crypto_trace = match (&options.trace_dir, traces.is_empty()) {
        (Some(dir), false) => match write_traces(dir, (vaults, clients, repeat), &traces) {
            Ok(report) => Some(report),
            Err(e) => {
                network.stop().await;
                return Err(e);
            }
        },
        _ => None,
    };
    drop(traces);
    let statuses = network.statuses().await;
    let round_trips = round_trips(&options.distance.regions(), &network.round_trips(&statuses));
    let health = crate::launch::ChainHealth::of(&statuses);
    let crypto = crypto_between(&crypto_before, &crypto_totals(&network.clients).await);
    network.stop().await;
    let figures = |kind: OpKind| figures_of(records.iter().filter(|r| r.kind == kind));
    Ok(Cell {
        vaults,
        clients,
        repeat,
        seconds,
        network_start_seconds,
        operations: records.len(),
        put_immutable: figures(OpKind::PutImmutable),
        put_mutable: figures(OpKind::PutMutable),
        get_immutable: figures(OpKind::GetImmutable),
        get_mutable: figures(OpKind::GetMutable),
        cpu_seconds,
        clients_cpu_seconds,
        crypto,
        cost_usd: options.price_per_hour.map(|p| p * seconds / 3600.0),
        round_trips,
        reorgs: health.reorgs,
        deepest_reorg: health.deepest_reorg,
        blocks_produced: health.blocks_produced,
        height: health.height,
        crypto_trace,
        timeline: Timeline::of(&records, seconds),
    })
}

/// What a cell's network is started with.
fn launch_options(
    options: &StressOptions,
    vaults: usize,
    clients: usize,
    repeat: usize,
) -> LaunchOptions {
    LaunchOptions {
        vaults,
        k: options.k,
        scheme: options.scheme,
        slot_ms: options.slot_ms,
        pot_iterations: options.pot_iterations,
        replication: options.replication,
        mode: options.mode.clone(),
        plot_cache: options.dir.clone(),
        run_dir: options.dir.join(format!(
            "run-{}-v{vaults}-c{clients}-r{repeat}",
            std::process::id()
        )),
        logs_dir: options.dir.join("logs"),
        verify_cache: options.verify_cache,
        shared_slot_checks: options.shared_slot_checks,
        distance: options.distance.clone(),
        trace_crypto: options.trace_dir.is_some(),
        api_max_requests: api_bound(clients, vaults, options.in_flight),
        audits: None,
        max_peers: None,
        era_blocks: None,
    }
}

/// Runs a cell's clients at once and gathers their records, and the CPU
/// of clients in processes of their own.
async fn run_clients(
    options: &StressOptions,
    network: &Network,
    (vaults, clients): (usize, usize),
    chain_id: [u8; 32],
    value_bytes: usize,
    started: Instant,
) -> Result<(Vec<Record>, Option<f64>), BenchError> {
    // Vaults that outlive the run keep what earlier runs put: a run of its
    // own writes data and registers of its own.
    let seed = match options.network {
        Some(_) => unix_ns(),
        None => 0,
    };
    if let Mode::Processes { exe } = &options.clients_mode {
        let jobs = (0..clients)
            .map(|c| ClientJob {
                index: c,
                put_via: network.clients[c % vaults].url().to_string(),
                get_via: network.clients[(c + 1) % vaults].url().to_string(),
                chain_id: hex::encode(chain_id),
                immutable: options.immutable,
                mutable: options.mutable,
                size: options.size,
                value_bytes,
                in_flight: options.in_flight,
                seed,
                origin_unix_ns: unix_ns().saturating_sub(started.elapsed().as_nanos() as u64),
            })
            .collect();
        return crate::stress_client::run_in_processes(exe, jobs).await;
    }
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let work = ClientWork {
                index: c,
                // A client talks to one vault, as the profiling study's
                // do, and reads back through the next, so that GETs cross
                // the network.
                put_via: network.clients[c % vaults].clone(),
                get_via: network.clients[(c + 1) % vaults].clone(),
                chain_id,
                immutable: options.immutable,
                mutable: options.mutable,
                size: options.size,
                value_bytes,
                in_flight: options.in_flight,
                started,
                seed,
            };
            tokio::spawn(work.run())
        })
        .collect();
    let mut records = Vec::new();
    for t in tasks {
        let r = t
            .await
            .map_err(|e| BenchError::Invalid(format!("a client failed: {e}")))?;
        records.extend(r);
    }
    Ok((records, None))
}

/// Writes a run's traces, a file a vault, and reports on them.
fn write_traces(
    dir: &std::path::Path,
    (vaults, clients, repeat): (usize, usize, usize),
    traces: &[crate::crypto_trace::Trace],
) -> Result<crate::crypto_trace::CryptoReport, BenchError> {
    let dir = dir.join(format!("v{vaults}-c{clients}-r{repeat}"));
    std::fs::create_dir_all(&dir).map_err(crate::launch::io("creating the trace directory"))?;
    for t in traces {
        crate::crypto_trace::write(t, &dir.join(format!("vault{}.svtrace", t.vault)))?;
    }
    crate::crypto_trace::report(traces)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_api_bound_covers_what_its_clients_have_in_flight() {
        let default = spacevault_node::config::MAX_CONCURRENT_REQUESTS;
        assert_eq!(api_bound(40, 1, 32), 2560);
        assert_eq!(api_bound(40, 64, 32), default);
        assert_eq!(api_bound(41, 2, 32), 2 * 21 * 32);
        assert_eq!(api_bound(1, 1, 0), default);
    }

    #[test]
    fn the_grid_runs_small_first_with_every_repeat() {
        let o = StressOptions {
            vaults: vec![1, 4],
            clients: vec![2, 8],
            immutable: 1,
            mutable: 0,
            size: 1024,
            in_flight: 1,
            k: 16,
            scheme: spacevault_chain::ProofKind::Plain,
            slot_ms: 500,
            pot_iterations: None,
            replication: 4,
            mode: Mode::InProcess,
            repeats: 2,
            price_per_hour: None,
            verify_cache: true,
            shared_slot_checks: true,
            distance: Default::default(),
            trace_dir: None,
            dir: PathBuf::from("x"),
            network: None,
            block_interval_slots: None,
            clients_mode: Mode::InProcess,
        };
        let runs = o.runs();
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[0], (1, 2, 0));
        assert_eq!(runs[1], (1, 2, 1));
        assert_eq!(runs[7], (4, 8, 1));
        assert!(o.validate().is_ok());
        assert!(StressOptions {
            in_flight: 0,
            ..o.clone()
        }
        .validate()
        .is_err());
        assert!(StressOptions {
            vaults: vec![],
            ..o.clone()
        }
        .validate()
        .is_err());
        let attached = StressOptions {
            vaults: vec![2],
            network: Some(vec![
                "http://127.0.0.1:1".into(),
                "http://127.0.0.1:2".into(),
            ]),
            ..o.clone()
        };
        assert!(attached.validate().is_ok());
        assert!(StressOptions {
            vaults: vec![1, 2],
            ..attached.clone()
        }
        .validate()
        .is_err());
        assert!(StressOptions {
            vaults: vec![1],
            network: Some(vec![]),
            ..o
        }
        .validate()
        .is_err());
    }
}
