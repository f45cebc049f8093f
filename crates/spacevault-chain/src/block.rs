//! Blocks: the header a producer signs, the body (transactions and
//! evidence of equivocation) its root commits to, and the evidence itself:
//! two headers one farmer key signed for one slot (`docs/PROTOCOL.md`).

use crate::codec::{DecodeError, Reader, Writer};
use crate::keys::{self, Keypair};
use crate::types::{
    check_version, context, derive, ChainProof, Limits, RegisterTx, Stamp, PROTOCOL_VERSION,
    TX_MIN_BYTES,
};
use spacevault_meter::{self as meter, Op};

/// The root of a block's body: a hash of its transactions' ids, then its
/// pieces of evidence's, in order.
pub fn body_root(chain_id: &[u8; 32], txs: &[RegisterTx], evidence: &[Equivocation]) -> [u8; 32] {
    let mut w = Writer::new();
    w.u32(txs.len() as u32);
    for tx in txs {
        w.fixed(&tx.id(chain_id));
    }
    w.u8(u8::try_from(evidence.len()).unwrap_or(u8::MAX));
    for e in evidence {
        w.fixed(&e.id());
    }
    meter::timed(Op::HashBlock, || derive(context::BODY_ROOT, &w.finish()))
}

/// What a block's producer signs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub chain_id: [u8; 32],
    pub height: u64,
    pub parent: [u8; 32],
    /// The slot the block is made in, and that slot's output: the proof
    /// answers the slot's challenge.
    pub stamp: Stamp,
    pub proof: ChainProof,
    pub body_root: [u8; 32],
}

impl BlockHeader {
    pub(crate) fn encode_into(&self, w: &mut Writer) {
        w.fixed(&self.chain_id)
            .u64(self.height)
            .fixed(&self.parent)
            .u64(self.stamp.slot)
            .fixed(&self.stamp.output);
        self.proof.encode_into(w);
        w.fixed(&self.body_root);
    }

    pub(crate) fn decode_from(r: &mut Reader) -> Result<BlockHeader, DecodeError> {
        Ok(BlockHeader {
            chain_id: r.array("block's chain id")?,
            height: r.u64("block's height")?,
            parent: r.array("block's parent")?,
            stamp: Stamp {
                slot: r.u64("block's slot")?,
                output: r.array("block's slot output")?,
            },
            proof: ChainProof::decode_from(r)?,
            body_root: r.array("block's body root")?,
        })
    }

    /// The block's hash: what its producer signs, and what its child names
    /// as its parent.
    pub fn hash(&self) -> [u8; 32] {
        let mut w = Writer::new();
        w.u16(PROTOCOL_VERSION);
        self.encode_into(&mut w);
        meter::timed(Op::HashBlock, || derive(context::BLOCK, &w.finish()))
    }
}

/// A block: its header, its body (transactions, then evidence of other
/// farmers' equivocation), and the producer's signature of the header's
/// hash by the proof's farmer key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    pub header: BlockHeader,
    pub txs: Vec<RegisterTx>,
    pub evidence: Vec<Equivocation>,
    pub signature: [u8; 64],
}

impl Block {
    /// A block `producer` signs, with no evidence; its proof's farmer key
    /// must be the producer's public key for the block to be valid.
    pub fn produce(
        producer: &Keypair,
        chain_id: [u8; 32],
        height: u64,
        parent: [u8; 32],
        stamp: Stamp,
        proof: ChainProof,
        txs: Vec<RegisterTx>,
    ) -> Block {
        let header = BlockHeader {
            chain_id,
            height,
            parent,
            stamp,
            proof,
            body_root: [0; 32],
        };
        Block::sign(producer, header, txs, Vec::new())
    }

    /// A block of `header` and body `txs` and `evidence`, its body root
    /// set to theirs and signed by `producer`.
    pub fn sign(
        producer: &Keypair,
        mut header: BlockHeader,
        txs: Vec<RegisterTx>,
        evidence: Vec<Equivocation>,
    ) -> Block {
        header.body_root = body_root(&header.chain_id, &txs, &evidence);
        let hash = header.hash();
        let signature = meter::timed(Op::SignBlock, || producer.sign(&hash));
        Block {
            header,
            txs,
            evidence,
            signature,
        }
    }

