use super::*;
use crate::blob_address;
use crate::keys::Keypair;

const CHAIN: [u8; 32] = [7; 32];
const ERA_BLOCKS: u64 = 4;
const MAX_BLOB: u64 = 1 << 20;

fn blob(len: usize) -> Vec<u8> {
    (0..len as u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 9) as u8)
        .collect()
}

fn challenge(accuser: &Keypair, accused: &Keypair, version: u64, era: u64, b: &[u8]) -> RegisterTx {
    let receipt = Receipt::sign(accused, &CHAIN, era, &blob_address(b));
    let value = Challenge { receipt }.encode();
    RegisterTx::signed(
        accuser,
        &CHAIN,
        &challenge_name(&accused.public()),
        version,
        &value,
    )
}

/// The answer an honest holder of `b` writes to `challenge`, as version
/// `version_of_tx` of its answer register.
fn answer(accused: &Keypair, challenge: &RegisterTx, b: &[u8], version_of_tx: u64) -> RegisterTx {
    let address = blob_address(b);
    let len = b.len() as u64;
    let drawn = (challenge.version, &challenge.signature);
    let chunk = challenged_chunk(
        &CHAIN,
        &challenge.owner,
        &accused.public(),
        drawn,
        &address,
        len,
    );
    let value = Answer {
        challenge_version: challenge.version,
        challenge_signature: challenge.signature,
        address,
        len,
        slice: audit::prove_with_last(b, chunk).unwrap(),
    }
    .encode();
    RegisterTx::signed(
        accused,
        &CHAIN,
        &answer_name(&challenge.owner),
        version_of_tx,
        &value,
    )
}

fn keys() -> (Keypair, Keypair, Keypair) {
    (
        Keypair::from_secret(&[1; 32]),
        Keypair::from_secret(&[2; 32]),
        Keypair::from_secret(&[3; 32]),
    )
}

#[test]
fn a_challenge_carries_the_accused_s_own_signed_receipt() {
    let (a, x, y) = keys();
    let b = blob(5000);
    let good = challenge(&a, &x, 1, 2, &b);
    assert_eq!(
        dispute_of(&good),
        Some(Dispute::Challenge {
            accused: x.public()
        })
    );
    assert_eq!(check_dispute(&CHAIN, MAX_BLOB, &good), Ok(()));
    // y's receipt, written as a challenge to x.
    let mut other = challenge(&a, &y, 1, 2, &b);
    other.name = challenge_name(&x.public());
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &other),
        Err(DisputeError::OtherHolder)
    );
    // x challenging itself.
    let own = challenge(&x, &x, 1, 2, &b);
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &own),
        Err(DisputeError::OwnReceipt)
    );
    // A receipt of another chain.
    let receipt = Receipt::sign(&x, &[8; 32], 2, &blob_address(&b));
    let forged = RegisterTx::signed(
        &a,
        &CHAIN,
        &challenge_name(&x.public()),
        1,
        &Challenge { receipt }.encode(),
    );
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &forged),
        Err(DisputeError::BadReceipt)
    );
    // A name of the wrong length is refused, an empty value (withdrawn) taken.
    let short = RegisterTx::signed(&a, &CHAIN, &[CHALLENGE_REGISTER, &[1; 31]].concat(), 1, b"");
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &short),
        Err(DisputeError::BadName)
    );
    let withdrawn = RegisterTx::signed(&a, &CHAIN, &challenge_name(&x.public()), 2, b"");
    assert_eq!(check_dispute(&CHAIN, MAX_BLOB, &withdrawn), Ok(()));
    let undecodable = RegisterTx::signed(&a, &CHAIN, &challenge_name(&x.public()), 2, b"junk");
    assert!(matches!(
        check_dispute(&CHAIN, MAX_BLOB, &undecodable),
        Err(DisputeError::Undecodable(_))
    ));
    // Ordinary registers are not disputes.
    let plain = RegisterTx::signed(&a, &CHAIN, b"challenge", 1, b"x");
    assert_eq!(dispute_of(&plain), None);
    assert_eq!(check_dispute(&CHAIN, MAX_BLOB, &plain), Ok(()));
}

