//! Plots and proofs of either scheme, for the tools and the node that
//! take both: a plot file says which it holds by its magic bytes, a proof
//! by its kind, and both answer on the one scale of [`crate::scheme`].

use crate::hard::{HardAnswer, HardPlotFile, HardProof};
use crate::reader::{PlotFile, ReadError};
use crate::scheme::{Hard, Plain, ProofScheme};
use crate::verify::{Proof, Verified, VerifyError};
use std::io::Read;
use std::path::Path;

/// A proof of either scheme.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AnyProof {
    Plain(Proof),
    Hard(HardProof),
}

impl AnyProof {
    /// The scheme's kind number ([`ProofScheme::KIND`]).
    pub fn kind(&self) -> u8 {
        match self {
            AnyProof::Plain(_) => Plain::KIND,
            AnyProof::Hard(_) => Hard::KIND,
        }
    }

    pub fn scheme_name(&self) -> &'static str {
        match self {
            AnyProof::Plain(_) => Plain::NAME,
            AnyProof::Hard(_) => Hard::NAME,
        }
    }

    pub fn farmer_key(&self) -> &[u8; 32] {
        match self {
            AnyProof::Plain(p) => &p.farmer_key,
            AnyProof::Hard(p) => &p.farmer_key,
        }
    }

    pub fn seed(&self) -> &[u8; 32] {
        match self {
            AnyProof::Plain(p) => &p.seed,
            AnyProof::Hard(p) => &p.seed,
        }
    }

    pub fn k(&self) -> u8 {
        match self {
            AnyProof::Plain(p) => p.k,
            AnyProof::Hard(p) => p.k,
        }
    }

    pub fn plot_id(&self) -> [u8; 32] {
        match self {
            AnyProof::Plain(p) => Plain::plot_id(p),
            AnyProof::Hard(p) => Hard::plot_id(p),
        }
    }

    /// What its scheme checks without hashing.
    pub fn well_formed(&self) -> Result<(), VerifyError> {
        match self {
            AnyProof::Plain(p) => Plain::well_formed(p),
            AnyProof::Hard(p) => Hard::well_formed(p),
        }
    }

    /// Checks the proof for `challenge`; the distance is its score on the
    /// shared scale.
    pub fn verify(&self, challenge: &[u8; 32]) -> Result<Verified, VerifyError> {
        match self {
            AnyProof::Plain(p) => Plain::verify(p, challenge),
            AnyProof::Hard(p) => Hard::verify(p, challenge),
        }
    }

    /// What a chain breaks ties between equal scores with, after the
    /// score and before the plot id: the plain proof's nonce, the hard
    /// proof's first leaf on the path `challenge` selects. Both are known
    /// at lookup ([`Lookup::tiebreak`]).
    pub fn tiebreak(&self, challenge: &[u8; 32]) -> u64 {
        match self {
            AnyProof::Plain(p) => p.nonce,
            AnyProof::Hard(p) => {
                let pair = crate::hard::construction::path_pair(
                    challenge,
                    crate::hard::construction::LEVELS,
                );
                // A proof of the wrong length is refused by verification;
                // its tie-break is never compared.
                p.xs.get(2 * pair).copied().unwrap_or(u64::MAX)
            }
        }
    }

    /// Records of the shared scale its plot stands for.
    pub fn records(&self) -> u64 {
        match self {
            AnyProof::Plain(p) => Plain::records(p.k),
            AnyProof::Hard(p) => Hard::records(p.k),
        }
    }
}

/// An open plot of either scheme.
pub enum AnyPlot {
    Plain(PlotFile),
    Hard(HardPlotFile),
}

/// A plot's best score for a challenge, before its whole proof is read
/// (for a table-chain plot, fourteen reads more: only the winner's is
/// worth them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lookup {
    pub distance: [u8; 32],
    pub quality: u32,
    /// Reads the lookup made.
    pub reads: u64,
    answer: Answered,
}

