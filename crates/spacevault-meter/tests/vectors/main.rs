//! Fixed vectors for the crypto trace (SVTRACE3, docs/PROFILING.md), a file
//! that `spacevault report` reads long after the vault that served it is
//! gone (docs/PROTOCOL.md, "Test vectors").

#[path = "../../../spacevault-chain/tests/vectors/file.rs"]
mod file;
mod trace;
