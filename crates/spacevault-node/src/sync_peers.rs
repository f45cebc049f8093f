//! Which peers a vault syncs from. A peer that said it was ahead and then
//! brought nothing new (an empty answer, blocks that never attach, no
//! answer at all) is not asked again until its cooldown ends, twice as
//! long at each such sync in a row: one peer cannot keep the vault's one
//! sync slot by claiming a height it does not have. A peer that goes as
//! long again as its last cooldown without such a sync starts over. The
//! table is bounded.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// The first cooldown; each unproductive sync in a row doubles it.
pub const SYNC_COOLDOWN: Duration = Duration::from_secs(30);
/// The longest cooldown.
pub const MAX_SYNC_COOLDOWN: Duration = Duration::from_secs(30 * 60);
/// Peers kept in the table at most; past it, the cooldown nearest its end
/// is forgotten first.
pub const MAX_COOLING_PEERS: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Cooldown {
    until: Instant,
    /// How long the last cooldown was.
    wait: Duration,
    strikes: u32,
}

/// The peers cooling down.
#[derive(Debug)]
pub struct SyncPeers<P> {
    cooling: HashMap<P, Cooldown>,
    max: usize,
}

impl<P: Hash + Eq + Clone> Default for SyncPeers<P> {
    fn default() -> Self {
        SyncPeers {
            cooling: HashMap::new(),
            max: MAX_COOLING_PEERS,
        }
    }
}

impl<P: Hash + Eq + Clone> SyncPeers<P> {
    /// Whether `peer` may be synced from at `now`.
    pub fn may_sync(&self, peer: &P, now: Instant) -> bool {
        self.cooling.get(peer).is_none_or(|c| now >= c.until)
    }

    /// A sync from `peer` brought something new: its record is clean.
    pub fn productive(&mut self, peer: &P) {
        self.cooling.remove(peer);
    }

    /// A sync from `peer` brought nothing though it said it was ahead;
    /// returns how long it now cools down.
    pub fn unproductive(&mut self, peer: &P, now: Instant) -> Duration {
        // Strikes in a row: a peer that went as long again as its last
        // cooldown without one starts over.
        let earlier = self
            .cooling
            .get(peer)
            .filter(|c| now < c.until + c.wait)
            .map_or(0, |c| c.strikes);
        let strikes = earlier + 1;
        let wait = SYNC_COOLDOWN
            .saturating_mul(1 << (strikes - 1).min(16))
            .min(MAX_SYNC_COOLDOWN);
        self.cooling.insert(
            peer.clone(),
            Cooldown {
                until: now + wait,
                wait,
                strikes,
            },
        );
        if self.cooling.len() > self.max {
            // Strikes are kept past a cooldown's end (the next doubles),
            // but ended ones go first when room is needed.
            self.cooling.retain(|_, c| c.until > now || c.strikes > 1);
            while self.cooling.len() > self.max {
                let nearest = self
                    .cooling
                    .iter()
                    .min_by_key(|(_, c)| c.until)
                    .map(|(p, _)| p.clone());
                match nearest {
                    Some(p) => self.cooling.remove(&p),
                    None => break,
                };
            }
        }
        wait
    }

    /// Peers in the table.
    pub fn len(&self) -> usize {
        self.cooling.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cooling.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unproductive_peer_cools_down_twice_as_long_each_time_in_a_row() {
        let mut peers = SyncPeers::default();
        let t = Instant::now();
        assert!(peers.may_sync(&1, t));
        assert_eq!(peers.unproductive(&1, t), SYNC_COOLDOWN);
        assert!(!peers.may_sync(&1, t + SYNC_COOLDOWN - Duration::from_millis(1)));
        assert!(peers.may_sync(&1, t + SYNC_COOLDOWN));
        assert!(peers.may_sync(&2, t), "another peer is not held back");
        let later = t + SYNC_COOLDOWN;
        assert_eq!(peers.unproductive(&1, later), SYNC_COOLDOWN * 2);
        // Quiet for as long again as its last cooldown: it starts over.
        assert_eq!(peers.unproductive(&2, t), SYNC_COOLDOWN);
        assert_eq!(peers.unproductive(&2, t + SYNC_COOLDOWN * 2), SYNC_COOLDOWN);
        assert_eq!(peers.unproductive(&1, later), SYNC_COOLDOWN * 4);
        for _ in 0..40 {
            peers.unproductive(&1, later);
        }
        assert_eq!(peers.unproductive(&1, later), MAX_SYNC_COOLDOWN);
        // One good sync and the record is clean.
        peers.productive(&1);
        assert!(peers.may_sync(&1, later));
        assert_eq!(peers.unproductive(&1, later), SYNC_COOLDOWN);
    }

    #[test]
    fn the_table_is_bounded_and_forgets_the_nearest_end_first() {
        let mut peers = SyncPeers {
            cooling: HashMap::new(),
            max: 3,
        };
        let t = Instant::now();
        for p in 0..3u32 {
            peers.unproductive(&p, t + Duration::from_secs(p as u64));
        }
        // Peer 0's cooldown ends first: it goes to make room.
        peers.unproductive(&9, t + Duration::from_secs(10));
        assert_eq!(peers.len(), 3);
        assert!(peers.may_sync(&0, t + Duration::from_secs(1)));
        assert!(!peers.may_sync(&9, t + Duration::from_secs(11)));
        assert!(!peers.may_sync(&2, t + Duration::from_secs(3)));
    }
}
