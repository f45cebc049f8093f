//! A fixed vector for the proof document (docs/FORMAT.md, "Test vectors"):
//! what `prove --json` prints as its `best` and `verify --proof` reads. A
//! farmer keeps such documents and hands them to whoever checks them, so a
//! document written by one build must verify in every later one.

#[path = "../../../spacevault-chain/tests/vectors/file.rs"]
mod file;

use assert_cmd::Command;
use file::check_text;
use serde_json::Value;
use spacevault::plot::NoProgress;
use spacevault::{plot, PlotOptions};

/// The proof vector of the plot crate: the k = 16 plot of farmer key
/// [1; 32] and seed [2; 32], and the challenge 00 01 02 .. 1f.
const FARMER_KEY: [u8; 32] = [1; 32];
const SEED: [u8; 32] = [2; 32];

fn challenge() -> String {
    hex::encode(std::array::from_fn::<u8, 32, _>(|i| i as u8))
}

fn json_of(output: &[u8]) -> Value {
    serde_json::from_slice(output).expect("the command prints JSON")
}

#[test]
fn prove_prints_the_committed_proof_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = PlotOptions::new(16, FARMER_KEY, SEED);
    o.threads = 2;
    let summary = plot(&o, dir.path(), &NoProgress).unwrap();
    let out = Command::cargo_bin("spacevault")
        .unwrap()
        .args(["prove", "--json", "--challenge", &challenge()])
        .arg(&summary.path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let best = &json_of(&out.stdout)["best"];
    let text = serde_json::to_string_pretty(best).unwrap() + "\n";
    let committed = check_text("proof.json", &text);
    assert_eq!(serde_json::from_str::<Value>(&committed).unwrap(), *best);
}

#[test]
fn verify_accepts_the_committed_proof_document() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/proof.json");
    let out = Command::cargo_bin("spacevault")
        .unwrap()
        .args(["verify", "--json", "--proof", path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out.stdout);
    let document: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(v["challenge"], challenge());
    for field in ["plot_id", "nonce", "k", "distance", "quality"] {
        assert_eq!(v[field], document[field], "{field}");
    }
}
