//! What makes a block, a proof message or a transaction acceptable, and why
//! one is not: every rejection has a reason with a name, which the node
//! counts in its metrics.

use crate::block::{Block, Equivocation};
use crate::eligibility::Target;
use crate::sig_cache::SigCache;
use crate::spec::ChainSpec;
use crate::time::{Branch, MissingSlot, FORM_BYTES};
use crate::types::{ChainProof, Ranked, RegisterTx, Stamp};

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
    #[error("slot {slot} is not after its parent's slot {parent_slot}")]
    SlotNotAfterParent { slot: u64, parent_slot: u64 },
    #[error("it is due at {due_ms}, in the future (now {now_ms})")]
    Future { due_ms: u64, now_ms: u64 },
    #[error("slot {} of its branch's line of slots has not been reached here yet", .0.slot)]
    UnknownSlot(MissingSlot),
    #[error("the output of slot {0} is not the slot's")]
    WrongSlotOutput(u64),
    #[error("its proof does not beat the slot's target")]
    NotEligible,
    #[error("it branches from height {ancestor}, below the final blocks (head {head}, finality depth {depth})")]
    BelowFinality {
        ancestor: u64,
        head: u64,
        depth: u64,
    },
    #[error("another block than the checkpoint's at its height {height}")]
    OffCheckpoint { height: u64 },
    #[error("{got} transactions, more than the {max} a block holds")]
    TooManyTxs { got: usize, max: usize },
    #[error("the body root does not match the transactions and evidence")]
    BadBodyRoot,
    #[error("{got} pieces of evidence, more than the {max} a block holds")]
    TooMuchEvidence { got: usize, max: usize },
    #[error("evidence of equivocation that shows none: {0}")]
    BadEvidence(&'static str),
    #[error("evidence against a farmer key its chain has banned already")]
    EvidenceKnown,
    #[error("its farmer key is banned on its chain for equivocation")]
    Banned,
    #[error("the proof of space does not verify: {0}")]
    BadProof(String),
    #[error("k = {0} is outside the chain's range")]
    BadK(u8),
    #[error("proofs of kind {0} are not among the chain's")]
    KindRefused(u8),
    #[error("the block is not signed by its proof's farmer key")]
    BadSignature,
    #[error("a transaction's signature does not verify")]
    BadTxSignature,
    #[error("a transaction's register name or value is too large")]
    TxTooLarge,
    #[error("a transaction's register name is empty")]
    EmptyName,
    #[error("a holder registration is not valid: {0}")]
    BadRegistration(String),
    #[error("a challenge or answer is not valid: {0}")]
    BadDispute(String),
    #[error("a transaction sets version {got}, the register is at {current}")]
    BadTxVersion { got: u64, current: u64 },
    #[error("its proof loses to the canonical block's of the same parent")]
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
            Rejection::SlotNotAfterParent { .. } => "slot_not_after_parent",
            Rejection::Future { .. } => "future",
            Rejection::UnknownSlot(_) => "unknown_slot",
            Rejection::WrongSlotOutput(_) => "wrong_slot_output",
            Rejection::NotEligible => "not_eligible",
            Rejection::BelowFinality { .. } => "below_finality",
            Rejection::OffCheckpoint { .. } => "off_checkpoint",
            Rejection::TooManyTxs { .. } => "too_many_txs",
            Rejection::BadBodyRoot => "bad_body_root",
            Rejection::TooMuchEvidence { .. } => "too_much_evidence",
            Rejection::BadEvidence(_) => "bad_evidence",
            Rejection::EvidenceKnown => "evidence_known",
            Rejection::Banned => "banned",
            Rejection::BadProof(_) => "bad_proof",
            Rejection::BadK(_) => "bad_k",
            Rejection::KindRefused(_) => "kind_refused",
            Rejection::BadSignature => "bad_signature",
            Rejection::BadTxSignature => "bad_tx_signature",
            Rejection::TxTooLarge => "tx_too_large",
            Rejection::EmptyName => "empty_name",
            Rejection::BadRegistration(_) => "bad_registration",
            Rejection::BadDispute(_) => "bad_dispute",
            Rejection::BadTxVersion { .. } => "bad_tx_version",
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
                | Rejection::UnknownSlot(_)
                | Rejection::BelowFinality { .. }
                | Rejection::OffCheckpoint { .. }
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
    /// The slot it was made in (0 for the genesis).
    pub slot: u64,
    /// The chain's weight up to and including it (0 for the genesis).
    pub weight: u128,
    /// The target its child must meet.
    pub child_target: Target,
    /// The seed of its era's line of slots on its branch.
    pub line: [u8; 32],
    /// The hash of its branch's latest block before its era
    /// ([`Branch::opening`]).
    pub opening: [u8; 32],
}

