//! Data holders that follow from the chain: a vault takes a place among
//! the holders of clients' blobs with a registration, a register write
//! that carries a proof of space from one of its plots, and gives it up
//! by writing the register empty. The holders of an era are the vaults
//! registered in blocks below the era's first height; a holder's place
//! (the point blobs' addresses are measured from) is a hash of its key
//! and the salt of the era its registration took effect in, a salt drawn
//! from the proof of time's output at that era's first block, which
//! nobody knows when the registration is made. So a place costs a proof
//! from a plot, and where it lands cannot be chosen by grinding keys
//! (`docs/PROTOCOL.md`, "Holders").

use crate::codec::{DecodeError, Reader, Writer};
use crate::eligibility::{distance_top, Target};
use crate::spec::ProofRefusal;
use crate::time::FORM_BYTES;
use crate::types::{derive, ChainProof, RegisterTx};
use crate::ChainSpec;

/// The register a holder's registration is written to; a name that starts
/// with a zero byte is the protocol's.
pub const HOLDER_REGISTER: &[u8] = b"\0holder";

/// Bits below the chain's smallest plot size that the registration's
/// threshold sits: an honest plot of the smallest size holds on average
/// 2^2 records under it, so that its best lookup qualifies with
/// probability 1 - e^-4 (98%), and a farmer whose lookup does not
/// tries the next nonce.
pub const REGISTRATION_SLACK_BITS: u8 = 2;

/// Nonces a farmer tries for a registration before it gives up: a plot
/// of the chain's smallest size fails all of them with probability
/// e^-(4 * 64).
pub const MAX_REGISTRATION_NONCES: u64 = 64;

mod context {
    pub const CHALLENGE: &str = "spacevault 2026-11 holder registration challenge v1";
    pub const SALT: &str = "spacevault 2026-11 holder era salt v1";
    pub const PLACE: &str = "spacevault 2026-11 holder place v1";
}

/// What a registration's register value holds: the nonce its challenge
/// was drawn with and a proof of space for it by a plot of the
/// register's owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    pub nonce: u64,
    pub proof: ChainProof,
}

impl Registration {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.nonce);
        self.proof.encode_into(&mut w);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Registration, DecodeError> {
        let mut r = Reader::new(bytes);
        let nonce = r.u64("registration's nonce")?;
        let proof = ChainProof::decode_from(&mut r)?;
        r.finish()?;
        Ok(Registration { nonce, proof })
    }
}

/// The challenge a registration's proof answers: the chain, the owner,
/// the register version the registration is written as and its nonce, so
/// that a proof counts once, for one key, on one chain.
pub fn registration_challenge(
    chain_id: &[u8; 32],
    owner: &[u8; 32],
    version: u64,
    nonce: u64,
) -> [u8; 32] {
    let mut w = Writer::new();
    w.fixed(chain_id).fixed(owner).u64(version).u64(nonce);
    derive(context::CHALLENGE, &w.finish())
}

/// The threshold a registration's proof must beat: the chain's smallest
/// plot size less [`REGISTRATION_SLACK_BITS`], as records a slot.
pub fn registration_target(spec: &ChainSpec) -> Target {
    let min_k = spec.proofs.iter().map(|r| r.min_k).min().unwrap_or(0);
    let bits = min_k.saturating_sub(REGISTRATION_SLACK_BITS).min(63);
    Target::for_records(1u64 << bits, 1)
}

/// Whether `tx` writes the holder register.
pub fn is_registration(tx: &RegisterTx) -> bool {
    tx.name == HOLDER_REGISTER
}

/// Why a holder register write is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    #[error("undecodable: {0}")]
    Undecodable(String),
    #[error("its proof is from another key's plot")]
    OtherKey,
    #[error("the chain takes no such proof: {0:?}")]
    Refused(ProofRefusal),
    #[error("its proof does not verify: {0}")]
    BadProof(String),
    #[error("its proof's distance {distance:#018x} does not beat the threshold {threshold:#018x}")]
    AboveThreshold { distance: u64, threshold: u64 },
}

