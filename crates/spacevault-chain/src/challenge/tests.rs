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

/// The answer an honest holder of `b` writes to `accuser`'s challenge
/// of version `version`.
fn answer(
    accused: &Keypair,
    accuser: &[u8; 32],
    version: u64,
    b: &[u8],
    version_of_tx: u64,
) -> RegisterTx {
    let address = blob_address(b);
    let len = b.len() as u64;
    let chunk = challenged_chunk(&CHAIN, accuser, &accused.public(), version, &address, len);
    let value = Answer {
        challenge_version: version,
        address,
        len,
        slice: audit::prove_with_last(b, chunk).unwrap(),
    }
    .encode();
    RegisterTx::signed(
        accused,
        &CHAIN,
        &answer_name(accuser),
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
        let good = answer(&x, &a.public(), 3, &b, 1);
        assert_eq!(
            dispute_of(&good),
            Some(Dispute::Answer {
                accuser: a.public()
            })
        );
        assert_eq!(check_dispute(&CHAIN, MAX_BLOB, &good), Ok(()), "len {len}");
        assert!(good.value.len() <= answer_value_bytes(MAX_BLOB));
    }
    let b = blob(100_000);
    let address = blob_address(&b);
    let len = b.len() as u64;
    let chunk = challenged_chunk(&CHAIN, &a.public(), &x.public(), 3, &address, len);
    let with = |version: u64, len: u64, slice: Vec<u8>| {
        let value = Answer {
            challenge_version: version,
            address,
            len,
            slice,
        }
        .encode();
        RegisterTx::signed(&x, &CHAIN, &answer_name(&a.public()), 1, &value)
    };
    let slice = audit::prove_with_last(&b, chunk).unwrap();
    assert_eq!(
        check_dispute(&CHAIN, MAX_BLOB, &with(3, len, slice.clone())),
        Ok(())
    );
    // The slice of another version's chunk, a lied length, a bare chunk
    // without the last.
    let bad = |tx: RegisterTx| {
        matches!(
            check_dispute(&CHAIN, MAX_BLOB, &tx),
            Err(DisputeError::BadSlice(_))
        )
    };
    let other_chunk = challenged_chunk(&CHAIN, &a.public(), &x.public(), 4, &address, len);
    assert_ne!(
        other_chunk, chunk,
        "versions 3 and 4 draw apart for this blob"
    );
    assert!(bad(with(4, len, slice.clone())));
    assert!(bad(with(3, len + 1, slice.clone())));
    assert!(bad(with(3, len, audit::prove(&b, chunk).unwrap())));
    // Past the chain's blob size.
    let small = 4096;
    assert!(matches!(
        check_dispute(&CHAIN, small, &with(3, len, slice)),
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
        address: [0xcd; 32],
        len: 77,
        slice: vec![1, 2, 3],
    };
    let bytes = answer.encode();
    assert_eq!(
        bytes,
        [
            &5u64.to_le_bytes()[..],
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

#[test]
fn a_challenge_left_unanswered_past_its_window_fails_the_holder() {
    let (a, x, y) = keys();
    let b = blob(3000);
    let (accuser, accused) = (a.public(), x.public());
    let holders = |k: &[u8; 32]| *k == accuser || *k == accused;
    // Registered at 3; challenged at 10 (era 2, receipt of era 2): the
    // window holds heights 10 to 18.
    let c = at(10, challenge(&a, &x, 1, 2, &b));
    let fails = |disputes: &[Written], first: u64| {
        failed(&accused, 3, first, ERA_BLOCKS, disputes, holders)
    };
    assert_eq!(fails(&[c.clone()], 16), None, "the window is open at 16");
    assert_eq!(fails(&[c.clone()], 18), None, "and at 18");
    assert_eq!(fails(&[c.clone()], 20), Some(accuser), "closed by 20");
    // Answered in the window, even in the challenge's own block.
    for h in [10, 14, 18] {
        let ans = at(h, answer(&x, &accuser, 1, &b, 1));
        assert_eq!(fails(&[c.clone(), ans], 20), None, "answered at {h}");
    }
    // Answered late, for another version, or for another blob: failed.
    assert_eq!(
        fails(&[c.clone(), at(19, answer(&x, &accuser, 1, &b, 1))], 20),
        Some(accuser)
    );
    assert_eq!(
        fails(&[c.clone(), at(12, answer(&x, &accuser, 2, &b, 1))], 20),
        Some(accuser)
    );
    assert_eq!(
        fails(
            &[c.clone(), at(12, answer(&x, &accuser, 1, &blob(10), 1))],
            20
        ),
        Some(accuser)
    );
    // An answer by someone else for the accused is no answer.
    let mut by_y = answer(&x, &accuser, 1, &b, 1);
    by_y.owner = y.public();
    assert_eq!(fails(&[c.clone(), at(12, by_y)], 20), Some(accuser));
    // Replaced (a new challenge) or withdrawn in the window: only the
    // replacement counts.
    let withdrawn = RegisterTx::signed(&a, &CHAIN, &challenge_name(&accused), 2, b"");
    assert_eq!(fails(&[c.clone(), at(12, withdrawn.clone())], 20), None);
    assert_eq!(
        fails(&[c.clone(), at(19, withdrawn)], 20),
        Some(accuser),
        "withdrawn too late"
    );
    let again = at(13, challenge(&a, &x, 2, 3, &b));
    assert_eq!(
        fails(&[c.clone(), again.clone()], 20),
        None,
        "the second's window is open"
    );
    assert_eq!(fails(&[c.clone(), again.clone()], 24), Some(accuser));
    assert_eq!(
        fails(
            &[c.clone(), again, at(15, answer(&x, &accuser, 2, &b, 1))],
            24
        ),
        None
    );
    // Before the registration, by a vault no holder, or with a stale or
    // future receipt: nothing.
    assert_eq!(
        failed(&accused, 10, 20, ERA_BLOCKS, &[c.clone()], holders),
        None
    );
    assert_eq!(
        failed(&accused, 3, 20, ERA_BLOCKS, &[c.clone()], |k| *k == accused),
        None
    );
    assert_eq!(
        fails(&[at(10, challenge(&a, &x, 1, 0, &b))], 20),
        None,
        "a receipt of era 0"
    );
    assert_eq!(
        fails(&[at(10, challenge(&a, &x, 1, 1, &b))], 20),
        Some(accuser),
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
