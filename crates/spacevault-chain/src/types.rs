//! Blocks, their proofs of space, register transactions and the messages
//! vaults gossip, with their canonical encodings and hashes
//! (`docs/PROTOCOL.md` gives every field).

use crate::codec::{DecodeError, Reader, Writer};
use crate::keys::{self, Keypair};
use crate::kind::ProofKind;
use crate::sig_cache::SigCache;
use crate::time::FORM_BYTES;
use spacevault::AnyProof;
use spacevault_meter::{self as meter, Op};

/// The encoding version of blocks and messages.
pub const PROTOCOL_VERSION: u16 = 5;

/// Context strings of BLAKE3's `derive_key`, one per kind of hash, so that
/// no hash of one kind can stand for another.
pub mod context {
    pub const BLOCK: &str = "spacevault 2026-11 chain block v1";
    pub const GENESIS: &str = crate::genesis::CONTEXT;
    pub const REGISTER_TX: &str = "spacevault 2026-11 chain register tx v1";
    pub const BODY_ROOT: &str = "spacevault 2026-11 chain body root v1";
    pub const EQUIVOCATION: &str = "spacevault 2026-11 chain equivocation v1";
    pub const RECEIPT: &str = "spacevault 2026-11 storage receipt v2";
    pub const ANNOUNCE: &str = "spacevault 2026-11 vault announcement v1";
}

pub(crate) fn derive(context: &str, bytes: &[u8]) -> [u8; 32] {
    blake3::derive_key(context, bytes)
}

/// A proof of space as blocks carry it: a proof of one of the schemes this
/// build knows ([`ProofKind`]), which names its plot and what of the plot
/// answers a challenge. A hard proof always has [`HARD_LEAVES`] leaves,
/// so that its encoding is the proof itself.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChainProof(AnyProof);

/// The leaves of a kind 2 proof (the hard scheme's five levels).
pub const HARD_LEAVES: usize = 1 << (spacevault::hard::construction::LEVELS - 1);

impl ChainProof {
    /// A proof of the plain scheme (kind 1).
    pub fn plain(farmer_key: [u8; 32], seed: [u8; 32], k: u8, nonce: u64) -> ChainProof {
        ChainProof(AnyProof::Plain(spacevault::Proof {
            farmer_key,
            seed,
            k,
            nonce,
        }))
    }

    /// A proof of the hard scheme (kind 2): the leaves of one top entry's
    /// tree in proof order.
    pub fn hard(farmer_key: [u8; 32], seed: [u8; 32], k: u8, xs: [u64; HARD_LEAVES]) -> ChainProof {
        ChainProof(AnyProof::Hard(spacevault::hard::HardProof {
            farmer_key,
            seed,
            k,
            xs: xs.to_vec(),
        }))
    }

    /// A prover's proof as blocks carry it; a hard proof of another
    /// number of leaves is no proof of kind 2.
    pub fn from_any(proof: AnyProof) -> Result<ChainProof, spacevault::VerifyError> {
        if let AnyProof::Hard(p) = &proof {
            if p.xs.len() != HARD_LEAVES {
                return Err(spacevault::VerifyError::LeafCount {
                    expected: HARD_LEAVES,
                    actual: p.xs.len(),
                });
            }
        }
        Ok(ChainProof(proof))
    }

    /// The proof as its scheme gives it.
    pub fn any(&self) -> &AnyProof {
        &self.0
    }

    /// The plain scheme's proof, to edit, if the proof is one.
    pub fn plain_mut(&mut self) -> Option<&mut spacevault::Proof> {
        match &mut self.0 {
            AnyProof::Plain(p) => Some(p),
            AnyProof::Hard(_) => None,
        }
    }

    pub fn kind(&self) -> ProofKind {
        match self.0 {
            AnyProof::Plain(_) => ProofKind::Plain,
            AnyProof::Hard(_) => ProofKind::Hard,
        }
    }

    /// The key of the plot the proof comes from: the key that signs the
    /// block.
    pub fn farmer_key(&self) -> &[u8; 32] {
        self.0.farmer_key()
    }

    pub fn seed(&self) -> &[u8; 32] {
        self.0.seed()
    }

    pub fn k(&self) -> u8 {
        self.0.k()
    }