/// The checks of a holder register write beyond any transaction's: an
/// empty value (leaving) is always valid; any other must be a
/// [`Registration`] whose proof is by the owner's plot, of a scheme and
/// size the chain takes, answers the registration's challenge and beats
/// [`registration_target`].
pub fn check_registration(
    spec: &ChainSpec,
    chain_id: &[u8; 32],
    tx: &RegisterTx,
) -> Result<(), RegistrationError> {
    if tx.value.is_empty() {
        return Ok(());
    }
    let registration = Registration::decode(&tx.value)
        .map_err(|e| RegistrationError::Undecodable(e.to_string()))?;
    let proof = &registration.proof;
    if proof.farmer_key() != &tx.owner {
        return Err(RegistrationError::OtherKey);
    }
    if let Some(refusal) = spec.refuses(proof.kind(), proof.k()) {
        return Err(RegistrationError::Refused(refusal));
    }
    let challenge = registration_challenge(chain_id, &tx.owner, tx.version, registration.nonce);
    let rank = proof
        .verify(&challenge)
        .map_err(|e| RegistrationError::BadProof(e.to_string()))?;
    let threshold = registration_target(spec);
    if !threshold.admits(&rank) {
        return Err(RegistrationError::AboveThreshold {
            distance: distance_top(&rank.distance),
            threshold: threshold.0,
        });
    }
    Ok(())
}

/// The holder era in force once the canonical chain reaches `height`:
/// era `e` begins with the block at height `e * era_blocks` (its first
/// block, whose slot output draws its salt). Era 0, before any such
/// block, has no salt and no registered holders.
pub fn era_at(height: u64, era_blocks: u64) -> u64 {
    height / era_blocks.max(1)
}

/// The height of era `era`'s first block.
pub fn era_start(era: u64, era_blocks: u64) -> u64 {
    era.saturating_mul(era_blocks.max(1))
}

/// The era a registration written at `height` takes effect in: the first
/// that begins above it, so that its salt was unknown when the block
/// holding it was made.
pub fn effective_era(height: u64, era_blocks: u64) -> u64 {
    era_at(height, era_blocks) + 1
}

/// Era `era`'s salt: the chain id, the era and the proof-of-time output
/// of the slot its first block was made in.
pub fn era_salt(chain_id: &[u8; 32], era: u64, first_output: &[u8; FORM_BYTES]) -> [u8; 32] {
    let mut w = Writer::new();
    w.fixed(chain_id).u64(era).fixed(first_output);
    derive(context::SALT, &w.finish())
}

/// A holder's place: where blobs' addresses are measured from (by XOR),
/// a hash of its key and the salt of the era its registration took
/// effect in.
pub fn place(owner: &[u8; 32], salt: &[u8; 32]) -> [u8; 32] {
    let mut w = Writer::new();
    w.fixed(salt).fixed(owner);
    derive(context::PLACE, &w.finish())
}

/// A holder: its key and its place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub key: [u8; 32],
    pub place: [u8; 32],
}

impl Place {
    /// A vault placed at its own key: the bootstrap era's holders, before
    /// the chain names any.
    pub fn at_key(key: [u8; 32]) -> Place {
        Place { key, place: key }
    }
}

/// The keys of the `r` holders of `places` nearest `address` by the XOR
/// of their places, nearest first (ties, which need equal places, by
/// key).
pub fn nearest(places: &[Place], address: &[u8; 32], r: usize) -> Vec<[u8; 32]> {
    let order = |p: &Place| (xor(&p.place, address), p.key);
    let mut all = places.to_vec();
    // The r nearest found in one pass, then only they sorted: a
    // replication pass ranks the holders twice for every blob it keeps.
    if r < all.len() {
        all.select_nth_unstable_by_key(r, order);
        all.truncate(r);
    }
    all.sort_unstable_by_key(order);
    all.into_iter().map(|p| p.key).collect()
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

#[cfg(test)]
mod tests;
