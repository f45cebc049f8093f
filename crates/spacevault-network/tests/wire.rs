//! The fuzz target `wire` under proptest: requests and responses from
//! arbitrary bytes, and from valid ones with bytes changed, never panic and
//! decode only from their canonical form.

use proptest::prelude::*;
use spacevault_chain::fuzzing::edit;
use spacevault_chain::{Keypair, Receipt};
use spacevault_network::wire::check_decoders;
use spacevault_network::{Request, Response};

fn valid_messages() -> Vec<Vec<u8>> {
    let receipt = Receipt::sign(&Keypair::from_secret(&[1; 32]), &[2; 32], 4, &[3; 32]);
    vec![
        Request::Status.encode(),
        Request::Blocks { from: 5, max: 10 }.encode(),
        Request::Store { blob: vec![7; 40] }.encode(),
        Request::Fetch { address: [4; 32] }.encode(),
        Response::Status {
            height: 9,
            head: [5; 32],
        }
        .encode(),
        Response::Blocks(vec![vec![1, 2, 3], vec![]]).encode(),
        Response::Stored(receipt).encode(),
        Response::Blob(vec![8; 20]).encode(),
        Response::NotFound.encode(),
        Response::Refused("blob_too_large".into()).encode(),
    ]
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        check_decoders(&data);
    }

    #[test]
    fn changed_messages_never_panic(
        which in 0usize..10,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        let mut data = valid_messages()[which].clone();
        for (at, byte, how) in edits {
            edit(&mut data, at, byte, how);
        }
        check_decoders(&data);
    }
}

#[test]
fn every_valid_message_round_trips() {
    for (i, data) in valid_messages().iter().enumerate() {
        let ok = if i < 4 {
            Request::decode(data).map(|r| r.encode())
        } else {
            Response::decode(data).map(|r| r.encode())
        };
        assert_eq!(ok.as_ref(), Ok(data), "message {i}");
        check_decoders(data);
    }
}
