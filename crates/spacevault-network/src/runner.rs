//! The swarm's task: it turns the node's commands into libp2p calls and
//! libp2p's events into the node's, looks for peers while it has too few
//! and closes unused connections while it has too many.

use crate::behaviour::{Behaviour, BehaviourEvent};
use crate::handle::Command;
use crate::{
    bootstrap, identify_version, peers, Closed, Event, Peer, Reply, Request, RequestError,
    Response, Topic, Verdict,
};
use futures::StreamExt;
use libp2p::gossipsub::{self, MessageAcceptance, TopicHash};
use libp2p::request_response::{self, OutboundRequestId};
use libp2p::swarm::SwarmEvent;
use libp2p::{identify, kad, ping, Multiaddr, PeerId, Swarm};
use std::collections::{HashMap, HashSet};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// How long a peer whose dial failed is left out of the peers dialled
/// from the routing table.
const DIAL_BACKOFF: Duration = Duration::from_secs(60);

/// A Kademlia walk for more peers, at most this often.
const DISCOVERY_INTERVAL: Duration = Duration::from_secs(30);

/// Hands an event to the node, waiting while its queue is full.
async fn emit(events: &mpsc::Sender<Event>, event: Event) {
    let _ = events.send(event).await;
}

/// A request awaiting its answer.
pub(crate) struct Pending {
    /// A copy to send once more should the connection close under it (a
    /// second failure is the caller's).
    again: Option<Request>,
    done: oneshot::Sender<Result<Response, RequestError>>,
}

pub(crate) struct Runner {
    pub(crate) swarm: Swarm<Behaviour>,
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) events: mpsc::Sender<Event>,
    pub(crate) topics: HashMap<TopicHash, Topic>,
    pub(crate) chain_id: [u8; 32],
    pub(crate) pending: HashMap<OutboundRequestId, Pending>,
    pub(crate) bootstraps: bootstrap::Bootstraps,
    pub(crate) target_peers: usize,
    /// Unused connections beyond this many close (none: they stay).
    pub(crate) max_peers: Option<usize>,
    /// When each connected peer was last used, and which this node closes.
    pub(crate) peer_use: peers::PeerUse,
    pub(crate) connected: HashSet<PeerId>,
    /// Peers dialled to reach `target_peers`, not yet connected.
    pub(crate) dialing: HashSet<PeerId>,
    pub(crate) last_walk: Option<tokio::time::Instant>,
    /// Peers whose last dial failed, and when: not dialled from the
    /// routing table again for [`DIAL_BACKOFF`].
    pub(crate) dial_failed: HashMap<PeerId, tokio::time::Instant>,
}

impl Runner {
    pub(crate) async fn run(mut self) {
        let mut discover = tokio::time::interval(Duration::from_secs(2));
        loop {
            tokio::select! {
                event = self.swarm.select_next_some() => self.on_swarm(event).await,
                command = self.commands.recv() => match command {
                    Some(c) => self.on_command(c),
                    None => break,
                },
                _ = discover.tick() => {
                    self.discover();
                    self.close_unused();
                }
            }
        }
        tracing::debug!("network stopped");
    }

