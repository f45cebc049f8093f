//! Which connections a node closes when it holds more than it wants.
//!
//! Libp2p closes a connection only once no protocol has a stream open on
//! it, and gossipsub keeps one open with every subscribed peer: a vault
//! that met every other while the network formed (Kademlia's walks reach
//! them all in a small network) would stay connected to all of them, and
//! every connection costs its pings, its gossip and its task's wake-ups.
//! At 64 vaults that was 63 connections a vault where 12 were wanted.
//!
//! With `ConnectionLimits::max_peers` set, the node closes the excess
//! itself, as Lighthouse's peer manager does: never a peer used for a
//! request within the grace period, peers outside every
//! gossip mesh before mesh peers, peers that dialled in before those this
//! node chose to dial, and within each group in an order keyed by the
//! node's secret, which peers cannot predict or grind their ids against.
//! A peer that keeps sending requests keeps its connection: the inbound
//! limits ([`crate::ConnectionLimits`]) bound how many peers can.

use libp2p::PeerId;
use std::collections::{HashMap, HashSet};
use tokio::time::{Duration, Instant};

/// How long a connection beyond the peers wanted is kept after its last
/// request (or its opening): longer than a request waits for its answer
/// (20 s), so that neither side's request is cut off by this side.
pub const CLOSE_GRACE: Duration = Duration::from_secs(30);

pub(crate) struct PeerUse {
    /// Keys the order in which otherwise equal peers are closed.
    salt: [u8; 32],
    /// A connection used this recently is kept.
    grace: Duration,
    last_used: HashMap<PeerId, Instant>,
    outbound: HashSet<PeerId>,
    /// Peers this node is closing: their close says nothing of them.
    closing: HashSet<PeerId>,
}

impl PeerUse {
    pub fn new(secret: &[u8; 32], grace: Duration) -> PeerUse {
        PeerUse {
            salt: blake3::derive_key("spacevault 1 peers closed beyond the target", secret),
            grace,
            last_used: HashMap::new(),
            outbound: HashSet::new(),
            closing: HashSet::new(),
        }
    }

    /// Where `peer` comes in this node's own order of otherwise equal
    /// peers: to close, or to dial.
    pub fn rank(&self, peer: &PeerId) -> [u8; 32] {
        *blake3::keyed_hash(&self.salt, &peer.to_bytes()).as_bytes()
    }

    /// A connection with `peer` is up; `dialled`: this node opened it. A
    /// peer that connects again while this node closes its connections is
    /// no longer closing: it is a peer with a fresh grace.
    pub fn connected(&mut self, peer: PeerId, dialled: bool, now: Instant) {
        self.last_used.insert(peer, now);
        self.closing.remove(&peer);
        if dialled {
            self.outbound.insert(peer);
        }
    }

    /// A request went to `peer`, or came from it, or its answer did.
    pub fn used(&mut self, peer: PeerId, now: Instant) {
        if let Some(t) = self.last_used.get_mut(&peer) {
            *t = now;
        }
    }

    /// The last connection with `peer` closed: whether this node closed it
    /// for want of room.
    pub fn closed(&mut self, peer: &PeerId) -> bool {
        self.last_used.remove(peer);
        self.outbound.remove(peer);
        self.closing.remove(peer)
    }