    pub fn encode_into(&self, w: &mut Writer) {
        w.u8(self.kind().number())
            .fixed(self.farmer_key())
            .fixed(self.seed())
            .u8(self.k());
        match &self.0 {
            AnyProof::Plain(p) => {
                w.u64(p.nonce);
            }
            AnyProof::Hard(p) => {
                // HARD_LEAVES of them: every way to make a ChainProof says so.
                for &x in &p.xs {
                    w.u64(x);
                }
            }
        }
    }

    pub fn decode_from(r: &mut Reader) -> Result<ChainProof, DecodeError> {
        let number = r.u8("proof's kind")?;
        let kind = ProofKind::from_number(number).ok_or(DecodeError::UnknownKind {
            what: "proof",
            kind: number,
        })?;
        let farmer_key = r.array("proof's farmer key")?;
        let seed = r.array("proof's seed")?;
        let k = r.u8("proof's k")?;
        Ok(match kind {
            ProofKind::Plain => ChainProof::plain(farmer_key, seed, k, r.u64("proof's nonce")?),
            ProofKind::Hard => {
                let mut xs = [0u64; HARD_LEAVES];
                for x in &mut xs {
                    *x = r.u64("proof's leaf")?;
                }
                ChainProof::hard(farmer_key, seed, k, xs)
            }
        })
    }

    /// What its scheme checks of it without hashing (k's range, the
    /// nonce's or the leaves'): all a vault checks of an orphan's proof.
    pub fn well_formed(&self) -> Result<(), spacevault::VerifyError> {
        self.0.well_formed()
    }

    /// Verifies the proof for `challenge` by its scheme (the plain one:
    /// one derive_key and one record hash; the hard one: its tree's 31
    /// compressions and the quality's). The rank's distance is the
    /// proof's score on the scale every scheme shares.
    pub fn verify(&self, challenge: &[u8; 32]) -> Result<Ranked, spacevault::VerifyError> {
        let v = meter::timed(Op::HashProof, || self.0.verify(challenge))?;
        Ok(Ranked {
            distance: v.distance,
            tiebreak: self.0.tiebreak(challenge),
            plot_id: v.plot_id,
            quality: v.quality,
        })
    }
}

/// A verified proof's place in the election: the smaller distance wins, and
/// ties go to the smaller tie-break (the plain proof's nonce, the hard
/// proof's first leaf on the challenge's path:
/// [`AnyProof::tiebreak`]), then to the smaller plot id, so that the order
/// is total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranked {
    pub distance: [u8; 32],
    pub tiebreak: u64,
    pub plot_id: [u8; 32],
    pub quality: u32,
}

impl Ranked {
    /// Whether `self` wins over `other`.
    pub fn beats(&self, other: &Ranked) -> bool {
        (self.distance, self.tiebreak, self.plot_id)
            < (other.distance, other.tiebreak, other.plot_id)
    }
}

pub use crate::genesis::genesis_hash;

/// The challenge of slot `slot`: derived from the chain, the slot and the
/// slot's proof-of-time output ([`crate::time::slot_challenge`]), so that
/// no producer chooses it and nobody knows it before the proof of time
/// reaches the slot. Branches on one line of slots meet the same challenge
/// in a slot; a branch whose line differs (from the era whose entropy
/// block differs) meets its own.
pub fn challenge(chain_id: &[u8; 32], slot: u64, slot_output: &[u8; FORM_BYTES]) -> [u8; 32] {
    meter::timed(Op::HashChallenge, || {
        crate::time::slot_challenge(chain_id, slot, slot_output)
    })
}

/// The slot a block is made in, and that slot's proof-of-time output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stamp {
    pub slot: u64,
    pub output: [u8; FORM_BYTES],
}

impl Stamp {
    pub fn challenge(&self, chain_id: &[u8; 32]) -> [u8; 32] {
        challenge(chain_id, self.slot, &self.output)
    }
}

/// A register write, signed by the register's owner.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterTx {
    pub owner: [u8; 32],
    pub name: Vec<u8>,
    /// The previous version plus one (1 for a new register).
    pub version: u64,
    pub value: Vec<u8>,
    pub signature: [u8; 64],
}

/// Bytes a transaction takes at least (empty name and value).
pub const TX_MIN_BYTES: usize = 32 + 4 + 8 + 4 + 64;