impl Lookup {
    /// The tie-break of the proof the lookup leads to
    /// ([`AnyProof::tiebreak`]).
    pub fn tiebreak(&self) -> u64 {
        match &self.answer {
            Answered::Plain(nonce) => *nonce,
            Answered::Hard(a) => a.pair.0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Answered {
    Plain(u64),
    Hard(HardAnswer),
}

/// The scheme a file's first bytes name: 1 for a plain plot, 2 for a
/// table-chain one, None for anything else.
pub fn kind_of_file(path: &Path) -> std::io::Result<Option<u8>> {
    let mut magic = [0u8; 8];
    // A FIFO or device is refused here, not waited on.
    let (mut f, _) = crate::aligned::open_read(path, false)?;
    let mut got = 0;
    while got < magic.len() {
        match f.read(&mut magic[got..])? {
            0 => return Ok(None),
            n => got += n,
        }
    }
    Ok(if magic == crate::format::MAGIC {
        Some(Plain::KIND)
    } else if magic == crate::hard::format::MAGIC {
        Some(Hard::KIND)
    } else {
        None
    })
}

impl AnyPlot {
    /// Opens a plot of either scheme, by its magic bytes; a file of
    /// neither is refused as the plain reader refuses it.
    pub fn open(path: impl AsRef<Path>) -> Result<AnyPlot, ReadError> {
        let path = path.as_ref();
        // Anything that is not a readable plot of the second kind is left
        // to the plain reader, which names what is wrong with it.
        let kind = kind_of_file(path).ok().flatten();
        Ok(match kind {
            Some(Hard::KIND) => {
                let plot = HardPlotFile::open(path)?;
                // Kind 2's proofs have five levels; plots of other depths
                // are the attack harness's, and their proofs no verifier
                // of the kind would take.
                let levels = plot.header().levels;
                if levels != crate::hard::construction::LEVELS {
                    return Err(ReadError::Format {
                        path: path.to_path_buf(),
                        cause: crate::format::FormatError::InvalidLayout(format!(
                            "a table-chain plot of {levels} levels: the hard scheme's proofs have {}",
                            crate::hard::construction::LEVELS
                        )),
                    });
                }
                AnyPlot::Hard(plot)
            }
            _ => AnyPlot::Plain(PlotFile::open(path)?),
        })
    }

    pub fn kind(&self) -> u8 {
        match self {
            AnyPlot::Plain(_) => Plain::KIND,
            AnyPlot::Hard(_) => Hard::KIND,
        }
    }

    pub fn scheme_name(&self) -> &'static str {
        match self {
            AnyPlot::Plain(_) => Plain::NAME,
            AnyPlot::Hard(_) => Hard::NAME,
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            AnyPlot::Plain(p) => p.path(),
            AnyPlot::Hard(p) => p.path(),
        }
    }

    pub fn k(&self) -> u8 {
        match self {
            AnyPlot::Plain(p) => p.header().k(),
            AnyPlot::Hard(p) => p.header().k,
        }
    }

    pub fn farmer_key(&self) -> &[u8; 32] {
        match self {
            AnyPlot::Plain(p) => &p.header().farmer_key,
            AnyPlot::Hard(p) => &p.header().farmer_key,
        }
    }

    pub fn seed(&self) -> &[u8; 32] {
        match self {
            AnyPlot::Plain(p) => &p.header().seed,
            AnyPlot::Hard(p) => &p.header().seed,
        }
    }

    pub fn plot_id(&self) -> &[u8; 32] {
        match self {
            AnyPlot::Plain(p) => &p.header().plot_id,
            AnyPlot::Hard(p) => &p.header().plot_id,
        }
    }

    /// The plot's best score for `challenge`; None only for a table-chain
    /// plot without top entries.
    pub fn lookup(&self, challenge: &[u8; 32]) -> Result<Option<Lookup>, ReadError> {
        match self {
            AnyPlot::Plain(p) => {
                let a = p.prove(challenge)?;
                Ok(Some(Lookup {
                    distance: a.distance,
                    quality: a.quality,
                    reads: a.reads,
                    answer: Answered::Plain(a.nonce),
                }))
            }
            AnyPlot::Hard(p) => {
                let before = p.reads();
                Ok(p.prove(challenge)?.map(|a| Lookup {
                    distance: a.score,
                    quality: crate::construction::quality(&a.score),
                    reads: p.reads() - before,
                    answer: Answered::Hard(a),
                }))
            }
        }
    }

    /// The whole proof of a lookup of this plot, checked against what the
    /// lookup found.
    ///
    /// # Panics
    /// If `lookup` was made by a plot of the other scheme.
    pub fn proof(&self, lookup: &Lookup) -> Result<AnyProof, ReadError> {
        match (self, &lookup.answer) {
            (AnyPlot::Plain(p), Answered::Plain(nonce)) => {
                let h = p.header();
                Ok(AnyProof::Plain(Proof {
                    farmer_key: h.farmer_key,
                    seed: h.seed,
                    k: h.k(),
                    nonce: *nonce,
                }))
            }
            (AnyPlot::Hard(p), Answered::Hard(a)) => Ok(AnyProof::Hard(p.proof(a)?)),
            _ => panic!("a lookup is proved by the plot that made it"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_kind_of_plot_opens_and_proves_on_one_scale() {
        let dir = tempfile::tempdir().unwrap();
        let mut plain = crate::PlotOptions::new(16, [1; 32], [2; 32]);
        plain.threads = 2;
        let plain = crate::plot(&plain, dir.path(), &crate::plot::NoProgress).unwrap();
        let mut hard = crate::hard::HardPlotOptions::new(16, [1; 32], [2; 32]);
        hard.threads = 2;
        let hard = crate::hard::plot(&hard, dir.path()).unwrap();
        let challenge = [3; 32];
        for (path, kind) in [(&plain.path, 1), (&hard.path, 2)] {
            assert_eq!(kind_of_file(path).unwrap(), Some(kind));
            let plot = AnyPlot::open(path).unwrap();
            assert_eq!(plot.kind(), kind);
            let lookup = plot.lookup(&challenge).unwrap().unwrap();
            let proof = plot.proof(&lookup).unwrap();
            assert_eq!(proof.kind(), kind);
            let v = proof.verify(&challenge).unwrap();
            assert_eq!((v.distance, v.quality), (lookup.distance, lookup.quality));
            assert_eq!(&v.plot_id, plot.plot_id());
            assert_eq!(proof.tiebreak(&challenge), lookup.tiebreak());
        }
        let junk = dir.path().join("junk.plot");
        std::fs::write(&junk, b"not a plot").unwrap();
        assert_eq!(kind_of_file(&junk).unwrap(), None);
        assert!(AnyPlot::open(&junk).is_err());
    }
}
