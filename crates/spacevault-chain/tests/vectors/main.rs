//! Fixed vectors for everything of the chain that outlives a process
//! (docs/PROTOCOL.md, "Test vectors"): the spec and its id, the genesis
//! hash and challenges, proofs, transactions, blocks, the gossiped
//! messages, receipts and keys. Ed25519 signatures are
//! deterministic, so keys from fixed secrets sign to fixed bytes.

mod blocks;
mod file;
mod messages;
mod spec;
mod time;

use spacevault_chain::{ChainProof, ChainSpec, Keypair, Limits};

/// The chain every vector belongs to.
pub fn spec() -> ChainSpec {
    ChainSpec::new("vectors", 1_700_000_000_000, 1000)
}

pub fn chain_id() -> [u8; 32] {
    spec().chain_id()
}

pub fn limits() -> Limits {
    Limits::of(&spec())
}

/// The keys of the vectors, each from a secret of one repeated byte.
pub fn producer() -> Keypair {
    Keypair::from_secret(&[3; 32])
}

pub fn owner() -> Keypair {
    Keypair::from_secret(&[4; 32])
}

pub fn holder() -> Keypair {
    Keypair::from_secret(&[6; 32])
}

pub fn vault() -> Keypair {
    Keypair::from_secret(&[7; 32])
}

/// The producer's proof: its own key's plot of seed [5; 32], k 16, nonce 77.
pub fn proof() -> ChainProof {
    ChainProof {
        kind: spacevault_chain::ProofKind::Plain,
        farmer_key: producer().public(),
        seed: [5; 32],
        k: 16,
        nonce: 77,
    }
}
