//! Starting a network of vaults on this machine for a benchmark: in one
//! process over the in-memory transport, or as separate `spacevault node`
//! processes on loopback TCP; waiting until they joined; their CPU and
//! memory; stopping them. `bench network` and `stress` both use it.

use crate::crypto_trace::Trace;
use crate::profiles::Distance;
use crate::BenchError;
use serde::Serialize;
use spacevault_chain::{ChainSpec, Keypair, ProofKind};
use spacevault_node::client::{Client, Status};
use spacevault_node::kit::{self, bootstrap_of};
use spacevault_node::links::LinksFile;
use spacevault_node::process::{cpu_seconds, resident_bytes};
use spacevault_node::Node;
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

/// The network to start.
#[derive(Clone, Debug)]
pub struct LaunchOptions {
    pub vaults: usize,
    pub k: u8,
    /// Every vault's plot is of this scheme, the only one the chain takes.
    pub scheme: ProofKind,
    pub slot_ms: u64,
    /// The proof of time's squarings a slot, where not the spec's default.
    pub pot_iterations: Option<u64>,
    pub replication: u32,
    pub mode: Mode,
    /// Where plots are made once and kept for later runs.
    pub plot_cache: PathBuf,
    /// Where this network's stores and spec go (removed by [`Network::stop`]).
    pub run_dir: PathBuf,
    /// Where vault processes' logs go.
    pub logs_dir: PathBuf,
    /// The vaults remember signatures they verified.
    pub verify_cache: bool,
    /// Vaults in one process share the slot outputs they checked, as
    /// vaults on machines of their own would each check once
    /// (`spacevault_chain::time::CheckedSlots`); vault processes check
    /// their own whatever this says.
    pub shared_slot_checks: bool,
    /// How far apart the vaults are.
    pub distance: Distance,
    /// The vaults keep every crypto operation's span (in-process only).
    pub trace_crypto: bool,
    /// Requests each vault's API works on at once, at most.
    pub api_max_requests: usize,
    /// Each vault closes unused connections beyond this many.
    pub max_peers: Option<usize>,
    /// How the vaults audit each other, where not as a vault does by
    /// default (vaults in this process only).
    pub audits: Option<spacevault_node::audits::AuditConfig>,
    /// Blocks an era, where not the spec's default: short eras bring a
    /// new network to holders registered on its chain sooner.
    pub era_blocks: Option<u64>,
}

/// A running network of vaults.
pub struct Network {
    vaults: Vaults,
    /// Each vault's peer id, in vault order.
    pub peers: Vec<String>,
    /// Each vault's API client, in vault order.
    pub clients: Vec<Client>,
    pub spec: ChainSpec,
    run_dir: PathBuf,
    /// From the first vault's start until every vault listened.
    pub started_seconds: f64,
    /// When block 1 was due, from the same start.
    pub first_block_due_seconds: f64,
    started: Instant,
    rss_before: Option<u64>,
    /// The vaults keep crypto traces.
    trace_crypto: bool,
}

mod attached;
mod inspect;

pub(crate) fn io(context: &str) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |e| BenchError::io(context.to_string(), e)
}

