//! What a vault starts with, and why it may not start.

use spacevault_chain::{ChainSpec, Keypair};
use spacevault_network::{self as net, TransportKind};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a vault starts with.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub spec: ChainSpec,
    pub key: Keypair,
    pub plots: Vec<PathBuf>,
    /// Where the store lives.
    pub data_dir: PathBuf,
    pub transport: TransportKind,
    pub listen: Vec<net::Address>,
    pub bootstrap: Vec<net::Address>,
    /// The HTTP API's address; none for no API.
    pub api: Option<SocketAddr>,
    /// Gossipsub's heartbeat ([`GOSSIP_HEARTBEAT`] unless a test wants
    /// its meshes sooner).
    pub heartbeat: Duration,
    /// Remember signatures verified once (`spacevault_chain::SigCache`).
    pub verify_cache: bool,
    /// Distance to hold peers at, for test networks on one machine.
    pub links: Option<Arc<net::links::LinkProfile>>,
    /// Slot outputs checked by any vault given the same set, for networks
    /// of many vaults in one process, which would otherwise repeat each
    /// check once a vault on the same cores
    /// (`spacevault_chain::time::CheckedSlots`); none for a vault of its
    /// own, which checks each output once anyway.
    pub shared_slot_checks: Option<Arc<spacevault_chain::time::CheckedSlots>>,
    /// Keep every crypto operation's span (`Meter::take_trace`).
    pub trace_crypto: bool,
    /// How long the API lets requests run; the spec's defaults when none
    /// ([`ApiTimes::for_spec`]).
    pub api_times: Option<ApiTimes>,
    /// Each peer's allowance for Store requests: bytes a second, and the
    /// most it holds ([`crate::budget`]).
    pub store_budget: (u64, u64),
    /// Each peer's allowance for the blocks it asks of this vault: bytes a
    /// second, and the most it holds ([`crate::budget`]).
    pub blocks_budget: (u64, u64),
    /// Names the API answers to besides IP addresses and `localhost`.
    pub api_hosts: Vec<String>,
    /// Requests the API works on at once; past it, 503 at once
    /// ([`MAX_CONCURRENT_REQUESTS`] by default).
    pub api_max_requests: usize,
    /// How fast and how often stored blobs are read back and checked.
    pub scrub: ScrubConfig,
    /// How often, and how much, the other holders of this vault's blobs
    /// are audited.
    pub audits: AuditConfig,
    /// How many connections peers may open to this vault.
    pub connection_limits: net::ConnectionLimits,
    /// Compute the proof of time's slots and gossip them.
    pub timekeeper: bool,
    /// A block the operator trusts to be on the network's chain: the vault
    /// follows no chain without it.
    pub checkpoint: Option<spacevault_chain::fork::Checkpoint>,
    /// Where the record of the slots the farmer key signed is kept
    /// ([`crate::signed`]): beside the key, so that it outlives the store
    /// (the CLI's config directory). None: `signed-slots` in the data
    /// directory, which guards a restart and a store put back from a copy
    /// but is lost with the directory: vaults many to a machine, in tests
    /// and benchmarks, whose keys live nowhere else.
    pub signed_slots: Option<PathBuf>,
}

/// Requests the API works on at once by default; past it, 503 at once.
pub const MAX_CONCURRENT_REQUESTS: usize = 1024;

/// Gossipsub's heartbeat, whatever the slot: blocks and proofs go out at
/// once along the mesh, and the heartbeat only mends meshes and gossips
/// message ids. Each one costs a vault control messages to a dozen peers;
/// at a third of a 500 ms slot, 64 vaults on a 2-core machine spent two
/// thirds of their idle CPU on heartbeats (15.6 CPU-s in 10 s, against 5.0
/// at 1 s), and the lag made most of them produce at every height.
pub const GOSSIP_HEARTBEAT: Duration = Duration::from_secs(1);

