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
pub mod scoring;
pub mod wire;

use addresses::{check_free, supported, usable};
use behaviour::{behaviour, secured, Behaviour, BehaviourEvent};
pub use bootstrap::BootstrapStatus;
use futures::StreamExt;
use handle::Command;
pub use handle::{Handle, COMMAND_QUEUE, MAX_REQUESTS_PER_PEER};
use libp2p::gossipsub::{self, IdentTopic, MessageAcceptance, TopicHash};
use libp2p::identity::{self, PeerId};
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::swarm::SwarmEvent;
use libp2p::{identify, kad, noise, ping, tcp, Multiaddr, Swarm};
pub use limits::ConnectionLimits;
use spacevault_meter::Meter;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
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
    /// Connections a node keeps open beyond its bootstrap peers.
    pub target_peers: usize,
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
            target_peers: 12,
            meter: None,
            links: None,
            limits: ConnectionLimits::default(),
        }
    }
}

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
    /// This node closed it, unused for the idle timeout: the peer may be
    /// as alive as ever.
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
    let idle = IDLE_CONNECTION;
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
    let runner = Runner {
        swarm,
        commands: rx,
        events: events_tx,
        topics,
        chain_id: config.chain_id,
        pending: HashMap::new(),
        bootstraps,
        target_peers: config.target_peers,
        connected: HashSet::new(),
        dialing: HashSet::new(),
        last_walk: None,
    };
    let task = tokio::spawn(runner.run());
    let handle = Handle::new(commands, local);
    Ok((handle, events, task))
}

const IDLE_CONNECTION: Duration = Duration::from_secs(30);
/// A Kademlia walk for more peers, at most this often.
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// Hands an event to the node, waiting while its queue is full.
async fn emit(events: &mpsc::Sender<Event>, event: Event) {
    let _ = events.send(event).await;
}

struct Runner {
    swarm: Swarm<Behaviour>,
    commands: mpsc::Receiver<Command>,
    events: mpsc::Sender<Event>,
    topics: HashMap<TopicHash, Topic>,
    chain_id: [u8; 32],
    pending: HashMap<OutboundRequestId, oneshot::Sender<Result<Response, RequestError>>>,
    bootstraps: bootstrap::Bootstraps,
    target_peers: usize,
    connected: HashSet<PeerId>,
    /// Peers dialled to reach `target_peers`, not yet connected.
    dialing: HashSet<PeerId>,
    last_walk: Option<tokio::time::Instant>,
}

