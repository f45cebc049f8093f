//! Proofs, register transactions and blocks: their encodings, and the
//! hashes, ids and signatures over them.

use crate::file::Vector;
use crate::{chain_id, hard_proof, limits, owner, producer, proof};
use spacevault_chain::block::body_root;
use spacevault_chain::codec::{Reader, Writer};
use spacevault_chain::keys::verify;
use spacevault_chain::{genesis_hash, Block, ChainProof, Equivocation, RegisterTx, Stamp};

#[test]
fn a_chain_proof() {
    let mut w = Writer::new();
    proof().encode_into(&mut w);
    let c = Vector::new(
        "chain_proof",
        "ChainProof { kind 1 (plain), farmer_key: the public key of secret [3; 32],\n\
         seed [5; 32], k 16, nonce 77 }: its encoding",
    )
    .field("encoding", w.finish())
    .check();
    let committed = c.get("encoding");
    let mut r = Reader::new(committed);
    let decoded = ChainProof::decode_from(&mut r).expect("the committed proof decodes");
    r.finish().expect("and nothing follows it");
    assert_eq!(decoded, proof());
    let mut w = Writer::new();
    decoded.encode_into(&mut w);
    assert_eq!(w.finish(), committed);
}

#[test]
fn a_chain_proof_of_the_hard_scheme() {
    let proof = hard_proof();
    let mut w = Writer::new();
    proof.encode_into(&mut w);
    let c = Vector::new(
        "chain_proof_hard",
        "ChainProof { kind 2 (hard), farmer_key [1; 32], seed [2; 32], k 18, the\n\
         16 leaves of the plot library's k = 18 table-chain vector's proof for the\n\
         challenge 00 01 02 .. 1f }: its encoding (194 bytes)",
    )
    .field("encoding", w.finish())
    .check();
    let committed = c.get("encoding");
    assert_eq!(committed.len(), 194);
    let mut r = Reader::new(committed);
    let decoded = ChainProof::decode_from(&mut r).expect("the committed proof decodes");
    r.finish().expect("and nothing follows it");
    assert_eq!(decoded, proof);
    let mut w = Writer::new();
    decoded.encode_into(&mut w);
    assert_eq!(w.finish(), committed);
    // The plot library's vector gives the same score for the challenge.
    let challenge: [u8; 32] = std::array::from_fn(|i| i as u8);
    let rank = decoded
        .verify(&challenge)
        .expect("the vector's proof verifies");
    assert_eq!(
        hex::encode(rank.distance),
        "00009cf066f4bfdd5db878b9787822f0181dcd6869fc36ab4500262560cbdbb2"
    );
    // The challenge's last byte, 0x1f, selects the path to the eighth
    // pair: the tie-break is leaf 14.
    assert_eq!(rank.tiebreak, 40281);
    // Cut short, it is not a proof of the kind.
    for len in [1, 66, 67, 193] {
        assert!(ChainProof::decode_from(&mut Reader::new(&committed[..len])).is_err());
    }
}

/// The transactions of the block vector.
fn txs() -> Vec<RegisterTx> {
    vec![
        RegisterTx::signed(&owner(), &chain_id(), b"name", 1, b"value"),
        RegisterTx::signed(&owner(), &chain_id(), b"other", 1, b""),
    ]
}

#[test]
fn a_register_transaction() {
    let tx = txs().remove(0);
    let c = Vector::new(
        "register_tx",
        "RegisterTx::signed by the key of secret [4; 32] on the chain_spec vector's\n\
         chain: name \"name\", version 1, value \"value\". encoding: as a block holds\n\
         it and as the txs topic carries it (the TxMsg), with the version first;\n\
         id: what the owner signs",
    )
    .field("encoding", tx.encode())
    .field("id", tx.id(&chain_id()))
    .field("signature", tx.signature)
    .check();
    let committed = c.get("encoding");
    let decoded = RegisterTx::decode(committed, &limits()).expect("the committed tx decodes");
    assert_eq!(decoded, tx);
    assert_eq!(decoded.encode(), committed);
    assert_eq!(decoded.id(&chain_id()), c.array::<32>("id"));
    assert_eq!(decoded.signature, c.array::<64>("signature"));
    assert!(verify(&decoded.owner, c.get("id"), &decoded.signature));
}

