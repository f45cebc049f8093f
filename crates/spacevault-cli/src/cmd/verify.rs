//! `spacevault verify`: check a proof against a challenge.
//!
//! A proof document is what `prove --json` printed: the whole output, one
//! plot's entry, or its `best`. Of a whole output every entry is verified,
//! and `best` must be the best of them: a document is valid only if all of
//! it is.

use super::prove::ProofJson;
use crate::keys::parse_hex32;
use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde::Serialize;
use serde_json::Value;
use spacevault::hard::HardProof;
use spacevault::{AnyProof, Proof};
use std::io::Read;

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The challenge: 64 hex digits (default: the one the proof names).
    #[arg(long, value_name = "HEX")]
    pub challenge: Option<String>,
    /// The proof: JSON as `prove --json` prints it (the whole output, one
    /// plot's entry or its `best`), inline, in a file, or `-` for stdin.
    #[arg(long, value_name = "PROOF")]
    pub proof: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A proof document larger than this is refused: a `prove --json` of a
/// thousand plots is about 700 KiB.
const MAX_PROOF_BYTES: u64 = 16 << 20;

#[derive(Serialize)]
struct VerifyOutput {
    valid: bool,
    reason: Option<String>,
    challenge: String,
    plot_id: Option<String>,
    scheme: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    leaves: Option<Vec<u64>>,
    k: u8,
    distance: Option<String>,
    quality: Option<u32>,
    /// The parts of the document that were verified: `proof` for a lone
    /// proof, else `best` and `plots[i]` for each entry.
    verified: Vec<String>,
}

/// One proof to verify, named by where it is in the document.
struct Entry {
    name: String,
    proof: ProofJson,
}

/// The proof text: inline JSON, `-` for stdin, or a file, read up to
/// [`MAX_PROOF_BYTES`].
fn read_proof_text(arg: &str) -> Result<String> {
    if arg.trim_start().starts_with(['{', '[']) {
        return Ok(arg.to_string());
    }
    let (source, what): (Box<dyn Read>, String) = if arg == "-" {
        (Box::new(std::io::stdin()), "stdin".into())
    } else {
        let f =
            std::fs::File::open(arg).with_context(|| format!("reading the proof file {arg}"))?;
        (Box::new(f), format!("the proof file {arg}"))
    };
    let mut bytes = Vec::new();
    source
        .take(MAX_PROOF_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    if bytes.len() as u64 > MAX_PROOF_BYTES {
        bail!(
            "{what} is larger than {} MiB: not a proof document",
            MAX_PROOF_BYTES >> 20
        );
    }
    String::from_utf8(bytes).map_err(|_| anyhow!("{what} is not text: not a proof document"))
}

/// What a JSON value is, in a user's words.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A proof object's fields, each checked for its type with a message that
/// says which field is wrong and how.
fn proof_from(v: &Value, name: &str) -> Result<ProofJson> {
    let Some(o) = v.as_object() else {
        bail!(
            "{name} must be a JSON object with farmer_key, seed, k and nonce (as prove --json prints it), not {}",
            kind_of(v)
        );
    };
    let text = |field: &str, required: bool| -> Result<Option<String>> {
        match o.get(field) {
            None | Some(Value::Null) if !required => Ok(None),
            None | Some(Value::Null) => bail!("{name} has no {field}"),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => bail!(
                "{name}'s {field} must be a string of hex digits, not {}",
                kind_of(other)
            ),
        }
    };
    let number = |field: &str, required: bool, max: u64| -> Result<Option<u64>> {
        match o.get(field) {
            None | Some(Value::Null) if !required => Ok(None),
            None | Some(Value::Null) => bail!("{name} has no {field}"),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(x) if x <= max => Ok(Some(x)),
                _ => bail!("{name}'s {field} must be a whole number from 0 to {max}, not {n}"),
            },
            Some(other) => bail!("{name}'s {field} must be a number, not {}", kind_of(other)),
        }
    };
    let scheme = text("scheme", false)?;
    let hard = match scheme.as_deref() {
        None | Some("plain") => false,
        Some("hard") => true,
        Some(other) => bail!("{name}'s scheme must be plain or hard, not {other:?}"),
    };
    let leaves = match (hard, o.get("leaves")) {
        (false, _) => None,
        (true, None | Some(Value::Null)) => bail!("{name} has no leaves"),
        (true, Some(Value::Array(items))) => Some(
            items
                .iter()
                .map(|v| {
                    v.as_u64().ok_or_else(|| {
                        anyhow!("{name}'s leaves must be whole numbers, not {}", kind_of(v))
                    })
                })
                .collect::<Result<Vec<u64>>>()?,
        ),
        (true, Some(other)) => bail!("{name}'s leaves must be an array, not {}", kind_of(other)),
    };
    Ok(ProofJson {
        scheme,
        farmer_key: text("farmer_key", true)?.unwrap_or_default(),
        seed: text("seed", true)?.unwrap_or_default(),
        k: number("k", true, u8::MAX as u64)?.unwrap_or_default() as u8,
        nonce: number("nonce", !hard, u64::MAX)?,
        leaves,
        challenge: text("challenge", false)?,
        plot_id: text("plot_id", false)?,
        distance: text("distance", false)?,
        quality: number("quality", false, u32::MAX as u64)?.map(|q| q as u32),
    })
}

