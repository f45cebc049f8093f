//! spacevault: Proof-of-Space plots of keyed BLAKE3 records.
//!
//! A plot of size k holds every nonce in `[0, 2^k)` once, bucketed by the
//! hash `keyed_hash(plot_id, LE64(nonce) || 56 zero bytes)`. The best proof
//! for a 32-byte challenge is the nonce whose hash is nearest to it by XOR;
//! a plot finds it with one read, and anyone verifies it with one hash.
//!
//! ```
//! use spacevault::plot::{NoProgress, PlotOptions};
//! use spacevault::{plot, verify, PlotFile, Proof};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let summary = plot(&PlotOptions::new(16, [1; 32], [2; 32]), dir.path(), &NoProgress)?;
//! let file = PlotFile::open(&summary.path)?;
//! let challenge = [7u8; 32];
//! let answer = file.prove(&challenge)?;
//! let h = file.header();
//! let proof = Proof { farmer_key: h.farmer_key, seed: h.seed, k: h.k(), nonce: answer.nonce };
//! assert_eq!(verify(&proof, &challenge)?.quality, answer.quality);
//! # Ok(())
//! # }
//! ```
//!
//! The modules are named after the jobs: [`construction`] (the hashes and
//! proofs any implementation must agree on), [`plot`](mod@plot),
//! [`reader`] and [`prove`] (opening plots and answering challenges),
//! [`verify`](mod@verify), [`check`], and [`format`](mod@format) (the
//! file's header and layout).
//!
//! # Stability
//!
//! What this page shows is the library's interface. The modules it hides
//! (`aligned`, `kernel`, `units`, `fuzzing`, and a few items of `format`
//! and `plot`) are public only for spacevault's own crates, benchmarks and
//! fuzz targets: they may change in any release.

#[doc(hidden)]
pub mod aligned;
pub mod any;
pub mod attack;
pub mod check;
pub mod construction;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod hard;
#[doc(hidden)]
pub mod kernel;
pub mod plot;
mod prefetch;
pub mod prove;
pub mod reader;
pub mod scheme;
#[doc(hidden)]
pub mod units;
pub mod verify;

pub use any::{AnyPlot, AnyProof, Lookup};
pub use construction::{
    brute_force_best, distance, plot_id, quality, record_hash, Candidate, MAX_K, MIN_K,
};
pub use plot::{plot, PlotError, PlotOptions, PlotSummary, Plotter};
pub use prove::{Answer, ProveError};
pub use reader::{PlotFile, ReadError, ReadMode};
pub use scheme::{Hard, Plain, ProofScheme};
pub use verify::{verify, Proof, Verified, VerifyError};
