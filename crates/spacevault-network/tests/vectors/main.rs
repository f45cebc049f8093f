//! Fixed vectors for what vaults send each other outside gossip
//! (docs/PROTOCOL.md, "Test vectors"): every request and response kind, as
//! a message and as the frame on its stream, and the peer id of a farmer
//! key.

#[path = "../../../spacevault-chain/tests/vectors/file.rs"]
mod file;
mod frames;
mod peer;
