//! Each peer's allowances: token buckets of bytes, refilled at a steady
//! rate up to a burst. For having this vault keep blobs: the holder check
//! decides *what* a peer may have kept here; this bounds *how fast*, so
//! that one peer (grinding blobs whose addresses fall near this vault)
//! cannot fill the disk or keep it busy with an fsync a request. For
//! blocks asked of this vault (`Blocks`, `Locate`): an answer is cut to
//! what the asking peer has left, so that one peer asking for 8 MiB of
//! blocks again and again reads no more of the store than its rate, and
//! leaves the queue of chain requests to the others.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Bytes a second a peer's allowance grows by.
pub const STORE_RATE: u64 = 8 << 20;
/// The most a peer's allowance holds: what a peer may send at once, as a
/// joining vault's new holders do in a replication pass.
pub const STORE_BURST: u64 = 512 << 20;
/// What each Store costs beyond its bytes: the fsync that makes it
/// durable, so that many small blobs cost too.
pub const STORE_OVERHEAD: u64 = 16 << 10;
/// Bytes of blocks a second a peer's allowance for block requests grows
/// by: a vault syncing a long chain from one peer.
pub const BLOCKS_RATE: u64 = 16 << 20;
/// The most that allowance holds: a few full answers at once.
pub const BLOCKS_BURST: u64 = 64 << 20;
/// The least an answer of blocks is worth sending: below it, the peer is
/// refused (`over_budget`) until its allowance grows.
pub const BLOCKS_MIN_ANSWER: u64 = 64 << 10;
/// Peers tracked at most. Past it, full buckets (of peers that have sent
/// nothing for a while) are forgotten, and while none is, the peers not
/// tracked share one bucket: forgetting a spent bucket would refill it.
const MAX_TRACKED: usize = 4096;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every peer's bucket.
pub struct Budgets<K> {
    rate: f64,
    burst: f64,
    buckets: HashMap<K, Bucket>,
    /// The bucket of the peers not tracked, while the table is full.
    overflow: Bucket,
}

impl<K: Hash + Eq + Clone> Budgets<K> {
    pub fn new(rate_per_s: u64, burst: u64) -> Budgets<K> {
        Budgets {
            rate: rate_per_s as f64,
            burst: burst as f64,
            buckets: HashMap::new(),
            overflow: Bucket {
                tokens: burst as f64,
                at: Instant::now(),
            },
        }
    }

    /// Takes `cost` from `peer`'s allowance at `now`; false (and nothing
    /// taken) when it has less.
    pub fn take(&mut self, peer: &K, cost: u64, now: Instant) -> bool {
        let bucket = self.bucket(peer, now);
        if bucket.tokens < cost as f64 {
            return false;
        }
        bucket.tokens -= cost as f64;
        true
    }

    /// Takes as much of `peer`'s allowance at `now` as it has, up to
    /// `max`, and returns it: what an answer of unknown size may cost.
    pub fn take_up_to(&mut self, peer: &K, max: u64, now: Instant) -> u64 {
        let bucket = self.bucket(peer, now);
        let taken = bucket.tokens.clamp(0.0, max as f64).floor();
        bucket.tokens -= taken;
        taken as u64
    }

    /// Gives back to `peer`'s allowance what a [`take_up_to`] took and the
    /// answer did not use.
    ///
    /// [`take_up_to`]: Budgets::take_up_to
    pub fn refund(&mut self, peer: &K, unused: u64, now: Instant) {
        let burst = self.burst;
        let bucket = self.bucket(peer, now);
        bucket.tokens = (bucket.tokens + unused as f64).min(burst);
    }

    /// `peer`'s bucket, refilled up to `now`.
    fn bucket(&mut self, peer: &K, now: Instant) -> &mut Bucket {
        if !self.buckets.contains_key(peer) && self.buckets.len() >= MAX_TRACKED {
            self.forget_full(now);
        }
        let (rate, burst) = (self.rate, self.burst);
        let bucket = if self.buckets.len() < MAX_TRACKED || self.buckets.contains_key(peer) {
            self.buckets.entry(peer.clone()).or_insert(Bucket {
                tokens: burst,
                at: now,
            })
        } else {
            &mut self.overflow
        };
        let elapsed = now.saturating_duration_since(bucket.at);
        bucket.tokens = (bucket.tokens + elapsed.as_secs_f64() * rate).min(burst);
        bucket.at = now.max(bucket.at);
        bucket
    }

