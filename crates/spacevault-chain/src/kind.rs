//! The proof-of-space schemes a chain may name: each a kind number that
//! blocks carry before a proof's own fields, and that specs list with the
//! plot sizes they accept.

use spacevault::{Hard, Plain, ProofScheme};

/// The proof-of-space scheme a proof comes from, as blocks carry it: the
/// scheme's [`ProofScheme::KIND`] number. A kind this build does not know
/// cannot be decoded (its proof's fields are the scheme's own); a kind
/// the chain's spec does not accept is refused by validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProofKind {
    /// [`spacevault::Plain`]: a record of one table of BLAKE3 hashes.
    Plain,
    /// [`spacevault::Hard`]: the leaves of one top entry of a table
    /// chain.
    Hard,
}

/// A kind is written by its scheme's name in reports.
impl serde::Serialize for ProofKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl ProofKind {
    /// The kind's number in blocks and specs.
    pub fn number(self) -> u8 {
        match self {
            ProofKind::Plain => Plain::KIND,
            ProofKind::Hard => Hard::KIND,
        }
    }

    /// The kind numbered `n`, if this build knows it.
    pub fn from_number(n: u8) -> Option<ProofKind> {
        match n {
            Plain::KIND => Some(ProofKind::Plain),
            Hard::KIND => Some(ProofKind::Hard),
            _ => None,
        }
    }

    /// The scheme's name for people.
    pub fn name(self) -> &'static str {
        match self {
            ProofKind::Plain => Plain::NAME,
            ProofKind::Hard => Hard::NAME,
        }
    }

    /// The plot sizes the scheme supports.
    pub fn sizes(self) -> std::ops::RangeInclusive<u8> {
        match self {
            ProofKind::Plain => Plain::MIN_K..=Plain::MAX_K,
            ProofKind::Hard => Hard::MIN_K..=Hard::MAX_K,
        }
    }

    /// Records of the shared scale a plot of size `k` stands for
    /// ([`ProofScheme::records`]).
    pub fn records(self, k: u8) -> u64 {
        match self {
            ProofKind::Plain => Plain::records(k),
            ProofKind::Hard => Hard::records(k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{DecodeError, Reader, Writer};
    use crate::types::ChainProof;

    #[test]
    fn a_proof_begins_with_its_kind_and_an_unknown_kind_is_refused() {
        let proof = ChainProof::plain([1; 32], [2; 32], 16, 3);
        let mut w = Writer::new();
        proof.encode_into(&mut w);
        let mut bytes = w.finish();
        assert_eq!(bytes.len(), 74);
        assert_eq!(bytes[0], 1);
        assert_eq!(ProofKind::from_number(1), Some(ProofKind::Plain));
        for unknown in [0u8, 3, 255] {
            assert_eq!(ProofKind::from_number(unknown), None);
            bytes[0] = unknown;
            assert_eq!(
                ChainProof::decode_from(&mut Reader::new(&bytes)),
                Err(DecodeError::UnknownKind {
                    what: "proof",
                    kind: unknown
                })
            );
        }
    }

    #[test]
    fn the_kinds_are_the_plot_librarys_schemes() {
        assert_eq!(ProofKind::Plain.number(), Plain::KIND);
        assert_eq!(ProofKind::Plain.name(), "plain");
        assert_eq!(
            ProofKind::Plain.sizes(),
            spacevault::MIN_K..=spacevault::MAX_K
        );
        assert_eq!(ProofKind::Plain.records(20), 1 << 20);
        assert_eq!(ProofKind::Hard.number(), Hard::KIND);
        assert_eq!(ProofKind::Hard.name(), "hard");
        assert_eq!(ProofKind::Hard.sizes(), 16..=32);
        assert_eq!(ProofKind::Hard.records(20), 1 << 20);
        for kind in [ProofKind::Plain, ProofKind::Hard] {
            assert_eq!(ProofKind::from_number(kind.number()), Some(kind));
        }
    }
}
