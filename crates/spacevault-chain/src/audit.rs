//! Proofs that a holder keeps a blob: one 1 KiB chunk of it, with the
//! BLAKE3 tree nodes that tie the chunk to the blob's address (a *verified
//! slice*, BLAKE3's own tree, so a blob needs no metadata beyond its
//! address). A proof is about 1.7 KiB for a 1 MiB blob, 64 bytes more for
//! each doubling; it is checked against the address and the blob's length
//! alone.
//!
//! The slices are bao's: `bao-tree` (what iroh's blob store uses) makes
//! and checks them, with chunk groups of one chunk, which is the `bao`
//! crate's format; the tests check one against the other.
//! `docs/PROTOCOL.md` ("Audits") is the specification.

use bao_tree::io::outboard::PreOrderMemOutboard;
use bao_tree::io::sync::{encode_ranges_validated, DecodeResponseIter};
use bao_tree::io::BaoContentItem;
use bao_tree::{BaoTree, BlockSize, ChunkNum, ChunkRanges};

/// Bytes of a chunk: BLAKE3's.
pub const CHUNK_BYTES: u64 = 1024;

/// Chunks of a blob of `len` bytes (an empty blob has one, empty).
pub fn chunks(len: u64) -> u64 {
    len.div_ceil(CHUNK_BYTES).max(1)
}

/// Why an audit's answer does not prove the chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    #[error("chunk {chunk} is past the blob's {chunks} chunks")]
    NoSuchChunk { chunk: u64, chunks: u64 },
    #[error("the slice does not prove the chunk: {0}")]
    Invalid(String),
    #[error("{0} bytes follow the slice")]
    Trailing(usize),
}

fn range(chunk: u64) -> ChunkRanges {
    ChunkRanges::from(ChunkNum(chunk)..ChunkNum(chunk + 1))
}

/// The slice that proves `blob`'s chunk `chunk`: the tree's nodes from the
/// root down to it, then its bytes (bao's slice, without its length).
pub fn prove(blob: &[u8], chunk: u64) -> Result<Vec<u8>, AuditError> {
    prove_ranges(blob, &[chunk])
}

/// The bytes of chunk `chunk` of the blob at `address`, `len` bytes long,
/// if `slice` proves them. The path to a chunk depends on the number of
/// chunks, not the exact length: `len` must come from the verifier's own
/// knowledge of the blob, not from the prover.
pub fn verify(
    address: &[u8; 32],
    len: u64,
    chunk: u64,
    slice: &[u8],
) -> Result<Vec<u8>, AuditError> {
    verify_ranges(address, len, &[chunk], slice)
}

/// The slice that proves `blob`'s chunk `chunk` and its last chunk. With
/// the last chunk proven, the length the prover claims is the blob's (its
/// last chunk's bytes and place in the tree follow from the length), so
/// the slice can be checked by someone who knows only the address: an
/// answer to a challenge on the chain ([`crate::challenge`]).
pub fn prove_with_last(blob: &[u8], chunk: u64) -> Result<Vec<u8>, AuditError> {
    let last = chunks(blob.len() as u64) - 1;
    prove_ranges(blob, &[chunk, last])
}

/// Whether `slice` proves chunk `chunk` and the last chunk of a blob of
/// `len` bytes at `address` ([`prove_with_last`]): a wrong `len` is
/// refused as a wrong chunk would be.
pub fn verify_with_last(
    address: &[u8; 32],
    len: u64,
    chunk: u64,
    slice: &[u8],
) -> Result<(), AuditError> {
    let last = chunks(len) - 1;
    verify_ranges(address, len, &[chunk, last], slice).map(|_| ())
}

/// The most bytes a [`prove_with_last`] slice of a blob of up to `len`
/// bytes takes: two chunks and two paths of parents (64 bytes each) from
/// the root.
pub fn with_last_bound(len: u64) -> usize {
    let depth = 64 - (chunks(len) - 1).leading_zeros() as usize;
    2 * CHUNK_BYTES as usize + 2 * depth * 64
}

