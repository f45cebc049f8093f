//! The pool of pending transactions: register writes waiting for a block,
//! bounded in count and in how far ahead of a register's version they may
//! be. It knows registers' versions only through the function it is
//! handed (the store's, in the engine), so that its rules are tested here
//! without one.

use spacevault_chain::{RegisterTx, Rejection};
use std::collections::BTreeMap;

/// Transactions pending at most.
pub const MAX_MEMPOOL: usize = 16_384;
/// How far ahead of a register's version a pending transaction may be.
pub const MAX_VERSIONS_AHEAD: u64 = 64;

/// Pending transactions by id.
#[derive(Default)]
pub(crate) struct Mempool {
    txs: BTreeMap<[u8; 32], RegisterTx>,
}

impl Mempool {
    /// Takes `tx` (whose id is `id`, its register at version `current`):
    /// Ok(false) when already pending; refused when its version was
    /// written already or is too far ahead, or the pool is full.
    pub fn add(&mut self, id: [u8; 32], tx: RegisterTx, current: u64) -> Result<bool, Rejection> {
        // Versions already written are replays; versions far ahead could
        // never be included and would only fill the pool.
        if tx.version <= current || tx.version > current + MAX_VERSIONS_AHEAD {
            return Err(Rejection::BadTxVersion {
                got: tx.version,
                current,
            });
        }
        if self.txs.contains_key(&id) {
            return Ok(false);
        }
        if self.txs.len() >= MAX_MEMPOOL {
            return Err(Rejection::Unable {
                what: "pool_full",
                why: format!("the transaction pool is full ({MAX_MEMPOOL})"),
            });
        }
        self.txs.insert(id, tx);
        Ok(true)
    }

    /// Takes back a transaction of a block that left the canonical chain,
    /// if there is room: it was checked when its block was.
    pub fn put_back(&mut self, id: [u8; 32], tx: RegisterTx) {
        if self.txs.len() < MAX_MEMPOOL {
            self.txs.insert(id, tx);
        }
    }

    /// Keeps only transactions still ahead of their register's version
    /// (`version_of`; one whose version cannot be read leaves).
    pub fn retain_ahead(&mut self, version_of: impl Fn(&[u8; 32], &[u8]) -> Option<u64>) {
        self.txs
            .retain(|_, tx| version_of(&tx.owner, &tx.name).is_some_and(|v| tx.version > v));
    }

    /// Transactions that apply in order on registers at `version_of`, at
    /// most `max`: for each register, the next versions without a gap.
    pub fn applicable(
        &self,
        max: usize,
        version_of: impl Fn(&[u8; 32], &[u8]) -> Option<u64>,
    ) -> Vec<RegisterTx> {
        let mut by_register: BTreeMap<(&[u8; 32], &[u8]), Vec<&RegisterTx>> = BTreeMap::new();
        for tx in self.txs.values() {
            by_register
                .entry((&tx.owner, &tx.name))
                .or_default()
                .push(tx);
        }
        let mut out = Vec::new();
        for ((owner, name), mut txs) in by_register {
            let Some(mut version) = version_of(owner, name) else {
                continue;
            };
            txs.sort_by_key(|t| t.version);
            for tx in txs {
                if out.len() == max {
                    return out;
                }
                if tx.version == version + 1 {
                    out.push(tx.clone());
                    version += 1;
                }
            }
        }
        out
    }

    /// Whether a write of `version` to the register is pending.
    pub fn is_pending(&self, owner: &[u8; 32], name: &[u8], version: u64) -> bool {
        self.txs
            .values()
            .any(|t| t.version == version && t.owner == *owner && t.name == name)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.txs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spacevault_chain::Keypair;

    fn tx(owner: u8, name: &[u8], version: u64) -> ([u8; 32], RegisterTx) {
        let tx = RegisterTx::signed(
            &Keypair::from_secret(&[owner; 32]),
            &[0; 32],
            name,
            version,
            b"v",
        );
        (tx.id(&[0; 32]), tx)
    }

    #[test]
    fn only_versions_in_order_without_a_gap_apply_and_at_most_max() {
        let mut pool = Mempool::default();
        for (owner, name, version) in [
            (1, b"a", 1),
            (1, b"a", 2),
            (1, b"a", 4),
            (2, b"a", 3),
            (2, b"b", 1),
        ] {
            let (id, t) = tx(owner, name, version);
            assert_eq!(pool.add(id, t, 0), Ok(true));
        }
        let versions = |_: &[u8; 32], _: &[u8]| Some(0);
        let got: Vec<u64> = pool
            .applicable(10, versions)
            .iter()
            .map(|t| t.version)
            .collect();
        // Owner 1's a: 1, 2 (4 waits for 3); owner 2's a: none (3 waits
        // for 1 and 2); owner 2's b: 1.
        assert_eq!(got.len(), 3);
        assert_eq!(got.iter().filter(|&&v| v == 4 || v == 3).count(), 0);
        assert_eq!(pool.applicable(2, versions).len(), 2);
        // Once owner 2's a is at 2, its 3 applies.
        let moved = |o: &[u8; 32], n: &[u8]| {
            Some(
                if *o == Keypair::from_secret(&[2; 32]).public() && n == b"a" {
                    2
                } else {
                    0
                },
            )
        };
        assert_eq!(pool.applicable(10, moved).len(), 4);
        // Applied versions leave; a register that cannot be read, too.
        pool.retain_ahead(|_, _| Some(2));
        assert_eq!(pool.len(), 2, "owner 1's 4 and owner 2's 3 stay");
        pool.retain_ahead(|_, _| None);
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn replays_far_versions_and_a_full_pool_are_refused_and_a_repeat_is_no_news() {
        let mut pool = Mempool::default();
        let (id, t) = tx(1, b"r", 5);
        assert_eq!(
            pool.add(id, t.clone(), 5),
            Err(Rejection::BadTxVersion { got: 5, current: 5 })
        );
        let (id, t) = tx(1, b"r", 5 + MAX_VERSIONS_AHEAD);
        assert_eq!(
            pool.add(id, t.clone(), 4),
            Err(Rejection::BadTxVersion {
                got: 5 + MAX_VERSIONS_AHEAD,
                current: 4
            })
        );
        assert_eq!(pool.add(id, t.clone(), 5), Ok(true));
        assert_eq!(pool.add(id, t, 5), Ok(false));
        assert!(pool.is_pending(
            &Keypair::from_secret(&[1; 32]).public(),
            b"r",
            5 + MAX_VERSIONS_AHEAD
        ));
        let (_, filler) = tx(1, b"r", 1);
        for i in 1..MAX_MEMPOOL as u64 {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&i.to_le_bytes());
            assert_eq!(pool.add(id, filler.clone(), 0), Ok(true));
        }
        let (id, t) = tx(3, b"r", 1);
        assert!(matches!(
            pool.add(id, t.clone(), 0),
            Err(Rejection::Unable {
                what: "pool_full",
                ..
            })
        ));
        pool.put_back(id, t);
        assert_eq!(pool.len(), MAX_MEMPOOL, "put back only where there is room");
    }
}
