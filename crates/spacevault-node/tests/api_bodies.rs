//! The fuzz target `api` under proptest: a register PUT's path and body,
//! from arbitrary text and from valid requests with bytes changed, give a
//! transaction or a reason, never a panic.

use proptest::prelude::*;
use spacevault_chain::{Keypair, RegisterTx};
use spacevault_node::api::register_tx;

fn valid() -> (String, String, Vec<u8>, RegisterTx) {
    let owner = Keypair::from_secret(&[6; 32]);
    let tx = RegisterTx::signed(&owner, &[1; 32], b"greeting", 3, b"hello");
    let body = serde_json::json!({
        "version": tx.version,
        "value_hex": hex::encode(&tx.value),
        "signature": hex::encode(tx.signature),
    });
    (
        hex::encode(owner.public()),
        "greeting".into(),
        serde_json::to_vec(&body).unwrap(),
        tx,
    )
}

#[test]
fn a_valid_request_gives_its_transaction() {
    let (owner, name, body, tx) = valid();
    assert_eq!(register_tx(&owner, &name, &body), Ok(tx.clone()));
    assert!(tx.signature_ok(&[1; 32]));
    let e = register_tx("00ff", &name, &body).unwrap_err();
    assert!(e.contains("not an address"), "{e}");
    let e = register_tx(&owner, &name, b"{\"version\": 1}").unwrap_err();
    assert!(e.contains("must be JSON with version"), "{e}");
}

proptest! {
    #[test]
    fn arbitrary_requests_never_panic(owner in ".{0,70}", name in ".{0,20}", body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = register_tx(&owner, &name, &body);
    }

    #[test]
    fn changed_bodies_never_panic(edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let (owner, name, mut body, tx) = valid();
        for (at, byte) in edits {
            let i = at.index(body.len());
            body[i] = byte;
        }
        if let Ok(parsed) = register_tx(&owner, &name, &body) {
            prop_assert_eq!(parsed.owner, tx.owner);
        }
    }
}
