//! A chain spec: what the vaults of one network agree on before the first
//! block. Its identity, the chain id, is the BLAKE3 hash of its canonical
//! encoding, so two nodes share a chain exactly when they share every field.

use crate::codec::{DecodeError, Reader, Writer};
use crate::kind::ProofKind;
use serde::{Deserialize, Serialize};

/// Bytes of the longest protocol register name: a challenge's, the
/// challenge register's name and the accused's key
/// (`challenge::DISPUTE_NAME_BYTES`), longer than the holder register's.
pub(crate) const PROTOCOL_REGISTER_NAME_BYTES: usize = 42;

/// Bytes of a challenge's register value (`challenge::Challenge`: a
/// receipt), which every chain's registers must carry.
pub(crate) const CHALLENGE_VALUE_BYTES: usize = 32 + 32 + 8 + 64;

/// Bytes of a holder registration's register value with a proof of
/// `kind` (`holders::Registration`): its nonce, then the proof as
/// `ChainProof` encodes it: kind, farmer key, seed, k, and the scheme's
/// own part (a plain proof's nonce; a table-chain proof's leaves).
pub(crate) fn registration_value_bytes(kind: ProofKind) -> usize {
    let own = match kind {
        ProofKind::Plain => 8,
        ProofKind::Hard => 8 << (spacevault::hard::construction::LEVELS - 1),
    };
    8 + 1 + 32 + 32 + 1 + own
}

/// The spec's encoding version.
pub const SPEC_VERSION: u16 = 8;

/// A chain's parameters, as `spacevault chain init` writes them (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSpec {
    /// Encoding version ([`SPEC_VERSION`]).
    pub version: u16,
    /// A name for people; part of the chain id, so that two test networks
    /// made at the same millisecond still differ.
    pub name: String,
    /// When the chain begins, in milliseconds since the Unix epoch: block 1
    /// is due one slot after it.
    pub genesis_unix_ms: u64,
    /// The length of a slot: slot `n` is due `n * slot_ms` after the
    /// genesis, and its challenge comes with its proof-of-time output.
    pub slot_ms: u64,
    /// Slots a block should take on average: the target is set so that the
    /// network's space makes one eligible proof every so many slots.
    pub block_interval_slots: u64,
    /// Blocks an era of the target: after each, the target is scaled by
    /// the slots the era took against the slots it should have taken.
    pub era_blocks: u64,
    /// Records the network is taken to hold at its start: the first era's
    /// target is set for them.
    pub initial_records: u64,
    /// Blocks below the head that no branch may replace.
    pub finality_depth: u64,
    /// Vaults that keep each blob (every vault when there are fewer).
    pub replication: u32,
    /// Transactions a block holds at most.
    pub max_block_txs: u32,
    /// Bytes an immutable blob holds at most.
    pub max_blob_bytes: u32,
    /// Bytes a register's name and value hold at most.
    pub max_register_name_bytes: u32,
    pub max_register_value_bytes: u32,
    /// Pieces of evidence of equivocation a block carries at most.
    pub max_block_evidence: u32,
    /// The proof-of-space schemes a block's proof may come from, each
    /// with the plot sizes it is taken from (one rule a kind).
    pub proofs: Vec<ProofRule>,
    /// The proof of time: squarings of the VDF a slot (`chain init`
    /// proposes a number from this machine's speed and the slot's length).
    pub pot_iterations: u64,
    /// Slots an era of the proof of time: one class group, one entropy.
    pub pot_era_slots: u64,
    /// Bits of each era's discriminant (512 to 1024, whole bytes).
    pub pot_discriminant_bits: u32,
}

/// A proof-of-space scheme a chain accepts, by its kind number, and the
/// plot sizes it takes proofs of that scheme from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofRule {
    pub kind: u8,
    pub min_k: u8,
    pub max_k: u8,
}

/// Why a spec refuses a proof ([`ChainSpec::refuses`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofRefusal {
    /// A kind the spec names no rule for (its number).
    Kind(u8),
    /// A plot size outside the kind's rule.
    Size(u8),
}

