//! What makes a block, a proof message or a transaction acceptable, and why
//! one is not: every rejection has a reason with a name, which the node
//! counts in its metrics.

use crate::keys;
use crate::sig_cache::SigCache;
use crate::spec::ChainSpec;
use crate::types::{challenge, Block, ChainProof, Ranked, RegisterTx};
use spacevault_meter::{self as meter, Op};

/// Why a message was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    #[error("malformed: {0}")]
    Malformed(String),
    #[error("made for another chain")]
    WrongChain,
    #[error("its parent is not known")]
    UnknownParent,
    #[error("height {got} does not follow its parent's {parent}")]
    BadHeight { got: u64, parent: u64 },
    #[error("timestamp {got} is before its slot begins at {earliest}")]
    TooEarly { got: u64, earliest: u64 },
    #[error("timestamp {got} is in the future (now {now})")]
    Future { got: u64, now: u64 },
    #[error("{got} transactions, more than the {max} a block holds")]
    TooManyTxs { got: usize, max: usize },
    #[error("the transaction root does not match the transactions")]
    BadTxRoot,
    #[error("the proof of space does not verify: {0}")]
    BadProof(String),
    #[error("k = {0} is outside the chain's range")]
    BadK(u8),
    #[error("the block is not signed by its proof's farmer key")]
    BadSignature,
    #[error("a transaction's signature does not verify")]
    BadTxSignature,
    #[error("a transaction's register name or value is too large")]
    TxTooLarge,
    #[error("a transaction's register name is empty")]
    EmptyName,
    #[error("a transaction sets version {got}, the register is at {current}")]
    BadTxVersion { got: u64, current: u64 },
    #[error("height {0} is already settled here")]
    StaleHeight(u64),
    #[error("height {0} is beyond the next one")]
    FutureHeight(u64),
    #[error("not better than the best proof seen for this height")]
    NotBetter,
    #[error("time {got} is before {oldest}, the oldest still news")]
    Stale { got: u64, oldest: u64 },
    #[error("time {got} is not after {newest}, the newest heard from its sender")]
    Replayed { got: u64, newest: u64 },
    /// Not the message's doing: this vault could not take it (its store
    /// failed, its pool is full). Never a fault of the sender, and counted
    /// apart from the refusals (`what` names the trouble).
    #[error("this vault could not take it ({what}): {why}")]
    Unable { what: &'static str, why: String },
}

impl Rejection {
    /// The reason's name, for metrics labels.
    pub fn name(&self) -> &'static str {
        match self {
            Rejection::Malformed(_) => "malformed",
            Rejection::WrongChain => "wrong_chain",
            Rejection::UnknownParent => "unknown_parent",
            Rejection::BadHeight { .. } => "bad_height",
            Rejection::TooEarly { .. } => "too_early",
            Rejection::Future { .. } => "future",
            Rejection::TooManyTxs { .. } => "too_many_txs",
            Rejection::BadTxRoot => "bad_tx_root",
            Rejection::BadProof(_) => "bad_proof",
            Rejection::BadK(_) => "bad_k",
            Rejection::BadSignature => "bad_signature",
            Rejection::BadTxSignature => "bad_tx_signature",
            Rejection::TxTooLarge => "tx_too_large",
            Rejection::EmptyName => "empty_name",
            Rejection::BadTxVersion { .. } => "bad_tx_version",
            Rejection::StaleHeight(_) => "stale_height",
            Rejection::FutureHeight(_) => "future_height",
            Rejection::NotBetter => "not_better",
            Rejection::Stale { .. } => "stale",
            Rejection::Replayed { .. } => "replayed",
            Rejection::Unable { what, .. } => what,
        }
    }

    /// Whether the sender is at fault (a message no honest vault sends),
    /// rather than merely late, early or repeating what others said.
    pub fn is_fault(&self) -> bool {
        !matches!(
            self,
            Rejection::UnknownParent
                | Rejection::StaleHeight(_)
                | Rejection::FutureHeight(_)
                | Rejection::NotBetter
                | Rejection::BadTxVersion { .. }
                | Rejection::Stale { .. }
                | Rejection::Replayed { .. }
                | Rejection::Unable { .. }
        )
    }
}

