//! The proof of time: an era's seed, a timekeeper's first two slots (the
//! VDF is deterministic: the same line gives the same outputs and proofs,
//! here and in any implementation that follows PROTOCOL.md and chiavdf),
//! their encodings and their challenges.

use crate::chain_id;
use crate::file::Vector;
use spacevault_chain::genesis_hash;
use spacevault_chain::time::{era_seed, SlotOutput, TimeParams, Timeline};

#[test]
fn a_timekeepers_first_slots() {
    let params = TimeParams {
        iterations: 1000,
        era_slots: 2,
        discriminant_bits: 512,
    };
    let genesis = genesis_hash(&chain_id());
    let mut line = Timeline::first(chain_id(), params).unwrap();
    let mut v = Vector::new(
        "time",
        "The chain_spec vector's chain, 1000 iterations a slot, eras of 2 slots,\n\
         512-bit discriminants; era 0 begun with the genesis hash as entropy:\n\
         the seed of era 0, slots 1 and 2 encoded, and their challenges",
    )
    .field("era_0_seed", era_seed(&chain_id(), 0, &[0; 100], &genesis));
    let mut outs = Vec::new();
    for slot in 1..=2u64 {
        let out = line.prove_next();
        line.advance(&out).unwrap();
        v = v
            .field(format!("slot_{slot}"), out.encode())
            .field(format!("slot_{slot}_challenge"), out.challenge(&chain_id()));
        outs.push(out);
    }
    let c = v.check();
    // The committed outputs check, on a line of their own.
    let mut follower = Timeline::first(chain_id(), params).unwrap();
    for slot in 1..=2u64 {
        let out = SlotOutput::decode(c.get(&format!("slot_{slot}"))).unwrap();
        assert_eq!(out, outs[slot as usize - 1]);
        follower.advance(&out).unwrap();
    }
}
