//! Embedding spacevault: make a small plot, answer a challenge, verify the proof.
//!
//! `cargo run --release -p spacevault --example embed`

use spacevault::plot::{NoProgress, PlotOptions};
use spacevault::{plot, verify, PlotFile, Proof};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join(format!("spacevault-embed-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    // A farmer key and seed would normally be the farmer's own and random.
    let options = PlotOptions::new(20, [1; 32], [2; 32]);
    let summary = plot(&options, &dir, &NoProgress)?;
    println!(
        "plotted {} in {:.3} s",
        summary.path.display(),
        summary.seconds
    );

    let file = PlotFile::open(&summary.path)?;
    let challenge = *blake3::hash(b"block 1").as_bytes();
    let answer = file.prove(&challenge)?;
    println!(
        "best nonce {} with quality {} ({} read)",
        answer.nonce, answer.quality, answer.reads
    );

    // Anyone holding the proof verifies it with one hash, no plot needed.
    let h = file.header();
    let proof = Proof {
        farmer_key: h.farmer_key,
        seed: h.seed,
        k: h.k(),
        nonce: answer.nonce,
    };
    let verified = verify(&proof, &challenge)?;
    assert_eq!(verified.quality, answer.quality);
    println!("verified: quality {}", verified.quality);

    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
