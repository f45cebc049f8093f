//! This crate against Chia's chiavdf, an independent implementation of the
//! same VDF: vectors chiavdf made (`tests/chiavdf_vectors.py`), and, where
//! chiavdf is installed, chiavdf itself checking proofs made here.

use spacevault_vdf::{wesolowski, Group, Integer, VdfError};
use std::process::Command;

struct Case {
    seed: Vec<u8>,
    bits: u32,
    discriminant: String,
    iterations: u64,
    y: Vec<u8>,
    proof: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let text = include_str!("vectors/chiavdf.json");
    let json: serde_json::Value = serde_json::from_str(text).unwrap();
    json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            seed: hex::decode(c["seed"].as_str().unwrap()).unwrap(),
            bits: c["bits"].as_u64().unwrap() as u32,
            discriminant: c["discriminant"].as_str().unwrap().to_string(),
            iterations: c["iterations"].as_u64().unwrap(),
            y: hex::decode(c["y"].as_str().unwrap()).unwrap(),
            proof: hex::decode(c["proof"].as_str().unwrap()).unwrap(),
        })
        .collect()
}

#[test]
fn the_discriminant_from_a_seed_is_chiavdfs() {
    for c in cases() {
        let group = Group::from_seed(&c.seed, c.bits);
        // chiavdf writes it as -0x followed by hex digits.
        let digits = c.discriminant.strip_prefix("-0x").unwrap();
        let expected = -Integer::from_str_radix(digits, 16).unwrap();
        assert_eq!(
            *group.discriminant(),
            expected,
            "seed {}",
            hex::encode(&c.seed)
        );
    }
}

#[test]
fn chiavdfs_proofs_verify_here() {
    for c in cases() {
        let group = Group::from_seed(&c.seed, c.bits);
        let x = group.serialize(&group.generator());
        assert_eq!(x[0], 0x08, "the generator is one flag byte");
        assert_eq!(group.verify(&x, &c.y, &c.proof, c.iterations), Ok(()));
        // One iteration more or less is another claim.
        assert_eq!(
            group.verify(&x, &c.y, &c.proof, c.iterations + 1),
            Err(VdfError::Wrong)
        );
    }
}

#[test]
fn the_output_and_proof_made_here_are_chiavdfs_byte_for_byte() {
    for c in cases().into_iter().filter(|c| c.iterations <= 5000) {
        let group = Group::from_seed(&c.seed, c.bits);
        let proved = group.prove(&group.generator(), c.iterations);
        assert_eq!(hex::encode(proved.y), hex::encode(&c.y));
        assert_eq!(hex::encode(proved.proof), hex::encode(&c.proof));
    }
}

#[test]
fn chiavdfs_forms_deserialize_and_serialize_back() {
    for c in cases() {
        let group = Group::from_seed(&c.seed, c.bits);
        for bytes in [&c.y, &c.proof] {
            let form = group.deserialize(bytes).expect("chiavdf's form");
            assert!(form.is_reduced());
            assert_eq!(&group.serialize(&form)[..], &bytes[..]);
        }
    }
}

#[test]
fn the_fast_prover_and_verifier_agree_with_their_slow_twins() {
    let group = Group::from_seed(b"twin", 512);
    let (d, ctx) = (group.discriminant(), group.ctx());
    let x = group.generator().square().compose(&group.generator());
    for t in [2, 3, 17, 300] {
        let y = wesolowski::evaluate(&x, t, ctx);
        let fast = wesolowski::prove(&x, &y, t, ctx).unwrap();
        let (slow_y, slow) = wesolowski::prove_slow(&x, t, d).unwrap();
        assert_eq!((&y, &fast), (&slow_y, &slow));
        assert!(wesolowski::verify(&x, &y, &fast, t, ctx));
        assert!(wesolowski::verify_slow(&x, &y, &fast, t, d));
        let wrong = fast.compose(&group.generator());
        assert!(!wesolowski::verify(&x, &y, &wrong, t, ctx));
        assert!(!wesolowski::verify_slow(&x, &y, &wrong, t, d));
    }
}

/// The Python with chiavdf to check against: `SPACEVAULT_CHIAVDF_PYTHON`,
/// else `python3` if it imports chiavdf. CI installs it; elsewhere the
/// vectors above stand in for it.
fn chiavdf_python() -> Option<String> {
    let python = std::env::var("SPACEVAULT_CHIAVDF_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&python)
        .args(["-c", "import chiavdf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found && std::env::var_os("SPACEVAULT_CHIAVDF_PYTHON").is_some() {
        panic!("SPACEVAULT_CHIAVDF_PYTHON={python} cannot import chiavdf");
    }
    found.then_some(python)
}

#[test]
fn chiavdf_verifies_proofs_made_here_from_other_inputs() {
    let Some(python) = chiavdf_python() else {
        eprintln!("chiavdf is not installed: checked against its vectors only");
        return;
    };
    let mut lines = String::new();
    for (i, bits) in [512u32, 1024, 1024].into_iter().enumerate() {
        let seed = [i as u8 + 7; 16];
        let group = Group::from_seed(&seed, bits);
        // An input other than the generator: x = g^(2^5 + 3).
        let g = group.generator();
        let x = wesolowski::evaluate(&g, 5, group.ctx())
            .compose(&g.square())
            .compose(&g);
        let t = 700 + 300 * i as u64;
        let proved = group.prove(&x, t);
        lines.push_str(&format!(
            "-0x{:x} {} {} {} {} {}\n",
            Integer::from(-group.discriminant()),
            hex::encode(group.serialize(&x)),
            hex::encode(proved.y),
            hex::encode(proved.proof),
            t,
            hex::encode(seed),
        ));
    }
    let script = r#"
import sys, chiavdf
for line in sys.stdin:
    d, x, y, proof, t, seed = line.split()
    bits = len(bin(-int(d, 16))) - 2
    assert int(chiavdf.create_discriminant(bytes.fromhex(seed), bits), 16) == int(d, 16), "discriminant"
    ok = chiavdf.verify_wesolowski(d, bytes.fromhex(x), bytes.fromhex(y), bytes.fromhex(proof), int(t))
    print("ok" if ok else "refused")
"#;
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok\nok\nok\n");
}