/// What a block's validation needs of its parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parent {
    pub hash: [u8; 32],
    pub height: u64,
    pub timestamp_ms: u64,
    /// The hash of the parent's proof (the genesis hash for block 0).
    pub proof_hash: [u8; 32],
}

impl Parent {
    /// Block 0: the chain's genesis, at the spec's genesis time.
    pub fn genesis(spec: &ChainSpec) -> Parent {
        let chain_id = spec.chain_id();
        let g = crate::types::genesis_hash(&chain_id);
        Parent {
            hash: g,
            height: 0,
            timestamp_ms: spec.genesis_unix_ms,
            proof_hash: g,
        }
    }

    /// The challenge of this block's child.
    pub fn child_challenge(&self, chain_id: &[u8; 32]) -> [u8; 32] {
        challenge(chain_id, self.height + 1, &self.proof_hash)
    }
}

/// How far ahead of the local clock a block's timestamp may be.
pub fn max_drift_ms(spec: &ChainSpec) -> u64 {
    (spec.slot_ms / 2).max(50)
}

/// Verifies a proof for the child of `parent`, with the spec's k range.
pub fn check_proof(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    parent: &Parent,
    proof: &ChainProof,
) -> Result<Ranked, Rejection> {
    if !(spec.min_k..=spec.max_k).contains(&proof.k) {
        return Err(Rejection::BadK(proof.k));
    }
    proof
        .verify(&parent.child_challenge(chain_id))
        .map_err(|e| Rejection::BadProof(e.to_string()))
}

/// Checks a transaction on its own: sizes and signature (answered from
/// `cache` when given and it has seen the signature valid).
pub fn check_tx(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    tx: &RegisterTx,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    if tx.name.is_empty() {
        return Err(Rejection::EmptyName);
    }
    if tx.name.len() > spec.max_register_name_bytes as usize
        || tx.value.len() > spec.max_register_value_bytes as usize
    {
        return Err(Rejection::TxTooLarge);
    }
    let valid = match cache {
        Some(cache) => tx.signature_ok_with(chain_id, cache),
        None => tx.signature_ok(chain_id),
    };
    if !valid {
        return Err(Rejection::BadTxSignature);
    }
    Ok(())
}

/// Everything about a block that does not depend on the registers' state:
/// its chain, height, time, size, proof, signature and transactions'
/// signatures. Returns its proof's rank.
pub fn check_block(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    parent: &Parent,
    block: &Block,
    now_ms: u64,
    cache: Option<&SigCache>,
) -> Result<Ranked, Rejection> {
    let ranked = check_header(spec, chain_id, parent, block, now_ms, cache)?;
    check_txs(spec, chain_id, block, cache)?;
    Ok(ranked)
}

/// Each transaction of a block on its own (sizes, signature): the costly
/// part of a block's check, one verification a transaction.
pub fn check_txs(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    block: &Block,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    for tx in &block.txs {
        check_tx(spec, chain_id, tx, cache)?;
    }
    Ok(())
}

/// All of [`check_block`] but the transactions' own checks: chain, height,
/// time, size, transaction root, proof and signature (answered from
/// `cache` when given and it has seen it valid). Returns the proof's rank.
pub fn check_header(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    parent: &Parent,
    block: &Block,
    now_ms: u64,
    cache: Option<&SigCache>,
) -> Result<Ranked, Rejection> {
    let h = &block.header;
    if h.chain_id != *chain_id {
        return Err(Rejection::WrongChain);
    }
    if h.parent != parent.hash {
        return Err(Rejection::UnknownParent);
    }
    if h.height != parent.height + 1 {
        return Err(Rejection::BadHeight {
            got: h.height,
            parent: parent.height,
        });
    }
    let earliest = spec.earliest_ms(parent.timestamp_ms);
    if h.timestamp_ms < earliest {
        return Err(Rejection::TooEarly {
            got: h.timestamp_ms,
            earliest,
        });
    }
    if h.timestamp_ms > now_ms + max_drift_ms(spec) {
        return Err(Rejection::Future {
            got: h.timestamp_ms,
            now: now_ms,
        });
    }
    check_size_and_root(spec, chain_id, block)?;
    let ranked = check_proof(spec, chain_id, parent, &h.proof)?;
    check_signature(block, cache)?;
    Ok(ranked)
}