impl Parent {
    /// What it fixes of the lines of slots after it.
    pub fn branch(&self) -> Branch {
        Branch {
            hash: self.hash,
            slot: self.slot,
            line: self.line,
            opening: self.opening,
        }
    }

    /// Block 0: the chain's genesis, in slot 0, with the spec's first
    /// target for block 1.
    pub fn genesis(spec: &ChainSpec) -> Parent {
        let branch = Branch::genesis(&spec.chain_id());
        Parent {
            hash: branch.hash,
            height: 0,
            slot: 0,
            weight: 0,
            child_target: spec.initial_target(),
            line: branch.line,
            opening: branch.opening,
        }
    }
}

/// How far ahead of a vault's clock a slot may be due and still be taken
/// (its output, or a block made in it): clocks of honest vaults differ by
/// this much at most, or their operators are told (docs/PROTOCOL.md).
pub const CLOCK_ALLOWANCE_MS: u64 = 500;

/// Verifies a proof for the challenge of `stamp`'s slot, with the spec's k
/// range, and that it beats `target`.
pub fn check_proof(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    stamp: &Stamp,
    target: Target,
    proof: &ChainProof,
) -> Result<Ranked, Rejection> {
    check_kind_and_size(spec, proof)?;
    let rank = proof
        .verify(&stamp.challenge(chain_id))
        .map_err(|e| Rejection::BadProof(e.to_string()))?;
    if !target.admits(&rank) {
        return Err(Rejection::NotEligible);
    }
    Ok(rank)
}

/// Refuses a proof of a scheme the spec does not name, or from a plot
/// size outside the spec's range for it.
fn check_kind_and_size(spec: &ChainSpec, proof: &ChainProof) -> Result<(), Rejection> {
    match spec.refuses(proof.kind(), proof.k()) {
        Some(refusal) => Err(refusal.into()),
        None => Ok(()),
    }
}

impl From<crate::spec::ProofRefusal> for Rejection {
    fn from(r: crate::spec::ProofRefusal) -> Rejection {
        match r {
            crate::spec::ProofRefusal::Kind(n) => Rejection::KindRefused(n),
            crate::spec::ProofRefusal::Size(k) => Rejection::BadK(k),
        }
    }
}

impl From<crate::holders::RegistrationError> for Rejection {
    fn from(e: crate::holders::RegistrationError) -> Rejection {
        match e {
            crate::holders::RegistrationError::Refused(r) => r.into(),
            other => Rejection::BadRegistration(other.to_string()),
        }
    }
}

/// Refuses a slot due later than the clock's allowance past `now_ms`.
fn check_not_future(spec: &ChainSpec, slot: u64, now_ms: u64) -> Result<(), Rejection> {
    let due_ms = spec.slot_due_ms(slot);
    if due_ms > now_ms.saturating_add(CLOCK_ALLOWANCE_MS) {
        return Err(Rejection::Future { due_ms, now_ms });
    }
    Ok(())
}