/// Rules a spec holds at most: one a scheme, and few schemes.
pub const MAX_PROOF_RULES: usize = 8;

/// A spec's proof rules as [`ChainSpec::encode`] writes them: a u8 count,
/// then kind, min_k and max_k a rule.
fn decode_proof_rules(r: &mut Reader) -> Result<Vec<ProofRule>, DecodeError> {
    let count = r.u8("proof rules")?;
    if usize::from(count) > MAX_PROOF_RULES {
        return Err(DecodeError::TooLong {
            what: "the spec's proof rules",
            len: u64::from(count),
            max: MAX_PROOF_RULES as u64,
        });
    }
    (0..count)
        .map(|_| {
            Ok(ProofRule {
                kind: r.u8("proof rule's kind")?,
                min_k: r.u8("proof rule's min k")?,
                max_k: r.u8("proof rule's max k")?,
            })
        })
        .collect()
}

/// Squarings of the VDF a millisecond of slot that [`ChainSpec::new`]
/// assumes: a timekeeper evaluates and proves (twice the squarings) well
/// within its slot at the 116,000 to 142,000 squarings a second measured
/// on the development machine (docs/BENCHMARKS.md).
pub const DEFAULT_POT_ITERATIONS_PER_MS: u64 = 50;

/// Slots a block takes on average in a new spec: two slots give blocks
/// every two seconds on one-second slots, and a second eligible proof in
/// the same slot about one block in five (a Poisson count of mean 1/2),
/// settled at once by the fork choice's order of proofs.
pub const DEFAULT_BLOCK_INTERVAL_SLOTS: u64 = 2;

/// Records a new spec's first target is set for: sixteen plots of k = 16.
/// A network that holds more makes its first era's blocks faster than
/// wanted, and the target follows within a few eras.
pub const DEFAULT_INITIAL_RECORDS: u64 = 1 << 20;

/// What is wrong with a spec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("the chain spec is not valid JSON for this version: {0}")]
    Json(String),
    #[error("the chain spec's {0}")]
    Invalid(String),
}

impl ChainSpec {
    /// A spec with the defaults: a block every [`DEFAULT_BLOCK_INTERVAL_SLOTS`]
    /// slots, eras of 32 blocks, the first target set for
    /// [`DEFAULT_INITIAL_RECORDS`] records, blocks final 128 deep, 4
    /// copies of each blob, blobs of 1 MiB and registers of 1 KiB.
    pub fn new(name: &str, genesis_unix_ms: u64, slot_ms: u64) -> ChainSpec {
        ChainSpec {
            version: SPEC_VERSION,
            name: name.to_string(),
            genesis_unix_ms,
            slot_ms,
            block_interval_slots: DEFAULT_BLOCK_INTERVAL_SLOTS,
            era_blocks: 32,
            initial_records: DEFAULT_INITIAL_RECORDS,
            finality_depth: 128,
            replication: 4,
            max_block_txs: 1024,
            max_blob_bytes: 1 << 20,
            max_register_name_bytes: 64,
            max_register_value_bytes: 1024,
            max_block_evidence: 4,
            proofs: vec![ProofRule {
                kind: ProofKind::Plain.number(),
                min_k: spacevault::MIN_K,
                max_k: spacevault::MAX_K,
            }],
            pot_iterations: slot_ms * DEFAULT_POT_ITERATIONS_PER_MS,
            pot_era_slots: 64,
            pot_discriminant_bits: 1024,
        }
    }

    /// The proof of time's parameters.
    pub fn time(&self) -> crate::time::TimeParams {
        crate::time::TimeParams {
            iterations: self.pot_iterations,
            era_slots: self.pot_era_slots,
            discriminant_bits: self.pot_discriminant_bits,
        }
    }

