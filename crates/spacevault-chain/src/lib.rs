//! The spacevault chain, without I/O: the chain spec and its id, blocks,
//! proofs of space and register transactions with their canonical
//! encodings, the proof of time that gives each slot its challenge,
//! eligibility by a target that follows the chain's history, what makes a
//! block valid, and fork choice by weight.
//! `docs/PROTOCOL.md` is its specification; the node
//! (`spacevault-node`) runs it.

pub mod audit;
pub mod block;
mod bounded_set;
pub mod challenge;
pub mod codec;
pub mod eligibility;
pub mod fork;
#[doc(hidden)]
pub mod fuzzing;
mod genesis;
pub mod holders;
pub mod keys;
pub mod kind;
pub mod locator;
pub mod manifest;
pub mod sig_cache;
pub mod spec;
pub mod time;
pub mod types;
pub mod validate;

pub use block::{Block, BlockHeader, Equivocation, SignedHeader};
pub use codec::DecodeError;
pub use eligibility::Target;
pub use keys::Keypair;
pub use kind::ProofKind;
pub use sig_cache::SigCache;
pub use spec::{ChainSpec, ProofRule, SpecError};
pub use types::{
    blob_address, challenge, genesis_hash, Announce, ChainProof, Limits, Ranked, Receipt,
    RegisterTx, Stamp,
};
pub use validate::{Parent, Rejection};