impl NodeConfig {
    pub fn new(
        spec: ChainSpec,
        key: Keypair,
        data_dir: PathBuf,
        transport: TransportKind,
    ) -> NodeConfig {
        NodeConfig {
            spec,
            key,
            plots: Vec::new(),
            data_dir,
            transport,
            listen: Vec::new(),
            bootstrap: Vec::new(),
            api: None,
            heartbeat: GOSSIP_HEARTBEAT,
            verify_cache: true,
            links: None,
            shared_slot_checks: None,
            trace_crypto: false,
            api_times: None,
            store_budget: (crate::budget::STORE_RATE, crate::budget::STORE_BURST),
            blocks_budget: (crate::budget::BLOCKS_RATE, crate::budget::BLOCKS_BURST),
            api_hosts: Vec::new(),
            api_max_requests: MAX_CONCURRENT_REQUESTS,
            scrub: Default::default(),
            audits: Default::default(),
            connection_limits: Default::default(),
            timekeeper: false,
            checkpoint: None,
            signed_slots: None,
        }
    }
}

/// Why a vault could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    #[error("{0}")]
    Store(#[from] spacevault_store::StoreError),
    #[error("{0}")]
    Network(#[from] net::StartError),
    #[error("{0}")]
    Time(#[from] crate::time::OpenError),
    #[error("{0}")]
    Signed(#[from] crate::signed::SignedError),
    #[error("creating the data directory {path}: {cause}")]
    DataDir {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("the API cannot listen on {addr}: {cause}")]
    Api {
        addr: SocketAddr,
        cause: std::io::Error,
    },
}

/// How long the API lets requests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApiTimes {
    /// Any request is answered 504 after this long, whatever it waits for.
    pub request: Duration,
    /// How long a request waits on the chain (a write to be included, a
    /// height or a version to be reached) before it gives up.
    pub chain_wait: Duration,
    /// How long a connection may take to send a request's headers before
    /// it is closed (a client that opens connections and sends nothing
    /// would otherwise hold them for ever).
    pub headers: Duration,
    /// How long a request's body may go without a byte before the
    /// request is answered 408: an upload that stalls holds a connection
    /// and a request slot no longer.
    pub body_progress: Duration,
}

impl ApiTimes {
    /// A minute a request, and 40 slots (at most 50 s) on the chain.
    pub fn for_spec(spec: &spacevault_chain::ChainSpec) -> ApiTimes {
        let slot = Duration::from_millis(spec.slot_ms);
        ApiTimes {
            request: Duration::from_secs(60),
            chain_wait: (slot * 40).min(Duration::from_secs(50)),
            headers: Duration::from_secs(10),
            body_progress: Duration::from_secs(10),
        }
    }
}

/// The default rate: 16 MiB/s, a tenth of what a hard disk reads in
/// sequence and a sliver of an SSD's, so that a scrub never crowds out a
/// vault's own reads and writes. A vault of 1 TB of blobs is scrubbed in
/// about 18 hours.
pub const SCRUB_RATE: u64 = 16 << 20;
/// The pause between two passes.
pub const SCRUB_PAUSE: Duration = Duration::from_secs(3600);

/// How often a vault audits the other holders of its blobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuditConfig {
    /// Between rounds.
    pub interval: Duration,
    /// Blobs audited a round, each at every other holder; 0: no audits.
    pub blobs: usize,
}

impl Default for AuditConfig {
    /// A minute apart, four blobs a round: at 1 MiB blobs and 4 copies, a
    /// vault reads back 4 blobs and receives twelve 1.7 KiB answers a
    /// minute as auditor, and answers about twelve audits (a blob read and
    /// hashed twice each) as holder: some 28 MiB hashed a minute.
    fn default() -> AuditConfig {
        AuditConfig {
            interval: Duration::from_secs(60),
            blobs: 4,
        }
    }
}

/// How fast, and how often, a vault scrubs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScrubConfig {
    /// Bytes read a second, on average; 0: no scrub.
    pub rate: u64,
    pub pause: Duration,
}

impl Default for ScrubConfig {
    fn default() -> ScrubConfig {
        ScrubConfig {
            rate: SCRUB_RATE,
            pause: SCRUB_PAUSE,
        }
    }
}
