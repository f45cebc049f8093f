//! The node's side of the network: commands to the swarm's task over a
//! bounded queue, and requests to each peer taken in turns.

use crate::{BootstrapStatus, Reply, Request, RequestError, Response, Topic, Verdict};
use libp2p::gossipsub::MessageId;
use libp2p::{Multiaddr, PeerId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, Semaphore};

pub(crate) enum Command {
    Publish(Topic, Vec<u8>),
    Validate(MessageId, PeerId, Verdict),
    Request(
        PeerId,
        Request,
        oneshot::Sender<Result<Response, RequestError>>,
    ),
    Respond(Reply, Response),
    Dial(Multiaddr),
    AddAddress(PeerId, Multiaddr),
    Block(PeerId),
    Unblock(PeerId),
    Disconnect(PeerId),
    Peers(oneshot::Sender<Vec<PeerId>>),
    Addresses(oneshot::Sender<Vec<Multiaddr>>),
    Bootstrap(oneshot::Sender<Vec<BootstrapStatus>>),
}

/// Commands waiting for the swarm's task, at most. The node sends one or
/// two for each message or request a peer sends, and the swarm's task
/// takes them as fast as it takes its events; a queue this long is a task
/// that has stopped keeping up, and what comes past it is dropped (and
/// counted) rather than held without bound.
pub const COMMAND_QUEUE: usize = 16_384;

/// Requests to one peer in flight at once, at most; more wait their turn.
/// A connection carries at most 100 streams both ways (rust-libp2p's
/// request-response default): past that, requests failed outright, and a
/// vault taking many PUTs at once saw its Store requests to the other
/// holders refused.
pub const MAX_REQUESTS_PER_PEER: usize = 48;

/// Each peer's turns, and the requests to it that hold or wait for one.
type Turns = Arc<Mutex<HashMap<PeerId, (Arc<Semaphore>, usize)>>>;

/// The node's side of the network.
#[derive(Clone)]
pub struct Handle {
    commands: mpsc::Sender<Command>,
    local: PeerId,
    /// Only peers with a request in flight or waiting have an entry.
    turns: Turns,
    dropped: Arc<AtomicU64>,
}

/// A request's place among those to one peer; the last request to a
/// peer, finished or abandoned, removes the peer's entry on drop.
struct Turn {
    peer: PeerId,
    turns: Turns,
}

impl Turn {
    fn take(turns: &Turns, peer: PeerId) -> (Turn, Arc<Semaphore>) {
        let mut map = turns.lock().unwrap();
        let entry = map
            .entry(peer)
            .or_insert_with(|| (Arc::new(Semaphore::new(MAX_REQUESTS_PER_PEER)), 0));
        entry.1 += 1;
        let semaphore = entry.0.clone();
        let turn = Turn {
            peer,
            turns: turns.clone(),
        };
        (turn, semaphore)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut map = self.turns.lock().unwrap();
        if let Some(entry) = map.get_mut(&self.peer) {
            entry.1 -= 1;
            if entry.1 == 0 {
                map.remove(&self.peer);
            }
        }
    }
}

impl Handle {
    pub(crate) fn new(commands: mpsc::Sender<Command>, local: PeerId) -> Handle {
        Handle {
            commands,
            local,
            turns: Default::default(),
            dropped: Default::default(),
        }
    }

    pub fn local_peer(&self) -> PeerId {
        self.local
    }

    /// Commands dropped because the swarm's task had [`COMMAND_QUEUE`]
    /// waiting.
    pub fn commands_dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `command`; `false` when it was dropped, for a full queue (and
    /// counted) or a network that has stopped.
    fn send(&self, command: Command) -> bool {
        match self.commands.try_send(command) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if self.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        queue = COMMAND_QUEUE,
                        "the network's task is not keeping up: commands are dropped"
                    );
                }
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Gossips a message (dropped quietly when the network has stopped).
    pub fn publish(&self, topic: Topic, data: Vec<u8>) {
        self.send(Command::Publish(topic, data));
    }

    pub fn validate(&self, id: MessageId, source: PeerId, verdict: Verdict) {
        self.send(Command::Validate(id, source, verdict));
    }

    pub async fn request(&self, peer: PeerId, request: Request) -> Result<Response, RequestError> {
        let (turn, semaphore) = Turn::take(&self.turns, peer);
        let permit = semaphore.acquire_owned().await;
        let failed = |why: &str| RequestError {
            peer: peer.to_string(),
            why: why.into(),
        };
        let (tx, rx) = oneshot::channel();
        let result = if !self.send(Command::Request(peer, request, tx)) {
            Err(failed("the network has stopped or is overloaded"))
        } else {
            rx.await
                .map_err(|_| failed("the network has stopped"))
                .and_then(|r| r)
        };
        drop(permit);
        drop(turn);
        result
    }

    pub fn respond(&self, reply: Reply, response: Response) {
        self.send(Command::Respond(reply, response));
    }

    pub fn dial(&self, address: Multiaddr) {
        self.send(Command::Dial(address));
    }

    /// Where a peer listens, for requests to a peer not connected yet.
    pub fn add_address(&self, peer: PeerId, address: Multiaddr) {
        self.send(Command::AddAddress(peer, address));
    }

    /// Refuses every connection with `peer` and closes the ones open: what
    /// tests split a network with.
    pub fn block(&self, peer: PeerId) {
        self.send(Command::Block(peer));
    }

    pub fn unblock(&self, peer: PeerId) {
        self.send(Command::Unblock(peer));
    }

    /// Closes every connection with `peer`, which may connect again.
    pub fn disconnect(&self, peer: PeerId) {
        self.send(Command::Disconnect(peer));
    }

    async fn ask<T: Default>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> T {
        let (tx, rx) = oneshot::channel();
        if !self.send(command(tx)) {
            return T::default();
        }
        rx.await.unwrap_or_default()
    }

    /// The peers connected now.
    pub async fn peers(&self) -> Vec<PeerId> {
        self.ask(Command::Peers).await
    }

    /// The addresses the node listens on.
    pub async fn addresses(&self) -> Vec<Multiaddr> {
        self.ask(Command::Addresses).await
    }

    /// Where each bootstrap address stands: reached, or why not and when
    /// it is tried again.
    pub async fn bootstrap(&self) -> Vec<BootstrapStatus> {
        self.ask(Command::Bootstrap).await
    }

    /// Peers with an entry in the table of turns, for tests.
    #[cfg(test)]
    pub(crate) fn peers_with_turns(&self) -> usize {
        self.turns.lock().unwrap().len()
    }
}
