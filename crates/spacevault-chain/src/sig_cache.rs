//! Signatures a vault has verified, remembered so that a transaction
//! verified when it arrives is not verified again inside a block (Bitcoin
//! Core keeps a cache of verified signatures for the same reason). The
//! cache is handed to the checks that may use it ([`crate::validate`]):
//! whether a check is answered from memory is the caller's choice, seen in
//! its arguments, never a setting found on the thread.
//!
//! Only valid signatures enter, keyed by public key, message and signature
//! together; only signatures are remembered, never data read from disk.

use crate::bounded_set::BoundedSet;
use spacevault_meter::{self as meter, Op};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Entries the cache keeps at most (16 MiB).
pub const ENTRIES: usize = 1 << 16;

type Key = [u8; 128];

/// A bounded set of verified signatures; the oldest leaves first.
pub struct SigCache {
    seen: Mutex<BoundedSet<Key>>,
    /// Verifications answered from the cache, by operation.
    hits: [AtomicU64; Op::ALL.len()],
}

impl Default for SigCache {
    fn default() -> SigCache {
        SigCache::with_capacity(ENTRIES)
    }
}

impl SigCache {
    pub fn with_capacity(capacity: usize) -> SigCache {
        SigCache {
            seen: Mutex::new(BoundedSet::new(capacity)),
            hits: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Whether `signature` is `public`'s over `message`: from the cache if
    /// it holds it, else by `verify`, recorded in the current meter as
    /// `op`, and remembered if valid.
    pub fn verify(
        &self,
        op: Op,
        public: &[u8; 32],
        message: &[u8; 32],
        signature: &[u8; 64],
        verify: impl FnOnce() -> bool,
    ) -> bool {
        let mut key = [0u8; 128];
        key[..32].copy_from_slice(public);
        key[32..64].copy_from_slice(message);
        key[64..].copy_from_slice(signature);
        if self.seen.lock().unwrap().contains(&key) {
            self.hits[op.index()].fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let valid = meter::timed_on(op, meter::fingerprint_of(signature), verify);
        if valid {
            self.seen.lock().unwrap().insert(key);
        }
        valid
    }

    /// Verifications of `op` answered from the cache.
    pub fn hits(&self, op: Op) -> u64 {
        self.hits[op.index()].load(Ordering::Relaxed)
    }

    /// Signatures held now.
    pub fn len(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_meter::Meter;
    use std::sync::Arc;

    #[test]
    fn only_signatures_seen_valid_are_answered_from_memory() {
        let cache = SigCache::default();
        let meter = Arc::new(Meter::default());
        let (public, message, signature) = ([1; 32], [2; 32], [3; 64]);
        let mut calls = 0;
        meter::with(&meter, || {
            for _ in 0..3 {
                assert!(
                    cache.verify(Op::VerifyTx, &public, &message, &signature, || {
                        calls += 1;
                        true
                    })
                );
            }
        });
        assert_eq!(calls, 1);
        assert_eq!(
            (meter.count(Op::VerifyTx), cache.hits(Op::VerifyTx)),
            (1, 2)
        );
        // An invalid signature is never remembered.
        let mut calls = 0;
        for _ in 0..2 {
            assert!(
                !cache.verify(Op::VerifyTx, &public, &message, &[9; 64], || {
                    calls += 1;
                    false
                })
            );
        }
        assert_eq!(calls, 2);
        // Another signature, key or message is checked anew.
        assert!(!cache.verify(Op::VerifyTx, &public, &message, &[4; 64], || false));
        assert!(!cache.verify(Op::VerifyTx, &[8; 32], &message, &signature, || false));
        assert!(!cache.verify(Op::VerifyTx, &public, &[8; 32], &signature, || false));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_cache_is_bounded_and_the_oldest_leaves_first() {
        let cache = SigCache::with_capacity(4);
        let sig = |i: u8| [i; 64];
        for i in 0..6 {
            assert!(cache.verify(Op::VerifyTx, &[0; 32], &[0; 32], &sig(i), || true));
        }
        assert_eq!(cache.len(), 4);
        let remembered = |i: u8| cache.verify(Op::VerifyTx, &[0; 32], &[0; 32], &sig(i), || false);
        assert!(!remembered(0) && !remembered(1), "the oldest went first");
        assert!(remembered(5) && remembered(2));
    }
}
