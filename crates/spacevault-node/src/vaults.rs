//! The vaults alive as far as this one knows, from their signed
//! announcements and this vault's connections: who holds a blob (the
//! nearest by XOR), when a vault counts as gone, and when the set changed
//! enough for blobs to move.

use crate::replication::{nearest, Pass, Passes, View};
use spacevault_chain::Rejection;
use spacevault_network as net;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Vaults a vault keeps track of at most: announcements cost nothing to
/// make, so the table is bounded (a few hundred bytes a vault). A new vault
/// beyond it is not taken until others leave.
pub const MAX_KNOWN_VAULTS: usize = 65_536;

/// Announcements missed before a vault counts as gone.
pub(crate) const MISSED_TO_LEAVE: u32 = 3;

/// A vault this one knows of.
#[derive(Clone, Debug)]
struct Known {
    peer: net::Peer,
    last_seen: Instant,
    /// The time of its newest announcement heard (its clock, Unix ms).
    newest_ms: u64,
    /// When this vault's last connection with it was lost (Unix ms), until
    /// it is heard of again.
    lost_ms: Option<u64>,
}

/// The vaults alive as far as this one knows: itself, and every vault whose
/// announcement it heard lately.
pub struct Vaults {
    own: [u8; 32],
    known: HashMap<[u8; 32], Known>,
    /// Changes every time the set of vaults alive does.
    generation: u64,
    /// The passes that send local blobs to their new holders.
    passes: Passes,
    /// Vaults known at most, besides this one.
    max_known: usize,
    /// The newest announcement's time of each vault that left (Unix ms),
    /// while an announcement that old could still be news: a late or
    /// replayed one must not bring it back.
    departed: HashMap<[u8; 32], u64>,
}

impl Vaults {
    pub fn new(own: [u8; 32]) -> Vaults {
        Vaults {
            own,
            known: HashMap::new(),
            generation: 1,
            passes: Passes::default(),
            departed: HashMap::new(),
            max_known: MAX_KNOWN_VAULTS,
        }
    }

    /// An announcement made at `time_ms`: an older one than the loss of
    /// the connection (relayed late) does not prove the vault alive. False
    /// when the vault is new and [`MAX_KNOWN_VAULTS`] are known already.
    pub(crate) fn heard(&mut self, key: [u8; 32], peer: net::Peer, time_ms: u64) -> bool {
        if key == self.own {
            return true;
        }
        if !self.known.contains_key(&key) && self.known.len() >= self.max_known {
            return false;
        }
        let lost_ms = self
            .known
            .get(&key)
            .and_then(|k| k.lost_ms)
            .filter(|&lost| time_ms <= lost);
        self.departed.remove(&key);
        let new = !self.known.contains_key(&key);
        self.known.insert(
            key,
            Known {
                peer,
                last_seen: Instant::now(),
                newest_ms: time_ms,
                lost_ms,
            },
        );
        if new {
            self.generation += 1;
        }
        true
    }

    /// Whether an announcement made at `time_ms` is news at `now_ms`: made
    /// after the newest heard from that vault, while it was known or since
    /// it left (a replay is not), within the drift a slot is allowed ahead
    /// of `now_ms`, and no older than `max_age`, the time a
    /// vault unheard still counts as alive (older, it says nothing of the
    /// vault now).
    pub(crate) fn is_news(
        &self,
        key: &[u8; 32],
        time_ms: u64,
        now_ms: u64,
        max_age: Duration,
        max_drift_ms: u64,
    ) -> Result<(), Rejection> {
        if time_ms > now_ms.saturating_add(max_drift_ms) {
            return Err(Rejection::Future {
                due_ms: time_ms,
                now_ms,
            });
        }
        let oldest = now_ms.saturating_sub(max_age.as_millis() as u64);
        let newest = self
            .known
            .get(key)
            .map(|k| k.newest_ms)
            .or_else(|| self.departed.get(key).copied())
            .unwrap_or(0);
        if time_ms < oldest {
            return Err(Rejection::Stale {
                got: time_ms,
                oldest,
            });
        }
        if time_ms <= newest {
            return Err(Rejection::Replayed {
                got: time_ms,
                newest,
            });
        }
        Ok(())
    }

