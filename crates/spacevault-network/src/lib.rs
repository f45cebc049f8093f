//! The vaults' network on rust-libp2p, the engine Lighthouse and Subspace
//! use: gossipsub carries blocks, transactions, announcements and the
//! proof of time's slots (each message
//! validated by the node before it is relayed, so that an invalid one is
//! never forwarded and its sender loses peer score); request-response
//! carries block sync and blob storage ([`wire`]); identify and Kademlia
//! find peers from a few bootstrap addresses.
//!
//! Two transports: TCP with noise and yamux for real networks, and an
//! in-memory one for tests that run many nodes in one process. The node
//! talks to the network through [`Handle`] (commands) and a stream of
//! [`Event`]s; the swarm runs on a task of its own.

mod addresses;
mod behaviour;
mod bootstrap;
mod handle;
mod limits;
pub mod links;
pub mod peers;
mod runner;
pub mod scoring;
pub mod wire;

use addresses::{check_free, supported, usable};
use behaviour::{behaviour, secured, Behaviour};
pub use bootstrap::BootstrapStatus;
pub use handle::{Handle, COMMAND_QUEUE, MAX_REQUESTS_PER_PEER};
use libp2p::gossipsub::{IdentTopic, TopicHash};
use libp2p::identity::{self, PeerId};
use libp2p::request_response::ResponseChannel;
use libp2p::{noise, tcp, Multiaddr, Swarm};
pub use limits::ConnectionLimits;
use spacevault_meter::Meter;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
pub use wire::{Request, Response};

pub use libp2p::gossipsub::MessageId;
pub use libp2p::Multiaddr as Address;
pub use libp2p::PeerId as Peer;

/// How nodes reach each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// TCP with noise and yamux.
    Tcp,
    /// In-process, for tests: `/memory/N` addresses.
    Memory,
}

/// What a node's network starts with.
#[derive(Clone, Debug)]
pub struct Config {
    /// The farmer's secret key: its public key is the node's peer id.
    pub secret: [u8; 32],
    pub transport: TransportKind,
    pub listen: Vec<Multiaddr>,
    pub bootstrap: Vec<Multiaddr>,
    /// Topics are the chain's own.
    pub chain_id: [u8; 32],
    /// Gossipsub's heartbeat, which mends meshes and gossips message ids
    /// (messages themselves go out at once): tests shorten it to form
    /// their meshes sooner.
    pub heartbeat: Duration,
    /// Connections a node aims for: it looks for more while it has fewer
    /// (and closes unused ones beyond `limits.max_peers` when set).
    pub target_peers: usize,
    /// How long a connection unused by requests stays open: libp2p's idle
    /// timeout, and (up to [`peers::CLOSE_GRACE`]) the grace before a
    /// connection beyond the peers wanted is closed. Tests shorten it.
    pub idle_connection: Duration,
    /// Where the hashing of gossip message ids is counted.
    pub meter: Option<Arc<Meter>>,
    /// Distance to hold each peer at (see [`links`]); none: as fast as the
    /// transport goes.
    pub links: Option<Arc<links::LinkProfile>>,
    /// How many connections peers may open to this node.
    pub limits: ConnectionLimits,
}

impl Config {
    pub fn new(secret: [u8; 32], transport: TransportKind, chain_id: [u8; 32]) -> Config {
        Config {
            secret,
            transport,
            listen: Vec::new(),
            bootstrap: Vec::new(),
            chain_id,
            heartbeat: Duration::from_secs(1),
            target_peers: TARGET_PEERS,
            idle_connection: Duration::from_secs(30),
            meter: None,
            links: None,
            limits: ConnectionLimits::default(),
        }
    }
}

/// The connections a node aims for by default.
pub const TARGET_PEERS: usize = 12;

/// What a gossip message is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Topic {
    Blocks,
    Txs,
    /// Each vault's periodic word that it is alive, and where it listens.
    Vaults,
    /// The proof of time's slot outputs, from timekeepers.
    Time,
    /// Evidence that a farmer key signed two blocks for one slot.
    Evidence,
}

