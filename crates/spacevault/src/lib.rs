//! spacevault: Proof-of-Space plots of keyed BLAKE3 records.
//!
//! A plot of size k holds every nonce in `[0, 2^k)` once, bucketed by the
//! hash `keyed_hash(plot_id, LE64(nonce) || 56 zero bytes)`. The best proof
//! for a 32-byte challenge is the nonce whose hash is nearest to it by XOR;
//! a plot finds it with one read, and anyone verifies it with one hash.

pub(crate) mod aligned;
pub mod check;
pub mod construction;
pub mod format;
pub mod kernel;
pub mod plot;
pub mod prove;
pub mod reader;
pub mod verify;

pub use construction::{
    brute_force_best, distance, plot_id, quality, record_hash, Candidate, MAX_K, MIN_K,
};
pub use plot::{plot, PlotError, PlotOptions, PlotSummary};
pub use prove::{Answer, ProveError};
pub use reader::{PlotFile, ReadError, ReadMode};
pub use verify::{verify, Proof, Verified, VerifyError};
