//! Fixed vectors for the plot format and the construction every plot and
//! proof depends on (docs/FORMAT.md, "Test vectors"): the plot id, record
//! hashes and distances, proofs, the layouts, the header, a region, and the
//! whole file of a small plot. Each test builds its value from fixed
//! inputs, asserts the committed bytes, and decodes them back where the
//! format has a decoder.

mod construction;
#[path = "../../../spacevault-chain/tests/vectors/file.rs"]
mod file;
mod hard;
mod header;
mod plot;

/// The farmer key and seed every vector here uses.
pub const FARMER_KEY: [u8; 32] = [1; 32];
pub const SEED: [u8; 32] = [2; 32];

/// The challenge of the record and proof vectors: bytes 0, 1, ..., 31.
pub fn challenge() -> [u8; 32] {
    std::array::from_fn(|i| i as u8)
}
