//! The chain spec: its canonical encoding, which the chain id hashes, the
//! JSON file `chain init` writes, and what the id gives: the genesis hash
//! and the challenges.

use crate::file::{check_text, Vector};
use crate::{chain_id, spec};
use spacevault_chain::{challenge, genesis_hash, ChainSpec, Target};

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
        "for the chain_spec vector's chain: genesis_hash(chain_id); the challenge of\n\
         slot 1 with the output [0x21; 100] and of slot 2 with [0x22; 100]; the\n\
         first target (initial_records 2^20, block_interval_slots 2: 2^64 / 2^21)\n\
         as 8 bytes big-endian, and its weight as 16",
    )
    .field("genesis_hash", genesis)
    .field("challenge_1", challenge(&id, 1, &[0x21; 100]))
    .field("challenge_2", challenge(&id, 2, &[0x22; 100]))
    .field("initial_target", spec().initial_target().0.to_be_bytes())
    .field(
        "initial_weight",
        spec().initial_target().weight().to_be_bytes(),
    )
    .check();
    assert_eq!(spec().initial_target(), Target(1 << 43));
}
