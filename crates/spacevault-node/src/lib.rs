//! A spacevault vault: it farms its plots, takes part in electing each
//! block's producer by the proofs its plots give, follows the chain, keeps
//! clients' blobs and registers, and serves an HTTP API and a page for its
//! farmer.
//!
//! The parts, each a module with a small interface:
//! - [`identity`]: the farmer's and clients' key files;
//! - [`farmer`]: the plots and their best proof for a challenge;
//! - [`chain`]: the handle the other parts reach the chain through;
//! - [`engine`]: the chain as this vault follows it (import, fork choice,
//!   election, transaction pool, production), over the store;
//! - [`data`]: blobs, their holders, replication and repair;
//! - `node` (the vault's task: its events and timers) and `sync` (catching
//!   up from a peer's canonical blocks);
//! - [`api`] and [`client`]: the HTTP API and a client of it; [`status`]:
//!   what the vault reports of itself;
//! - [`metrics`]: what `/metrics` shows;
//! - [`links`]: the file that places a test network's vaults at a
//!   distance from each other;
//! - [`kit`]: vaults run many to a machine (keys, plots, configs), for
//!   tests and benchmarks;
//! - the network (`spacevault-network`) and the store (`spacevault-store`)
//!   are crates of their own.

pub mod api;
pub mod audits;
mod behind;
mod blocking;
mod blocks;
pub mod budget;
pub mod chain;
pub mod client;
pub mod clock;
pub mod config;
pub mod data;
pub mod disputes;
pub mod engine;
pub mod farmer;
pub mod held;
pub mod holders;
pub mod identity;
pub mod kit;
pub mod links;
pub mod metrics;
mod node;
mod page;
pub mod process;
pub mod processor;
mod receipts;
mod replication;
pub mod scrub;
pub mod shared;
pub mod signed;
mod slots;
pub mod status;
mod sync;
pub mod sync_peers;
pub mod time;
pub mod vaults;
pub mod work;

pub use config::{NodeConfig, StartError};
pub use node::Node;
pub use shared::Shared;
pub use spacevault_network::{Address, TransportKind};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
