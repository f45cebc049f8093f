//! The vaults alive as far as this one knows, from their signed
//! announcements and this vault's connections: who holds a blob (of the
//! chain's holders of the era, those alive, the nearest by XOR of their
//! places; in the bootstrap era, before the chain names holders, every
//! vault alive, placed at its key), when a vault counts as gone, and when
//! the set changed enough for blobs to move.

use crate::replication::{Pass, Passes, View};
use spacevault_chain::holders::{nearest, Place};
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
    /// The holder era this vault's chain is in.
    era: u64,
    /// The chain's holders of that era, once it names them (not in the
    /// bootstrap era 0).
    members: Option<Vec<Place>>,
    /// The holders before the last change, until when they still count:
    /// a vault that has not yet seen the change asks by them for a while.
    previous: Option<(Option<Vec<Place>>, Instant)>,
}

/// How long a vault still keeps blobs by the holders it had before they
/// last changed: enough for the other vaults to cross the same era's
/// first block.
pub const PREVIOUS_HOLDERS_GRACE: Duration = Duration::from_secs(30);

impl Vaults {
    pub fn new(own: [u8; 32]) -> Vaults {
        Vaults {
            own,
            era: 0,
            members: None,
            previous: None,
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

    /// The `r` holders of `address`: of the holders alive, the nearest by
    /// XOR of their places.
    pub fn holders(&self, address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
        nearest(&self.view(), address, r)
    }

    /// The `r` holders of `address` the chain names in this era, alive or
    /// not (none in the bootstrap era): a registered holder that vanished
    /// stays one until a challenge it cannot answer takes it out.
    pub fn chain_holders(&self, address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
        self.members
            .as_deref()
            .map_or_else(Vec::new, |m| nearest(m, address, r))
    }

    /// The chain moved to holder era `era`, whose holders are `members`
    /// (None in the bootstrap era): a change of the holders starts a
    /// replication pass. False when nothing changed.
    pub(crate) fn set_era(&mut self, era: u64, members: Option<Vec<Place>>) -> bool {
        let changed = members != self.members;
        self.era = era;
        if changed {
            let before = std::mem::replace(&mut self.members, members);
            self.previous = Some((before, Instant::now() + PREVIOUS_HOLDERS_GRACE));
            self.generation += 1;
        }
        changed
    }

    /// Whether this vault is among the `places` holders of `address`
    /// nearest it, by the holders of now or, for
    /// [`PREVIOUS_HOLDERS_GRACE`] after they changed, of before: the vault
    /// asking may not have crossed the era's first block yet. Past the
    /// bootstrap era, a vault the chain does not register holds nothing,
    /// by either.
    pub fn holds(&self, address: &[u8; 32], places: usize) -> bool {
        if !self.is_holder(&self.own) {
            return false;
        }
        if nearest(&self.view(), address, places).contains(&self.own) {
            return true;
        }
        match &self.previous {
            Some((before, until)) if Instant::now() < *until => {
                let before = view_of(&self.known, self.own, before.as_deref());
                nearest(&before, address, places).contains(&self.own)
            }
            _ => false,
        }
    }

    /// The vaults to ask for the blob at `address`, nearest first: its
    /// `n` nearest holders now, then its `n` nearest by the holders before
    /// the last change, grace or not. When the holders change (at the
    /// first era, every blob moves from keys to places) the new holders
    /// have a blob only once a replication pass brought it, which takes
    /// as long as the old holders' passes do; until then the old holders
    /// still keep it, and a read costs them nothing.
    pub fn fetch_order(&self, address: &[u8; 32], n: usize) -> Vec<[u8; 32]> {
        let mut order = nearest(&self.view(), address, n);
        if let Some((before, _)) = &self.previous {
            let before = view_of(&self.known, self.own, before.as_deref());
            for key in nearest(&before, address, n) {
                if !order.contains(&key) {
                    order.push(key);
                }
            }
        }
        order
    }

    /// The holder era the chain is in, as this vault follows it.
    pub fn era(&self) -> u64 {
        self.era
    }

    /// Whether `key` is a holder of this era: a registered one, or, in the
    /// bootstrap era, any vault.
    pub fn is_holder(&self, key: &[u8; 32]) -> bool {
        match &self.members {
            None => true,
            Some(members) => members.iter().any(|p| &p.key == key),
        }
    }

    /// The holders alive, this vault included when it is one.
    pub(crate) fn view(&self) -> View {
        view_of(&self.known, self.own, self.members.as_deref())
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
        let (known, own, members) = (&self.known, self.own, self.members.as_deref());
        self.passes
            .start(self.generation, now, || view_of(known, own, members))
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

/// Of the era's `members`, those alive (in `known`, or this vault); before
/// the chain names any, every vault in `known` and `own`, each at its key.
fn view_of(known: &HashMap<[u8; 32], Known>, own: [u8; 32], members: Option<&[Place]>) -> View {
    match members {
        Some(members) => members
            .iter()
            .filter(|p| p.key == own || known.contains_key(&p.key))
            .copied()
            .collect(),
        None => known
            .keys()
            .copied()
            .chain([own])
            .map(Place::at_key)
            .collect(),
    }
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
    fn once_the_chain_names_holders_only_they_hold_and_by_their_places() {
        let peer =
            net::peer_of(&spacevault_chain::Keypair::from_secret(&[1; 32]).public()).unwrap();
        let mut v = Vaults::new([0x00; 32]);
        for k in [0x10u8, 0x20, 0x30] {
            v.heard([k; 32], peer, 1);
        }
        assert!(
            v.is_holder(&[0x77; 32]),
            "the bootstrap era takes any vault"
        );
        let g = v.generation;
        // 0x10 and 0x30 registered (0x30 placed far from its key), and
        // 0x40, registered but not heard of: not a holder here now.
        let members = vec![
            Place {
                key: [0x10; 32],
                place: [0x10; 32],
            },
            Place {
                key: [0x30; 32],
                place: [0xf0; 32],
            },
            Place {
                key: [0x40; 32],
                place: [0x21; 32],
            },
        ];
        assert!(v.set_era(1, Some(members.clone())));
        assert!(v.generation > g, "a pass follows");
        assert_eq!(v.era(), 1);
        assert!(!v.set_era(1, Some(members)), "nothing changed");
        assert_eq!(v.holders(&[0x21; 32], 1), vec![[0x10; 32]]);
        assert_eq!(v.holders(&[0xf1; 32], 1), vec![[0x30; 32]]);
        assert_eq!(v.holders(&[0x00; 32], 10).len(), 2, "neither 0x00 nor 0x20");
        assert!(v.is_holder(&[0x40; 32]) && !v.is_holder(&[0x20; 32]));
    }

    #[test]
    fn a_vault_holds_by_the_holders_of_now_or_of_before_the_last_change() {
        let mut v = Vaults::new([0x10; 32]);
        let peer =
            net::peer_of(&spacevault_chain::Keypair::from_secret(&[1; 32]).public()).unwrap();
        v.heard([0x20; 32], peer, 1);
        let at = |key: u8, place: u8| Place {
            key: [key; 32],
            place: [place; 32],
        };
        // Bootstrap: this vault, at its key, is nearest 0x11.
        assert!(v.holds(&[0x11; 32], 1));
        v.set_era(1, Some(vec![at(0x10, 0xf0), at(0x20, 0x20)]));
        // By its place now, and by its key just before.
        assert!(v.holds(&[0xf1; 32], 1));
        assert!(
            v.holds(&[0x11; 32], 1),
            "a vault still in the bootstrap era"
        );
        v.set_era(2, Some(vec![at(0x20, 0x20)]));
        // Left the holders: nothing, whatever it held in era 1.
        assert!(!v.holds(&[0xf1; 32], 1));
        assert!(!v.holds(&[0x11; 32], 1));
        v.set_era(3, Some(vec![at(0x10, 0xf0), at(0x20, 0x21)]));
        v.set_era(4, Some(vec![at(0x10, 0x10), at(0x20, 0x21)]));
        assert!(v.holds(&[0x11; 32], 1) && v.holds(&[0xf1; 32], 1));
        // The grace over, only the holders of now hold; reads still ask
        // the holders of before, after those of now.
        v.previous.as_mut().unwrap().1 = Instant::now();
        assert!(!v.holds(&[0xf1; 32], 1));
        assert_eq!(v.fetch_order(&[0xf1; 32], 1), vec![[0x20; 32], [0x10; 32]]);
        // 0x11's holder is 0x10 now (place 0x10), was 0x20 (place 0x21).
        assert_eq!(v.fetch_order(&[0x11; 32], 1), vec![[0x10; 32], [0x20; 32]]);
        // Asked once each.
        assert_eq!(v.fetch_order(&[0x11; 32], 2), vec![[0x10; 32], [0x20; 32]]);
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