impl Topic {
    pub const ALL: [Topic; 5] = [
        Topic::Blocks,
        Topic::Txs,
        Topic::Vaults,
        Topic::Time,
        Topic::Evidence,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Topic::Blocks => "blocks",
            Topic::Txs => "txs",
            Topic::Vaults => "vaults",
            Topic::Time => "time",
            Topic::Evidence => "evidence",
        }
    }

    fn ident(self, chain_id: &[u8; 32]) -> IdentTopic {
        IdentTopic::new(format!(
            "/spacevault/{}/{}/1",
            hex::encode(&chain_id[..8]),
            self.name()
        ))
    }
}

/// The node's verdict on a gossip message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Valid: relay it.
    Accept,
    /// Invalid, the sender's fault: drop it and lower the sender's score.
    Reject,
    /// Not to be relayed (late, a duplicate), no one's fault.
    Ignore,
}

/// What the network tells the node.
#[derive(Debug)]
pub enum Event {
    /// A gossip message, waiting for [`Handle::validate`]: `source` relayed
    /// it (messages carry no author: what needs one signs it inside).
    Gossip {
        id: MessageId,
        source: PeerId,
        topic: Topic,
        data: Vec<u8>,
    },
    /// A request, waiting for [`Handle::respond`].
    Request {
        peer: PeerId,
        request: Request,
        reply: Reply,
    },
    PeerUp(PeerId),
    /// The last connection with a peer closed.
    PeerDown {
        peer: PeerId,
        why: Closed,
    },
    Listening(Multiaddr),
    /// A peer whose identify names another chain (or another protocol),
    /// disconnected: `version` is what it said.
    OtherChain {
        peer: PeerId,
        version: String,
    },
    /// A ping's round trip to a connected peer (one every [`PING_INTERVAL`]).
    RoundTrip {
        peer: PeerId,
        rtt: Duration,
    },
}

/// What a node says of itself in identify's protocol version: the
/// protocol and its chain, so that a peer on another chain is known, and
/// disconnected, as soon as the connection is up.
pub fn identify_version(chain_id: &[u8; 32]) -> String {
    format!("/spacevault/1/chain/{}", hex::encode(chain_id))
}

/// How often a node measures its round trip to each connected peer: a
/// ping costs little, but a network whose vaults all met while they found
/// each other holds thousands of connections for a while.
pub const PING_INTERVAL: Duration = Duration::from_secs(15);

/// Why the last connection with a peer closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// This node closed it, unused for the idle timeout or beyond the
    /// peers it keeps: the peer may be as alive as ever.
    Idle,
    /// Anything else: the peer stopped, crashed, closed it for its own
    /// idle timeout, or the network failed.
    Lost,
}

/// Where a response goes.
#[derive(Debug)]
pub struct Reply(ResponseChannel<Response>);

/// Why a request got no answer.
#[derive(Debug, Clone, thiserror::Error)]
#[error("request to {peer} failed: {why}")]
pub struct RequestError {
    pub peer: String,
    pub why: String,
}

/// The ed25519 public key behind a peer id: the vault's farmer key.
pub fn farmer_key_of(peer: &PeerId) -> Option<[u8; 32]> {
    let multihash: &libp2p::multihash::Multihash<64> = peer.as_ref();
    if multihash.code() != 0 {
        return None;
    }
    let key = identity::PublicKey::try_decode_protobuf(multihash.digest()).ok()?;
    Some(key.try_into_ed25519().ok()?.to_bytes())
}

/// The peer id of a farmer key.
pub fn peer_of(farmer_key: &[u8; 32]) -> Option<PeerId> {
    let key = identity::ed25519::PublicKey::try_from_bytes(farmer_key).ok()?;
    Some(identity::PublicKey::from(key).to_peer_id())
}

/// Why the network could not start.
#[derive(Debug, thiserror::Error)]
#[error("the network: {0}")]
pub struct StartError(String);

