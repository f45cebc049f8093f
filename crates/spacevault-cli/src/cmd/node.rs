//! `spacevault node`: runs a vault until Ctrl-C or SIGTERM.

use anyhow::{Context, Result};
use clap::Args;
use spacevault_node::{Node, NodeConfig, TransportKind};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct NodeArgs {
    /// Directories of plots to farm (plots of other farmer keys are skipped).
    #[arg(long = "plots", value_name = "DIR")]
    pub plots: Vec<PathBuf>,
    /// The vault's data: its store of the chain, registers and blobs.
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,
    /// The chain spec (from `spacevault chain init`).
    #[arg(long, value_name = "SPEC")]
    pub chain: PathBuf,
    /// Where to listen for other vaults (a multiaddr).
    #[arg(long, value_name = "ADDR", default_value = "/ip4/0.0.0.0/tcp/7733")]
    pub listen: Vec<String>,
    /// Other vaults to join: the addresses they print.
    #[arg(long, value_name = "ADDR")]
    pub bootstrap: Vec<String>,
    /// The HTTP API's address (port 0: any free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8733")]
    pub api: SocketAddr,
    /// A name the API answers to as the request's Host, besides IP
    /// addresses and localhost (requests naming another host are refused,
    /// so that no web page can reach the API under a name of its own).
    #[arg(long, value_name = "NAME")]
    pub api_host: Vec<String>,
    /// How fast stored blobs are read back and checked, in bytes a second
    /// (e.g. 16MiB; 0: never). A pass over every blob, then an hour's
    /// pause.
    #[arg(long, value_name = "SIZE", value_parser = crate::size::parse_size, default_value = "16MiB")]
    pub scrub_rate: u64,
    /// Requests the API works on at once, at most; past it, a request is
    /// answered 503 at once.
    #[arg(long, value_name = "N", default_value_t = spacevault_node::config::MAX_CONCURRENT_REQUESTS)]
    pub api_max_requests: usize,
    /// Connections other vaults may open to this one, at most.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_inbound: usize,
    /// Connections other vaults may open from one IP address, at most
    /// (loopback exempt unless --limit-loopback).
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub max_per_ip: usize,
    /// Count loopback connections toward --max-per-ip too.
    #[arg(long)]
    pub limit_loopback: bool,
    /// Close connections unused for 30 s beyond this many, at least 12 (by
    /// default a vault stays connected to every peer it met).
    #[arg(long, value_name = "N")]
    pub max_peers: Option<usize>,
    /// Remember signatures verified once (a transaction is checked when it
    /// arrives and again inside its block).
    #[arg(long, value_enum, value_name = "ON|OFF", default_value_t = Switch::On)]
    pub verify_cache: Switch,
    /// Hold peers at a distance, for test networks on one machine: a links
    /// file (docs/PROFILING.md) placing vaults in regions.
    #[arg(long, value_name = "FILE")]
    pub links: Option<PathBuf>,
    /// Keep every crypto operation's start, end and input, served at
    /// `GET /v1/crypto/trace` (for `spacevault stress --trace-crypto`).
    #[arg(long)]
    pub trace_crypto: bool,
    /// Compute the proof of time's slots and gossip them (a network needs
    /// one timekeeper at least; without one no new slot comes).
    #[arg(long)]
    pub timekeeper: bool,
    /// Follow only the chain through this block, HEIGHT:HASH (a recent
    /// block from a source you trust, as its page or `GET /v1/blocks`
    /// shows it): a vault new to the network, or away longer than the
    /// finality depth, is otherwise shown whatever chain its first peers
    /// hold.
    #[arg(long, value_name = "HEIGHT:HASH")]
    pub checkpoint: Option<spacevault_chain::fork::Checkpoint>,
    /// Print one JSON line at start (peer id, farmer key, chain id,
    /// addresses, API) instead of the lines for people.
    #[arg(long)]
    pub json: bool,
}

/// A setting that is on or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

