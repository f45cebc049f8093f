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
mod tests;
