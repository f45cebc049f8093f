//! The known attacks on both schemes, counted in hashes: what an attacker
//! who keeps less than the plot pays, each challenge, to answer with the
//! quality the whole plot gives.
//!
//! - [`rainbow`]: Hellman's time-memory trade-off (as rainbow tables)
//!   against the plain scheme, whose records are one hash of a counter.
//! - [`table_chain`]: against the table-chain scheme, a plot rebuilt from
//!   nothing, levels dropped and recomputed, and bits dropped from stored
//!   entries and ground back.
//!
//! The rainbow tables and the grinds answer challenges, which their
//! callers compare with the honest answers; a rebuild and a level's
//! recomputation are the plotter's own forward pass, run and counted. A
//! hash is one BLAKE3 compression, whichever attack makes it.

pub mod rainbow;
pub mod table_chain;