/// The most bytes a challenge's answer on the chain takes
/// (`challenge::Answer`: the challenge's version and signature, address,
/// length, the slice with its length) on a chain whose blobs are at most
/// `max_blob_bytes`: answers are bounded by the blob size, not by the
/// chain's register value limit.
pub fn answer_value_bytes(max_blob_bytes: u64) -> usize {
    8 + 64 + 32 + 8 + 4 + with_last_bound(max_blob_bytes)
}

fn ranges_of(wanted: &[u64]) -> ChunkRanges {
    let mut ranges = ChunkRanges::empty();
    for &chunk in wanted {
        ranges |= range(chunk);
    }
    ranges
}

fn prove_ranges(blob: &[u8], wanted: &[u64]) -> Result<Vec<u8>, AuditError> {
    let chunks = chunks(blob.len() as u64);
    if let Some(&chunk) = wanted.iter().find(|&&c| c >= chunks) {
        return Err(AuditError::NoSuchChunk { chunk, chunks });
    }
    let outboard = PreOrderMemOutboard::create(blob, BlockSize::ZERO);
    let mut slice = Vec::new();
    encode_ranges_validated(blob, &outboard, &ranges_of(wanted), &mut slice)
        .map_err(|e| AuditError::Invalid(e.to_string()))?;
    Ok(slice)
}

