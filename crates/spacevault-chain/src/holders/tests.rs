use super::*;
use crate::keys::Keypair;
use crate::validate::{check_tx, Rejection};

fn spec() -> ChainSpec {
    let mut spec = ChainSpec::new("holders", 1_000_000, 1000);
    spec.set_sizes(crate::ProofKind::Plain, 16, 32);
    spec
}

/// The first plain proof of `owner`'s plot of k = 16 (seed `seed`) that
/// qualifies for the registration challenge of `version` and `nonce`:
/// found the way a farmer without the plot would, one record hash each.
fn grind(spec: &ChainSpec, owner: &[u8; 32], version: u64, nonce: u64) -> ChainProof {
    let challenge = registration_challenge(&spec.chain_id(), owner, version, nonce);
    let target = registration_target(spec);
    (0..1u64 << 16)
        .map(|n| ChainProof::plain(*owner, [3; 32], 16, n))
        .find(|p| target.admits(&p.verify(&challenge).unwrap()))
        .expect("a k = 16 plot holds about 4 qualifying records")
}

fn registration(spec: &ChainSpec, owner: &Keypair, version: u64) -> RegisterTx {
    let proof = grind(spec, &owner.public(), version, 0);
    let value = Registration { nonce: 0, proof }.encode();
    RegisterTx::signed(owner, &spec.chain_id(), HOLDER_REGISTER, version, &value)
}

#[test]
fn a_registration_with_a_qualifying_proof_of_its_owner_is_valid_and_leaving_always_is() {
    let spec = spec();
    let chain = spec.chain_id();
    let owner = Keypair::from_secret(&[5; 32]);
    let tx = registration(&spec, &owner, 1);
    assert!(is_registration(&tx));
    assert_eq!(check_tx(&spec, &chain, &tx, None), Ok(()));
    let leave = RegisterTx::signed(&owner, &chain, HOLDER_REGISTER, 2, b"");
    assert_eq!(check_tx(&spec, &chain, &leave, None), Ok(()));
    // An ordinary register is not one.
    let other = RegisterTx::signed(&owner, &chain, b"holder", 1, b"anything");
    assert!(!is_registration(&other));
    assert_eq!(check_tx(&spec, &chain, &other, None), Ok(()));
}

#[test]
fn a_registration_is_refused_for_another_version_key_chain_or_a_proof_above_the_threshold() {
    let spec = spec();
    let chain = spec.chain_id();
    let owner = Keypair::from_secret(&[5; 32]);
    let tx = registration(&spec, &owner, 1);
    let refused = |tx: &RegisterTx| {
        matches!(
            check_tx(&spec, &chain, tx, None),
            Err(Rejection::BadRegistration(_))
        )
    };
    // The same proof as version 2: another challenge.
    let again = RegisterTx::signed(&owner, &chain, HOLDER_REGISTER, 2, &tx.value);
    assert!(refused(&again));
    // Another key's registration, its proof copied: another key's plot.
    let thief = Keypair::from_secret(&[6; 32]);
    let stolen = RegisterTx::signed(&thief, &chain, HOLDER_REGISTER, 1, &tx.value);
    assert!(refused(&stolen));
    // The first record of the plot that does not qualify.
    let challenge = registration_challenge(&chain, &owner.public(), 1, 0);
    let target = registration_target(&spec);
    let weak = (0..)
        .map(|n| ChainProof::plain(owner.public(), [3; 32], 16, n))
        .find(|p| !target.admits(&p.verify(&challenge).unwrap()))
        .unwrap();
    let value = Registration {
        nonce: 0,
        proof: weak,
    }
    .encode();
    assert!(refused(&RegisterTx::signed(
        &owner,
        &chain,
        HOLDER_REGISTER,
        1,
        &value
    )));
    // Bytes that are no registration.
    assert!(refused(&RegisterTx::signed(
        &owner,
        &chain,
        HOLDER_REGISTER,
        1,
        b"x"
    )));
    // A plot smaller than the chain takes.
    let mut small = spec.clone();
    small.set_sizes(crate::ProofKind::Plain, 18, 32);
    let small_chain = small.chain_id();
    let proof = grind(&spec, &owner.public(), 1, 0);
    let mut value = Registration { nonce: 0, proof }.encode();
    let tx = RegisterTx::signed(&owner, &small_chain, HOLDER_REGISTER, 1, &value);
    assert_eq!(
        check_tx(&small, &small_chain, &tx, None),
        Err(Rejection::BadK(16))
    );
    // One flipped bit anywhere in a valid value.
    let good = registration(&spec, &owner, 1).value;
    for i in 0..good.len() * 8 {
        value.clone_from(&good);
        value[i / 8] ^= 1 << (i % 8);
        let tx = RegisterTx::signed(&owner, &chain, HOLDER_REGISTER, 1, &value);
        assert!(check_tx(&spec, &chain, &tx, None).is_err(), "bit {i}");
    }
}

