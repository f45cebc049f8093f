//! Kind 2, the table-chain scheme: proofs that need the space they claim.
//!
//! The plain scheme's records are independent hashes, so an attacker who
//! keeps a small table of them answers most challenges by recomputing
//! the rest. Here the plot is a chain of levels in which each entry joins
//! two matching entries of the level below (in the spirit of Chia's
//! proof of space and of Abusalah et al., "Beyond Hellman's time-memory
//! trade-offs", 2017): a proof is the 2^(levels-1) leaves of one top
//! entry's tree, and recomputing an entry that was not stored means
//! searching for matches level by level.
//!
//! - [`construction`]: the hashes, the matching rule and the score.
//! - [`plot`](mod@plot): the plotter, in memory or through disk for
//!   plots larger than memory; [`format`]: the file; [`park`]: its
//!   compact encodings.
//! - [`reader`]: answering challenges; [`verify`](mod@verify): checking.
//! - [`reference`]: the slow, obvious twin the tests compare with.

pub mod check;
pub mod construction;
mod disk;
pub mod format;
pub mod park;
pub mod plot;
pub mod reader;
pub mod reference;
mod sort;
pub mod verify;

pub use disk::{disk_memory_needed, TEMP_BYTES_PER_LEAF};
pub use plot::{plot, HardPlotOptions, HardPlotSummary, HardStrategy};
pub use reader::{HardAnswer, HardPlotFile, TopEntry};
pub use verify::{verify, verify_with, HardProof};

#[cfg(test)]
mod tests;
