//! The construction (docs/FORMAT.md, README): plot ids, record hashes,
//! distance and quality, and a proof's verification. A change to any of
//! them makes every plot answer differently.

use crate::file::Vector;
use crate::{challenge, FARMER_KEY, SEED};
use spacevault::kernel::{Backend, Kernel};
use spacevault::{brute_force_best, distance, plot_id, quality, record_hash, verify, Proof};

#[test]
fn plot_ids() {
    let mut v = Vector::new(
        "plot_id",
        "plot_id(farmer_key = [1; 32], seed = [2; 32], k) for k = 16, 20 and 40",
    );
    for (name, k) in [("k16", 16), ("k20", 20), ("k40", 40)] {
        v = v.field(name, plot_id(&FARMER_KEY, &SEED, k));
    }
    v.check();
}

/// Nonces of the record vector: both ends of a k = 16 plot, one inside,
/// and nonces that take all five bytes a k = 40 nonce may use.
const NONCES: [(&str, u64); 5] = [
    ("hash_0", 0),
    ("hash_1", 1),
    ("hash_12345", 12345),
    ("hash_65535", 65535),
    ("hash_1099511627775", (1 << 40) - 1),
];

#[test]
fn records() {
    let id = plot_id(&FARMER_KEY, &SEED, 16);
    let mut v = Vector::new(
        "record",
        "record_hash(plot_id(farmer_key = [1; 32], seed = [2; 32], k = 16), nonce)\n\
         for the nonces the field names give (the largest is 2^40 - 1), then\n\
         the distance and quality (u32 LE) of nonce 12345's hash for the\n\
         challenge 00 01 02 .. 1f",
    );
    for (name, nonce) in NONCES {
        v = v.field(name, record_hash(&id, nonce));
    }
    let d = distance(&record_hash(&id, 12345), &challenge());
    let c = v
        .field("distance_12345", d)
        .field("quality_12345", quality(&d).to_le_bytes())
        .check();
    // Every kernel backend this CPU runs must hash as the plain code does.
    let nonces: Vec<u64> = NONCES.iter().map(|&(_, n)| n).collect();
    for backend in Backend::ALL.into_iter().filter(|b| b.is_supported()) {
        let mut hashes = vec![[0u8; 32]; nonces.len()];
        Kernel::with_backend(&id, backend).hashes(&nonces, &mut hashes);
        for ((name, _), hash) in NONCES.iter().zip(&hashes) {
            assert_eq!(hash, c.get(name), "{} kernel, {name}", backend.name());
        }
    }
}

#[test]
fn a_proof_and_its_verification() {
    let c = challenge();
    let best = brute_force_best(&plot_id(&FARMER_KEY, &SEED, 16), 16, &c);
    let proof = Proof {
        farmer_key: FARMER_KEY,
        seed: SEED,
        k: 16,
        nonce: best.nonce,
    };
    let v = verify(&proof, &c).expect("the best record is a valid proof");
    let committed = Vector::new(
        "proof",
        "the best proof of the k = 16 plot of farmer_key [1; 32] and seed [2; 32]\n\
         for the challenge 00 01 02 .. 1f: its nonce (u64 LE), then what\n\
         verify() finds: the plot id, the record's hash, its distance and its\n\
         quality (u32 LE)",
    )
    .field("nonce", best.nonce.to_le_bytes())
    .field("plot_id", v.plot_id)
    .field("hash", v.hash)
    .field("distance", v.distance)
    .field("quality", v.quality.to_le_bytes())
    .check();
    // The committed proof verifies to the committed values.
    let nonce = u64::from_le_bytes(committed.array("nonce"));
    let again = verify(&Proof { nonce, ..proof }, &c).unwrap();
    assert_eq!(again.hash, committed.array::<32>("hash"));
    assert_eq!(
        again.quality,
        u32::from_le_bytes(committed.array("quality"))
    );
}
