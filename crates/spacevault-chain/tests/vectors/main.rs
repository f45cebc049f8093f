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
    ChainProof::plain(producer().public(), [5; 32], 16, 77)
}

/// A proof of the hard scheme: the plot library's k = 18 table-chain
/// vector (farmer key [1; 32], seed [2; 32]) and its best proof's leaves
/// for the challenge 00 01 02 .. 1f.
pub fn hard_proof() -> ChainProof {
    let xs = [
        22120, 5947, 151377, 256761, 253969, 163132, 33311, 255706, 137546, 206571, 96042, 209701,
        182075, 55685, 40281, 96782,
    ];
    ChainProof::hard([1; 32], [2; 32], 18, xs)
}