/// Starts the network on the current tokio runtime: the node's handle, its
/// events, and the swarm's task (which ends when every handle is dropped).
pub fn start(
    config: Config,
) -> Result<(Handle, mpsc::Receiver<Event>, tokio::task::JoinHandle<()>), StartError> {
    let err = |e: &dyn std::fmt::Display| StartError(e.to_string());
    let mut secret = config.secret;
    let ed = identity::ed25519::SecretKey::try_from_bytes(&mut secret).map_err(|e| err(&e))?;
    let key = identity::Keypair::from(identity::ed25519::Keypair::from(ed));
    // Connections that no mesh, query or request uses close after this: a
    // vault keeps the peers it works with, not every peer it ever met.
    let idle = config.idle_connection;
    let noise = noise::Config::new(&key).map_err(|e| err(&e))?;
    let (local, links) = (key.public().to_peer_id(), config.links.clone());
    let transport = match config.transport {
        TransportKind::Tcp => secured(
            tcp::tokio::Transport::new(tcp::Config::default().nodelay(true)),
            noise,
            local,
            links,
        ),
        TransportKind::Memory => secured(
            libp2p::core::transport::MemoryTransport::default(),
            noise,
            local,
            links,
        ),
    };
    let swarm = libp2p::SwarmBuilder::with_existing_identity(key.clone())
        .with_tokio()
        .with_other_transport(|_| transport);
    let mut swarm: Swarm<Behaviour> = swarm
        .map_err(|e| err(&e))?
        .with_behaviour(|k| behaviour(k, &config).map_err(Box::from))
        .map_err(|e| err(&e))?
        .with_swarm_config(|c| c.with_idle_connection_timeout(idle))
        .build();
    for address in &config.listen {
        if !usable(address, config.transport) {
            return Err(StartError(format!(
                "cannot listen on {address}: {}",
                supported(config.transport)
            )));
        }
        if config.transport == TransportKind::Tcp {
            check_free(address)?;
        }
        swarm
            .listen_on(address.clone())
            .map_err(|e| StartError(format!("cannot listen on {address}: {e}")))?;
    }
    let mut bootstraps =
        bootstrap::Bootstraps::new(config.bootstrap.clone(), tokio::time::Instant::now());
    for (i, address) in bootstraps.due(tokio::time::Instant::now()) {
        let dial = libp2p::swarm::dial_opts::DialOpts::unknown_peer_id()
            .address(address.clone())
            .build();
        let id = dial.connection_id();
        if !usable(&address, config.transport) {
            return Err(StartError(format!(
                "cannot dial --bootstrap {address}: {}",
                supported(config.transport)
            )));
        }
        swarm.dial(dial).map_err(|e| {
            StartError(format!(
                "cannot dial --bootstrap {address}: {}",
                bootstrap::reason(&e)
            ))
        })?;
        bootstraps.dialling(i, id);
    }
    let (commands, rx) = mpsc::channel(COMMAND_QUEUE);
    let (events_tx, events) = mpsc::channel(4096);
    let local = *swarm.local_peer_id();
    let topics: HashMap<TopicHash, Topic> = Topic::ALL
        .into_iter()
        .map(|t| (t.ident(&config.chain_id).hash(), t))
        .collect();
    let runner = runner::Runner {
        swarm,
        commands: rx,
        events: events_tx,
        topics,
        chain_id: config.chain_id,
        pending: HashMap::new(),
        bootstraps,
        target_peers: config.target_peers,
        max_peers: config.limits.max_peers,
        peer_use: peers::PeerUse::new(
            &config.secret,
            config.idle_connection.min(peers::CLOSE_GRACE),
        ),
        connected: HashSet::new(),
        dialing: HashSet::new(),
        last_walk: None,
        dial_failed: HashMap::new(),
    };
    let task = tokio::spawn(runner.run());
    let handle = Handle::new(commands, local);
    Ok((handle, events, task))
}

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod tests;