/// The proofs a document holds: a whole prove output gives `best` and every
/// plot's entry, anything else is one proof. Also the document's own
/// challenge, where it names one at the top.
fn entries_of(text: &str) -> Result<(Vec<Entry>, Option<String>)> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| anyhow!("the proof is not valid JSON ({e})"))?;
    let Some(best) = value.get("best") else {
        let proof = proof_from(&value, "the proof")?;
        return Ok((
            vec![Entry {
                name: "proof".into(),
                proof,
            }],
            None,
        ));
    };
    if best.is_null() {
        bail!("the prove output has no best proof (no plot answered)");
    }
    let mut entries = vec![Entry {
        name: "best".into(),
        proof: proof_from(best, "the prove output's best")?,
    }];
    match value.get("plots") {
        None | Some(Value::Null) => {}
        Some(Value::Array(plots)) => {
            for (i, p) in plots.iter().enumerate() {
                entries.push(Entry {
                    name: format!("plots[{i}]"),
                    proof: proof_from(p, &format!("the prove output's plots[{i}]"))?,
                });
            }
        }
        Some(other) => bail!(
            "the prove output's plots must be an array, not {}",
            kind_of(other)
        ),
    }
    let challenge = match value.get("challenge") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.clone()),
        Some(other) => bail!(
            "the prove output's challenge must be a string of hex digits, not {}",
            kind_of(other)
        ),
    };
    Ok((entries, challenge))
}

/// A proof's verdict: its verified values, or why it is invalid.
struct Verdict {
    proof: AnyProof,
    verified: Option<spacevault::Verified>,
    reason: Option<String>,
}

/// Verifies one proof for `challenge`, including every claim it makes
/// beyond the proof itself (its challenge, plot id, distance, quality): a
/// proof that claims more than it is worth is not valid.
fn judge(p: &ProofJson, challenge: &[u8; 32], name: &str) -> Result<Verdict> {
    let farmer_key = parse_hex32(&format!("{name}'s farmer_key"), &p.farmer_key)?;
    let seed = parse_hex32(&format!("{name}'s seed"), &p.seed)?;
    let proof = match (p.nonce, &p.leaves) {
        (_, Some(xs)) => AnyProof::Hard(HardProof {
            farmer_key,
            seed,
            k: p.k,
            xs: xs.clone(),
        }),
        (nonce, None) => AnyProof::Plain(Proof {
            farmer_key,
            seed,
            k: p.k,
            nonce: nonce.unwrap_or_default(),
        }),
    };
    let claimed_challenge = p
        .challenge
        .as_deref()
        .map(|c| parse_hex32(&format!("{name}'s challenge"), c))
        .transpose()?;
    let v = match proof.verify(challenge) {
        Ok(v) => v,
        Err(e) => {
            return Ok(Verdict {
                proof,
                verified: None,
                reason: Some(e.to_string()),
            })
        }
    };
    let differs = |claim: &Option<String>, real: &[u8; 32]| {
        claim
            .as_deref()
            .is_some_and(|c| !c.eq_ignore_ascii_case(&hex::encode(real)))
    };
    let reason = if claimed_challenge.is_some_and(|c| c != *challenge) {
        Some("the proof was made for a different challenge".to_string())
    } else if differs(&p.plot_id, &v.plot_id) {
        Some("the proof's plot_id does not match its farmer key, seed and k".into())
    } else if differs(&p.distance, &v.distance) {
        Some("the proof claims a distance its answer does not have".into())
    } else {
        p.quality
            .filter(|&q| q != v.quality)
            .map(|q| format!("the proof claims quality {q} but has {}", v.quality))
    };
    Ok(Verdict {
        proof,
        verified: Some(v),
        reason,
    })
}