    /// Forgets vaults not heard for a while, and vaults lost and not heard
    /// of for an interval since.
    pub(crate) fn expire(&mut self, interval: Duration) {
        let limit = interval * MISSED_TO_LEAVE;
        let now = crate::now_ms();
        let lost_limit = interval.as_millis() as u64;
        // What left long enough ago that its announcements are stale anyway.
        self.departed
            .retain(|_, newest| now.saturating_sub(*newest) <= limit.as_millis() as u64);
        let before = self.known.len();
        let departed = &mut self.departed;
        self.known.retain(|key, k| {
            let stays = k.last_seen.elapsed() < limit
                && k.lost_ms.is_none_or(|t| now.saturating_sub(t) < lost_limit);
            if !stays {
                departed.insert(*key, k.newest_ms);
            }
            stays
        });
        if self.known.len() != before {
            self.generation += 1;
        }
    }

    /// The last connection with `peer` was lost: not proof that it left
    /// (the other side's idle timeout closes connections too), so it is
    /// gone only if not heard of for an interval, or at once if a request
    /// to it fails ([`Vaults::unreachable`]).
    pub fn lost(&mut self, peer: &net::Peer) {
        let now = crate::now_ms();
        for k in self.known.values_mut().filter(|k| k.peer == *peer) {
            k.lost_ms.get_or_insert(now);
        }
    }

    /// A connection with `peer` is up: it is alive.
    pub fn connected(&mut self, peer: &net::Peer) {
        for k in self.known.values_mut().filter(|k| k.peer == *peer) {
            k.lost_ms = None;
        }
    }

    /// A request to `peer` failed: if its connection was lost too, it is
    /// gone until heard again.
    pub fn unreachable(&mut self, peer: &net::Peer) {
        let before = self.known.len();
        let departed = &mut self.departed;
        self.known.retain(|key, k| {
            let stays = k.peer != *peer || k.lost_ms.is_none();
            if !stays {
                departed.insert(*key, k.newest_ms);
            }
            stays
        });
        if self.known.len() != before {
            self.generation += 1;
        }
    }

    /// The time of the newest announcement heard from `key` while it is
    /// known.
    pub fn newest_heard(&self, key: &[u8; 32]) -> Option<u64> {
        self.known.get(key).map(|k| k.newest_ms)
    }

    /// Vaults alive, this one included.
    pub fn count(&self) -> usize {
        self.known.len() + 1
    }

    /// The `r` vaults nearest `address` by XOR of their farmer keys.
    pub fn holders(&self, address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
        nearest(&self.view(), address, r)
    }

    /// Every vault alive, this one included.
    pub(crate) fn view(&self) -> View {
        view_of(&self.known, self.own)
    }

    pub(crate) fn peer(&self, key: &[u8; 32]) -> Option<net::Peer> {
        self.known.get(key).map(|k| k.peer)
    }
}

impl Vaults {
    /// A replication pass over the current set of vaults, unless one runs
    /// or nothing changed since the last ([`Passes::start`]). The view is
    /// built only when a pass starts: it lists every vault.
    pub(crate) fn start_pass(&mut self, now: Instant) -> Option<Pass> {
        let (known, own) = (&self.known, self.own);
        self.passes
            .start(self.generation, now, || view_of(known, own))
    }

    /// A blob was stored here: the next pass sends it to every holder.
    pub(crate) fn stored(&mut self, address: [u8; 32]) {
        self.passes.stored(address);
    }

    /// The pass ended; `complete` when every copy was taken.
    pub(crate) fn finish_pass(&mut self, pass: Pass, complete: bool, now: Instant) {
        self.passes.finish(pass, complete, now);
    }
}