#[test]
fn an_answer_proves_the_drawn_chunk_and_the_length_against_the_address() {
    let (a, x, _) = keys();
    for len in [1usize, 1024, 3000, 100_000, 1 << 20] {
        let b = blob(len);
        let c = challenge(&a, &x, 3, 2, &b);
        let good = answer(&x, &c, &b, 1);
        assert_eq!(
            dispute_of(&good),
            Some(Dispute::Answer {
                accuser: a.public()
            })
        );
        assert_eq!(check_dispute(&CHAIN, MAX_BLOB, &good), Ok(()), "len {len}");
        assert!(good.value.len() <= audit::answer_value_bytes(MAX_BLOB));
    }
    let b = blob(100_000);
    let address = blob_address(&b);
    let len = b.len() as u64;
    let c = challenge(&a, &x, 3, 2, &b);
    let chunk = challenged_chunk(
        &CHAIN,
        &a.public(),
        &x.public(),
        (3, &c.signature),
        &address,
        len,
    );
    let with = |version: u64, signature: [u8; 64], len: u64, slice: Vec<u8>| {
        let value = Answer {
            challenge_version: version,
            challenge_signature: signature,
            address,
            len,
            slice,
        }
        .encode();
        RegisterTx::signed(&x, &CHAIN, &answer_name(&a.public()), 1, &value)
    };
    let slice = audit::prove_with_last(&b, chunk).unwrap();
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &with(3, c.signature, len, slice.clone())),
        Ok(())
    );
    // The slice of another challenge's chunk (another version, another
    // signature), a lied length, a bare chunk without the last.
    let bad = |tx: RegisterTx| {
        matches!(
            check_dispute(&CHAIN, MAX_BLOB, &tx),
            Err(DisputeError::BadSlice(_))
        )
    };
    let other = challenged_chunk(
        &CHAIN,
        &a.public(),
        &x.public(),
        (4, &c.signature),
        &address,
        len,
    );
    assert_ne!(other, chunk, "versions 3 and 4 draw apart for this blob");
    assert!(bad(with(4, c.signature, len, slice.clone())));
    let forged = [0x55; 64];
    let by_forged = challenged_chunk(
        &CHAIN,
        &a.public(),
        &x.public(),
        (3, &forged),
        &address,
        len,
    );
    assert_ne!(by_forged, chunk, "signatures draw apart for this blob");
    assert!(bad(with(3, forged, len, slice.clone())));
    assert!(bad(with(3, c.signature, len + 1, slice.clone())));
    assert!(bad(with(
        3,
        c.signature,
        len,
        audit::prove(&b, chunk).unwrap()
    )));
    // Past the chain's blob size.
    assert!(matches!(
        check_dispute(&CHAIN, 4096, &with(3, c.signature, len, slice)),
        Err(DisputeError::TooLarge { .. })
    ));
}

#[test]
fn challenges_and_answers_encode_as_documented() {
    let (a, x, _) = keys();
    let receipt = Receipt::sign(&x, &CHAIN, 9, &[0xab; 32]);
    let c = Challenge { receipt };
    let bytes = c.encode();
    assert_eq!(bytes.len(), 32 + 32 + 8 + 64);
    assert_eq!(&bytes[..32], &[0xab; 32]);
    assert_eq!(&bytes[32..64], &x.public());
    assert_eq!(&bytes[64..72], &9u64.to_le_bytes());
    assert_eq!(Challenge::decode(&bytes), Ok(c));
    let answer = Answer {
        challenge_version: 5,
        challenge_signature: [0xee; 64],
        address: [0xcd; 32],
        len: 77,
        slice: vec![1, 2, 3],
    };
    let bytes = answer.encode();
    assert_eq!(
        bytes,
        [
            &5u64.to_le_bytes()[..],
            &[0xee; 64],
            &[0xcd; 32],
            &77u64.to_le_bytes(),
            &3u32.to_le_bytes(),
            &[1, 2, 3]
        ]
        .concat()
    );
    assert_eq!(Answer::decode(&bytes, MAX_BLOB), Ok(answer));
    assert_eq!(challenge_name(&a.public()).len(), DISPUTE_NAME_BYTES);
    assert_eq!(answer_name(&a.public()).len(), DISPUTE_NAME_BYTES - 3);
}

fn at(height: u64, tx: RegisterTx) -> Written {
    Written { height, tx }
}

/// A holder register write by `key` at `height`: a registration, or
/// with `leave` an empty value (`failed` reads only whether it is empty).
fn registration(key: &Keypair, height: u64, version: u64, leave: bool) -> Written {
    let value: &[u8] = if leave { b"" } else { b"registration" };
    at(
        height,
        RegisterTx::signed(key, &CHAIN, crate::holders::HOLDER_REGISTER, version, value),
    )
}

