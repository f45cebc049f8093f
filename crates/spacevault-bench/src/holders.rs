//! What a holder place costs an attacker: `bench holders`. Two rules side
//! by side, each run for real at a small scale and carried to the
//! chain's sizes by its counts:
//!
//! - **places at keys** (the bootstrap era's rule, and every era's before
//!   holders followed from the chain): an attacker generates key pairs
//!   until R of them are nearer a target address than every honest
//!   holder, and so holds every copy of any blob stored there;
//! - **registered places** ([`spacevault_chain::holders`]): each place
//!   needs a registration, a proof under the threshold (ground here
//!   record by record, as an attacker without a plot must), and lands
//!   where a salt drawn after the registration puts it; the run draws
//!   salts and counts how often the attacker's registrations hold all R
//!   places of the target, against the hypergeometric expectation.

use serde::Serialize;
use spacevault_chain::holders::{
    nearest, place, registration_challenge, registration_target, Place,
};
use spacevault_chain::{ChainProof, ChainSpec, Keypair, ProofKind};
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct HolderOptions {
    /// Honest holders.
    pub holders: usize,
    /// The attacker's registrations in the salted run.
    pub attacker: usize,
    /// Copies of each blob.
    pub replication: usize,
    /// The chain's smallest plot size: the registration threshold's.
    pub min_k: u8,
    /// Salts drawn in the salted run.
    pub salts: usize,
    /// Seeds every key and address, so that a run can be repeated.
    pub seed: u64,
}

/// The attack on places at keys.
#[derive(Clone, Debug, Serialize)]
pub struct KeyedAttack {
    /// Key pairs generated until R were nearer the target than every
    /// honest holder.
    pub keys: u64,
    pub seconds: f64,
    /// What the rule leads one to expect: R × (holders + 1).
    pub expected_keys: f64,
}

/// What one registration costs an attacker without a plot.
#[derive(Clone, Debug, Serialize)]
pub struct RegistrationCost {
    pub registrations: usize,
    /// Record hashes a registration took on average, and the expectation
    /// (2^(min_k − 2)).
    pub hashes_mean: f64,
    pub expected_hashes: f64,
    pub seconds_mean: f64,
    /// The expectation at a chain whose smallest plot is k = 32.
    pub hashes_at_k32: f64,
}

/// The salted run.
#[derive(Clone, Debug, Serialize)]
pub struct SaltedAttack {
    pub honest: usize,
    pub attacker: usize,
    pub salts: usize,
    /// Salts under which the attacker held all R places of the target.
    pub all_places: usize,
    pub all_places_fraction: f64,
    /// C(attacker, R) / C(honest + attacker, R).
    pub expected_fraction: f64,
    /// The attacker's share of the target's places over all salts.
    pub places_share: f64,
    /// The keys ground in the keyed attack, registered: how often they
    /// hold all R places once salted (their grinding bought nothing).
    pub ground_keys_all_places: usize,
    /// Registrations an attacker needs (honest holders as here) to hold
    /// all R places of one chosen address with probability 1/2, and the
    /// record hashes they cost at this min_k and at k = 32.
    pub registrations_for_half: u64,
    pub hashes_for_half: f64,
    pub hashes_for_half_at_k32: f64,
}

/// The whole report.
#[derive(Clone, Debug, Serialize)]
pub struct HolderReport {
    pub holders: usize,
    pub replication: usize,
    pub min_k: u8,
    pub keyed: KeyedAttack,
    pub registration: RegistrationCost,
    pub salted: SaltedAttack,
}

/// A 32-byte value drawn from the run's seed, a purpose and an index.
fn draw(seed: u64, purpose: &str, i: u64) -> [u8; 32] {
    let mut h = blake3::Hasher::new_derive_key("spacevault bench holders draw v1");
    h.update(&seed.to_le_bytes());
    h.update(purpose.as_bytes());
    h.update(&i.to_le_bytes());
    *h.finalize().as_bytes()
}

fn xor(a: &[u8; 32], b: &[u8; 32]) -> [u8; 32] {
    std::array::from_fn(|i| a[i] ^ b[i])
}

