//! What the fuzz targets and property tests check of every decoder of
//! untrusted chain bytes: no panic, and a message that decodes is in its
//! canonical form (it encodes back to exactly the bytes it came from), so
//! that its hash and signature mean one thing.

use crate::block::Block;
use crate::types::{Announce, ChainProof, RegisterTx};
use crate::{ChainSpec, Limits};

/// Limits small enough that a fuzzer reaches them.
pub fn limits() -> Limits {
    Limits {
        max_block_txs: 8,
        max_register_name_bytes: 64,
        max_register_value_bytes: 256,
        max_block_evidence: 2,
    }
}

/// Changes `data` as a fuzzer would: `how` 0 sets the byte at `at`, 1 cuts
/// the message there, anything else inserts `byte` there (`at` is taken
/// modulo the length). For property tests that start from valid messages.
pub fn edit(data: &mut Vec<u8>, at: usize, byte: u8, how: u8) {
    match how {
        0 if !data.is_empty() => {
            let i = at % data.len();
            data[i] = byte;
        }
        1 if !data.is_empty() => data.truncate(at % data.len()),
        _ => data.insert(at % (data.len() + 1), byte),
    }
}

/// Runs `data` through every chain decoder; panics if one panics or
/// accepts bytes that are not its canonical encoding.
pub fn decode_everything(data: &[u8]) {
    let limits = limits();
    if let Ok(block) = Block::decode(data, &limits) {
        assert_eq!(block.encode(), data, "a block in a non-canonical form");
        assert!(block.txs.len() <= limits.max_block_txs);
        assert!(block.evidence.len() <= limits.max_block_evidence);
        let _ = block.hash();
    }
    if let Ok(e) = crate::block::Equivocation::decode(data) {
        assert_eq!(e.encode(), data, "evidence in a non-canonical form");
        let _ = crate::validate::check_equivocation(&[0; 32], &e, None);
    }
    if let Ok(tx) = RegisterTx::decode(data, &limits) {
        assert_eq!(tx.encode(), data, "a transaction in a non-canonical form");
        let _ = tx.signature_ok(&[0; 32]);
    }
    let mut r = crate::codec::Reader::new(data);
    if let Ok(proof) = ChainProof::decode_from(&mut r) {
        if r.finish().is_ok() {
            let mut w = crate::codec::Writer::new();
            proof.encode_into(&mut w);
            assert_eq!(w.finish(), data, "a proof in a non-canonical form");
            let _ = proof.verify(&[0; 32]);
        }
    }
    if let Ok(reg) = crate::holders::Registration::decode(data) {
        assert_eq!(reg.encode(), data, "a registration in a non-canonical form");
        let tx = RegisterTx {
            owner: *reg.proof.farmer_key(),
            name: crate::holders::HOLDER_REGISTER.to_vec(),
            version: 1,
            value: data.to_vec(),
            signature: [0; 64],
        };
        let spec = ChainSpec::new("fuzz", 0, 1000);
        let _ = crate::holders::check_registration(&spec, &[0; 32], &tx);
    }
    if let Ok(c) = crate::challenge::Challenge::decode(data) {
        assert_eq!(c.encode(), data, "a challenge in a non-canonical form");
    }
    if let Ok(answer) = crate::challenge::Answer::decode(data, 1 << 20) {
        assert_eq!(answer.encode(), data, "an answer in a non-canonical form");
        let tx = RegisterTx {
            owner: [1; 32],
            name: crate::challenge::answer_name(&[2; 32]),
            version: 1,
            value: data.to_vec(),
            signature: [0; 64],
        };
        let _ = crate::challenge::check_dispute(&[0; 32], 1 << 20, &tx);
    }
    if let Ok(a) = Announce::decode(data) {
        assert_eq!(a.encode(), data, "an announcement in a non-canonical form");
        let _ = a.signature_ok(&[0; 32]);
    }
    if let Ok(out) = crate::time::SlotOutput::decode(data) {
        assert_eq!(out.encode(), data, "a slot output in a non-canonical form");
        let _ = out.challenge(&[0; 32]);
    }
    if let Ok(trace) = spacevault_meter::trace::Trace::decode(data) {
        assert_eq!(
            trace.encode(),
            data,
            "a crypto trace in a non-canonical form"
        );
    }
    if let Ok(m) = crate::manifest::Manifest::decode(data) {
        assert_eq!(m.encode(), data, "a manifest in a non-canonical form");
        if m.depth == 0 {
            // Its parts, walked, are exactly its bytes.
            let mut walker = crate::manifest::Walker::new(m.clone());
            let mut total = 0u64;
            while let Ok(crate::manifest::Next::Part { bytes, .. }) = walker.step() {
                assert!(bytes >= 1 && bytes <= m.part_bytes);
                total += u64::from(bytes);
            }
            assert_eq!(
                total, m.bytes,
                "a manifest's parts cover other bytes than it says"
            );
        }
    }
    if let Ok(spec) = ChainSpec::decode(data) {
        assert_eq!(spec.encode(), data, "a spec in a non-canonical form");
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = ChainSpec::from_json(text) {
            assert!(spec.validate().is_ok());
            assert_eq!(ChainSpec::from_json(&spec.to_json()).ok(), Some(spec));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_sets_cuts_or_inserts_where_it_says() {
        let edited = |at, byte, how| {
            let mut d = vec![1, 2, 3];
            edit(&mut d, at, byte, how);
            d
        };
        assert_eq!(edited(4, 9, 0), vec![1, 9, 3]);
        assert_eq!(edited(5, 9, 1), vec![1, 2]);
        assert_eq!(edited(5, 9, 2), vec![1, 9, 2, 3]);
        let mut empty = Vec::new();
        edit(&mut empty, 3, 7, 0);
        assert_eq!(empty, vec![7], "nothing to set or cut: an insert");
    }

    #[test]
    fn decoding_everything_catches_a_decoder_that_accepts_a_non_canonical_form() {
        // A valid block decodes and is checked; bytes after it are not a
        // block, so nothing is claimed of them.
        let producer = crate::Keypair::from_secret(&[1; 32]);
        let proof = crate::ChainProof::plain(producer.public(), [2; 32], 16, 3);
        let stamp = crate::Stamp {
            slot: 6,
            output: [7; crate::time::FORM_BYTES],
        };
        let block = Block::produce(&producer, [4; 32], 1, [5; 32], stamp, proof, vec![]);
        decode_everything(&block.encode());
        let mut longer = block.encode();
        longer.push(0);
        decode_everything(&longer);
    }
}