/// The bytes of the `wanted` chunks (in the tree's order, each once) if
/// `slice` proves them and nothing follows it.
fn verify_ranges(
    address: &[u8; 32],
    len: u64,
    wanted: &[u64],
    slice: &[u8],
) -> Result<Vec<u8>, AuditError> {
    let chunks = chunks(len);
    if let Some(&chunk) = wanted.iter().find(|&&c| c >= chunks) {
        return Err(AuditError::NoSuchChunk { chunk, chunks });
    }
    let tree = BaoTree::new(len, BlockSize::ZERO);
    let ranges = ranges_of(wanted);
    let mut reader = std::io::Cursor::new(slice);
    let mut data = Vec::new();
    let root = blake3::Hash::from_bytes(*address);
    for item in DecodeResponseIter::new(root, tree, &mut reader, &ranges) {
        match item.map_err(|e| AuditError::Invalid(e.to_string()))? {
            BaoContentItem::Leaf(leaf) => data.extend_from_slice(&leaf.data),
            BaoContentItem::Parent(_) => {}
        }
    }
    let read = reader.position() as usize;
    if read != slice.len() {
        return Err(AuditError::Trailing(slice.len() - read));
    }
    let mut distinct = wanted.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let expected: usize = distinct
        .iter()
        .map(|&c| (len - c * CHUNK_BYTES).min(CHUNK_BYTES) as usize)
        .sum();
    if data.len() != expected {
        return Err(AuditError::Invalid(format!(
            "{} bytes of chunk data, not {expected}",
            data.len()
        )));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob_address;
    use proptest::prelude::*;

    fn blob(len: usize) -> Vec<u8> {
        (0..len as u32)
            .map(|i| (i.wrapping_mul(2654435761) >> 11) as u8)
            .collect()
    }

    #[test]
    fn a_chunk_of_a_megabyte_is_proven_in_under_two_kilobytes() {
        let b = blob(1 << 20);
        let address = blob_address(&b);
        let slice = prove(&b, 517).unwrap();
        assert_eq!(
            slice.len(),
            10 * 64 + 1024,
            "ten levels of parents and the chunk"
        );
        let got = verify(&address, b.len() as u64, 517, &slice).unwrap();
        assert_eq!(got, &b[517 * 1024..518 * 1024]);
    }

    /// The `bao` crate (its own implementation of the same slices) reads
    /// ours, and ours reads its.
    #[test]
    fn slices_are_the_bao_crates() {
        for len in [0usize, 1, 1023, 1024, 1025, 5000, 70_000] {
            let b = blob(len);
            let address = blob_address(&b);
            for chunk in [0, chunks(len as u64) / 2, chunks(len as u64) - 1] {
                let ours = prove(&b, chunk).unwrap();
                let (encoded, hash) = bao::encode::encode(&b);
                assert_eq!(hash.as_bytes(), &address);
                let mut theirs = Vec::new();
                let mut extractor = bao::encode::SliceExtractor::new(
                    std::io::Cursor::new(&encoded),
                    chunk * CHUNK_BYTES,
                    CHUNK_BYTES,
                );
                std::io::Read::read_to_end(&mut extractor, &mut theirs).unwrap();
                // bao's slice starts with the blob's length.
                assert_eq!(&theirs[..8], &(len as u64).to_le_bytes());
                assert_eq!(&theirs[8..], &ours[..], "len {len} chunk {chunk}");
                let mut decoded = Vec::new();
                let mut decoder = bao::decode::SliceDecoder::new(
                    std::io::Cursor::new(&theirs),
                    &hash,
                    chunk * CHUNK_BYTES,
                    CHUNK_BYTES,
                );
                std::io::Read::read_to_end(&mut decoder, &mut decoded).unwrap();
                let got = verify(&address, len as u64, chunk, &theirs[8..]).unwrap();
                let start = (chunk * CHUNK_BYTES) as usize;
                let want = &b[start..len.min(start + CHUNK_BYTES as usize)];
                assert_eq!(decoded, want, "bao: len {len} chunk {chunk}");
                assert_eq!(got, want, "ours: len {len} chunk {chunk}");
            }
        }
    }

    #[test]
    fn a_slice_for_another_chunk_length_or_blob_is_refused() {
        let b = blob(10_000);
        let address = blob_address(&b);
        let slice = prove(&b, 3).unwrap();
        assert!(verify(&address, 10_000, 4, &slice).is_err());
        // A length of another number of chunks is another tree; within
        // the same number, only the last chunk's length shows it (the
        // auditor knows the length: it holds the blob).
        assert!(verify(&address, 20_000, 3, &slice).is_err());
        let last = prove(&b, 9).unwrap();
        assert!(verify(&address, 10_000, 9, &last).is_ok());
        assert!(verify(&address, 10_001, 9, &last).is_err());
        assert!(verify(&address, 9_999, 9, &last).is_err());
        assert!(verify(&blob_address(b"other"), 10_000, 3, &slice).is_err());
        assert_eq!(
            verify(&address, 10_000, 10, &slice),
            Err(AuditError::NoSuchChunk {
                chunk: 10,
                chunks: 10
            })
        );
        let mut longer = slice.clone();
        longer.push(0);
        assert_eq!(
            verify(&address, 10_000, 3, &longer),
            Err(AuditError::Trailing(1))
        );
        assert!(verify(&address, 10_000, 3, &slice[..slice.len() - 1]).is_err());
    }

    #[test]
    fn a_slice_with_the_last_chunk_pins_the_length() {
        for len in [1usize, 1024, 1025, 10_000, 70_000, 1 << 20] {
            let b = blob(len);
            let address = blob_address(&b);
            let n = chunks(len as u64);
            for chunk in [0, n / 2, n - 1] {
                let slice = prove_with_last(&b, chunk).unwrap();
                assert!(slice.len() <= with_last_bound(len as u64), "len {len}");
                assert_eq!(
                    verify_with_last(&address, len as u64, chunk, &slice),
                    Ok(())
                );
                for other in [
                    len as u64 - 1,
                    len as u64 + 1,
                    len as u64 + 1024,
                    2 * len as u64,
                ] {
                    assert!(
                        verify_with_last(&address, other, chunk, &slice).is_err(),
                        "len {len} claimed {other} chunk {chunk}"
                    );
                }
                if n > 1 {
                    let other = (chunk + 1) % n;
                    if other != n - 1 || chunk == n - 1 {
                        assert!(verify_with_last(&address, len as u64, other, &slice).is_err());
                    }
                }
            }
        }
        assert_eq!(with_last_bound(1 << 20), 2048 + 2 * 10 * 64);
    }

    proptest! {
        #[test]
        fn any_changed_bit_of_a_slice_is_caught(len in 1usize..9000, pick in any::<u64>(), bit in any::<usize>()) {
            let b = blob(len);
            let address = blob_address(&b);
            let chunk = pick % chunks(len as u64);
            let slice = prove(&b, chunk).unwrap();
            prop_assert!(verify(&address, len as u64, chunk, &slice).is_ok());
            let mut changed = slice.clone();
            let bit = bit % (changed.len() * 8);
            changed[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(verify(&address, len as u64, chunk, &changed).is_err());
        }
    }
}