/// Checks a transaction on its own: sizes and signature (answered from
/// `cache` when given and it has seen the signature valid), a holder
/// registration's proof ([`crate::holders::check_registration`]), and a
/// challenge's receipt or an answer's slice
/// ([`crate::challenge::check_dispute`]).
pub fn check_tx(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    tx: &RegisterTx,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    if tx.name.is_empty() {
        return Err(Rejection::EmptyName);
    }
    let max_value = match crate::challenge::dispute_of(tx) {
        Some(crate::challenge::Dispute::Answer { .. }) => {
            crate::audit::answer_value_bytes(spec.max_blob_bytes as u64)
        }
        _ => spec.max_register_value_bytes as usize,
    };
    if tx.name.len() > spec.max_register_name_bytes as usize || tx.value.len() > max_value {
        return Err(Rejection::TxTooLarge);
    }
    let valid = match cache {
        Some(cache) => tx.signature_ok_with(chain_id, cache),
        None => tx.signature_ok(chain_id),
    };
    if !valid {
        return Err(Rejection::BadTxSignature);
    }
    if crate::holders::is_registration(tx) {
        crate::holders::check_registration(spec, chain_id, tx).map_err(Rejection::from)?;
    }
    crate::challenge::check_dispute(chain_id, spec.max_blob_bytes as u64, tx)
        .map_err(|e| Rejection::BadDispute(e.to_string()))?;
    Ok(())
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

/// Everything about a block but its transactions' own checks and the
/// registers' state: chain, height,
/// slot, size, transaction root, proof, eligibility and signature
/// (answered from `cache` when given and it has seen it valid). Returns
/// the proof's rank. `slot_output`: the output this vault's proof of time
/// holds for the block's slot on its branch's line, or the slot of that
/// line (or of a line before it) this vault has not reached.
pub fn check_header(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    parent: &Parent,
    slot_output: Result<&[u8; FORM_BYTES], MissingSlot>,
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
    let slot = h.stamp.slot;
    if slot <= parent.slot {
        return Err(Rejection::SlotNotAfterParent {
            slot,
            parent_slot: parent.slot,
        });
    }
    check_not_future(spec, slot, now_ms)?;
    match slot_output {
        Err(missing) => return Err(Rejection::UnknownSlot(missing)),
        Ok(known) if *known != h.stamp.output => return Err(Rejection::WrongSlotOutput(slot)),
        Ok(_) => {}
    }
    check_size_and_root(spec, chain_id, block)?;
    let ranked = check_proof(spec, chain_id, &h.stamp, parent.child_target, &h.proof)?;
    check_signature(block, cache)?;
    check_evidence(chain_id, block, cache)?;
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
    check_evidence(chain_id, block, Some(cache))?;
    check_txs(spec, chain_id, block, Some(cache))
}

/// What can be checked of a block whose parent is not known: its chain,
/// slot (not in the future), size, transaction root, k, that its proof is
/// well formed (a nonce below 2^k; sixteen leaves below it), and its
/// signature.
/// Enough that a block kept until its parent comes is the one its
/// producer signed, and, with its hash, the only block it can be. Its
/// proof's eligibility needs the parent's target, and waits for it.
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
    check_not_future(spec, h.stamp.slot, now_ms)?;
    check_size_and_root(spec, chain_id, block)?;
    check_kind_and_size(spec, &h.proof)?;
    h.proof
        .well_formed()
        .map_err(|e| Rejection::BadProof(e.to_string()))?;
    check_signature(block, cache)?;
    check_evidence(chain_id, block, cache)
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
    if block.evidence.len() > spec.max_block_evidence as usize {
        return Err(Rejection::TooMuchEvidence {
            got: block.evidence.len(),
            max: spec.max_block_evidence as usize,
        });
    }
    let root = crate::block::body_root(chain_id, &block.txs, &block.evidence);
    if root != block.header.body_root {
        return Err(Rejection::BadBodyRoot);
    }
    Ok(())
}

/// Each piece of a block's evidence valid, no two against one key. Run
/// after the block's own signature is checked, so that a block nobody
/// signed costs no more than that one verification.
fn check_evidence(
    chain_id: &[u8; 32],
    block: &Block,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    for (i, e) in block.evidence.iter().enumerate() {
        if block.evidence[..i]
            .iter()
            .any(|o| o.farmer_key() == e.farmer_key())
        {
            return Err(Rejection::BadEvidence("two pieces against one key"));
        }
        check_equivocation(chain_id, e, cache)?;
    }
    Ok(())
}

/// Checks that `e` shows its farmer key equivocating: two different
/// headers of this chain, of that key and one slot, the smaller hash
/// first, each signed by the key. What a vault checks of evidence gossiped
/// to it, and of each piece a block carries; a header whose signature
/// `cache` holds (its block was checked here) is not verified again.
pub fn check_equivocation(
    chain_id: &[u8; 32],
    e: &Equivocation,
    cache: Option<&SigCache>,
) -> Result<(), Rejection> {
    let (a, b) = (&e.first.header, &e.second.header);
    if a.chain_id != *chain_id || b.chain_id != *chain_id {
        return Err(Rejection::WrongChain);
    }
    if a.proof.farmer_key() != b.proof.farmer_key() {
        return Err(Rejection::BadEvidence("two farmer keys"));
    }
    if a.stamp.slot != b.stamp.slot {
        return Err(Rejection::BadEvidence("two slots"));
    }
    if e.first.hash() >= e.second.hash() {
        return Err(Rejection::BadEvidence(
            "the headers are one, or not in the order of their hashes",
        ));
    }
    if !e.first.signed(cache) || !e.second.signed(cache) {
        return Err(Rejection::BadEvidence("a header its key did not sign"));
    }
    Ok(())
}

fn check_signature(block: &Block, cache: Option<&SigCache>) -> Result<(), Rejection> {
    let signed = crate::block::producer_signed(
        block.header.proof.farmer_key(),
        &block.hash(),
        &block.signature,
        cache,
    );
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