    /// Checks the fields' ranges and relations.
    pub fn validate(&self) -> Result<(), SpecError> {
        let bad = |why: String| Err(SpecError::Invalid(why));
        if self.version != SPEC_VERSION {
            return bad(format!(
                "version is {}, this build reads version {SPEC_VERSION}",
                self.version
            ));
        }
        if self.name.len() > 64 {
            return bad("name is longer than 64 bytes".into());
        }
        if !(10..=3_600_000).contains(&self.slot_ms) {
            return bad(format!("slot_ms is {}: use 10 to 3600000", self.slot_ms));
        }
        if !(1..=1000).contains(&self.block_interval_slots) {
            return bad("block_interval_slots must be 1 to 1000".into());
        }
        if !(1..=10_000).contains(&self.era_blocks) {
            return bad("era_blocks must be 1 to 10000".into());
        }
        if self.initial_records == 0 {
            return bad("initial_records must be at least 1".into());
        }
        if !(1..=1_000_000).contains(&self.finality_depth) {
            return bad("finality_depth must be 1 to 1000000".into());
        }
        if self.replication == 0 {
            return bad("replication must be at least 1".into());
        }
        if self.max_blob_bytes == 0 || self.max_blob_bytes > 64 << 20 {
            return bad("max_blob_bytes must be 1 to 64 MiB".into());
        }
        if self.max_register_name_bytes == 0 || self.max_register_name_bytes > 1024 {
            return bad("max_register_name_bytes must be 1 to 1024".into());
        }
        if self.max_register_value_bytes > 64 << 10 {
            return bad("max_register_value_bytes must be at most 64 KiB".into());
        }
        // Past the bootstrap era only registered vaults hold blobs: a chain
        // whose registers cannot carry a registration would keep none.
        if (self.max_register_name_bytes as usize) < PROTOCOL_REGISTER_NAME_BYTES {
            return bad(format!(
                "max_register_name_bytes must be at least {PROTOCOL_REGISTER_NAME_BYTES}, a challenge register's name"
            ));
        }
        for rule in &self.proofs {
            let Some(kind) = ProofKind::from_number(rule.kind) else {
                continue;
            };
            let needed = registration_value_bytes(kind);
            if (self.max_register_value_bytes as usize) < needed {
                return bad(format!(
                    "max_register_value_bytes must be at least {needed}, a holder registration with a {} proof",
                    kind.name()
                ));
            }
        }
        if (self.max_register_value_bytes as usize) < CHALLENGE_VALUE_BYTES {
            return bad(format!(
                "max_register_value_bytes must be at least {CHALLENGE_VALUE_BYTES}, a challenge to a holder"
            ));
        }
        if self.max_block_txs > 1 << 16 {
            return bad("max_block_txs must be at most 65536".into());
        }
        if self.max_block_evidence > 64 {
            return bad("max_block_evidence must be at most 64".into());
        }
        self.check_proofs().map_err(SpecError::Invalid)?;
        if let Err(e) = self.time().check() {
            return bad(format!("pot_* fields: {e}"));
        }
        if self.pot_iterations > 1 << 40 {
            return bad("pot_iterations must be at most 2^40".into());
        }
        Ok(())
    }

    /// The rules of `proofs`: at least one, at most [`MAX_PROOF_RULES`],
    /// one a kind, each a kind this build knows with a size range its
    /// scheme supports.
    fn check_proofs(&self) -> Result<(), String> {
        if self.proofs.is_empty() || self.proofs.len() > MAX_PROOF_RULES {
            return Err(format!(
                "proofs holds {} rules: use 1 to {MAX_PROOF_RULES}",
                self.proofs.len()
            ));
        }
        for (i, rule) in self.proofs.iter().enumerate() {
            let Some(kind) = ProofKind::from_number(rule.kind) else {
                return Err(format!(
                    "proof kind {} is not one this build knows",
                    rule.kind
                ));
            };
            if self.proofs[..i].iter().any(|r| r.kind == rule.kind) {
                return Err(format!("proof kind {} has two rules", rule.kind));
            }
            let sizes = kind.sizes();
            if !sizes.contains(&rule.min_k)
                || !sizes.contains(&rule.max_k)
                || rule.min_k > rule.max_k
            {
                return Err(format!(
                    "proof kind {} ({}): k range {}..={} is not within {}..={}",
                    rule.kind,
                    kind.name(),
                    rule.min_k,
                    rule.max_k,
                    sizes.start(),
                    sizes.end()
                ));
            }
        }
        Ok(())
    }