impl Network {
    /// Plots what is not in the cache yet, writes a chain spec whose first
    /// block is due once every vault has had time to start, and starts the
    /// vaults.
    pub async fn start(options: &LaunchOptions) -> Result<Network, BenchError> {
        if options.vaults == 0 {
            return Err(BenchError::Invalid("a network needs a vault".into()));
        }
        std::fs::create_dir_all(&options.run_dir).map_err(io("creating the run directory"))?;
        let plots: Vec<(Keypair, PathBuf)> = (0..options.vaults)
            .map(|i| vault_plot(&options.plot_cache, i, options.k, options.scheme))
            .collect::<Result<_, _>>()?;
        let mut spec = ChainSpec::new(
            "bench-network",
            // Time for every vault to start and connect before the first
            // block, as a network's first vaults would have: a chain whose
            // first slots find most vaults still dialling is contested by
            // all.
            spacevault_node::now_ms() + 1000 + 40 * options.vaults as u64,
            options.slot_ms,
        );
        let sizes = options.scheme.sizes();
        spec.proofs.clear();
        spec.set_sizes(
            options.scheme,
            options.k.clamp(*sizes.start(), *sizes.end()),
            *sizes.end(),
        );
        spec.replication = options.replication;
        if let Some(n) = options.pot_iterations {
            spec.pot_iterations = n;
        }
        if let Some(n) = options.era_blocks {
            spec.era_blocks = n;
        }
        // The first target for the space the network starts with, as a
        // network's founders would set it: blocks at the spec's interval
        // from the first era.
        spec.initial_records = (options.vaults as u64) << options.k;
        spec.validate()
            .map_err(|e| BenchError::Invalid(e.to_string()))?;
        let rss_before = resident_bytes("self");
        let started = Instant::now();
        let first_block_due_seconds = (spec.genesis_unix_ms + spec.slot_ms)
            .saturating_sub(spacevault_node::now_ms()) as f64
            / 1000.0;
        let peers: Vec<String> = plots
            .iter()
            .map(|(key, _)| {
                spacevault_network::peer_of(&key.public())
                    .expect("an ed25519 key is a peer id")
                    .to_string()
            })
            .collect();
        let links = options.distance.links_file(&peers);
        let (vaults, apis) = match &options.mode {
            Mode::InProcess => start_in_process(&spec, &plots, options, links).await?,
            Mode::Processes { exe } => start_processes(exe, &spec, &plots, options, links)?,
        };
        let started_seconds = started.elapsed().as_secs_f64();
        let clients = apis
            .iter()
            .map(|a| Client::new(a).map_err(|e| BenchError::Invalid(e.to_string())))
            .collect::<Result<_, _>>();
        let clients = match clients {
            Ok(c) => c,
            Err(e) => {
                stop(vaults).await;
                return Err(e);
            }
        };
        Ok(Network {
            vaults,
            peers,
            clients,
            spec,
            run_dir: options.run_dir.clone(),
            started_seconds,
            first_block_due_seconds,
            started,
            rss_before,
            trace_crypto: options.trace_crypto,
        })
    }