/// The checks of a block that need neither its parent nor the clock and
/// cost the most: its chain, size and transaction root, then its signature
/// and every transaction's, each remembered in `cache`. A vault runs them
/// before it takes its chain's lock, so that the checks under the lock
/// find the signatures in the cache and a block of a thousand
/// transactions holds nothing else up while they are verified.
pub fn check_signatures(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    block: &Block,
    cache: &SigCache,
) -> Result<(), Rejection> {
    if block.header.chain_id != *chain_id {
        return Err(Rejection::WrongChain);
    }
    check_size_and_root(spec, chain_id, block)?;
    check_signature(block, Some(cache))?;
    check_txs(spec, chain_id, block, Some(cache))
}

/// What can be checked of a block whose parent is not known: its chain,
/// time (not in the future), size, transaction root, k, that its proof
/// names a record of its plot (a nonce below 2^k), and its signature.
/// Enough that a block kept until its parent comes is the one its
/// producer signed, and, with its hash, the only block it can be. Its
/// proof's distance needs the parent's challenge, and waits for it.
pub fn check_orphan(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    block: &Block,
    now_ms: u64,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    let h = &block.header;
    if h.chain_id != *chain_id {
        return Err(Rejection::WrongChain);
    }
    if h.timestamp_ms > now_ms + max_drift_ms(spec) {
        return Err(Rejection::Future {
            got: h.timestamp_ms,
            now: now_ms,
        });
    }
    check_size_and_root(spec, chain_id, block)?;
    if !(spec.min_k..=spec.max_k).contains(&h.proof.k) {
        return Err(Rejection::BadK(h.proof.k));
    }
    if h.proof.k >= 64 || h.proof.nonce >> h.proof.k != 0 {
        return Err(Rejection::BadProof(format!(
            "nonce {} is out of range for k = {}",
            h.proof.nonce, h.proof.k
        )));
    }
    check_signature(block, cache)
}

fn check_size_and_root(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    block: &Block,
) -> Result<(), Rejection> {
    if block.txs.len() > spec.max_block_txs as usize {
        return Err(Rejection::TooManyTxs {
            got: block.txs.len(),
            max: spec.max_block_txs as usize,
        });
    }
    if crate::types::tx_root(chain_id, &block.txs) != block.header.tx_root {
        return Err(Rejection::BadTxRoot);
    }
    Ok(())
}

fn check_signature(block: &Block, cache: Option<&SigCache>) -> Result<(), Rejection> {
    let hash = block.hash();
    let key = &block.header.proof.farmer_key;
    let verify = || keys::verify(key, &hash, &block.signature);
    let signed = match cache {
        Some(cache) => cache.verify(Op::VerifyBlock, key, &hash, &block.signature, verify),
        None => meter::timed_on(
            Op::VerifyBlock,
            meter::fingerprint_of(&block.signature),
            verify,
        ),
    };
    if !signed {
        return Err(Rejection::BadSignature);
    }
    Ok(())
}

/// The registers' versions, as a block's transactions are applied to them.
pub trait Versions {
    /// The register's version, 0 when it has none.
    fn version(&self, owner: &[u8; 32], name: &[u8]) -> u64;
}