/// C(m, r) / C(n + m, r): the chance that r places drawn from n honest and
/// m attacker holders are all the attacker's.
pub fn all_places_chance(n: usize, m: usize, r: usize) -> f64 {
    (0..r)
        .map(|i| (m as f64 - i as f64).max(0.0) / (n as f64 + m as f64 - i as f64))
        .product()
}

/// Runs both rules.
pub fn run(o: &HolderOptions) -> HolderReport {
    let r = o.replication.max(1);
    let target = draw(o.seed, "target", 0);
    let honest: Vec<[u8; 32]> = (0..o.holders as u64)
        .map(|i| Keypair::from_secret(&draw(o.seed, "honest", i)).public())
        .collect();

    // Places at keys: grind key pairs until R are nearer than every
    // honest key.
    let nearest_honest = honest
        .iter()
        .map(|k| xor(k, &target))
        .min()
        .unwrap_or([0xff; 32]);
    let started = Instant::now();
    let mut ground = Vec::new();
    let mut keys = 0u64;
    while ground.len() < r {
        let key = Keypair::from_secret(&draw(o.seed, "grind", keys)).public();
        keys += 1;
        if xor(&key, &target) < nearest_honest {
            ground.push(key);
        }
    }
    let keyed = KeyedAttack {
        keys,
        seconds: started.elapsed().as_secs_f64(),
        expected_keys: (r * (o.holders + 1)) as f64,
    };

    // Registrations ground without a plot.
    let mut spec = ChainSpec::new("bench holders", 0, 1000);
    spec.set_sizes(ProofKind::Plain, o.min_k, spacevault::MAX_K);
    let chain = spec.chain_id();
    let threshold = registration_target(&spec);
    let started = Instant::now();
    let mut hashes = 0u64;
    let attackers: Vec<[u8; 32]> = (0..o.attacker as u64)
        .map(|i| {
            let key = Keypair::from_secret(&draw(o.seed, "attacker", i)).public();
            // A plot's records, one by one, for each nonce's challenge in
            // turn: about one plot in 55 holds no record under the
            // threshold for a challenge, as an honest farmer's may not.
            'nonces: for nonce in 0u64.. {
                let challenge = registration_challenge(&chain, &key, 1, nonce);
                for record in 0..1u64 << o.min_k {
                    hashes += 1;
                    let proof = ChainProof::plain(key, [0; 32], o.min_k, record);
                    if proof
                        .verify(&challenge)
                        .is_ok_and(|rank| threshold.admits(&rank))
                    {
                        break 'nonces;
                    }
                }
            }
            key
        })
        .collect();
    let grinding = started.elapsed().as_secs_f64();
    let per = |x: f64| x / o.attacker.max(1) as f64;
    let expected_hashes = 2f64.powi(i32::from(o.min_k.saturating_sub(2)));
    let registration = RegistrationCost {
        registrations: o.attacker,
        hashes_mean: per(hashes as f64),
        expected_hashes,
        seconds_mean: per(grinding),
        hashes_at_k32: 2f64.powi(30),
    };

    // Salts drawn after the registrations.
    let mut all_places = 0;
    let mut attacker_places = 0usize;
    let mut ground_all = 0;
    for s in 0..o.salts as u64 {
        let salt = draw(o.seed, "salt", s);
        let placed = |keys: &[[u8; 32]]| -> Vec<Place> {
            keys.iter()
                .map(|k| Place {
                    key: *k,
                    place: place(k, &salt),
                })
                .collect()
        };
        let mut everyone = placed(&honest);
        everyone.extend(placed(&attackers));
        let holders = nearest(&everyone, &target, r);
        let theirs = holders.iter().filter(|k| attackers.contains(k)).count();
        attacker_places += theirs;
        all_places += usize::from(theirs == r);
        let mut with_ground = placed(&honest);
        with_ground.extend(placed(&ground));
        let holders = nearest(&with_ground, &target, r);
        ground_all += usize::from(holders.iter().all(|k| ground.contains(k)));
    }
    let mut for_half = 1u64;
    while all_places_chance(o.holders, for_half as usize, r) < 0.5 {
        for_half *= 2;
    }
    let (mut low, mut high) = (for_half / 2, for_half);
    while low + 1 < high {
        let mid = (low + high) / 2;
        if all_places_chance(o.holders, mid as usize, r) >= 0.5 {
            high = mid;
        } else {
            low = mid;
        }
    }
    let salted = SaltedAttack {
        honest: o.holders,
        attacker: o.attacker,
        salts: o.salts,
        all_places,
        all_places_fraction: all_places as f64 / o.salts.max(1) as f64,
        expected_fraction: all_places_chance(o.holders, o.attacker, r),
        places_share: attacker_places as f64 / (o.salts.max(1) * r) as f64,
        ground_keys_all_places: ground_all,
        registrations_for_half: high,
        hashes_for_half: high as f64 * expected_hashes,
        hashes_for_half_at_k32: high as f64 * 2f64.powi(30),
    };
    HolderReport {
        holders: o.holders,
        replication: r,
        min_k: o.min_k,
        keyed,
        registration,
        salted,
    }
}