#[test]
fn a_challenge_left_unanswered_past_its_window_fails_the_holder() {
    let (a, x, y) = keys();
    let b = blob(3000);
    let (accuser, accused) = (a.public(), x.public());
    let holders = |k: &[u8; 32], _h: u64| *k == accuser || *k == accused;
    // Registered at 3 (effective era 1); challenged at 10 (era 2, receipt
    // of era 2): the window holds heights 10 to 18.
    let registered = [registration(&x, 3, 1, false)];
    let c = at(10, challenge(&a, &x, 1, 2, &b));
    let failure = Some(Failure {
        accuser,
        closes: 18,
    });
    let fails = |disputes: &[Written], first: u64| {
        failed(&accused, first, ERA_BLOCKS, &registered, disputes, holders)
    };
    let one = std::slice::from_ref(&c);
    assert_eq!(fails(one, 16), None, "the window is open at 16");
    assert_eq!(fails(one, 18), None, "and at 18");
    assert_eq!(fails(one, 20), failure, "closed by 20");
    assert_eq!(
        fails(one, 400),
        failure,
        "and for as long as the registration stands"
    );
    // Answered in the window, even in the challenge's own block.
    for h in [10, 14, 18] {
        let ans = at(h, answer(&x, &c.tx, &b, 1));
        assert_eq!(fails(&[c.clone(), ans], 20), None, "answered at {h}");
    }
    // Answered late, for another version or signature, or for another
    // blob: failed.
    let late = at(19, answer(&x, &c.tx, &b, 1));
    assert_eq!(fails(&[c.clone(), late], 20), failure);
    let mut other_version = c.tx.clone();
    other_version.version = 2;
    let ans = at(12, answer(&x, &other_version, &b, 1));
    assert_eq!(fails(&[c.clone(), ans], 20), failure);
    let mut other_signature = c.tx.clone();
    other_signature.signature = [0x55; 64];
    let ans = at(12, answer(&x, &other_signature, &b, 1));
    assert_eq!(fails(&[c.clone(), ans], 20), failure);
    let ans = at(12, answer(&x, &c.tx, &blob(10), 1));
    assert_eq!(fails(&[c.clone(), ans], 20), failure);
    // An answer by someone else for the accused is no answer.
    let mut by_y = answer(&x, &c.tx, &b, 1);
    by_y.owner = y.public();
    assert_eq!(fails(&[c.clone(), at(12, by_y)], 20), failure);
    // Replaced (a new challenge) or withdrawn in the window: only the
    // replacement counts.
    let withdrawn = RegisterTx::signed(&a, &CHAIN, &challenge_name(&accused), 2, b"");
    assert_eq!(fails(&[c.clone(), at(12, withdrawn.clone())], 20), None);
    assert_eq!(
        fails(&[c.clone(), at(19, withdrawn)], 20),
        failure,
        "withdrawn too late"
    );
    let again = at(13, challenge(&a, &x, 2, 3, &b));
    assert_eq!(
        fails(&[c.clone(), again.clone()], 20),
        None,
        "the second's window is open"
    );
    let second = Some(Failure {
        accuser,
        closes: 21,
    });
    assert_eq!(fails(&[c.clone(), again.clone()], 24), second);
    let ans = at(15, answer(&x, &again.tx, &b, 1));
    assert_eq!(fails(&[c.clone(), again, ans], 24), None);
    // By a vault not registered when it challenged, or with a receipt
    // from before the registration took effect (era 0) or of an era to
    // come: nothing.
    let unregistered = |k: &[u8; 32], h: u64| *k == accused || h > 10;
    assert_eq!(
        failed(&accused, 20, ERA_BLOCKS, &registered, one, unregistered),
        None
    );
    assert_eq!(
        fails(&[at(10, challenge(&a, &x, 1, 0, &b))], 20),
        None,
        "a receipt of era 0"
    );
    assert_eq!(
        fails(&[at(10, challenge(&a, &x, 1, 1, &b))], 20),
        failure,
        "of era 1"
    );
    assert_eq!(
        fails(&[at(10, challenge(&a, &x, 1, 3, &b))], 20),
        None,
        "of era 3"
    );
    // Another holder's challenge is not about x.
    assert_eq!(fails(&[at(10, challenge(&a, &y, 1, 2, &b))], 20), None);
}

#[test]
fn a_failed_holder_registered_again_holds_nothing_until_its_eviction_is_over() {
    let (a, x, _) = keys();
    let b = blob(3000);
    let (accuser, accused) = (a.public(), x.public());
    let holders = |_: &[u8; 32], _: u64| true;
    let c = at(10, challenge(&a, &x, 1, 2, &b));
    let failure = Some(Failure {
        accuser,
        closes: 18,
    });
    let one = std::slice::from_ref(&c);
    // Not registered at all, or registered only after the challenge:
    // nothing to fail.
    assert_eq!(failed(&accused, 20, ERA_BLOCKS, &[], one, holders), None);
    let late = [registration(&x, 11, 1, false)];
    assert_eq!(failed(&accused, 20, ERA_BLOCKS, &late, one, holders), None);
    // Left before the challenge: the challenge finds no registration.
    let left = [
        registration(&x, 3, 1, false),
        registration(&x, 8, 2, true),
        registration(&x, 19, 3, false),
    ];
    assert_eq!(failed(&accused, 24, ERA_BLOCKS, &left, one, holders), None);
    // Registered at 3, failed by the window closing at 18 (era 4),
    // registered again at 19: out until era 4 + EVICTION_ERAS = 8 is over.
    let again = [
        registration(&x, 3, 1, false),
        registration(&x, 19, 2, false),
    ];
    for era in 5..=8 {
        let first = era * ERA_BLOCKS;
        assert_eq!(
            failed(&accused, first, ERA_BLOCKS, &again, one, holders),
            failure,
            "era {era}"
        );
    }
    assert_eq!(
        failed(&accused, 9 * ERA_BLOCKS, ERA_BLOCKS, &again, one, holders),
        None
    );
    // Without registering again it stays out.
    let stays = [registration(&x, 3, 1, false)];
    assert_eq!(
        failed(&accused, 9 * ERA_BLOCKS, ERA_BLOCKS, &stays, one, holders),
        failure
    );
}
