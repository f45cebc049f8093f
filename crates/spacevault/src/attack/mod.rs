//! The known attacks on both schemes, run for real and counted in hashes:
//! what an attacker who keeps less than the plot pays, each challenge, to
//! answer with the quality the whole plot gives.
//!
//! - [`rainbow`]: Hellman's time-memory trade-off (as rainbow tables)
//!   against the plain scheme, whose records are one hash of a counter.
//! - [`table_chain`]: against the table-chain scheme, a plot rebuilt from
//!   nothing, levels dropped and recomputed, and bits dropped from stored
//!   entries and ground back.
//!
//! Every attack's answer is compared with the honest one by its callers;
//! a hash is one BLAKE3 compression, whichever attack makes it.

pub mod rainbow;
pub mod table_chain;
