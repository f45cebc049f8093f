//! `spacevault verify`: check a proof against a challenge.

use super::prove::ProofJson;
use crate::keys::parse_hex32;
use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;
use spacevault::{verify, Proof};

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The challenge: 64 hex digits (default: the one the proof names).
    #[arg(long, value_name = "HEX")]
    pub challenge: Option<String>,
    /// The proof: JSON as `prove --json` prints it (the whole output, one
    /// plot's entry or its `best`), inline or in a file.
    #[arg(long, value_name = "PROOF")]
    pub proof: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct VerifyOutput {
    valid: bool,
    reason: Option<String>,
    challenge: String,
    plot_id: Option<String>,
    nonce: u64,
    k: u8,
    distance: Option<String>,
    quality: Option<u32>,
}

/// The proof object out of whatever prove printed.
fn extract(text: &str) -> Result<ProofJson> {
    let value: serde_json::Value =
        serde_json::from_str(text).context("the proof is not valid JSON")?;
    let object = if let Some(best) = value.get("best") {
        if best.is_null() {
            bail!("the prove output has no best proof (no plot answered)");
        }
        best.clone()
    } else {
        value
    };
    serde_json::from_value(object)
        .context("the proof JSON needs farmer_key, seed (64 hex digits each), k and nonce")
}

/// Returns whether the proof is valid; a malformed proof is an error.
pub fn run(args: VerifyArgs) -> Result<bool> {
    let text = if args.proof.trim_start().starts_with('{') {
        args.proof.clone()
    } else {
        std::fs::read_to_string(&args.proof)
            .with_context(|| format!("reading the proof file {}", args.proof))?
    };
    let p = extract(&text)?;
    let proof = Proof {
        farmer_key: parse_hex32("the proof's farmer_key", &p.farmer_key)?,
        seed: parse_hex32("the proof's seed", &p.seed)?,
        k: p.k,
        nonce: p.nonce,
    };
    let challenge = match (&args.challenge, &p.challenge) {
        (Some(c), _) => parse_hex32("--challenge", c)?,
        (None, Some(c)) => parse_hex32("the proof's challenge", c)?,
        (None, None) => bail!("give --challenge: the proof does not name its challenge"),
    };
    let mut out = VerifyOutput {
        valid: false,
        reason: None,
        challenge: hex::encode(challenge),
        plot_id: None,
        nonce: proof.nonce,
        k: proof.k,
        distance: None,
        quality: None,
    };
    match verify(&proof, &challenge) {
        Ok(v) => {
            out.plot_id = Some(hex::encode(v.plot_id));
            out.distance = Some(hex::encode(v.distance));
            out.quality = Some(v.quality);
            // A proof that claims more than it is worth is not valid.
            let claim_challenge = p
                .challenge
                .as_deref()
                .map(|c| parse_hex32("the proof's challenge", c))
                .transpose()?;
            if claim_challenge.is_some_and(|c| c != challenge) {
                out.reason = Some("the proof was made for a different challenge".into());
            } else if p
                .plot_id
                .as_deref()
                .is_some_and(|id| !id.eq_ignore_ascii_case(&hex::encode(v.plot_id)))
            {
                out.reason =
                    Some("the proof's plot_id does not match its farmer key, seed and k".into());
            } else if p
                .distance
                .as_deref()
                .is_some_and(|d| !d.eq_ignore_ascii_case(&hex::encode(v.distance)))
            {
                out.reason = Some("the proof claims a distance its record does not have".into());
            } else if p.quality.is_some_and(|q| q != v.quality) {
                out.reason = Some(format!(
                    "the proof claims quality {} but has {}",
                    p.quality.unwrap(),
                    v.quality
                ));
            } else {
                out.valid = true;
            }
        }
        Err(e) => out.reason = Some(e.to_string()),
    }
    if args.json {
        crate::cmd::print_json(&out)?;
    } else if out.valid {
        println!(
            "valid: quality {} (distance {})",
            out.quality.unwrap(),
            out.distance.as_deref().unwrap()
        );
    } else {
        println!("invalid: {}", out.reason.as_deref().unwrap_or("unknown"));
    }
    Ok(out.valid)
}