/// The report as a table for people.
pub fn table(report: &HolderReport) -> String {
    let k = &report.keyed;
    let g = &report.registration;
    let s = &report.salted;
    let r = report.replication;
    format!(
        "Taking all {r} holder places of one address among {n} honest holders\n\
         \n\
         places at keys (bootstrap era):\n\
         \x20 key pairs generated   {keys} ({secs:.3} s; expected {exp:.0})\n\
         \n\
         registered places (min k = {mk}):\n\
         \x20 one registration without a plot   {hm:.0} record hashes (expected {he:.0}), {ms:.2} ms\n\
         \x20 at min k = 32                      {h32:.2e} record hashes\n\
         \x20 {m} registrations, {salts} salts: all {r} places held under {all} ({af:.4}; expected {ef:.4})\n\
         \x20 attacker's share of the places    {share:.3} (of the registrations: {rs:.3})\n\
         \x20 the {r} ground keys, registered:   all places under {ga} of {salts} salts\n\
         \x20 registrations for a 1/2 chance    {half} ({hh:.2e} record hashes; {hh32:.2e} at k = 32)\n",
        n = report.holders,
        keys = k.keys,
        secs = k.seconds,
        exp = k.expected_keys,
        mk = report.min_k,
        hm = g.hashes_mean,
        he = g.expected_hashes,
        ms = g.seconds_mean * 1e3,
        h32 = g.hashes_at_k32,
        m = s.attacker,
        salts = s.salts,
        all = s.all_places,
        af = s.all_places_fraction,
        ef = s.expected_fraction,
        share = s.places_share,
        rs = s.attacker as f64 / (s.attacker + s.honest).max(1) as f64,
        ga = s.ground_keys_all_places,
        half = s.registrations_for_half,
        hh = s.hashes_for_half,
        hh32 = s.hashes_for_half_at_k32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chance_of_every_place_is_the_hypergeometric_one() {
        assert_eq!(all_places_chance(10, 0, 2), 0.0);
        assert_eq!(all_places_chance(0, 5, 2), 1.0);
        assert!((all_places_chance(2, 2, 2) - 1.0 / 6.0).abs() < 1e-12);
        assert!((all_places_chance(1, 1, 1) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn keys_buy_every_place_and_registrations_only_their_share() {
        let report = run(&HolderOptions {
            holders: 16,
            attacker: 16,
            replication: 2,
            min_k: 16,
            salts: 400,
            seed: 1,
        });
        assert_eq!(report.replication, 2);
        // Every key ground is nearer than all honest ones.
        assert!(report.keyed.keys >= 2);
        let s = &report.salted;
        // An equal number of registrations: about a quarter of the salts
        // give the attacker both places (16·15 / 32·31 = 0.24), and about
        // half the places overall.
        assert!((0.15..0.35).contains(&s.all_places_fraction), "{s:?}");
        assert!((0.4..0.6).contains(&s.places_share), "{s:?}");
        // The ground keys, salted, are two holders among eighteen.
        assert!(s.ground_keys_all_places < s.salts / 10, "{s:?}");
        assert!(all_places_chance(16, s.registrations_for_half as usize, 2) >= 0.5);
        assert!(all_places_chance(16, s.registrations_for_half as usize - 1, 2) < 0.5);
        let g = &report.registration;
        assert!(g.hashes_mean > 1e3 && g.hashes_mean < 1e5, "{g:?}");
    }
}