    /// The plot sizes the chain takes proofs of `kind` from, or None when
    /// it does not accept that kind.
    pub fn sizes(&self, kind: ProofKind) -> Option<std::ops::RangeInclusive<u8>> {
        self.proofs
            .iter()
            .find(|r| r.kind == kind.number())
            .map(|r| r.min_k..=r.max_k)
    }

    /// Why the chain refuses proofs of `kind` from a plot of size `k`, if
    /// it does.
    pub fn refuses(&self, kind: ProofKind, k: u8) -> Option<ProofRefusal> {
        match self.sizes(kind) {
            None => Some(ProofRefusal::Kind(kind.number())),
            Some(sizes) if !sizes.contains(&k) => Some(ProofRefusal::Size(k)),
            Some(_) => None,
        }
    }

    /// Accepts proofs of `kind` from plots of `min_k` to `max_k`, in place
    /// of any rule the spec had for it.
    pub fn set_sizes(&mut self, kind: ProofKind, min_k: u8, max_k: u8) {
        let rule = ProofRule {
            kind: kind.number(),
            min_k,
            max_k,
        };
        match self.proofs.iter_mut().find(|r| r.kind == rule.kind) {
            Some(r) => *r = rule,
            None => self.proofs.push(rule),
        }
    }

    /// Parses and checks a spec file's JSON.
    pub fn from_json(text: &str) -> Result<ChainSpec, SpecError> {
        let spec: ChainSpec =
            serde_json::from_str(text).map_err(|e| SpecError::Json(e.to_string()))?;
        spec.validate()?;
        Ok(spec)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a spec serializes")
    }