    /// Looks for more peers while the node has fewer than it wants, and
    /// dials the bootstrap addresses again, each when its wait is over,
    /// while it has none.
    fn discover(&mut self) {
        // Every failed dial is noted (requests dial too): only the last
        // minute's are kept.
        let now = tokio::time::Instant::now();
        self.dial_failed
            .retain(|_, t| now.saturating_duration_since(*t) < DIAL_BACKOFF);
        if self.connected.is_empty() {
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
        let short = self
            .target_peers
            .saturating_sub(self.connected.len() + self.dialing.len());
        if short == 0 {
            return;
        }
        // Peers the routing table already knows first: a walk meets most
        // of a small network, and every peer it meets stays connected
        // until closed as unused.
        let short = short - self.dial_known(short);
        let due = self
            .last_walk
            .is_none_or(|t| t.elapsed() >= DISCOVERY_INTERVAL);
        if short > 0 && due {
            self.last_walk = Some(tokio::time::Instant::now());
            let _ = self.swarm.behaviour_mut().kad.bootstrap();
        }
    }

    /// Dials up to `wanted` peers of the routing table this node is not
    /// connected to, in an order of its own, leaving out blocked peers and
    /// those whose dial failed in the last [`DIAL_BACKOFF`] (Kademlia keeps
    /// a vanished peer in its table: without the backoff the same dead
    /// peers would be dialled every time and the walk never run); how
    /// many it dialled.
    fn dial_known(&mut self, wanted: usize) -> usize {
        let now = tokio::time::Instant::now();
        let blocked: HashSet<PeerId> = self
            .swarm
            .behaviour()
            .blocked
            .blocked_peers()
            .iter()
            .copied()
            .collect();
        let mut known: Vec<([u8; 32], PeerId, Multiaddr)> = Vec::new();
        for bucket in self.swarm.behaviour_mut().kad.kbuckets() {
            for entry in bucket.iter() {
                let peer = *entry.node.key.preimage();
                let skip = self.connected.contains(&peer)
                    || self.dialing.contains(&peer)
                    || self.dial_failed.contains_key(&peer)
                    || blocked.contains(&peer);
                if !skip {
                    let rank = self.peer_use.rank(&peer);
                    known.push((rank, peer, entry.node.value.first().clone()));
                }
            }
        }
        known.sort_unstable_by_key(|k| k.0);
        let mut dialled = 0;
        for (_, peer, address) in known {
            if dialled == wanted {
                break;
            }
            let dial = libp2p::swarm::dial_opts::DialOpts::peer_id(peer)
                .addresses(vec![address])
                .build();
            if self.swarm.dial(dial).is_ok() {
                self.dialing.insert(peer);
                dialled += 1;
            } else {
                self.dial_failed.insert(peer, now);
            }
        }
        dialled
    }

    /// Closes unused connections beyond the most this node keeps
    /// ([`peers`] says which and why).
    fn close_unused(&mut self) {
        let Some(max) = self.max_peers else {
            return;
        };
        let mesh: HashSet<PeerId> = self
            .swarm
            .behaviour()
            .gossipsub
            .all_mesh_peers()
            .copied()
            .collect();
        let now = tokio::time::Instant::now();
        for peer in self
            .peer_use
            .choose_to_close(&self.connected, &mesh, max, now)
        {
            tracing::debug!(%peer, connected = self.connected.len(), max, "closing an unused connection beyond the peers wanted");
            let _ = self.swarm.disconnect_peer_id(peer);
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
                self.peer_use.used(peer, tokio::time::Instant::now());
                let again = Some(request.clone());
                let id = b.requests.send_request(&peer, request);
                self.pending.insert(id, Pending { again, done });
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
            Command::Disconnect(peer) => {
                let _ = self.swarm.disconnect_peer_id(peer);
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
                let closed_here = self.peer_use.closed(&peer_id);
                let why = match cause {
                    _ if closed_here => Closed::Idle,
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
                    self.dial_failed.insert(peer, tokio::time::Instant::now());
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
        self.dial_failed.remove(&peer_id);
        // Every new connection, not only a peer's first: one opened while
        // this node was closing the last makes the peer a peer again.
        let now = tokio::time::Instant::now();
        self.peer_use.connected(peer_id, endpoint.is_dialer(), now);
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
            request_response::Event::Message { peer, message, .. } => {
                self.peer_use.used(peer, tokio::time::Instant::now());
                match message {
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
                        if let Some(p) = self.pending.remove(&request_id) {
                            let _ = p.done.send(Ok(response));
                        }
                    }
                }
            }
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                let Some(mut p) = self.pending.remove(&request_id) else {
                    return;
                };
                // Either side may close a connection it holds beyond the
                // peers it wants while a request crosses it: asked again
                // once, over a new connection.
                if let (request_response::OutboundFailure::ConnectionClosed, Some(again)) =
                    (&error, p.again.take())
                {
                    tracing::debug!(%peer, "a request's connection closed under it; asking again");
                    self.peer_use.used(peer, tokio::time::Instant::now());
                    let id = self
                        .swarm
                        .behaviour_mut()
                        .requests
                        .send_request(&peer, again);
                    self.pending.insert(id, p);
                    return;
                }
                let _ = p.done.send(Err(RequestError {
                    peer: peer.to_string(),
                    why: error.to_string(),
                }));
            }
            _ => {}
        }
    }
}
