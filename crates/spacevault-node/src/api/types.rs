//! The API's requests and answers, defined once: the server builds them,
//! the client and the benchmarks read them. docs/API.md describes each
//! field; within version 1 fields may be added, none removed or changed in
//! meaning, so readers ignore fields they do not know.

use crate::engine::BlockSummary;
use crate::farmer::{PlotInfo, Skipped};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `GET /health`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Health {
    pub ok: bool,
    pub height: u64,
    pub peers: i64,
}

/// `GET /v1/head`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Head {
    pub height: u64,
    pub hash: String,
}

/// A bootstrap address and how reaching it went.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Bootstrap {
    pub address: String,
    pub reached: bool,
    pub error: Option<String>,
    pub retry_in_s: Option<f64>,
}

/// Where the scrub of stored blobs stands.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Scrub {
    pub rate_bytes_per_s: u64,
    pub passes: u64,
    pub pass_blobs: u64,
    pub pass_checked: u64,
    pub last_pass_ms: u64,
    pub damaged: u64,
}

/// A recent canonical block, with its producer's peer id.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RecentBlock {
    #[serde(flatten)]
    pub block: BlockSummary,
    pub producer_peer: Option<String>,
}

/// `GET /v1/status`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Status {
    pub peer_id: String,
    pub farmer_key: String,
    pub listen: Vec<String>,
    pub chain_id: String,
    pub slot_ms: u64,
    pub block_interval_slots: u64,
    pub max_blob_bytes: u32,
    pub height: u64,
    pub head: String,
    /// The slot the head was made in.
    pub head_slot: u64,
    /// The records the head's target for the next block stands for: the
    /// network's space as the chain's history measures it.
    pub network_records: f64,
    /// The canonical chain's weight (decimal: it may exceed what a JSON
    /// number holds exactly).
    pub chain_weight: String,
    /// The proof of time's last slot checked here, and the slot this
    /// vault's clock is in: a line that lags the clock has no timekeeper
    /// running, or a slow one.
    pub slot: u64,
    pub clock_slot: u64,
    /// The median of the last gossiped slot outputs' arrival less their
    /// due time by this vault's clock (ms; below zero, the clock is
    /// behind), once enough have come.
    pub clock_offset_ms: Option<i64>,
    /// What that says, when the clock seems off: behind, or ahead (or the
    /// timekeeper slow).
    pub clock_warning: Option<String>,
    /// Whether this vault computes the slots.
    pub timekeeper: bool,
    pub recent_blocks: Vec<RecentBlock>,
    pub syncing: bool,
    pub plots: Vec<PlotInfo>,
    pub skipped_plots: Vec<Skipped>,
    pub peers: Vec<String>,
    pub bootstrap: Vec<Bootstrap>,
    pub vaults: usize,
    /// Each connected peer's last round trip, by peer id.
    pub round_trips_ms: BTreeMap<String, f64>,
    pub reorgs: u64,
    pub deepest_reorg: u64,
    pub blocks_produced: u64,
    pub blobs: u64,
    pub blob_bytes: u64,
    pub scrub: Scrub,
}

/// A receipt as the API gives it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ReceiptJson {
    pub holder: String,
    /// The holder era it was signed in.
    pub era: u64,
    pub signature: String,
}

/// `GET /v1/holders[?era=N]`: an era's data holders as the vault's
/// canonical chain names them, each with the transaction that registered
/// it, so that a client can check the registration itself. Era 0, the
/// bootstrap era, names none (`bootstrap`: every vault holds).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HoldersAnswer {
    pub era: u64,
    pub bootstrap: bool,
    /// The hash of the era's first block (empty in the bootstrap era).
    pub first_block: String,
    pub holders: Vec<HolderJson>,
}

/// A registered holder: its key, its place, and its registration (a
/// write of the holder register).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct HolderJson {
    pub key: String,
    pub place: String,
    /// The block height that wrote the registration, and the era it took
    /// effect in (whose salt draws the place).
    pub height: u64,
    pub since_era: u64,
    pub version: u64,
    pub value_hex: String,
    pub signature: String,
}