    pub fn hash(&self) -> [u8; 32] {
        self.header.hash()
    }

    /// Its header and signature: what an equivocation is shown with.
    pub fn signed_header(&self) -> SignedHeader {
        SignedHeader {
            header: self.header.clone(),
            signature: self.signature,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(PROTOCOL_VERSION);
        self.header.encode_into(&mut w);
        w.u32(self.txs.len() as u32);
        for tx in &self.txs {
            tx.encode_into(&mut w);
        }
        w.u8(u8::try_from(self.evidence.len()).unwrap_or(u8::MAX));
        for e in &self.evidence {
            e.encode_into(&mut w);
        }
        w.fixed(&self.signature);
        w.finish()
    }

    pub fn decode(bytes: &[u8], limits: &Limits) -> Result<Block, DecodeError> {
        let mut r = Reader::new(bytes);
        let block = Block::decode_from(&mut r, limits)?;
        r.finish()?;
        Ok(block)
    }

    pub fn decode_from(r: &mut Reader, limits: &Limits) -> Result<Block, DecodeError> {
        check_version(r, "block")?;
        let header = BlockHeader::decode_from(r)?;
        let n = r.count("block's transactions", limits.max_block_txs, TX_MIN_BYTES)?;
        let txs = (0..n)
            .map(|_| RegisterTx::decode_from(r, limits))
            .collect::<Result<_, _>>()?;
        let count = r.u8("block's evidence")?;
        if usize::from(count) > limits.max_block_evidence {
            return Err(DecodeError::TooLong {
                what: "a block's evidence",
                len: u64::from(count),
                max: limits.max_block_evidence as u64,
            });
        }
        let evidence = (0..count)
            .map(|_| Equivocation::decode_from(r))
            .collect::<Result<_, _>>()?;
        Ok(Block {
            header,
            txs,
            evidence,
            signature: r.array("block's signature")?,
        })
    }
}

/// Whether `signature` is `key`'s of a header's `hash`: the one check of
/// a block's signature and of each header in evidence, counted as a block
/// verification, through `cache` where one is given.
pub(crate) fn producer_signed(
    key: &[u8; 32],
    hash: &[u8; 32],
    signature: &[u8; 64],
    cache: Option<&crate::SigCache>,
) -> bool {
    let verify = || keys::verify(key, hash, signature);
    match cache {
        Some(cache) => cache.verify(Op::VerifyBlock, key, hash, signature, verify),
        None => meter::timed_on(Op::VerifyBlock, meter::fingerprint_of(signature), verify),
    }
}

/// A block's header and its producer's signature of the header's hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedHeader {
    pub header: BlockHeader,
    pub signature: [u8; 64],
}

impl SignedHeader {
    pub fn hash(&self) -> [u8; 32] {
        self.header.hash()
    }

    /// Whether the header's farmer key signed it.
    pub fn signature_ok(&self) -> bool {
        self.signed(None)
    }

    /// Whether the header's farmer key signed it, through `cache` where
    /// one is given: a header whose block was checked is not verified
    /// again.
    pub fn signed(&self, cache: Option<&crate::SigCache>) -> bool {
        producer_signed(
            self.header.proof.farmer_key(),
            &self.hash(),
            &self.signature,
            cache,
        )
    }

    fn encode_into(&self, w: &mut Writer) {
        self.header.encode_into(w);
        w.fixed(&self.signature);
    }

    fn decode_from(r: &mut Reader) -> Result<SignedHeader, DecodeError> {
        Ok(SignedHeader {
            header: BlockHeader::decode_from(r)?,
            signature: r.array("evidence's signature")?,
        })
    }
}

/// Evidence that a farmer key equivocated: two different headers it signed
/// for one slot, the one of smaller hash first (so that a pair has one
/// encoding). Whoever holds it can show every vault; a block that carries
/// it bans the key on that block's chain from its child on
/// (`docs/PROTOCOL.md`, "Equivocation").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Equivocation {
    pub first: SignedHeader,
    pub second: SignedHeader,
}