    /// Seconds since the network started.
    pub fn elapsed_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Waits until every vault has a peer (or is alone) and a block.
    pub async fn wait_joined(&self, limit: Duration) -> Result<(), BenchError> {
        let deadline = Instant::now() + limit;
        loop {
            // Every vault asked at once, for its cheapest answer: asked one
            // after another, 64 busy vaults took seconds a round.
            let asks = self.clients.iter().map(|c| {
                let c = c.clone();
                tokio::spawn(async move {
                    match c.health().await {
                        Ok(h) => (h.height, h.peers.max(0) as u64),
                        Err(_) => (0, 0),
                    }
                })
            });
            let alone = self.clients.len() == 1;
            let mut joined = true;
            for ask in asks.collect::<Vec<_>>() {
                let (height, peers) = ask.await.unwrap_or((0, 0));
                joined &= height >= 1 && (alone || peers >= 1);
            }
            if joined {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(BenchError::Invalid(format!(
                    "the vaults did not join within {} s",
                    limit.as_secs()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// CPU seconds the vaults used so far, all together.
    pub fn cpu_seconds(&self) -> Option<f64> {
        match &self.vaults {
            Vaults::InProcess(_) => cpu_seconds("self"),
            Vaults::Processes(children) => children
                .iter()
                .map(|c| cpu_seconds(&c.id().to_string()))
                .sum(),
            Vaults::Attached => None,
        }
    }

    /// Resident memory a vault, on average: in one process, what the
    /// process grew by since before the vaults started.
    pub fn memory_per_vault_bytes(&self) -> Option<u64> {
        let n = self.clients.len() as u64;
        match &self.vaults {
            Vaults::InProcess(_) => resident_bytes("self")
                .zip(self.rss_before)
                .map(|(after, before)| after.saturating_sub(before) / n),
            Vaults::Processes(children) => children
                .iter()
                .map(|c| resident_bytes(&c.id().to_string()))
                .sum::<Option<u64>>()
                .map(|b| b / n),
            Vaults::Attached => None,
        }
    }

    /// The canonical head's height at vault `i`.
    pub async fn height(&self, i: usize) -> Result<u64, BenchError> {
        self.clients[i]
            .head()
            .await
            .map(|h| h.height)
            .map_err(|e| BenchError::Invalid(e.to_string()))
    }

    /// Each vault's crypto operations since the last call, as traces of
    /// the window `(start, end)` in Unix ns; none unless the vaults trace.
    /// Vaults in this process hand theirs over; vaults of their own serve
    /// theirs at `GET /v1/crypto/trace`.
    pub async fn take_traces(&self, window: (u64, u64)) -> Result<Vec<Trace>, BenchError> {
        match &self.vaults {
            Vaults::InProcess(nodes) => {
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
                Ok(nodes
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| n.meter().is_tracing())
                    .map(|(i, n)| {
                        let m = n.meter();
                        Trace::of_spans(i as u32, cores, m.epoch_unix_ns(), window, &m.take_trace())
                    })
                    .collect())
            }
            Vaults::Processes(_) | Vaults::Attached if self.trace_crypto => {
                let mut traces = Vec::with_capacity(self.clients.len());
                for (i, client) in self.clients.iter().enumerate() {
                    let mut trace = client.crypto_trace(window).await.map_err(|e| {
                        BenchError::Invalid(format!("vault {i}'s crypto trace: {e}"))
                    })?;
                    trace.vault = i as u32;
                    traces.push(trace);
                }
                Ok(traces)
            }
            Vaults::Processes(_) | Vaults::Attached => Ok(Vec::new()),
        }
    }

    /// Each vault's `/v1/status`, in vault order; none where it did not
    /// answer.
    pub async fn statuses(&self) -> Vec<Option<Status>> {
        let mut all = Vec::new();
        for client in &self.clients {
            all.push(client.status().await.ok());
        }
        all
    }

    /// Each vault's last measured round trip to each peer it is connected
    /// to, from their statuses: (vault, peer vault, milliseconds).
    pub fn round_trips(&self, statuses: &[Option<Status>]) -> Vec<(usize, usize, f64)> {
        let index: std::collections::HashMap<&str, usize> = self
            .peers
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), i))
            .collect();
        let mut measured = Vec::new();
        for (i, status) in statuses.iter().enumerate() {
            let Some(status) = status else {
                continue;
            };
            for (peer, &ms) in &status.round_trips_ms {
                if let Some(&j) = index.get(peer.as_str()) {
                    measured.push((i, j, ms));
                }
            }
        }
        measured
    }

    /// The sum over every vault of the metric lines named `name` whose
    /// labels hold `labels` ("": every line), from each vault's
    /// `/metrics`.
    pub async fn metric_sum(&self, name: &str, labels: &str) -> f64 {
        let mut sum = 0.0;
        for client in &self.clients {
            let Ok((200, body)) = client.get_path("/metrics").await else {
                continue;
            };
            sum += String::from_utf8_lossy(&body)
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter(|l| {
                    l.strip_prefix(name)
                        .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
                        && l.contains(labels)
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum::<f64>();
        }
        sum
    }

    /// Ends vault `i` at once, as a killed process would end (its store as
    /// it was committed, its connections dropped); the vaults after it move
    /// down one place, in [`Network::clients`] and [`Network::peers`] too.
    pub async fn kill(&mut self, i: usize) -> Result<(), BenchError> {
        if i >= self.clients.len() {
            return Err(BenchError::Invalid(format!("there is no vault {i}")));
        }
        match &mut self.vaults {
            Vaults::InProcess(nodes) => nodes.remove(i).kill().await,
            Vaults::Processes(children) => {
                let mut child = children.remove(i);
                let _ = child.kill();
                let _ = child.wait();
            }
            Vaults::Attached => {
                return Err(BenchError::Invalid(
                    "a vault this run did not start is not its to end".into(),
                ))
            }
        }
        self.clients.remove(i);
        self.peers.remove(i);
        Ok(())
    }

    /// Stops every vault this run started and removes their stores;
    /// attached vaults are left as they were found.
    pub async fn stop(self) {
        if matches!(self.vaults, Vaults::Attached) {
            return;
        }
        stop(self.vaults).await;
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }
}

/// How well the vaults agreed, from their statuses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChainHealth {
    /// Changes of branch in every vault together.
    pub reorgs: u64,
    /// The most blocks one change took off a vault's canonical chain.
    pub deepest_reorg: u64,
    /// Blocks signed by every vault together: one a height where one proof
    /// was eligible in its slot, more where several were (the fork choice
    /// keeps one).
    pub blocks_produced: u64,
    /// The highest head.
    pub height: u64,
}

impl ChainHealth {
    pub fn of(statuses: &[Option<Status>]) -> ChainHealth {
        let all = || statuses.iter().flatten();
        ChainHealth {
            reorgs: all().map(|s| s.reorgs).sum(),
            deepest_reorg: all().map(|s| s.deepest_reorg).max().unwrap_or(0),
            blocks_produced: all().map(|s| s.blocks_produced).sum(),
            height: all().map(|s| s.height).max().unwrap_or(0),
        }
    }

    /// Blocks signed for each height of the chain.
    pub fn blocks_a_height(&self) -> Option<f64> {
        (self.height > 0).then(|| self.blocks_produced as f64 / self.height as f64)
    }
}

/// The vaults as the benchmark drives them.
enum Vaults {
    InProcess(Vec<Node>),
    Processes(Vec<std::process::Child>),
    /// Vaults started elsewhere (by hand, on other machines), driven
    /// through their APIs alone and left running.
    Attached,
}

/// The key and plot directory of vault `i`, plotted once and kept in `dir`
/// ([`spacevault_node::kit`]).
fn vault_plot(
    dir: &Path,
    i: usize,
    k: u8,
    scheme: ProofKind,
) -> Result<(Keypair, PathBuf), BenchError> {
    let plotted = match scheme {
        ProofKind::Plain => kit::vault_plot(dir, i, k),
        ProofKind::Hard => kit::vault_hard_plot(dir, i, k),
    };
    let plots = plotted.map_err(|e| match e {
        kit::KitError::Plot(e) => BenchError::from(e),
        kit::KitError::Io(e) => io("creating the plot cache")(e),
    })?;
    Ok((kit::vault_key(i), plots))
}

async fn start_in_process(
    spec: &ChainSpec,
    plots: &[(Keypair, PathBuf)],
    options: &LaunchOptions,
    links: Option<LinksFile>,
) -> Result<(Vaults, Vec<String>), BenchError> {
    let dir = &options.run_dir;
    let links = match links {
        Some(file) => Some(std::sync::Arc::new(
            file.profile()
                .map_err(|e| BenchError::Invalid(e.to_string()))?,
        )),
        None => None,
    };
    let mut nodes = Vec::new();
    let mut listening: Vec<Vec<spacevault_node::Address>> = Vec::new();
    let shared_slot_checks = options
        .shared_slot_checks
        .then(|| std::sync::Arc::new(spacevault_chain::time::CheckedSlots::default()));
    for (i, (key, plot_dir)) in plots.iter().enumerate() {
        let bootstrap = bootstrap_of(i)
            .into_iter()
            .flat_map(|j| listening[j].clone())
            .collect();
        let data = dir.join(format!("data{i}"));
        let mut config = kit::memory_config(spec, key, plot_dir, &data, bootstrap, true);
        // Vault 0 keeps time for all.
        config.timekeeper = i == 0;
        config.verify_cache = options.verify_cache;
        config.shared_slot_checks = shared_slot_checks.clone();
        config.links = links.clone();
        config.trace_crypto = options.trace_crypto;
        config.api_max_requests = options.api_max_requests;
        config.connection_limits.max_peers = options.max_peers;
        if let Some(audits) = options.audits {
            config.audits = audits;
        }
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
    options: &LaunchOptions,
    links: Option<LinksFile>,
) -> Result<(Vaults, Vec<String>), BenchError> {
    let (dir, logs_dir) = (&options.run_dir, &options.logs_dir);
    use std::io::BufRead;
    let spec_path = dir.join("spec.json");
    std::fs::write(&spec_path, spec.to_json()).map_err(io("writing the chain spec"))?;
    let links_path = dir.join("links.json");
    if let Some(file) = &links {
        std::fs::write(&links_path, file.to_json()).map_err(io("writing the links file"))?;
    }
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
                "--json",
                "--plots",
            ])
            .arg(plot_dir)
            .arg("--data")
            .arg(dir.join(format!("data{i}")))
            .arg("--chain")
            .arg(&spec_path)
            .args([
                "--verify-cache",
                if options.verify_cache { "on" } else { "off" },
            ])
            .arg("--api-max-requests")
            .arg(options.api_max_requests.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(log);
        for j in bootstrap_of(i) {
            cmd.args(["--bootstrap", &listening[j]]);
        }
        if links.is_some() {
            cmd.arg("--links").arg(&links_path);
        }
        if options.trace_crypto {
            cmd.arg("--trace-crypto");
        }
        if let Some(max) = options.max_peers {
            cmd.arg("--max-peers").arg(max.to_string());
        }
        // Vault 0 keeps time for all.
        if i == 0 {
            cmd.arg("--timekeeper");
        }
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn().map_err(io("starting a vault"))?;
        let mut lines = std::io::BufReader::new(child.stdout.take().expect("piped")).lines();
        // Its first line: `spacevault node --json`'s word of where it is.
        let Some(Ok(line)) = lines.next() else {
            return Err(BenchError::Invalid(format!(
                "vault {i} exited before printing its addresses"
            )));
        };
        let started: serde_json::Value = serde_json::from_str(&line).map_err(|e| {
            BenchError::Invalid(format!(
                "vault {i} printed '{line}', not its JSON line: {e}"
            ))
        })?;
        let addr = started["listen"][0].as_str().map(String::from);
        let api = started["api"].as_str().map(String::from);
        let (Some(addr), Some(api)) = (addr, api) else {
            return Err(BenchError::Invalid(format!(
                "vault {i} printed no address or API: {line}"
            )));
        };
        // The rest of its output is not needed; reading it keeps the pipe
        // from filling.
        std::thread::spawn(move || lines.for_each(drop));
        listening.push(addr);
        apis.push(api);
        children.push(child);
    }
    Ok((Vaults::Processes(children), apis))
}

/// A vault started here is killed when the process that started it dies,
/// whatever its death: a launcher killed by a test's deadline, or by a
/// signal it cannot catch, leaves no vaults running that nobody stops.
/// Linux ties the signal to the thread that spawns, which here is the one
/// that runs the launch and outlives the vaults.
#[cfg(target_os = "linux")]
pub(crate) fn die_with_parent(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only prctl
    // and getppid, which are async-signal-safe, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the prctl: no signal will come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn die_with_parent(_: &mut std::process::Command) {}

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
        Vaults::Attached => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_health_sums_counts_and_takes_the_worst_and_highest() {
        let statuses = vec![
            Some(Status {
                reorgs: 3,
                deepest_reorg: 2,
                blocks_produced: 10,
                height: 20,
                ..Default::default()
            }),
            None,
            Some(Status {
                reorgs: 1,
                deepest_reorg: 5,
                blocks_produced: 12,
                height: 21,
                ..Default::default()
            }),
        ];
        let h = ChainHealth::of(&statuses);
        assert_eq!(
            h,
            ChainHealth {
                reorgs: 4,
                deepest_reorg: 5,
                blocks_produced: 22,
                height: 21
            }
        );
        assert!((h.blocks_a_height().unwrap() - 22.0 / 21.0).abs() < 1e-12);
        assert_eq!(ChainHealth::of(&[None]).blocks_a_height(), None);
    }
}
