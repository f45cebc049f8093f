//! Squarings a second and the time to check a proof, on this machine:
//! `cargo run --release -p spacevault-vdf --example measure [bits] [t]`.

use spacevault_vdf::Group;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let bits: u32 = args.next().map_or(1024, |s| s.parse().expect("bits"));
    let t: u64 = args.next().map_or(100_000, |s| s.parse().expect("t"));
    let group = Group::from_seed(b"measure", bits);
    let x = group.generator();
    let started = Instant::now();
    let y = spacevault_vdf::wesolowski::evaluate(&x, t, group.ctx());
    let evaluate = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let proof = spacevault_vdf::wesolowski::prove(&x, &y, t, group.ctx()).unwrap();
    let prove = started.elapsed().as_secs_f64();
    let checkpoints = spacevault_vdf::wesolowski::checkpoint_spacing(t).map(|k| {
        let started = Instant::now();
        let (y_kept, kept) = spacevault_vdf::wesolowski::evaluate_keeping(&x, t, k, group.ctx());
        let evaluated = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let from = spacevault_vdf::wesolowski::prove_from_checkpoints(
            &x,
            &y_kept,
            t,
            k,
            &kept,
            group.ctx(),
        )
        .unwrap();
        assert_eq!(from, proof, "the two provers disagree");
        (k, evaluated, started.elapsed().as_secs_f64())
    });
    let (xb, yb, pb) = (
        group.serialize(&x),
        group.serialize(&y),
        group.serialize(&proof),
    );
    let rounds = 50;
    let started = Instant::now();
    for _ in 0..rounds {
        group.verify(&xb, &yb, &pb, t).unwrap();
    }
    let verify = started.elapsed().as_secs_f64() / rounds as f64;
    if std::env::var_os("PARTS").is_some() {
        parts(&group, &xb, &yb, t);
        discriminants(bits);
    }
    println!(
        "{bits} bits, t = {t}: {:.0} squarings/s, proof {:.2} s ({:.2}x the evaluation), verify {:.2} ms",
        t as f64 / evaluate,
        prove,
        prove / evaluate,
        verify * 1e3
    );
    if let Some((k, evaluated, proved)) = checkpoints {
        println!(
            "  with a checkpoint every {k} squarings: evaluation {:.2} s, proof {:.3} s ({:.3}x the evaluation without checkpoints)",
            evaluated,
            proved,
            proved / evaluate
        );
    }
}

#[allow(dead_code)]
fn parts(group: &Group, xb: &[u8], yb: &[u8], t: u64) {
    use spacevault_vdf::{wesolowski, Integer};
    let n = 50;
    let s = Instant::now();
    for _ in 0..n {
        group.deserialize(yb).unwrap();
    }
    println!(
        "deserialize {:.3} ms",
        s.elapsed().as_secs_f64() * 1e3 / n as f64
    );
    let x = group.deserialize(xb).unwrap();
    let y = group.deserialize(yb).unwrap();
    let s = Instant::now();
    for _ in 0..n {
        wesolowski::challenge_prime(&x, &y, group.discriminant()).unwrap();
    }
    println!(
        "challenge prime {:.3} ms",
        s.elapsed().as_secs_f64() * 1e3 / n as f64
    );
    let b = wesolowski::challenge_prime(&x, &y, group.discriminant()).unwrap();
    let r = Integer::from(2).pow_mod(&Integer::from(t), &b).unwrap();
    let s = Instant::now();
    for _ in 0..n {
        spacevault_vdf::nucomp::pow2(&y, &b, &x, &r, group.ctx());
    }
    println!("pow2 {:.3} ms", s.elapsed().as_secs_f64() * 1e3 / n as f64);
    let s = Instant::now();
    for _ in 0..n {
        spacevault_vdf::nucomp::pow2_binary(&y, &b, &x, &r, group.ctx());
    }
    println!(
        "pow2 a bit at a time {:.3} ms",
        s.elapsed().as_secs_f64() * 1e3 / n as f64
    );
}

/// How long a discriminant takes to draw from a seed.
#[allow(dead_code)]
fn discriminants(bits: u32) {
    let n = 20;
    let started = Instant::now();
    for i in 0..n {
        Group::from_seed(&[i as u8; 32], bits);
    }
    println!(
        "discriminant of {bits} bits from a seed: {:.2} ms",
        started.elapsed().as_secs_f64() * 1e3 / n as f64
    );
}
