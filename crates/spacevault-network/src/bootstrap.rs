//! The bootstrap addresses a node starts from: dialled while it has no
//! peers, each on a backoff of its own after a failure (so that a vault
//! whose bootstrap is down does not dial it every two seconds for ever),
//! with the last failure kept so that the node can say why it has no
//! peers.

use libp2p::swarm::ConnectionId;
use libp2p::{Multiaddr, PeerId};
use std::time::Duration;
use tokio::time::Instant;

/// The wait before the first retry of an address that failed.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(2);
/// The longest wait between two tries of one address.
pub const MAX_BACKOFF: Duration = Duration::from_secs(64);

/// Where a bootstrap address stands, for the node's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapStatus {
    pub address: Multiaddr,
    /// Whether the last dial of it connected.
    pub reached: bool,
    /// Why the last dial failed, while it has not connected since.
    pub error: Option<String>,
    /// When the next dial is due, while one is waiting.
    pub retry_in: Option<Duration>,
}

struct Entry {
    address: Multiaddr,
    backoff: Duration,
    next_try: Instant,
    dial: Option<ConnectionId>,
    /// The connection a dial made, until the peer says which chain it is
    /// on: the wait starts again from the first only then.
    unconfirmed: Option<ConnectionId>,
    /// The peer that dial reached, while unconfirmed.
    peer: Option<PeerId>,
    reached: bool,
    error: Option<String>,
}

/// Every bootstrap address and its state.
pub(crate) struct Bootstraps {
    entries: Vec<Entry>,
}

impl Bootstraps {
    pub fn new(addresses: Vec<Multiaddr>, now: Instant) -> Bootstraps {
        let entries = addresses
            .into_iter()
            .map(|address| Entry {
                address,
                backoff: FIRST_BACKOFF,
                next_try: now,
                dial: None,
                unconfirmed: None,
                peer: None,
                reached: false,
                error: None,
            })
            .collect();
        Bootstraps { entries }
    }

    /// The addresses due a dial: none in flight, and their wait over.
    pub fn due(&self, now: Instant) -> Vec<(usize, Multiaddr)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.dial.is_none() && e.next_try <= now)
            .map(|(i, e)| (i, e.address.clone()))
            .collect()
    }

    /// Records that entry `i` is being dialled as connection `id`.
    pub fn dialling(&mut self, i: usize, id: ConnectionId) {
        self.entries[i].dial = Some(id);
    }

    /// Records a failed dial: the address and how long until it is tried
    /// again, or `None` when `id` was not a bootstrap dial.
    pub fn failed(
        &mut self,
        id: ConnectionId,
        why: String,
        now: Instant,
    ) -> Option<(Multiaddr, Duration)> {
        let e = self.entries.iter_mut().find(|e| e.dial == Some(id))?;
        let wait = e.backoff;
        e.dial = None;
        e.reached = false;
        e.error = Some(why);
        e.next_try = now + wait;
        e.backoff = (wait * 2).min(MAX_BACKOFF);
        Some((e.address.clone(), wait))
    }

    /// Records a dial that connected; the address, or `None` when `id` was
    /// not a bootstrap dial. Its waits start again from the first once the
    /// peer proves to be on this chain ([`Bootstraps::confirmed`]).
    pub fn connected(&mut self, id: ConnectionId, peer: PeerId) -> Option<Multiaddr> {
        let e = self.entries.iter_mut().find(|e| e.dial == Some(id))?;
        e.dial = None;
        e.unconfirmed = Some(id);
        e.peer = Some(peer);
        e.reached = true;
        e.error = None;
        Some(e.address.clone())
    }

    /// The peer of connection `id` is on this chain.
    pub fn confirmed(&mut self, id: ConnectionId) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.unconfirmed == Some(id)) {
            e.unconfirmed = None;
            e.peer = None;
            e.backoff = FIRST_BACKOFF;
        }
    }

    /// `peer`, heard on connection `id`, is on another chain: a failure of
    /// the address that reached it, waited on like any other (so that a
    /// bootstrap address of the wrong chain is not dialled every two
    /// seconds). The peer may say so on another connection than the
    /// bootstrap's own (one it dialled back, say, while the first closed).
    pub fn other_chain(
        &mut self,
        id: ConnectionId,
        peer: &PeerId,
        why: String,
        now: Instant,
    ) -> Option<(Multiaddr, Duration)> {
        let e = self.entries.iter_mut().find(|e| {
            e.unconfirmed == Some(id) || (e.unconfirmed.is_some() && e.peer.as_ref() == Some(peer))
        })?;
        let dial = e.unconfirmed.take().expect("an unconfirmed connection");
        e.peer = None;
        e.dial = Some(dial);
        self.failed(dial, why, now)
    }

    pub fn status(&self, now: Instant) -> Vec<BootstrapStatus> {
        self.entries
            .iter()
            .map(|e| BootstrapStatus {
                address: e.address.clone(),
                reached: e.reached,
                error: e.error.clone(),
                retry_in: (e.dial.is_none() && e.error.is_some())
                    .then(|| e.next_try.saturating_duration_since(now)),
            })
            .collect()
    }
}