impl HolderJson {
    /// The registration as its holder signed it (not yet checked), or
    /// which field does not parse.
    pub fn registration(&self) -> Result<spacevault_chain::RegisterTx, &'static str> {
        Ok(spacevault_chain::RegisterTx {
            owner: hex32(&self.key).ok_or("its key is not 32 bytes of hex")?,
            name: spacevault_chain::holders::HOLDER_REGISTER.to_vec(),
            version: self.version,
            value: hex::decode(&self.value_hex).map_err(|_| "its value is not hex")?,
            signature: hex::decode(&self.signature)
                .ok()
                .and_then(|s| s.try_into().ok())
                .ok_or("its signature is not 64 bytes of hex")?,
        })
    }

    /// Its place, if it parses.
    pub fn place(&self) -> Result<[u8; 32], &'static str> {
        hex32(&self.place).ok_or("its place is not 32 bytes of hex")
    }
}

fn hex32(text: &str) -> Option<[u8; 32]> {
    hex::decode(text).ok()?.try_into().ok()
}

/// `PUT /v1/blobs`: the blob's address and the holders that took it
/// (201); with `error` too when fewer took it than the chain asks (503).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PutAnswer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub address: String,
    pub copies: usize,
    pub wanted: usize,
    pub receipts: Vec<ReceiptJson>,
}

/// A register write as a client sends it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RegisterPut {
    pub version: u64,
    pub value_hex: String,
    pub signature: String,
}

/// `PUT /v1/registers/...`: the version written and the block height
/// that holds it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SetAnswer {
    pub owner: String,
    pub name: String,
    pub version: u64,
    pub height: u64,
}

/// `GET /v1/registers/...`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct RegisterAnswer {
    pub owner: String,
    pub name: String,
    pub version: u64,
    pub value_hex: String,
    /// The value as text, when it is UTF-8.
    pub value: Option<String>,
    pub signature: String,
    pub height: u64,
}

/// Every error answer's body.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ErrorAnswer {
    pub error: String,
}

/// A block as the API gives it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BlockJson {
    pub height: u64,
    pub hash: String,
    pub parent: String,
    /// The slot it was made in, when that slot was due (Unix ms), and the
    /// slot's proof-of-time output (hex).
    pub slot: u64,
    pub timestamp_ms: u64,
    pub slot_output: String,
    pub producer: String,
    pub proof: ProofJson,
    pub quality: Option<u32>,
    pub txs: Vec<TxJson>,
    pub signature: String,
    /// When this vault first imported the block (Unix ms).
    pub received_unix_ms: Option<u64>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProofJson {
    /// The proof's scheme by its kind number (1: the plain scheme, 2: the
    /// hard one).
    pub kind: u8,
    pub farmer_key: String,
    pub seed: String,
    pub k: u8,
    /// The record of a plain proof.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<u64>,
    /// The leaves of a hard proof, in proof order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaves: Option<Vec<u64>>,
}

impl ProofJson {
    pub fn of(proof: &spacevault_chain::ChainProof) -> ProofJson {
        let (nonce, leaves) = match proof.any() {
            spacevault::AnyProof::Plain(p) => (Some(p.nonce), None),
            spacevault::AnyProof::Hard(p) => (None, Some(p.xs.clone())),
        };
        ProofJson {
            kind: proof.kind().number(),
            farmer_key: hex::encode(proof.farmer_key()),
            seed: hex::encode(proof.seed()),
            k: proof.k(),
            nonce,
            leaves,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TxJson {
    pub owner: String,
    pub name: String,
    pub version: u64,
    pub value_hex: String,
}

/// `GET /v1/crypto`: the vault's cryptographic operations so far.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CryptoAnswer {
    pub verify_cache: bool,
    pub operations: Vec<CryptoOpJson>,
}

/// One kind of operation for one purpose.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CryptoOpJson {
    pub kind: String,
    pub purpose: String,
    pub count: u64,
    pub seconds: f64,
    pub cache_hits: u64,
}