/// Checks a block vector: the block's encoding, hash, body root and
/// signature.
fn check_block(name: &'static str, about: &str, block: Block) {
    let c = Vector::new(name, about)
        .field("encoding", block.encode())
        .field("hash", block.hash())
        .field("body_root", block.header.body_root)
        .field("signature", block.signature)
        .check();
    let committed = c.get("encoding");
    let decoded = Block::decode(committed, &limits()).expect("the committed block decodes");
    assert_eq!(decoded, block);
    assert_eq!(decoded.encode(), committed);
    assert_eq!(decoded.hash(), c.array::<32>("hash"));
    assert_eq!(
        body_root(&chain_id(), &decoded.txs, &decoded.evidence),
        c.array::<32>("body_root")
    );
    let producer = decoded.header.proof.farmer_key();
    assert!(verify(producer, c.get("hash"), &c.array::<64>("signature")));
}

#[test]
fn a_block() {
    let block = Block::produce(
        &producer(),
        chain_id(),
        1,
        genesis_hash(&chain_id()),
        Stamp {
            slot: 1,
            output: [0x21; 100],
        },
        proof(),
        txs(),
    );
    check_block(
        "block",
        "block 1 of the chain_spec vector's chain, produced by the key of secret\n\
         [3; 32] with the chain_proof vector's proof in slot 1 (output [0x21; 100]),\n\
         parent the genesis hash, holding the register_tx vector's transaction and a second\n\
         one of the same owner: name \"other\", version 1, an empty value",
        block,
    );
}

#[test]
fn a_block_without_transactions() {
    let block = Block::produce(
        &producer(),
        chain_id(),
        2,
        [0x11; 32],
        Stamp {
            slot: 2,
            output: [0x22; 100],
        },
        proof(),
        Vec::new(),
    );
    check_block(
        "block_empty",
        "block 2 of the chain_spec vector's chain, produced by the key of secret\n\
         [3; 32] with the chain_proof vector's proof in slot 2 (output [0x22; 100]),\n\
         parent [0x11; 32], without transactions",
        block,
    );
}

/// The evidence vector's: the key of secret [4; 32] signs two headers for
/// slot 5 of the chain_spec vector's chain, with the chain_proof vector's
/// proof under its own key, on parents [0x31; 32] and [0x32; 32].
fn equivocation() -> Equivocation {
    let cheat = crate::owner();
    let mut proof = proof();
    proof.plain_mut().unwrap().farmer_key = cheat.public();
    let header = |parent| {
        Block::produce(
            &cheat,
            chain_id(),
            3,
            [parent; 32],
            Stamp {
                slot: 5,
                output: [0x25; 100],
            },
            proof.clone(),
            Vec::new(),
        )
        .signed_header()
    };
    Equivocation::of(header(0x31), header(0x32)).expect("an equivocation")
}

#[test]
fn evidence_of_equivocation() {
    let e = equivocation();
    let c = Vector::new(
        "equivocation",
        "the key of secret [4; 32] signs two blocks at height 3 for slot 5 (output\n\
         [0x25; 100]) of the chain_spec vector's chain, with the chain_proof vector's\n\
         proof under its own key, no transactions, parents [0x31; 32] and [0x32; 32]:\n\
         the evidence as the evidence topic carries it (the EvidenceMsg), the header of\n\
         smaller hash first, and its id",
    )
    .field("encoding", e.encode())
    .field("id", e.id())
    .check();
    let committed = c.get("encoding");
    let decoded = Equivocation::decode(committed).expect("the committed evidence decodes");
    assert_eq!(decoded, e);
    assert_eq!(decoded.encode(), committed);
    assert_eq!(decoded.id(), c.array::<32>("id"));
    assert_eq!(
        spacevault_chain::validate::check_equivocation(&chain_id(), &decoded, None),
        Ok(())
    );
}

#[test]
fn a_block_with_evidence() {
    let b = Block::produce(
        &producer(),
        chain_id(),
        4,
        [0x12; 32],
        Stamp {
            slot: 6,
            output: [0x26; 100],
        },
        proof(),
        Vec::new(),
    );
    let block = Block::sign(&producer(), b.header, Vec::new(), vec![equivocation()]);
    check_block(
        "block_evidence",
        "block 4 of the chain_spec vector's chain, produced by the key of secret\n\
         [3; 32] with the chain_proof vector's proof in slot 6 (output [0x26; 100]),\n\
         parent [0x12; 32], without transactions, carrying the equivocation vector's\n\
         evidence",
        block,
    );
}