impl Equivocation {
    /// The evidence two signed headers make, in order; None when they are
    /// not two headers of one key and slot (their signatures are not
    /// checked here: see `validate::check_equivocation`).
    pub fn of(a: SignedHeader, b: SignedHeader) -> Option<Equivocation> {
        let (ha, hb) = (a.hash(), b.hash());
        let same = a.header.proof.farmer_key() == b.header.proof.farmer_key()
            && a.header.stamp.slot == b.header.stamp.slot;
        if !same || ha == hb {
            return None;
        }
        let (first, second) = if ha < hb { (a, b) } else { (b, a) };
        Some(Equivocation { first, second })
    }

    /// The key that signed both headers (the first's; the check makes
    /// sure it is the second's too).
    pub fn farmer_key(&self) -> [u8; 32] {
        *self.first.header.proof.farmer_key()
    }

    /// The slot both headers were signed for.
    pub fn slot(&self) -> u64 {
        self.first.header.stamp.slot
    }

    /// Its hash, as a block's body root takes it.
    pub fn id(&self) -> [u8; 32] {
        let mut w = Writer::new();
        self.encode_into(&mut w);
        meter::timed(Op::HashBlock, || derive(context::EQUIVOCATION, &w.finish()))
    }

    fn encode_into(&self, w: &mut Writer) {
        self.first.encode_into(w);
        self.second.encode_into(w);
    }

    fn decode_from(r: &mut Reader) -> Result<Equivocation, DecodeError> {
        Ok(Equivocation {
            first: SignedHeader::decode_from(r)?,
            second: SignedHeader::decode_from(r)?,
        })
    }