/// Returns whether the proof is valid; a malformed proof is an error.
pub fn run(args: VerifyArgs) -> Result<bool> {
    let text = read_proof_text(&args.proof)?;
    let (entries, document_challenge) = entries_of(&text)?;
    let first = &entries[0];
    let challenge = match (&args.challenge, &document_challenge, &first.proof.challenge) {
        (Some(c), _, _) => parse_hex32("--challenge", c)?,
        (None, Some(c), _) => parse_hex32("the prove output's challenge", c)?,
        (None, None, Some(c)) => parse_hex32("the proof's challenge", c)?,
        (None, None, None) => bail!("give --challenge: the proof does not name its challenge"),
    };
    let document_differs = document_challenge
        .as_deref()
        .map(|c| parse_hex32("the prove output's challenge", c))
        .transpose()?
        .is_some_and(|c| c != challenge);
    let mut verdicts = Vec::with_capacity(entries.len());
    for e in &entries {
        verdicts.push(judge(&e.proof, &challenge, &e.name)?);
    }
    let mut reason = if document_differs {
        Some("the prove output was made for a different challenge".to_string())
    } else {
        entries
            .iter()
            .zip(&verdicts)
            .find_map(|(e, v)| v.reason.as_ref().map(|r| (e, r)))
            .map(|(e, r)| match entries.len() {
                1 => r.clone(),
                _ => format!("{}: {r}", e.name),
            })
    };
    // The best of a whole output must be one of its entries, and no entry
    // may beat it.
    if reason.is_none() && entries.len() > 1 {
        // Ranked as prove and the chain rank them: the score, the
        // scheme's tie-break, the plot id.
        let rank = |v: &Verdict| {
            v.verified
                .as_ref()
                .map(|x| (x.distance, v.proof.tiebreak(&challenge), x.plot_id))
        };
        let best = rank(&verdicts[0]);
        let listed = verdicts[1..].iter().any(|v| rank(v) == best);
        let beaten = verdicts[1..]
            .iter()
            .filter_map(rank)
            .any(|c| best.is_some_and(|b| (c.0, c.1) < (b.0, b.1)));
        if !listed {
            reason = Some("best: not one of the plots' entries".into());
        } else if beaten {
            reason = Some("best: a plot's entry beats it".into());
        }
    }
    let best = &verdicts[0];
    let out = VerifyOutput {
        valid: reason.is_none(),
        challenge: hex::encode(challenge),
        plot_id: best.verified.as_ref().map(|v| hex::encode(v.plot_id)),
        scheme: best.proof.scheme_name(),
        nonce: ProofJson::of(&best.proof).nonce,
        leaves: ProofJson::of(&best.proof).leaves,
        k: best.proof.k(),
        distance: best.verified.as_ref().map(|v| hex::encode(v.distance)),
        quality: best.verified.as_ref().map(|v| v.quality),
        verified: entries.iter().map(|e| e.name.clone()).collect(),
        reason,
    };
    if args.json {
        crate::cmd::print_json(&out)?;
    } else if out.valid {
        let also = match entries.len() - 1 {
            0 => String::new(),
            1 => ", as is the document's one plot entry".to_string(),
            n => format!(", as are all {n} plot entries of the document"),
        };
        outln!(
            "valid: quality {} (distance {}){also}",
            out.quality.unwrap_or_default(),
            out.distance.as_deref().unwrap_or_default()
        );
    } else {
        outln!("invalid: {}", out.reason.as_deref().unwrap_or("unknown"));
    }
    Ok(out.valid)
}