#[test]
fn the_threshold_leaves_a_smallest_plot_about_four_qualifying_records() {
    let spec = spec();
    let target = registration_target(&spec);
    assert_eq!(target, Target::for_records(1 << 14, 1));
    let owner = [9; 32];
    let mut counts = Vec::new();
    for nonce in 0..16 {
        let challenge = registration_challenge(&spec.chain_id(), &owner, 1, nonce);
        counts.push(
            (0..1u64 << 16)
                .filter(|&n| {
                    let p = ChainProof::plain(owner, [3; 32], 16, n);
                    target.admits(&p.verify(&challenge).unwrap())
                })
                .count(),
        );
    }
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    assert!((2.0..7.0).contains(&mean), "{counts:?}");
}

#[test]
fn eras_begin_at_multiples_of_era_blocks_and_a_registration_waits_for_the_next() {
    assert_eq!(era_at(0, 8), 0);
    assert_eq!(era_at(7, 8), 0);
    assert_eq!(era_at(8, 8), 1);
    assert_eq!(era_start(3, 8), 24);
    // Written in an era's first block, whose salt its maker knew: the
    // next era.
    assert_eq!(effective_era(8, 8), 2);
    assert_eq!(effective_era(15, 8), 2);
    assert_eq!(effective_era(0, 8), 1);
    assert_eq!(era_at(5, 0), 5);
}

#[test]
fn places_follow_salt_and_key_and_the_nearest_are_by_place() {
    let chain = [1; 32];
    let s1 = era_salt(&chain, 1, &[7; FORM_BYTES]);
    assert_ne!(s1, era_salt(&chain, 2, &[7; FORM_BYTES]));
    assert_ne!(s1, era_salt(&chain, 1, &[8; FORM_BYTES]));
    assert_ne!(s1, era_salt(&[2; 32], 1, &[7; FORM_BYTES]));
    assert_ne!(place(&[1; 32], &s1), place(&[2; 32], &s1));
    let places = [
        Place {
            key: [1; 32],
            place: [0x10; 32],
        },
        Place {
            key: [2; 32],
            place: [0x20; 32],
        },
        Place {
            key: [3; 32],
            place: [0x30; 32],
        },
    ];
    // By place, not by key: key 3 sits at 0x30.
    assert_eq!(nearest(&places, &[0x31; 32], 2), vec![[3; 32], [2; 32]]);
    assert_eq!(nearest(&places, &[0x00; 32], 1), vec![[1; 32]]);
    assert_eq!(nearest(&places, &[0x00; 32], 10).len(), 3);
    assert_eq!(Place::at_key([4; 32]).place, [4; 32]);
}

#[test]
fn a_registration_round_trips_and_no_cut_of_it_decodes() {
    let spec = spec();
    let owner = Keypair::from_secret(&[5; 32]);
    let tx = registration(&spec, &owner, 1);
    let r = Registration::decode(&tx.value).unwrap();
    assert_eq!(r.encode(), tx.value);
    for cut in 0..tx.value.len() {
        assert!(Registration::decode(&tx.value[..cut]).is_err());
    }
    let mut longer = tx.value.clone();
    longer.push(0);
    assert!(Registration::decode(&longer).is_err());
}

/// The spec's own count of a registration's bytes (which it checks its
/// register limits against) is what a registration of each kind encodes
/// to, and a spec whose registers cannot carry one is refused.
#[test]
fn a_spec_whose_registers_cannot_carry_a_registration_is_refused() {
    use crate::challenge::{challenge_name, DISPUTE_NAME_BYTES};
    use crate::spec::{registration_value_bytes, PROTOCOL_REGISTER_NAME_BYTES};
    assert_eq!(challenge_name(&[0; 32]).len(), DISPUTE_NAME_BYTES);
    assert_eq!(DISPUTE_NAME_BYTES, PROTOCOL_REGISTER_NAME_BYTES);
    assert!(HOLDER_REGISTER.len() < PROTOCOL_REGISTER_NAME_BYTES);
    let plain = ChainProof::plain([1; 32], [2; 32], 16, 7);
    let hard = ChainProof::hard([1; 32], [2; 32], 18, [9; crate::types::HARD_LEAVES]);
    for proof in [plain, hard] {
        let kind = proof.kind();
        let value = Registration { nonce: 3, proof }.encode();
        assert_eq!(value.len(), registration_value_bytes(kind), "{kind:?}");
        let mut spec = ChainSpec::new("limits", 1_000_000, 1000);
        spec.proofs.clear();
        let sizes = kind.sizes();
        spec.set_sizes(kind, *sizes.start(), *sizes.end());
        // A challenge (136 bytes) must fit too.
        let needed = value.len().max(crate::spec::CHALLENGE_VALUE_BYTES);
        spec.max_register_value_bytes = needed as u32;
        assert!(spec.validate().is_ok(), "{kind:?}: {:?}", spec.validate());
        spec.max_register_value_bytes -= 1;
        assert!(spec.validate().is_err(), "{kind:?}");
    }
    let receipt = crate::Receipt::sign(&Keypair::from_secret(&[1; 32]), &[0; 32], 1, &[2; 32]);
    let challenge = crate::challenge::Challenge { receipt }.encode();
    assert_eq!(challenge.len(), crate::spec::CHALLENGE_VALUE_BYTES);
    let mut spec = spec();
    spec.max_register_name_bytes = 42;
    assert!(spec.validate().is_ok());
    spec.max_register_name_bytes = 41;
    assert!(spec.validate().is_err());
}