fn parse_addrs(what: &str, addrs: &[String]) -> Result<Vec<spacevault_network::Address>> {
    addrs
        .iter()
        .map(|a| {
            a.parse().map_err(|e| {
                anyhow::anyhow!(
                    "{what} '{a}' is not a multiaddr ({e}), e.g. /ip4/127.0.0.1/tcp/7733"
                )
            })
        })
        .collect()
}

/// Refuses a `--max-peers` below the peers a vault looks for: it would
/// close connections down to it and dial up again, forever.
pub fn check_max_peers(max: Option<usize>) -> Result<()> {
    let target = spacevault_network::TARGET_PEERS;
    match max {
        Some(n) if n < target => anyhow::bail!(
            "--max-peers {n} is below the {target} peers a vault looks for: give {target} or more"
        ),
        _ => Ok(()),
    }
}

pub fn run(args: NodeArgs) -> Result<()> {
    if args.api_max_requests == 0 {
        anyhow::bail!("--api-max-requests 0 would refuse every request: give 1 or more");
    }
    check_max_peers(args.max_peers)?;
    let spec = super::chain::read_spec(&args.chain)?;
    let key = crate::keys::farmer_keypair()?;
    let listen = parse_addrs("--listen", &args.listen)?;
    let bootstrap = parse_addrs("--bootstrap", &args.bootstrap)?;
    for dir in &args.plots {
        if !dir.exists() {
            anyhow::bail!("--plots {} does not exist", dir.display());
        }
    }
    let links = match &args.links {
        Some(path) => {
            let text = crate::input::read_text(path, "--links", 16 << 20)?;
            Some(std::sync::Arc::new(
                spacevault_node::links::LinksFile::parse(&text)
                    .with_context(|| format!("--links {}", path.display()))?,
            ))
        }
        None => None,
    };
    crate::logs::init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async move {
        let mut config = NodeConfig::new(spec, key, args.data.clone(), TransportKind::Tcp);
        config.plots = args.plots;
        config.listen = listen;
        config.bootstrap = bootstrap;
        config.api = Some(args.api);
        config.api_hosts = args.api_host;
        config.api_max_requests = args.api_max_requests;
        config.scrub.rate = args.scrub_rate;
        config.connection_limits = spacevault_network::ConnectionLimits {
            inbound: args.max_inbound,
            per_ip: args.max_per_ip,
            limit_loopback: args.limit_loopback,
            max_peers: args.max_peers,
        };
        config.verify_cache = args.verify_cache == Switch::On;
        config.links = links;
        config.trace_crypto = args.trace_crypto;
        config.timekeeper = args.timekeeper;
        config.checkpoint = args.checkpoint;
        config.signed_slots = Some(crate::keys::config_dir()?.join("signed-slots"));
        let node = Node::start(config).await?;
        let peer = node.peer_id();
        let listening: Vec<String> = node
            .listen_addrs(Duration::from_secs(5))
            .await
            .iter()
            .map(|a| format!("{a}/p2p/{peer}"))
            .collect();
        let api = node.api_addr().map(|a| format!("http://{a}"));
        if args.json {
            outln!(
                "{}",
                serde_json::json!({
                    "peer_id": peer.to_string(),
                    "farmer_key": hex::encode(node.farmer_key()),
                    "chain_id": hex::encode(node.chain_id()),
                    "listen": listening,
                    "api": api,
                })
            );
        } else {
            outln!("peer id     {peer}");
            outln!("farmer key  {}", hex::encode(node.farmer_key()));
            for addr in &listening {
                outln!("listening   {addr}");
            }
            if let Some(api) = &api {
                outln!("api         {api}");
            }
        }
        let plots = node.plots();
        tracing::info!(
            plots = plots.len(),
            height = node.height(),
            "the vault is running"
        );
        let signal = wait_for_stop().await;
        tracing::info!(signal, "stopping");
        node.stop().await;
        tracing::info!("stopped");
        Err(anyhow::Error::new(crate::signals::StoppedBy(signal)))
    })
}

/// Waits for Ctrl-C, SIGTERM or SIGHUP; the signal's number.
async fn wait_for_stop() -> libc::c_int {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let mut hup = signal(SignalKind::hangup()).expect("a SIGHUP handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}