    /// Drops the buckets that have refilled: a peer back to a full
    /// allowance is no different from one never seen.
    fn forget_full(&mut self, now: Instant) {
        let (rate, burst) = (self.rate, self.burst);
        self.buckets.retain(|_, b| {
            let elapsed: Duration = now.saturating_duration_since(b.at);
            b.tokens + elapsed.as_secs_f64() * rate < burst
        });
    }

    #[cfg(test)]
    pub fn tracked(&self) -> usize {
        self.buckets.len()
    }
}

/// What a Store of `bytes` costs.
pub fn store_cost(bytes: usize) -> u64 {
    bytes as u64 + STORE_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_spends_its_burst_then_its_rate_and_others_are_untouched() {
        let t0 = Instant::now();
        let mut b: Budgets<u8> = Budgets::new(1000, 10_000);
        for _ in 0..10 {
            assert!(b.take(&1, 1000, t0));
        }
        assert!(!b.take(&1, 1, t0), "the burst is spent");
        assert!(b.take(&2, 10_000, t0), "another peer has its own");
        // Half a second later, 500 more.
        let t1 = t0 + Duration::from_millis(500);
        assert!(!b.take(&1, 501, t1));
        assert!(b.take(&1, 500, t1));
        assert!(!b.take(&1, 1, t1));
        // Refilled no further than the burst, however long it waits.
        let t2 = t1 + Duration::from_secs(3600);
        assert!(!b.take(&1, 10_001, t2));
        assert!(b.take(&1, 10_000, t2));
    }

    #[test]
    fn an_answer_takes_what_is_left_and_gives_back_what_it_did_not_use() {
        let t0 = Instant::now();
        let mut b: Budgets<u8> = Budgets::new(1000, 10_000);
        assert_eq!(b.take_up_to(&1, 8_000, t0), 8_000);
        assert_eq!(b.take_up_to(&1, 8_000, t0), 2_000, "what is left");
        assert_eq!(b.take_up_to(&1, 8_000, t0), 0);
        b.refund(&1, 1_500, t0);
        assert_eq!(b.take_up_to(&1, 8_000, t0), 1_500);
        // A refund never lifts an allowance over its burst.
        b.refund(&2, 50_000, t0);
        assert_eq!(b.take_up_to(&2, 50_000, t0), 10_000);
        let t1 = t0 + Duration::from_secs(2);
        assert_eq!(b.take_up_to(&1, 8_000, t1), 2_000, "two seconds' rate");
    }

    #[test]
    fn the_table_of_peers_is_bounded() {
        let t0 = Instant::now();
        let mut b: Budgets<u32> = Budgets::new(1000, 10_000);
        for p in 0..MAX_TRACKED as u32 {
            assert!(b.take(&p, 10_000, t0));
        }
        assert_eq!(b.tracked(), MAX_TRACKED);
        // Past the bound, peers whose buckets refilled are forgotten.
        let later = t0 + Duration::from_secs(10);
        assert!(b.take(&u32::MAX, 1, later));
        assert_eq!(b.tracked(), 1);
        // Peers still spent are not: forgetting them would refill them.
        let mut b: Budgets<u32> = Budgets::new(1000, 10_000);
        for p in 0..MAX_TRACKED as u32 {
            assert!(b.take(&p, 10_000, t0));
        }
        assert!(b.take(&u32::MAX, 1, t0), "a new peer, in the shared bucket");
        assert_eq!(b.tracked(), MAX_TRACKED);
        assert!(!b.take(&0, 1, t0), "still spent");
        // New peers share one bucket meanwhile.
        assert!(b.take(&(u32::MAX - 1), 6_000, t0));
        assert!(!b.take(&(u32::MAX - 2), 6_000, t0));
        assert!(b.take(&(u32::MAX - 2), 3_999, t0));
        assert_eq!(b.tracked(), MAX_TRACKED);
    }
}