    /// The peers to disconnect now, a quarter of those beyond `max` (the
    /// rest at the next calls), as far as enough are unused; they count as
    /// closing from here.
    pub fn choose_to_close(
        &mut self,
        connected: &HashSet<PeerId>,
        mesh: &HashSet<PeerId>,
        max: usize,
        now: Instant,
    ) -> Vec<PeerId> {
        let staying = connected
            .iter()
            .filter(|p| !self.closing.contains(p))
            .count();
        // A quarter of the excess at a time: the peers close their side's
        // excess too, and all of it at once from both sides would leave
        // both with far fewer than they want, dialling again.
        let excess = staying.saturating_sub(max).div_ceil(4);
        if excess == 0 {
            return Vec::new();
        }
        let mut unused: Vec<(bool, bool, [u8; 32], PeerId)> = connected
            .iter()
            .filter(|p| !self.closing.contains(p))
            .filter(|p| {
                self.last_used
                    .get(p)
                    .is_none_or(|t| now.saturating_duration_since(*t) >= self.grace)
            })
            .map(|p| {
                (
                    mesh.contains(p),
                    self.outbound.contains(p),
                    self.rank(p),
                    *p,
                )
            })
            .collect();
        unused.sort_unstable();
        let close: Vec<PeerId> = unused.into_iter().take(excess).map(|c| c.3).collect();
        self.closing.extend(close.iter().copied());
        close
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(n: usize) -> Vec<PeerId> {
        (0..n).map(|_| PeerId::random()).collect()
    }

    #[test]
    fn the_excess_goes_a_quarter_at_a_time_and_nothing_more() {
        let now = Instant::now();
        let all = peers(10);
        let mut uses = PeerUse::new(&[1; 32], Duration::from_secs(30));
        for p in &all {
            uses.connected(*p, false, now);
        }
        let connected: HashSet<PeerId> = all.iter().copied().collect();
        let later = now + Duration::from_secs(31);
        let mut each = Vec::new();
        let mut closing = HashSet::new();
        loop {
            let close = uses.choose_to_close(&connected, &HashSet::new(), 2, later);
            if close.is_empty() {
                break;
            }
            each.push(close.len());
            // Those closing are not closed twice: they count as gone.
            for p in close {
                assert!(closing.insert(p));
            }
        }
        assert_eq!(each, vec![2, 2, 1, 1, 1, 1]);
        let first = *closing.iter().next().unwrap();
        assert!(uses.closed(&first));
        assert!(!uses.closed(&first), "told once");
    }

    #[test]
    fn peers_in_use_stay_whatever_the_excess() {
        let now = Instant::now();
        let all = peers(6);
        let mut uses = PeerUse::new(&[2; 32], Duration::from_secs(30));
        for p in &all {
            uses.connected(*p, false, now);
        }
        let later = now + Duration::from_secs(40);
        for p in &all[..4] {
            uses.used(*p, later - Duration::from_secs(5));
        }
        let connected: HashSet<PeerId> = all.iter().copied().collect();
        let mut close = uses.choose_to_close(&connected, &HashSet::new(), 1, later);
        close.sort();
        let mut idle = all[4..].to_vec();
        idle.sort();
        assert_eq!(close, idle, "only the two unused go");
        // A new connection has its grace too.
        let fresh = PeerId::random();
        uses.connected(fresh, true, later);
        let mut connected = connected;
        connected.insert(fresh);
        assert!(uses
            .choose_to_close(
                &connected,
                &HashSet::new(),
                1,
                later + Duration::from_secs(1)
            )
            .is_empty());
    }

    #[test]
    fn inbound_peers_outside_the_mesh_go_first() {
        let now = Instant::now();
        let all = peers(4);
        let (mesh_in, mesh_out, out, inbound) = (all[0], all[1], all[2], all[3]);
        let mut uses = PeerUse::new(&[3; 32], Duration::ZERO);
        uses.connected(mesh_in, false, now);
        uses.connected(mesh_out, true, now);
        uses.connected(out, true, now);
        uses.connected(inbound, false, now);
        let connected: HashSet<PeerId> = all.iter().copied().collect();
        let mesh: HashSet<PeerId> = [mesh_in, mesh_out].into_iter().collect();
        let order: Vec<PeerId> = (0..4)
            .map(|_| {
                let staying = connected.len() - uses.closing.len();
                uses.choose_to_close(&connected, &mesh, staying - 1, now)[0]
            })
            .collect();
        assert_eq!(order, vec![inbound, out, mesh_in, mesh_out]);
    }

    #[test]
    fn the_order_among_equals_is_the_nodes_own() {
        let now = Instant::now();
        let all = peers(40);
        let connected: HashSet<PeerId> = all.iter().copied().collect();
        let closed_by = |secret: u8| {
            let mut uses = PeerUse::new(&[secret; 32], Duration::ZERO);
            for p in &all {
                uses.connected(*p, false, now);
            }
            let mut c = uses.choose_to_close(&connected, &HashSet::new(), 20, now);
            c.sort();
            c
        };
        assert_eq!(closed_by(4), closed_by(4));
        assert_ne!(closed_by(4), closed_by(5));
    }
}