    /// The evidence as gossiped on its own: the protocol version, then the
    /// two signed headers.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u16(PROTOCOL_VERSION);
        self.encode_into(&mut w);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Equivocation, DecodeError> {
        let mut r = Reader::new(bytes);
        check_version(&mut r, "evidence")?;
        let e = Equivocation::decode_from(&mut r)?;
        r.finish()?;
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::FORM_BYTES;
    use crate::types::{genesis_hash, Announce, Receipt};

    fn limits() -> Limits {
        Limits {
            max_block_txs: 16,
            max_register_name_bytes: 64,
            max_register_value_bytes: 1024,
            max_block_evidence: 4,
        }
    }

    fn stamp() -> Stamp {
        Stamp {
            slot: 3,
            output: [0x21; FORM_BYTES],
        }
    }

    fn sample_block() -> Block {
        let producer = Keypair::from_secret(&[3; 32]);
        let owner = Keypair::from_secret(&[4; 32]);
        let chain = [9; 32];
        let txs = vec![
            RegisterTx::signed(&owner, &chain, b"name", 1, b"value"),
            RegisterTx::signed(&owner, &chain, b"other", 1, b""),
        ];
        let proof = ChainProof::plain(producer.public(), [5; 32], 16, 77);
        Block::produce(
            &producer,
            chain,
            1,
            genesis_hash(&chain),
            stamp(),
            proof,
            txs,
        )
    }

    #[test]
    fn blocks_and_messages_round_trip_exactly() {
        let block = sample_block();
        let bytes = block.encode();
        assert_eq!(Block::decode(&bytes, &limits()).unwrap(), block);
        for cut in 0..bytes.len() {
            assert!(
                Block::decode(&bytes[..cut], &limits()).is_err(),
                "cut {cut}"
            );
        }
        let tx = &block.txs[0];
        assert_eq!(&RegisterTx::decode(&tx.encode(), &limits()).unwrap(), tx);
        let vault = Keypair::from_secret(&[7; 32]);
        let a = Announce::signed(&vault, &[1; 32], 99, vec![vec![4, 127, 0, 0, 1]]);
        let bytes = a.encode();
        assert_eq!(Announce::decode(&bytes).unwrap(), a);
        assert!(a.signature_ok(&[1; 32]) && !a.signature_ok(&[2; 32]));
        for cut in 0..bytes.len() {
            assert!(Announce::decode(&bytes[..cut]).is_err());
        }
    }

    #[test]
    fn signatures_cover_what_they_should() {
        let block = sample_block();
        let chain = block.header.chain_id;
        assert!(keys::verify(
            block.header.proof.farmer_key(),
            &block.hash(),
            &block.signature
        ));
        assert!(block.txs[0].signature_ok(&chain));
        // Another chain, version or value: the signature no longer fits.
        assert!(!block.txs[0].signature_ok(&[8; 32]));
        let mut tx = block.txs[0].clone();
        tx.version = 2;
        assert!(!tx.signature_ok(&chain));
        let mut header = block.header.clone();
        header.stamp.slot += 1;
        assert_ne!(header.hash(), block.hash());
        let receipt = Receipt::sign(&Keypair::from_secret(&[6; 32]), &chain, 1, &[1; 32]);
        assert!(receipt.verify(&chain) && !receipt.verify(&[0; 32]));
    }

    #[test]
    fn a_blocks_challenge_is_its_slots_whatever_its_parent_and_transactions() {
        let block = sample_block();
        let chain = block.header.chain_id;
        let c = block.header.stamp.challenge(&chain);
        let mut other = block.clone();
        other.txs.pop();
        other.header.parent = [0x44; 32];
        assert_eq!(c, other.header.stamp.challenge(&chain));
        let mut later = block.header.stamp;
        later.slot += 1;
        assert_ne!(c, later.challenge(&chain));
        let mut another = block.header.stamp;
        another.output[0] ^= 1;
        assert_ne!(c, another.challenge(&chain));
        assert_ne!(c, block.header.stamp.challenge(&[2; 32]));
    }

    #[test]
    fn a_block_full_of_the_smallest_transactions_decodes() {
        // Each transaction as small as one can be: the count's check
        // against what is left must let every one through.
        let producer = Keypair::from_secret(&[3; 32]);
        let chain = [9; 32];
        let tx = RegisterTx {
            owner: [1; 32],
            name: vec![],
            version: 1,
            value: vec![],
            signature: [0; 64],
        };
        assert_eq!(tx.encode().len(), 2 + TX_MIN_BYTES);
        let proof = ChainProof::plain(producer.public(), [5; 32], 16, 77);
        let block = Block::produce(&producer, chain, 1, [0; 32], stamp(), proof, vec![tx; 16]);
        assert_eq!(Block::decode(&block.encode(), &limits()).unwrap(), block);
    }

    #[test]
    fn evidence_names_its_key_and_slot_and_has_one_order() {
        let block = sample_block();
        let mut other = block.clone();
        other.header.parent = [0x44; 32];
        let (a, b) = (block.signed_header(), other.signed_header());
        let e = Equivocation::of(a.clone(), b.clone()).unwrap();
        assert_eq!(e, Equivocation::of(b.clone(), a.clone()).unwrap());
        assert!(e.first.hash() < e.second.hash());
        assert_eq!(&e.farmer_key(), block.header.proof.farmer_key());
        assert_eq!(e.slot(), block.header.stamp.slot);
        assert_eq!(Equivocation::decode(&e.encode()).unwrap(), e);
        // One header twice, two slots or two keys: no evidence.
        assert!(Equivocation::of(a.clone(), a.clone()).is_none());
        let mut later = b.clone();
        later.header.stamp.slot += 1;
        assert!(Equivocation::of(a.clone(), later).is_none());
        let mut another = b;
        another.header.proof.plain_mut().unwrap().farmer_key = [0x55; 32];
        assert!(Equivocation::of(a, another).is_none());
    }

    #[test]
    fn a_block_decodes_with_as_much_evidence_as_the_limit_and_no_more() {
        let block = sample_block();
        let mut other = block.clone();
        other.header.parent = [0x44; 32];
        let piece = Equivocation::of(block.signed_header(), other.signed_header()).unwrap();
        let producer = Keypair::from_secret(&[3; 32]);
        let with = |n: usize| {
            Block::sign(
                &producer,
                block.header.clone(),
                vec![],
                vec![piece.clone(); n],
            )
        };
        let full = with(limits().max_block_evidence);
        assert_eq!(Block::decode(&full.encode(), &limits()).unwrap(), full);
        let over = with(limits().max_block_evidence + 1);
        assert!(matches!(
            Block::decode(&over.encode(), &limits()),
            Err(DecodeError::TooLong { len: 5, max: 4, .. })
        ));
    }
}