/// An error and its causes on one line, each said once: libp2p's dial
/// errors wrap the operating system's reason two or three levels down.
pub(crate) fn reason(error: &libp2p::swarm::DialError) -> String {
    use libp2p::swarm::DialError;
    let chain = |mut e: &dyn std::error::Error| {
        let mut parts: Vec<String> = vec![e.to_string()];
        while let Some(next) = e.source() {
            let part = next.to_string();
            // A cause its wrapper already printed is said once.
            if !part.trim().is_empty() && !parts.last().is_some_and(|p| p.contains(&part)) {
                parts.push(part);
            }
            e = next;
        }
        parts.retain(|p| !p.trim().is_empty());
        parts.join(": ")
    };
    match error {
        DialError::Transport(errors) if !errors.is_empty() => errors
            .iter()
            .map(|(_, e)| chain(e))
            .collect::<Vec<_>>()
            .join("; "),
        other => chain(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: usize) -> ConnectionId {
        ConnectionId::new_unchecked(n)
    }

    #[test]
    fn a_failing_address_waits_twice_as_long_each_time_up_to_the_bound() {
        let start = Instant::now();
        let address: Multiaddr = "/ip4/127.0.0.1/tcp/9".parse().unwrap();
        let mut b = Bootstraps::new(vec![address.clone()], start);
        let mut now = start;
        let mut waits = Vec::new();
        for n in 0..9 {
            let due = b.due(now);
            assert_eq!(due, vec![(0, address.clone())], "try {n}");
            b.dialling(0, id(n));
            assert!(b.due(now).is_empty(), "a dial in flight is not due again");
            let (a, wait) = b.failed(id(n), "refused".into(), now).unwrap();
            assert_eq!(a, address);
            assert!(b.due(now + wait - Duration::from_millis(1)).is_empty());
            waits.push(wait.as_secs());
            now += wait;
        }
        assert_eq!(waits, [2, 4, 8, 16, 32, 64, 64, 64, 64]);
        let status = b.status(now);
        assert_eq!(status[0].error.as_deref(), Some("refused"));
        assert!(!status[0].reached);
        // A connection starts the waits again from the first.
        b.dialling(0, id(100));
        assert_eq!(
            b.connected(id(100), PeerId::random()),
            Some(address.clone())
        );
        b.confirmed(id(100));
        assert_eq!(
            b.status(now)[0],
            BootstrapStatus {
                address: address.clone(),
                reached: true,
                error: None,
                retry_in: None
            }
        );
        b.dialling(0, id(101));
        assert_eq!(b.failed(id(101), "x".into(), now).unwrap().1, FIRST_BACKOFF);
    }

    #[test]
    fn a_bootstrap_on_another_chain_is_a_failure_whose_waits_grow() {
        let t = Instant::now();
        let address: Multiaddr = "/memory/5".parse().unwrap();
        let mut b = Bootstraps::new(vec![address.clone()], t);
        let mut waits = Vec::new();
        for n in 0..4 {
            b.dialling(0, id(n));
            assert_eq!(b.connected(id(n), PeerId::random()), Some(address.clone()));
            let (_, wait) = b
                .other_chain(id(n), &PeerId::random(), "another chain".into(), t)
                .unwrap();
            waits.push(wait.as_secs());
        }
        assert_eq!(waits, [2, 4, 8, 16]);
        assert_eq!(b.status(t)[0].error.as_deref(), Some("another chain"));
        assert!(!b.status(t)[0].reached);
    }

    #[test]
    fn another_chain_heard_on_another_connection_of_the_peer_fails_its_address() {
        let t = Instant::now();
        let address: Multiaddr = "/memory/6".parse().unwrap();
        let mut b = Bootstraps::new(vec![address.clone()], t);
        let peer = PeerId::random();
        b.dialling(0, id(1));
        assert_eq!(b.connected(id(1), peer), Some(address.clone()));
        // Another peer on another chain says nothing of this address.
        assert_eq!(
            b.other_chain(id(7), &PeerId::random(), "another chain".into(), t),
            None
        );
        assert_eq!(b.status(t)[0].error, None);
        let (failed, _) = b
            .other_chain(id(2), &peer, "another chain".into(), t)
            .unwrap();
        assert_eq!(failed, address);
        assert_eq!(b.status(t)[0].error.as_deref(), Some("another chain"));
        assert!(!b.status(t)[0].reached);
    }

    #[test]
    fn dials_that_are_not_bootstrap_dials_change_nothing() {
        let now = Instant::now();
        let mut b = Bootstraps::new(vec!["/memory/1".parse().unwrap()], now);
        b.dialling(0, id(1));
        assert_eq!(b.failed(id(2), "x".into(), now), None);
        assert_eq!(b.connected(id(3), PeerId::random()), None);
        assert_eq!(b.status(now)[0].error, None);
    }
}