impl Runner {
    async fn run(mut self) {
        let mut discover = tokio::time::interval(Duration::from_secs(2));
        loop {
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_swarm(event).await,
                command = self.commands.recv() => match command {
                    Some(c) => self.on_command(c),
                    None => break,
                },
                _ = discover.tick() => self.discover(),
            }
        }
        tracing::debug!("network stopped");
    }

    /// Looks for more peers while the node has fewer than it wants, and
    /// dials the bootstrap addresses again, each when its wait is over,
    /// while it has none.
    fn discover(&mut self) {
        if self.connected.is_empty() {
            let now = tokio::time::Instant::now();
            for (i, address) in self.bootstraps.due(now) {
                let dial = libp2p::swarm::dial_opts::DialOpts::unknown_peer_id()
                    .address(address)
                    .build();
                let id = dial.connection_id();
                self.bootstraps.dialling(i, id);
                if let Err(e) = self.swarm.dial(dial) {
                    self.bootstrap_failed(id, &e);
                }
            }
            return;
        }
        let due = self
            .last_walk
            .is_none_or(|t| t.elapsed() >= DISCOVERY_INTERVAL);
        if self.connected.len() < self.target_peers && due {
            self.last_walk = Some(tokio::time::Instant::now());
            let _ = self.swarm.behaviour_mut().kad.bootstrap();
        }
    }

    fn bootstrap_failed(
        &mut self,
        id: libp2p::swarm::ConnectionId,
        error: &libp2p::swarm::DialError,
    ) {
        let why = bootstrap::reason(error);
        let now = tokio::time::Instant::now();
        if let Some((address, wait)) = self.bootstraps.failed(id, why.clone(), now) {
            tracing::warn!(
                %address,
                error = %why,
                retry_in_s = wait.as_secs(),
                "cannot reach the bootstrap address; trying again"
            );
        }
    }

    fn on_command(&mut self, command: Command) {
        let b = self.swarm.behaviour_mut();
        match command {
            Command::Publish(topic, data) => {
                // No peers on the topic yet is no error for the node.
                let _ = b.gossipsub.publish(topic.ident(&self.chain_id), data);
            }
            Command::Validate(id, source, verdict) => {
                let acceptance = match verdict {
                    Verdict::Accept => MessageAcceptance::Accept,
                    Verdict::Reject => MessageAcceptance::Reject,
                    Verdict::Ignore => MessageAcceptance::Ignore,
                };
                b.gossipsub
                    .report_message_validation_result(&id, &source, acceptance);
            }
            Command::Request(peer, request, done) => {
                let id = b.requests.send_request(&peer, request);
                self.pending.insert(id, done);
            }
            Command::Respond(reply, response) => {
                let _ = b.requests.send_response(reply.0, response);
            }
            Command::Dial(address) => {
                let _ = self.swarm.dial(address);
            }
            Command::AddAddress(peer, address) => {
                self.swarm.add_peer_address(peer, address);
            }
            Command::Block(peer) => {
                b.blocked.block_peer(peer);
            }
            Command::Unblock(peer) => {
                b.blocked.unblock_peer(peer);
            }
            Command::Peers(done) => {
                let _ = done.send(self.connected.iter().copied().collect());
            }
            Command::Addresses(done) => {
                let _ = done.send(self.swarm.listeners().cloned().collect());
            }
            Command::Bootstrap(done) => {
                let _ = done.send(self.bootstraps.status(tokio::time::Instant::now()));
            }
        }
    }

    async fn on_swarm(&mut self, event: SwarmEvent<BehaviourEvent>) {
        match event {
            SwarmEvent::NewListenAddr { address, .. } => {
                emit(&self.events, Event::Listening(address)).await
            }
            SwarmEvent::ConnectionEstablished {
                peer_id,
                endpoint,
                connection_id,
                ..
            } => self.on_connected(peer_id, &endpoint, connection_id).await,
            SwarmEvent::ConnectionClosed {
                peer_id,
                num_established: 0,
                cause,
                ..
            } if self.connected.remove(&peer_id) => {
                let why = match cause {
                    Some(libp2p::swarm::ConnectionError::KeepAliveTimeout) => Closed::Idle,
                    _ => Closed::Lost,
                };
                tracing::debug!(%peer_id, ?why, "disconnected");
                emit(&self.events, Event::PeerDown { peer: peer_id, why }).await;
            }
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(gossipsub::Event::Message {
                propagation_source,
                message_id,
                message,
            })) => {
                self.on_gossip(propagation_source, message_id, message)
                    .await
            }
            SwarmEvent::OutgoingConnectionError {
                peer_id,
                connection_id,
                error,
            } => {
                if let Some(peer) = peer_id {
                    self.dialing.remove(&peer);
                }
                self.bootstrap_failed(connection_id, &error);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Requests(event)) => self.on_request(event).await,
            SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event {
                peer,
                result: Ok(rtt),
                ..
            })) => emit(&self.events, Event::RoundTrip { peer, rtt }).await,
            SwarmEvent::Behaviour(BehaviourEvent::Identify(identify::Event::Received {
                peer_id,
                info,
                connection_id,
            })) => self.on_identified(peer_id, info, connection_id).await,
            SwarmEvent::Behaviour(BehaviourEvent::Kad(kad::Event::RoutingUpdated {
                peer,
                addresses,
                ..
            })) => self.on_routing_updated(peer, &addresses),
            _ => {}
        }
    }

    /// A connection is up: a bootstrap address reached, a dialled address
    /// given to Kademlia, and the peer up if it is its first.
    async fn on_connected(
        &mut self,
        peer_id: Peer,
        endpoint: &libp2p::core::ConnectedPoint,
        connection_id: libp2p::swarm::ConnectionId,
    ) {
        if let Some(address) = self.bootstraps.connected(connection_id, peer_id) {
            tracing::info!(%address, %peer_id, "reached the bootstrap address");
        }
        if endpoint.is_dialer() {
            let address = endpoint.get_remote_address().clone();
            self.swarm
                .behaviour_mut()
                .kad
                .add_address(&peer_id, address);
        }
        self.dialing.remove(&peer_id);
        if self.connected.insert(peer_id) {
            tracing::debug!(%peer_id, dialer = endpoint.is_dialer(), "connected");
            emit(&self.events, Event::PeerUp(peer_id)).await;
        }
    }

    /// A gossip message for the vault to judge, unless its topic is none of
    /// ours (rejected here).
    async fn on_gossip(
        &mut self,
        source: Peer,
        id: gossipsub::MessageId,
        message: gossipsub::Message,
    ) {
        match self.topics.get(&message.topic) {
            Some(&topic) => {
                let data = message.data;
                emit(
                    &self.events,
                    Event::Gossip {
                        id,
                        source,
                        topic,
                        data,
                    },
                )
                .await
            }
            None => {
                self.swarm
                    .behaviour_mut()
                    .gossipsub
                    .report_message_validation_result(&id, &source, MessageAcceptance::Reject);
            }
        }
    }

    /// A peer said what it is: one on another chain is disconnected and
    /// forgotten (and a bootstrap address that led to it failed); one on
    /// ours confirms its bootstrap address and gives Kademlia where it
    /// listens.
    async fn on_identified(
        &mut self,
        peer_id: Peer,
        info: identify::Info,
        connection_id: libp2p::swarm::ConnectionId,
    ) {
        if info.protocol_version != identify_version(&self.chain_id) {
            let why = format!("it is on another chain ({})", info.protocol_version);
            let now = tokio::time::Instant::now();
            if let Some((address, wait)) =
                self.bootstraps
                    .other_chain(connection_id, &peer_id, why, now)
            {
                tracing::warn!(
                    %address,
                    version = %info.protocol_version,
                    retry_in_s = wait.as_secs(),
                    "the bootstrap address is a vault of another chain"
                );
            }
            // Nothing it sends could be taken: gossip on other topics,
            // blocks of another chain. Forgotten, so that it is not
            // dialled again.
            self.swarm.behaviour_mut().kad.remove_peer(&peer_id);
            let _ = self.swarm.disconnect_peer_id(peer_id);
            tracing::debug!(%peer_id, version = %info.protocol_version, "a peer of another chain");
            let version = info.protocol_version;
            emit(
                &self.events,
                Event::OtherChain {
                    peer: peer_id,
                    version,
                },
            )
            .await;
            return;
        }
        self.bootstraps.confirmed(connection_id);
        for address in info.listen_addrs {
            self.swarm
                .behaviour_mut()
                .kad
                .add_address(&peer_id, address);
        }
    }

    /// Kademlia learned of a peer: dialled while the vault has fewer peers
    /// than it aims for.
    fn on_routing_updated(&mut self, peer: Peer, addresses: &kad::Addresses) {
        let wanted = self.connected.len() + self.dialing.len() < self.target_peers;
        let known = self.connected.contains(&peer) || self.dialing.contains(&peer);
        if wanted && !known {
            if let Some(address) = addresses.iter().next() {
                if self.swarm.dial(address.clone()).is_ok() {
                    self.dialing.insert(peer);
                }
            }
        }
    }

    async fn on_request(&mut self, event: request_response::Event<Request, Response>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request {
                    request, channel, ..
                } => {
                    emit(
                        &self.events,
                        Event::Request {
                            peer,
                            request,
                            reply: Reply(channel),
                        },
                    )
                    .await
                }
                request_response::Message::Response {
                    request_id,
                    response,
                } => {
                    if let Some(done) = self.pending.remove(&request_id) {
                        let _ = done.send(Ok(response));
                    }
                }
            },
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                if let Some(done) = self.pending.remove(&request_id) {
                    let _ = done.send(Err(RequestError {
                        peer: peer.to_string(),
                        why: error.to_string(),
                    }));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