/// Checks that each transaction sets its register's next version, in
/// order (a block may set one register more than once, one version after
/// another).
pub fn check_versions(state: &impl Versions, txs: &[RegisterTx]) -> Result<(), Rejection> {
    let mut seen: std::collections::HashMap<(&[u8; 32], &[u8]), u64> = Default::default();
    for tx in txs {
        let key = (&tx.owner, tx.name.as_slice());
        let current = *seen
            .entry(key)
            .or_insert_with(|| state.version(&tx.owner, &tx.name));
        if tx.version != current + 1 {
            return Err(Rejection::BadTxVersion {
                got: tx.version,
                current,
            });
        }
        seen.insert(key, tx.version);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::Keypair;
    use crate::types::Block;
    use std::collections::HashMap;

    struct Map(HashMap<([u8; 32], Vec<u8>), u64>);
    impl Versions for Map {
        fn version(&self, owner: &[u8; 32], name: &[u8]) -> u64 {
            self.0.get(&(*owner, name.to_vec())).copied().unwrap_or(0)
        }
    }

    #[test]
    fn versions_must_follow_one_another() {
        let chain = [1; 32];
        let owner = Keypair::from_secret(&[2; 32]);
        let tx = |v| RegisterTx::signed(&owner, &chain, b"n", v, b"x");
        let empty = Map(HashMap::new());
        assert!(check_versions(&empty, &[tx(1), tx(2)]).is_ok());
        assert_eq!(
            check_versions(&empty, &[tx(2)]),
            Err(Rejection::BadTxVersion { got: 2, current: 0 })
        );
        assert!(check_versions(&empty, &[tx(1), tx(1)]).is_err());
        let at_one = Map([((owner.public(), b"n".to_vec()), 1)].into());
        assert!(check_versions(&at_one, &[tx(2)]).is_ok());
        assert!(check_versions(&at_one, &[tx(1)]).is_err());
    }

    #[test]
    fn a_block_is_checked_field_by_field() {
        let spec = ChainSpec::new("t", 1_000_000, 1000);
        let chain = spec.chain_id();
        let parent = Parent::genesis(&spec);
        let producer = Keypair::from_secret(&[7; 32]);
        // Any plot's record for the challenge is a valid proof; its rank
        // does not matter here.
        let proof = ChainProof {
            farmer_key: producer.public(),
            seed: [1; 32],
            k: 16,
            nonce: 5,
        };
        let at = parent.timestamp_ms + spec.slot_ms;
        let make = |ts, proof: ChainProof| {
            Block::produce(&producer, chain, 1, parent.hash, ts, proof, vec![])
        };
        let good = make(at, proof.clone());
        assert!(check_block(&spec, &chain, &parent, &good, at, None).is_ok());
        assert_eq!(
            check_block(
                &spec,
                &chain,
                &parent,
                &make(at - 1, proof.clone()),
                at,
                None
            ),
            Err(Rejection::TooEarly {
                got: at - 1,
                earliest: at
            })
        );
        assert!(matches!(
            check_block(&spec, &chain, &parent, &good, at - 10_000, None),
            Err(Rejection::Future { .. })
        ));
        let mut stolen = proof.clone();
        stolen.farmer_key = Keypair::from_secret(&[8; 32]).public();
        let r = check_block(&spec, &chain, &parent, &make(at, stolen), at, None);
        assert_eq!(r, Err(Rejection::BadSignature));
        let mut big = proof.clone();
        big.nonce = 1 << 20;
        assert!(matches!(
            check_block(&spec, &chain, &parent, &make(at, big), at, None),
            Err(Rejection::BadProof(_))
        ));
        let mut small = proof;
        small.k = 12;
        assert_eq!(
            check_block(&spec, &chain, &parent, &make(at, small), at, None),
            Err(Rejection::BadK(12))
        );
        let mut forged = good.clone();
        forged.header.height = 2;
        assert!(matches!(
            check_block(&spec, &chain, &parent, &forged, at, None),
            Err(Rejection::BadHeight { .. })
        ));
        assert_eq!(
            check_block(&spec, &[0; 32], &parent, &good, at, None),
            Err(Rejection::WrongChain)
        );
    }

    #[test]
    fn signatures_checked_ahead_are_cache_hits_in_the_full_check() {
        let spec = ChainSpec::new("t", 1_000_000, 1000);
        let chain = spec.chain_id();
        let parent = Parent::genesis(&spec);
        let producer = Keypair::from_secret(&[7; 32]);
        let owner = Keypair::from_secret(&[9; 32]);
        let txs = (1..=3)
            .map(|v| RegisterTx::signed(&owner, &chain, b"r", v, b"x"))
            .collect();
        let block = block_with(&spec, &producer, txs);
        let cache = SigCache::with_capacity(64);
        assert_eq!(check_signatures(&spec, &chain, &block, &cache), Ok(()));
        assert_eq!(cache.len(), 4, "the block's signature and three of txs");
        let now = block.header.timestamp_ms;
        assert!(check_block(&spec, &chain, &parent, &block, now, Some(&cache)).is_ok());
        assert_eq!(cache.hits(Op::VerifyBlock), 1);
        assert_eq!(cache.hits(Op::VerifyTx), 3);
        // What fails ahead fails for its own reason, and only valid
        // signatures are kept.
        let cache = SigCache::with_capacity(64);
        let mut forged = block.clone();
        forged.signature[0] ^= 1;
        assert_eq!(
            check_signatures(&spec, &chain, &forged, &cache),
            Err(Rejection::BadSignature)
        );
        let mut bad_tx = block.clone();
        bad_tx.txs[2].signature[0] ^= 1;
        assert_eq!(
            check_signatures(&spec, &chain, &bad_tx, &cache),
            Err(Rejection::BadTxSignature)
        );
        assert_eq!(
            check_signatures(&spec, &[0; 32], &block, &cache),
            Err(Rejection::WrongChain)
        );
        assert_eq!(cache.len(), 3, "the block's and the first two txs'");
    }

    /// A block on the genesis of `spec` by `producer`, with `txs`.
    fn block_with(spec: &ChainSpec, producer: &Keypair, txs: Vec<RegisterTx>) -> Block {
        let chain = spec.chain_id();
        let parent = Parent::genesis(spec);
        let proof = ChainProof {
            farmer_key: producer.public(),
            seed: [1; 32],
            k: 16,
            nonce: 5,
        };
        Block::produce(
            producer,
            chain,
            1,
            parent.hash,
            parent.timestamp_ms + spec.slot_ms,
            proof,
            txs,
        )
    }

    #[test]
    fn a_blocks_transactions_are_checked_for_count_root_size_name_and_signature() {
        let mut spec = ChainSpec::new("t", 1_000_000, 1000);
        spec.max_block_txs = 2;
        spec.max_register_name_bytes = 4;
        spec.max_register_value_bytes = 8;
        let chain = spec.chain_id();
        let parent = Parent::genesis(&spec);
        let now = parent.timestamp_ms + spec.slot_ms;
        let producer = Keypair::from_secret(&[7; 32]);
        let owner = Keypair::from_secret(&[8; 32]);
        let tx = |name: &[u8], value: &[u8]| RegisterTx::signed(&owner, &chain, name, 1, value);
        let check = |b: &Block| check_block(&spec, &chain, &parent, b, now, None);

        assert!(check(&block_with(
            &spec,
            &producer,
            vec![tx(b"a", b"v"), tx(b"b", b"v")]
        ))
        .is_ok());
        let three = block_with(
            &spec,
            &producer,
            vec![tx(b"a", b""), tx(b"b", b""), tx(b"c", b"")],
        );
        assert_eq!(check(&three), Err(Rejection::TooManyTxs { got: 3, max: 2 }));
        assert_eq!(
            check_orphan(&spec, &chain, &three, now, None),
            Err(Rejection::TooManyTxs { got: 3, max: 2 })
        );

        // Transactions that are not the ones the header's root names.
        let mut swapped = block_with(&spec, &producer, vec![tx(b"a", b"v")]);
        swapped.txs[0] = tx(b"b", b"v");
        assert_eq!(check(&swapped), Err(Rejection::BadTxRoot));
        assert_eq!(
            check_orphan(&spec, &chain, &swapped, now, None),
            Err(Rejection::BadTxRoot)
        );
        let mut dropped = block_with(&spec, &producer, vec![tx(b"a", b"v")]);
        dropped.txs.clear();
        assert_eq!(check(&dropped), Err(Rejection::BadTxRoot));

        for (txs, why) in [
            (vec![tx(b"long!", b"v")], Rejection::TxTooLarge),
            (vec![tx(b"a", b"123456789")], Rejection::TxTooLarge),
            (vec![tx(b"", b"v")], Rejection::EmptyName),
        ] {
            assert_eq!(
                check(&block_with(&spec, &producer, txs.clone())),
                Err(why.clone())
            );
            assert_eq!(check_tx(&spec, &chain, &txs[0], None), Err(why));
        }
        // At the limits exactly: accepted.
        assert!(check_tx(&spec, &chain, &tx(b"four", b"12345678"), None).is_ok());

        let mut forged = tx(b"a", b"v");
        forged.value = b"w".to_vec();
        assert_eq!(
            check_tx(&spec, &chain, &forged, None),
            Err(Rejection::BadTxSignature)
        );
        // With a cache: the valid one is remembered, the forged one
        // refused however often it comes.
        let cache = SigCache::default();
        let valid = tx(b"a", b"v");
        for _ in 0..2 {
            assert!(check_tx(&spec, &chain, &valid, Some(&cache)).is_ok());
            assert_eq!(
                check_tx(&spec, &chain, &forged, Some(&cache)),
                Err(Rejection::BadTxSignature)
            );
        }
        assert_eq!((cache.len(), cache.hits(Op::VerifyTx)), (1, 1));
        assert_eq!(
            check(&block_with(&spec, &producer, vec![forged])),
            Err(Rejection::BadTxSignature)
        );
    }

    #[test]
    fn an_orphan_is_checked_for_what_needs_no_parent() {
        let spec = ChainSpec::new("t", 1_000_000, 1000);
        let chain = spec.chain_id();
        let producer = Keypair::from_secret(&[7; 32]);
        let good = block_with(&spec, &producer, vec![]);
        let now = good.header.timestamp_ms;
        assert_eq!(check_orphan(&spec, &chain, &good, now, None), Ok(()));
        assert_eq!(
            check_orphan(&spec, &[0; 32], &good, now, None),
            Err(Rejection::WrongChain)
        );
        let mut unsigned = good.clone();
        unsigned.signature[10] ^= 1;
        assert_eq!(
            check_orphan(&spec, &chain, &unsigned, now, None),
            Err(Rejection::BadSignature)
        );
        let mut small = good.clone();
        small.header.proof.k = spec.min_k - 1;
        assert_eq!(
            check_orphan(&spec, &chain, &small, now, None),
            Err(Rejection::BadK(spec.min_k - 1))
        );
        let mut large = good.clone();
        large.header.proof.k = spec.max_k + 1;
        assert_eq!(
            check_orphan(&spec, &chain, &large, now, None),
            Err(Rejection::BadK(spec.max_k + 1))
        );
        // Signed, but naming no record of its plot.
        let k = good.header.proof.k;
        let mut proof = good.header.proof.clone();
        proof.nonce = 1 << k;
        let beyond = Block::produce(
            &producer,
            chain,
            good.header.height,
            good.header.parent,
            good.header.timestamp_ms,
            proof,
            vec![],
        );
        assert!(matches!(
            check_orphan(&spec, &chain, &beyond, now, None),
            Err(Rejection::BadProof(why)) if why.contains("out of range")
        ));
        // Made later than any clock allows.
        let drift = max_drift_ms(&spec);
        assert_eq!(
            check_orphan(&spec, &chain, &good, now - drift, None),
            Ok(())
        );
        assert_eq!(
            check_orphan(&spec, &chain, &good, now - drift - 1, None),
            Err(Rejection::Future {
                got: now,
                now: now - drift - 1
            })
        );
    }

    #[test]
    fn every_reason_has_its_own_name_and_only_the_sender_s_faults_are_faults() {
        let all = [
            (Rejection::Malformed("x".into()), "malformed", true),
            (Rejection::WrongChain, "wrong_chain", true),
            (Rejection::UnknownParent, "unknown_parent", false),
            (
                Rejection::BadHeight { got: 1, parent: 1 },
                "bad_height",
                true,
            ),
            (
                Rejection::TooEarly {
                    got: 1,
                    earliest: 2,
                },
                "too_early",
                true,
            ),
            (Rejection::Future { got: 2, now: 1 }, "future", true),
            (
                Rejection::TooManyTxs { got: 2, max: 1 },
                "too_many_txs",
                true,
            ),
            (Rejection::BadTxRoot, "bad_tx_root", true),
            (Rejection::BadProof("x".into()), "bad_proof", true),
            (Rejection::BadK(1), "bad_k", true),
            (Rejection::BadSignature, "bad_signature", true),
            (Rejection::BadTxSignature, "bad_tx_signature", true),
            (Rejection::TxTooLarge, "tx_too_large", true),
            (Rejection::EmptyName, "empty_name", true),
            (
                Rejection::BadTxVersion { got: 1, current: 1 },
                "bad_tx_version",
                false,
            ),
            (Rejection::StaleHeight(1), "stale_height", false),
            (Rejection::FutureHeight(1), "future_height", false),
            (Rejection::NotBetter, "not_better", false),
            (Rejection::Stale { got: 1, oldest: 2 }, "stale", false),
            (Rejection::Replayed { got: 1, newest: 2 }, "replayed", false),
            (
                Rejection::Unable {
                    what: "store",
                    why: "x".into(),
                },
                "store",
                false,
            ),
        ];
        let mut names = std::collections::HashSet::new();
        for (r, name, fault) in all {
            assert_eq!(r.name(), name);
            assert_eq!(r.is_fault(), fault, "{name}");
            assert!(names.insert(name));
            assert!(!r.to_string().is_empty());
        }
    }

    #[test]
    fn the_drift_allowed_is_half_a_slot_and_at_least_50_ms() {
        let spec = |slot| ChainSpec::new("t", 0, slot);
        assert_eq!(max_drift_ms(&spec(1000)), 500);
        assert_eq!(max_drift_ms(&spec(60)), 50);
        assert_eq!(max_drift_ms(&spec(101)), 50);
        assert_eq!(max_drift_ms(&spec(102)), 51);
    }

    #[test]
    fn a_parents_child_challenge_is_the_challenge_of_the_next_height_on_its_proof() {
        let spec = ChainSpec::new("t", 1_000_000, 1000);
        let chain = spec.chain_id();
        let genesis = Parent::genesis(&spec);
        assert_eq!(
            genesis.child_challenge(&chain),
            challenge(&chain, 1, &genesis.proof_hash)
        );
        let later = Parent {
            hash: [1; 32],
            height: 7,
            timestamp_ms: 0,
            proof_hash: [2; 32],
        };
        assert_eq!(
            later.child_challenge(&chain),
            challenge(&chain, 8, &[2; 32])
        );
    }

    #[test]
    fn a_timestamp_may_be_ahead_by_the_drift_and_no_more() {
        let spec = ChainSpec::new("t", 1_000_000, 1000);
        let chain = spec.chain_id();
        let parent = Parent::genesis(&spec);
        let block = block_with(&spec, &Keypair::from_secret(&[7; 32]), vec![]);
        let ts = block.header.timestamp_ms;
        let drift = max_drift_ms(&spec);
        assert!(check_block(&spec, &chain, &parent, &block, ts - drift, None).is_ok());
        assert_eq!(
            check_block(&spec, &chain, &parent, &block, ts - drift - 1, None),
            Err(Rejection::Future {
                got: ts,
                now: ts - drift - 1
            })
        );
    }
}