impl RegisterTx {
    /// A transaction `owner` signs.
    pub fn signed(
        owner: &Keypair,
        chain_id: &[u8; 32],
        name: &[u8],
        version: u64,
        value: &[u8],
    ) -> RegisterTx {
        let mut tx = RegisterTx {
            owner: owner.public(),
            name: name.to_vec(),
            version,
            value: value.to_vec(),
            signature: [0; 64],
        };
        let id = tx.id(chain_id);
        tx.signature = meter::timed(Op::SignTx, || owner.sign(&id));
        tx
    }

    /// What the owner signs, and what identifies the transaction: its
    /// fields and the chain's id, so that it means nothing on another chain.
    pub fn id(&self, chain_id: &[u8; 32]) -> [u8; 32] {
        let mut w = Writer::new();
        w.fixed(chain_id)
            .fixed(&self.owner)
            .bytes(&self.name)
            .u64(self.version)
            .bytes(&self.value);
        meter::timed(Op::HashTx, || derive(context::REGISTER_TX, &w.finish()))
    }

    pub fn signature_ok(&self, chain_id: &[u8; 32]) -> bool {
        let id = self.id(chain_id);
        meter::timed_on(Op::VerifyTx, meter::fingerprint_of(&self.signature), || {
            keys::verify(&self.owner, &id, &self.signature)
        })
    }

    /// [`RegisterTx::signature_ok`], answered from `cache` if it has seen
    /// this signature valid.
    pub fn signature_ok_with(&self, chain_id: &[u8; 32], cache: &SigCache) -> bool {
        let id = self.id(chain_id);
        cache.verify(Op::VerifyTx, &self.owner, &id, &self.signature, || {
            keys::verify(&self.owner, &id, &self.signature)
        })
    }

    pub fn encode_into(&self, w: &mut Writer) {
        w.fixed(&self.owner)
            .bytes(&self.name)
            .u64(self.version)
            .bytes(&self.value)
            .fixed(&self.signature);
    }

    pub fn decode_from(r: &mut Reader, limits: &Limits) -> Result<RegisterTx, DecodeError> {
        Ok(RegisterTx {
            owner: r.array("transaction's owner")?,
            name: r
                .bytes("register name", limits.max_register_name_bytes)?
                .to_vec(),
            version: r.u64("transaction's version")?,
            value: r
                .bytes("register value", limits.max_register_value_bytes)?
                .to_vec(),
            signature: r.array("transaction's signature")?,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(PROTOCOL_VERSION);
        self.encode_into(&mut w);
        w.finish()
    }

    pub fn decode(bytes: &[u8], limits: &Limits) -> Result<RegisterTx, DecodeError> {
        let mut r = Reader::new(bytes);
        check_version(&mut r, "transaction")?;
        let tx = RegisterTx::decode_from(&mut r, limits)?;
        r.finish()?;
        Ok(tx)
    }
}

/// The sizes decoding allows, from the chain spec.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_block_txs: usize,
    pub max_register_name_bytes: usize,
    pub max_register_value_bytes: usize,
    pub max_block_evidence: usize,
}

impl Limits {
    pub fn of(spec: &crate::ChainSpec) -> Limits {
        Limits {
            max_block_txs: spec.max_block_txs as usize,
            max_register_name_bytes: spec.max_register_name_bytes as usize,
            // An answer to a challenge on the chain is bounded by the
            // blob size, not by the chain's register value limit.
            max_register_value_bytes: (spec.max_register_value_bytes as usize)
                .max(crate::audit::answer_value_bytes(spec.max_blob_bytes as u64)),
            max_block_evidence: spec.max_block_evidence as usize,
        }
    }
}

pub(crate) fn check_version(r: &mut Reader, what: &'static str) -> Result<(), DecodeError> {
    match r.u16("version")? {
        PROTOCOL_VERSION => Ok(()),
        version => Err(DecodeError::UnknownVersion { what, version }),
    }
}

/// A vault's signed word that it keeps a blob as one of its holders in
/// holder era `era` ([`crate::holders`]): a client counts it only from a
/// holder of that era's set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    pub address: [u8; 32],
    pub holder: [u8; 32],
    pub era: u64,
    pub signature: [u8; 64],
}