    /// The canonical encoding the chain id hashes.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(self.version)
            .bytes(self.name.as_bytes())
            .u64(self.genesis_unix_ms)
            .u64(self.slot_ms)
            .u64(self.block_interval_slots)
            .u64(self.era_blocks)
            .u64(self.initial_records)
            .u64(self.finality_depth)
            .u32(self.replication)
            .u32(self.max_block_txs)
            .u32(self.max_blob_bytes)
            .u32(self.max_register_name_bytes)
            .u32(self.max_register_value_bytes)
            .u32(self.max_block_evidence)
            .u8(u8::try_from(self.proofs.len()).unwrap_or(u8::MAX));
        for rule in &self.proofs {
            w.u8(rule.kind).u8(rule.min_k).u8(rule.max_k);
        }
        w.u64(self.pot_iterations)
            .u64(self.pot_era_slots)
            .u32(self.pot_discriminant_bits);
        w.finish()
    }

    /// Decodes [`encode`](Self::encode)'s bytes.
    pub fn decode(bytes: &[u8]) -> Result<ChainSpec, DecodeError> {
        let mut r = Reader::new(bytes);
        let version = r.u16("spec version")?;
        if version != SPEC_VERSION {
            return Err(DecodeError::UnknownVersion {
                what: "chain spec",
                version,
            });
        }
        let name = String::from_utf8(r.bytes("spec name", 64)?.to_vec())
            .map_err(|_| DecodeError::Invalid("the spec's name is not UTF-8"))?;
        let spec = ChainSpec {
            version,
            name,
            genesis_unix_ms: r.u64("genesis")?,
            slot_ms: r.u64("slot")?,
            block_interval_slots: r.u64("block interval")?,
            era_blocks: r.u64("era blocks")?,
            initial_records: r.u64("initial records")?,
            finality_depth: r.u64("finality depth")?,
            replication: r.u32("replication")?,
            max_block_txs: r.u32("max block txs")?,
            max_blob_bytes: r.u32("max blob bytes")?,
            max_register_name_bytes: r.u32("max register name")?,
            max_register_value_bytes: r.u32("max register value")?,
            max_block_evidence: r.u32("max block evidence")?,
            proofs: decode_proof_rules(&mut r)?,
            pot_iterations: r.u64("pot iterations")?,
            pot_era_slots: r.u64("pot era slots")?,
            pot_discriminant_bits: r.u32("pot discriminant bits")?,
        };
        r.finish()?;
        Ok(spec)
    }

    /// BLAKE3 of the canonical encoding.
    pub fn chain_id(&self) -> [u8; 32] {
        *blake3::hash(&self.encode()).as_bytes()
    }

    /// When slot `slot` is due (Unix ms): `slot` slot lengths after the
    /// genesis.
    pub fn slot_due_ms(&self, slot: u64) -> u64 {
        self.genesis_unix_ms
            .saturating_add(slot.saturating_mul(self.slot_ms))
    }

    /// The slot the clock is in at `now_ms` (Unix ms): the last one due.
    pub fn clock_slot(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.genesis_unix_ms) / self.slot_ms
    }

    /// How the chain's target moves.
    pub fn eras(&self) -> crate::eligibility::Eras {
        crate::eligibility::Eras {
            era_blocks: self.era_blocks,
            block_interval_slots: self.block_interval_slots,
        }
    }

    /// The target block 1 must meet.
    pub fn initial_target(&self) -> crate::eligibility::Target {
        crate::eligibility::Target::for_records(self.initial_records, self.block_interval_slots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_id_covers_every_field_and_survives_json() {
        let spec = ChainSpec::new("test", 1_700_000_000_000, 1000);
        spec.validate().unwrap();
        let again = ChainSpec::from_json(&spec.to_json()).unwrap();
        assert_eq!(again.chain_id(), spec.chain_id());
        assert_eq!(ChainSpec::decode(&spec.encode()).unwrap(), spec);
        let mut other = spec.clone();
        other.replication = 3;
        assert_ne!(other.chain_id(), spec.chain_id());
        let mut other = spec.clone();
        other.name.push('!');
        assert_ne!(other.chain_id(), spec.chain_id());
    }

    #[test]
    fn bad_specs_say_which_field() {
        let mut spec = ChainSpec::new("t", 0, 1000);
        spec.block_interval_slots = 0;
        assert!(spec
            .validate()
            .unwrap_err()
            .to_string()
            .contains("block_interval_slots"));
        let json = ChainSpec::new("t", 0, 1000)
            .to_json()
            .replace("\"slot_ms\"", "\"slots\"");
        assert!(matches!(
            ChainSpec::from_json(&json),
            Err(SpecError::Json(_))
        ));
        let mut spec = ChainSpec::new("t", 0, 1000);
        spec.set_sizes(ProofKind::Plain, 12, 20);
        assert!(spec.validate().is_err());
    }

    #[test]
    fn every_limit_holds_at_its_bound_and_not_past_it() {
        let ok = |f: &dyn Fn(&mut ChainSpec)| {
            let mut spec = ChainSpec::new("t", 0, 1000);
            f(&mut spec);
            spec.validate().is_ok()
        };
        assert!(ok(&|s| s.name = "n".repeat(64)));
        assert!(!ok(&|s| s.name = "n".repeat(65)));
        assert!(ok(&|s| s.max_blob_bytes = 64 << 20));
        assert!(!ok(&|s| s.max_blob_bytes = (64 << 20) + 1));
        assert!(!ok(&|s| s.max_blob_bytes = 0));
        assert!(ok(&|s| s.max_register_name_bytes = 1024));
        assert!(!ok(&|s| s.max_register_name_bytes = 1025));
        assert!(!ok(&|s| s.max_register_name_bytes = 0));
        assert!(ok(&|s| s.max_register_value_bytes = 64 << 10));
        assert!(!ok(&|s| s.max_register_value_bytes = (64 << 10) + 1));
        assert!(ok(&|s| s.max_block_txs = 1 << 16));
        assert!(!ok(&|s| s.max_block_txs = (1 << 16) + 1));
        assert!(ok(&|s| s.slot_ms = 10));
        assert!(!ok(&|s| s.slot_ms = 9));
        assert!(ok(&|s| s.block_interval_slots = 1000));
        assert!(!ok(&|s| s.block_interval_slots = 1001));
        assert!(ok(&|s| s.era_blocks = 1));
        assert!(!ok(&|s| s.era_blocks = 0));
        assert!(ok(&|s| s.era_blocks = 10_000));
        assert!(!ok(&|s| s.era_blocks = 10_001));
        assert!(ok(&|s| s.initial_records = 1));
        assert!(!ok(&|s| s.initial_records = 0));
        assert!(ok(&|s| s.finality_depth = 1));
        assert!(!ok(&|s| s.finality_depth = 0));
        assert!(ok(&|s| s.finality_depth = 1_000_000));
        assert!(!ok(&|s| s.finality_depth = 1_000_001));
        assert!(ok(&|s| s.pot_iterations = 1));
        assert!(!ok(&|s| s.pot_iterations = 0));
        assert!(ok(&|s| s.pot_iterations = 1 << 40));
        assert!(!ok(&|s| s.pot_iterations = (1 << 40) + 1));
        assert!(!ok(&|s| s.pot_era_slots = 0));
        assert!(ok(&|s| s.pot_discriminant_bits = 512));
        assert!(!ok(&|s| s.pot_discriminant_bits = 504));
        assert!(!ok(&|s| s.pot_discriminant_bits = 1032));
        assert!(ok(&|s| s.slot_ms = 3_600_000));
        assert!(!ok(&|s| s.slot_ms = 3_600_001));
        assert!(!ok(&|s| s.replication = 0));
        // Each end of the k range on its own, and the two crossed.
        let (min, max) = (spacevault::MIN_K, spacevault::MAX_K);
        assert!(ok(&|s| s.set_sizes(ProofKind::Plain, min, min)));
        assert!(ok(&|s| s.set_sizes(ProofKind::Plain, max, max)));
        assert!(!ok(&|s| s.set_sizes(ProofKind::Plain, min - 1, max)));
        assert!(!ok(&|s| s.set_sizes(ProofKind::Plain, min, max + 1)));
        assert!(!ok(&|s| s.set_sizes(ProofKind::Plain, min + 1, min)));
        // Proof rules: none, too many, an unknown kind, a kind twice.
        assert!(!ok(&|s| s.proofs.clear()));
        let mut many = ChainSpec::new("t", 0, 1000);
        many.proofs = vec![many.proofs[0]; MAX_PROOF_RULES + 1];
        assert!(many
            .validate()
            .unwrap_err()
            .to_string()
            .contains("proofs holds 9 rules"));
        assert!(!ok(&|s| s.proofs[0].kind = 0));
        assert!(!ok(&|s| s.proofs[0].kind = 3));
        // The hard scheme's sizes are its own: 16 to 32.
        assert!(ok(&|s| s.set_sizes(ProofKind::Hard, 16, 32)));
        assert!(!ok(&|s| s.set_sizes(ProofKind::Hard, 16, 33)));
        assert!(!ok(&|s| s.set_sizes(ProofKind::Hard, 15, 32)));
        assert!(!ok(&|s| s.proofs.push(s.proofs[0])));
        let mut spec = ChainSpec::new("t", 0, 1000);
        spec.version = SPEC_VERSION + 1;
        assert!(spec.validate().unwrap_err().to_string().contains("version"));
    }

    #[test]
    fn a_spec_with_more_proof_rules_than_allowed_does_not_decode() {
        let spec = ChainSpec::new("t", 0, 1000);
        let mut bytes = spec.encode();
        let rule = [1u8, 1, spacevault::MIN_K, spacevault::MAX_K];
        let at = bytes
            .windows(4)
            .position(|w| w == rule)
            .expect("the one rule, after its count");
        assert_eq!(ChainSpec::decode(&bytes).unwrap(), spec);
        bytes[at] = MAX_PROOF_RULES as u8 + 1;
        assert!(matches!(
            ChainSpec::decode(&bytes),
            Err(DecodeError::TooLong { len: 9, max: 8, .. })
        ));
    }
}
