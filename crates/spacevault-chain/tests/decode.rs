//! The fuzz target `chain` under proptest: every decoder of untrusted chain
//! bytes (and of crypto traces, file manifests and holder registrations), on arbitrary bytes and on valid messages with bytes changed, cut
//! or added, never panics and accepts only canonical encodings.

use proptest::prelude::*;
use spacevault_chain::fuzzing::{decode_everything, edit};
use spacevault_chain::*;

fn valid_messages() -> Vec<Vec<u8>> {
    let producer = Keypair::from_secret(&[3; 32]);
    let owner = Keypair::from_secret(&[4; 32]);
    let chain = [9; 32];
    let tx = RegisterTx::signed(&owner, &chain, b"name", 1, b"value");
    let proof = ChainProof::plain(producer.public(), [5; 32], 16, 77);
    let block = Block::produce(
        &producer,
        chain,
        1,
        genesis_hash(&chain),
        Stamp {
            slot: 1,
            output: [0x21; 100],
        },
        proof.clone(),
        vec![tx.clone(), tx.clone()],
    );
    let announce = Announce::signed(&producer, &chain, 5, vec![vec![4, 127, 0, 0, 1]]);
    let mut spec = ChainSpec::new("fuzz", 1_000_000, 1000);
    spec.set_sizes(ProofKind::Hard, 18, 32);
    let hard = ChainProof::hard(
        [1; 32],
        [2; 32],
        18,
        std::array::from_fn(|i| i as u64 * 1000),
    );
    let trace = spacevault_meter::trace::Trace {
        vault: 1,
        cores: 2,
        window_start_ns: 100,
        window_end_ns: 900,
        ops: vec![spacevault_meter::trace::TracedOp::new(
            spacevault_meter::Op::VerifyTx,
            200,
            40,
            7,
        )],
    };
    vec![
        block.encode(),
        tx.encode(),
        proof_bytes(&proof),
        announce.encode(),
        spec.encode(),
        spec.to_json().into_bytes(),
        trace.encode(),
        proof_bytes(&hard),
        spacevault_chain::manifest::Manifest {
            bytes: 10,
            hash: [6; 32],
            part_bytes: 4,
            depth: 0,
            entries: vec![[7; 32], [8; 32], [9; 32]],
        }
        .encode(),
        spacevault_chain::holders::Registration {
            nonce: 3,
            proof: proof.clone(),
        }
        .encode(),
    ]
}

/// A proof's encoding: what a block's header carries of it.
fn proof_bytes(proof: &ChainProof) -> Vec<u8> {
    let mut w = spacevault_chain::codec::Writer::new();
    proof.encode_into(&mut w);
    w.finish()
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        decode_everything(&data);
    }

    #[test]
    fn changed_messages_never_panic(
        which in 0usize..9,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut data = valid_messages()[which].clone();
        for (at, byte, how) in edits {
            edit(&mut data, at, byte, how);
        }
        decode_everything(&data);
    }
}

#[test]
fn the_valid_messages_decode() {
    // So that the property above starts from messages that reach deep.
    let limits = spacevault_chain::fuzzing::limits();
    let m = valid_messages();
    assert!(Block::decode(&m[0], &limits).is_ok());
    assert!(RegisterTx::decode(&m[1], &limits).is_ok());
    assert_eq!(m[2].len(), 1 + 32 + 32 + 1 + 8);
    assert!(Announce::decode(&m[3]).is_ok());
    assert!(ChainSpec::decode(&m[4]).is_ok());
    assert!(ChainSpec::from_json(std::str::from_utf8(&m[5]).unwrap()).is_ok());
    assert!(spacevault_meter::trace::Trace::decode(&m[6]).is_ok());
    assert_eq!(m[7].len(), 1 + 32 + 32 + 1 + 16 * 8);
    assert!(spacevault_chain::manifest::Manifest::decode(&m[8]).is_ok());
    for data in &m {
        decode_everything(data);
    }
}