/// Every vault in `known`, and `own`.
fn view_of(known: &HashMap<[u8; 32], Known>, own: [u8; 32]) -> View {
    known.keys().copied().chain([own]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_the_nearest_by_xor_including_this_vault() {
        let peer =
            net::peer_of(&spacevault_chain::Keypair::from_secret(&[1; 32]).public()).unwrap();
        let mut v = Vaults::new([0x00; 32]);
        for k in [0x10u8, 0x20, 0x30, 0x40, 0x80] {
            assert!(v.heard([k; 32], peer, 1));
        }
        assert_eq!(v.count(), 6);
        assert_eq!(v.holders(&[0x21; 32], 2), vec![[0x20; 32], [0x30; 32]]);
        assert_eq!(v.holders(&[0x01; 32], 1), vec![[0x00; 32]]);
        assert_eq!(v.holders(&[0xff; 32], 10).len(), 6);
        let g = v.generation;
        v.lost(&peer);
        v.unreachable(&peer);
        assert_eq!(v.count(), 1);
        assert!(v.generation > g);
    }

    #[test]
    fn a_lost_connection_alone_or_a_failed_request_alone_keeps_a_vault() {
        let key = |i: u8| spacevault_chain::Keypair::from_secret(&[i; 32]).public();
        let (a, b) = (key(1), key(2));
        let (pa, pb) = (net::peer_of(&a).unwrap(), net::peer_of(&b).unwrap());
        let mut v = Vaults::new([0x00; 32]);
        v.heard(a, pa, 1);
        v.heard(b, pb, 1);
        // A request that failed while connected (a timeout under load).
        v.unreachable(&pa);
        assert_eq!(v.count(), 3);
        // A lost connection, then word from the vault made before it.
        v.lost(&pb);
        v.heard(b, pb, 1);
        v.expire(Duration::ZERO);
        assert_eq!(
            v.count(),
            1,
            "a lost vault not heard since is gone after an interval"
        );
        // Lost, then heard anew, then a failed request: alive.
        let mut v = Vaults::new([0x00; 32]);
        v.heard(a, pa, 1);
        v.lost(&pa);
        v.heard(a, pa, crate::now_ms() + 1);
        v.unreachable(&pa);
        assert_eq!(v.count(), 2);
        // Lost, then reconnected: alive.
        v.lost(&pa);
        v.connected(&pa);
        v.unreachable(&pa);
        assert_eq!(v.count(), 2);
        // Lost, and a request fails: gone at once.
        v.lost(&pa);
        v.unreachable(&pa);
        assert_eq!(v.count(), 1);
    }

    #[test]
    fn the_vaults_known_are_bounded_and_a_known_one_is_always_heard() {
        let key = |i: u8| spacevault_chain::Keypair::from_secret(&[i; 32]).public();
        let mut v = Vaults::new([0x00; 32]);
        v.max_known = 2;
        let (a, b, c) = (key(1), key(2), key(3));
        let peer = |k: &[u8; 32]| net::peer_of(k).unwrap();
        assert!(v.heard(a, peer(&a), 1));
        assert!(v.heard(b, peer(&b), 1));
        assert!(!v.heard(c, peer(&c), 1), "a third is one too many");
        assert_eq!(v.count(), 3, "two and this vault");
        assert!(v.heard(a, peer(&a), 2), "a known vault heard again");
        assert!(v.heard([0x00; 32], peer(&a), 2), "this vault itself");
        v.lost(&peer(&b));
        v.unreachable(&peer(&b));
        assert!(v.heard(c, peer(&c), 1), "room again once one left");
    }

    #[test]
    fn an_announcement_is_news_only_once_and_only_while_fresh() {
        let key = spacevault_chain::Keypair::from_secret(&[1; 32]).public();
        let peer = net::peer_of(&key).unwrap();
        let mut v = Vaults::new([0x00; 32]);
        let age = Duration::from_secs(6);
        let now = 1_000_000;
        let news = |v: &Vaults, t| v.is_news(&key, t, now, age, 50);
        assert_eq!(news(&v, now), Ok(()));
        assert_eq!(news(&v, now + 50), Ok(()), "the drift allowed");
        assert_eq!(
            news(&v, now + 51),
            Err(Rejection::Future {
                due_ms: now + 51,
                now_ms: now
            })
        );
        assert_eq!(news(&v, now - 6000), Ok(()), "as old as may be");
        assert_eq!(
            news(&v, now - 6001),
            Err(Rejection::Stale {
                got: now - 6001,
                oldest: now - 6000
            })
        );
        v.heard(key, peer, now - 10);
        assert_eq!(
            news(&v, now - 10),
            Err(Rejection::Replayed {
                got: now - 10,
                newest: now - 10
            }),
            "a replay"
        );
        assert!(news(&v, now - 11).is_err(), "older than the newest");
        assert_eq!(news(&v, now - 9), Ok(()));
        // Gone, its last word replayed is no news either.
        v.lost(&peer);
        v.unreachable(&peer);
        assert_eq!(v.count(), 1);
        assert!(news(&v, now - 10).is_err(), "a replay after it left");
        assert_eq!(news(&v, now - 9), Ok(()));
    }
}