impl Receipt {
    fn message(chain_id: &[u8; 32], address: &[u8; 32], holder: &[u8; 32], era: u64) -> [u8; 32] {
        let mut w = Writer::new();
        w.fixed(chain_id).fixed(address).fixed(holder).u64(era);
        meter::timed(Op::HashMessage, || derive(context::RECEIPT, &w.finish()))
    }

    pub fn sign(holder: &Keypair, chain_id: &[u8; 32], era: u64, address: &[u8; 32]) -> Receipt {
        let public = holder.public();
        Receipt {
            address: *address,
            holder: public,
            era,
            signature: {
                let message = Receipt::message(chain_id, address, &public, era);
                meter::timed(Op::SignReceipt, || holder.sign(&message))
            },
        }
    }

    pub fn verify(&self, chain_id: &[u8; 32]) -> bool {
        let message = Receipt::message(chain_id, &self.address, &self.holder, self.era);
        meter::timed_on(
            Op::VerifyReceipt,
            meter::fingerprint_of(&self.signature),
            || keys::verify(&self.holder, &message, &self.signature),
        )
    }

    pub fn encode_into(&self, w: &mut Writer) {
        w.fixed(&self.address)
            .fixed(&self.holder)
            .u64(self.era)
            .fixed(&self.signature);
    }

    pub fn decode_from(r: &mut Reader) -> Result<Receipt, DecodeError> {
        Ok(Receipt {
            address: r.array("receipt's address")?,
            holder: r.array("receipt's holder")?,
            era: r.u64("receipt's era")?,
            signature: r.array("receipt's signature")?,
        })
    }
}

/// A vault's periodic, signed word that it is alive and where it listens
/// (multiaddrs in their binary form).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announce {
    pub time_ms: u64,
    pub vault: [u8; 32],
    pub addresses: Vec<Vec<u8>>,
    pub signature: [u8; 64],
}

/// Addresses an announcement holds at most, and their size.
pub const MAX_ANNOUNCED_ADDRESSES: usize = 16;
pub const MAX_ADDRESS_BYTES: usize = 256;

impl Announce {
    fn body(&self, w: &mut Writer) {
        w.u64(self.time_ms)
            .fixed(&self.vault)
            .u32(self.addresses.len() as u32);
        for a in &self.addresses {
            w.bytes(a);
        }
    }

    fn message(&self, chain_id: &[u8; 32]) -> [u8; 32] {
        let mut w = Writer::new();
        w.fixed(chain_id);
        self.body(&mut w);
        meter::timed(Op::HashMessage, || derive(context::ANNOUNCE, &w.finish()))
    }

    pub fn signed(
        vault: &Keypair,
        chain_id: &[u8; 32],
        time_ms: u64,
        addresses: Vec<Vec<u8>>,
    ) -> Announce {
        let mut a = Announce {
            time_ms,
            vault: vault.public(),
            addresses,
            signature: [0; 64],
        };
        let message = a.message(chain_id);
        a.signature = meter::timed(Op::SignAnnouncement, || vault.sign(&message));
        a
    }

    pub fn signature_ok(&self, chain_id: &[u8; 32]) -> bool {
        let message = self.message(chain_id);
        meter::timed_on(
            Op::VerifyAnnouncement,
            meter::fingerprint_of(&self.signature),
            || keys::verify(&self.vault, &message, &self.signature),
        )
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(PROTOCOL_VERSION);
        self.body(&mut w);
        w.fixed(&self.signature);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Announce, DecodeError> {
        let mut r = Reader::new(bytes);
        check_version(&mut r, "announcement")?;
        let time_ms = r.u64("time")?;
        let vault = r.array("vault")?;
        let n = r.count("addresses", MAX_ANNOUNCED_ADDRESSES, 4)?;
        let addresses = (0..n)
            .map(|_| r.bytes("address", MAX_ADDRESS_BYTES).map(<[u8]>::to_vec))
            .collect::<Result<_, _>>()?;
        let a = Announce {
            time_ms,
            vault,
            addresses,
            signature: r.array("signature")?,
        };
        r.finish()?;
        Ok(a)
    }
}

/// A blob's address: the BLAKE3 hash of its bytes.
pub fn blob_address(blob: &[u8]) -> [u8; 32] {
    *blake3::hash(blob).as_bytes()
}
