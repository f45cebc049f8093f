//! The chain spec: its canonical encoding, which the chain id hashes, the
//! JSON file `chain init` writes, and what the id gives: the genesis hash
//! and the challenges.

use crate::file::{check_text, Vector};
use crate::{chain_id, proof, spec};
use spacevault_chain::{challenge, genesis_hash, ChainSpec};

#[test]
fn the_spec_and_its_id() {
    let spec = spec();
    let c = Vector::new(
        "chain_spec",
        "ChainSpec::new(\"vectors\", genesis_unix_ms 1700000000000, slot_ms 1000), the\n\
         defaults for the rest: its canonical encoding and its chain id",
    )
    .field("encoding", spec.encode())
    .field("chain_id", spec.chain_id())
    .check();
    let committed = c.get("encoding");
    let decoded = ChainSpec::decode(committed).expect("the committed spec decodes");
    assert_eq!(decoded, spec);
    assert_eq!(decoded.encode(), committed);
    assert_eq!(blake3::hash(committed).as_bytes(), c.get("chain_id"));
}

#[test]
fn the_spec_file() {
    let json = check_text("chain_spec.json", &spec().to_json());
    let decoded = ChainSpec::from_json(&json).expect("the committed spec file parses");
    assert_eq!(decoded, spec());
    assert_eq!(decoded.to_json(), json);
}

#[test]
fn the_genesis_and_challenges() {
    let id = chain_id();
    let genesis = genesis_hash(&id);
    Vector::new(
        "genesis",
        "for the chain_spec vector's chain: genesis_hash(chain_id), the challenge of\n\
         block 1 (from the genesis hash), and the challenge of block 2 when block 1\n\
         holds the chain_proof vector's proof",
    )
    .field("genesis_hash", genesis)
    .field("challenge_1", challenge(&id, 1, &genesis))
    .field("challenge_2", challenge(&id, 2, &proof().hash()))
    .check();
}
