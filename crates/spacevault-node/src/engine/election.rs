//! The election of the next block's producer: the proofs seen for the
//! next height, this vault's own, when its turn to produce comes, when to
//! contest a worse head, and producing the block.

use super::*;

/// The proofs seen for the next height, best first.
#[derive(Clone, Debug)]
pub(super) struct Election {
    pub(super) parent: Parent,
    pub(super) challenge: [u8; 32],
    pub(super) seen: Vec<(Ranked, ChainProof)>,
    pub(super) own: Option<(Ranked, ChainProof)>,
    /// Places this vault waits for its proof's expected place among the
    /// network's beyond the first, whatever it has heard (see
    /// [`Engine::production_due`]).
    own_expected_wait: f64,
    produced: bool,
    /// When this vault learned of the parent (Unix ms).
    pub(super) opened_ms: u64,
}

/// Proofs an election keeps: enough to rank this vault's own among them.
const ELECTION_KEEPS: usize = 64;
/// Places a vault waits at most for its proof's expected place: at places
/// of the producer timeout (half a slot), four slots without a block,
/// after which any vault may make one.
const MAX_EXPECTED_WAIT: f64 = 8.0;

impl Election {
    pub(super) fn new(parent: Parent, chain_id: &[u8; 32], opened_ms: u64) -> Election {
        Election {
            challenge: parent.child_challenge(chain_id),
            parent,
            seen: Vec::new(),
            own: None,
            own_expected_wait: 0.0,
            produced: false,
            opened_ms,
        }
    }

    pub(super) fn height(&self) -> u64 {
        self.parent.height + 1
    }

    /// Adds a proof; whether it is the best seen.
    pub(super) fn offer(&mut self, rank: Ranked, proof: ChainProof) -> bool {
        if self.seen.iter().any(|(r, _)| *r == rank) {
            return false;
        }
        let best = self.seen.first().is_none_or(|(b, _)| rank.beats(b));
        let at = self.seen.partition_point(|(r, _)| r.beats(&rank));
        self.seen.insert(at, (rank, proof));
        self.seen.truncate(ELECTION_KEEPS);
        best
    }

    /// This vault's place among the proofs seen (0: the best).
    pub(super) fn own_rank(&self) -> Option<usize> {
        let (own, _) = self.own.as_ref()?;
        Some(self.seen.iter().filter(|(r, _)| r.beats(own)).count())
    }
}

impl Engine {
    /// A proof gossiped for the next block: kept if it is the best seen
    /// (then it is relayed), else refused with why.
    pub fn offer_proof(&mut self, msg: &ProofMsg) -> Result<(), Rejection> {
        if msg.chain_id != self.chain_id {
            return Err(Rejection::WrongChain);
        }
        let height = self.election.height();
        if msg.height < height || (msg.height == height && msg.parent != self.election.parent.hash)
        {
            return Err(Rejection::StaleHeight(msg.height));
        }
        if msg.height > height {
            return Err(Rejection::FutureHeight(msg.height));
        }
        let rank = validate::check_proof(
            &self.spec,
            &self.chain_id,
            &self.election.parent,
            &msg.proof,
        )?;
        if self.election.offer(rank, msg.proof.clone()) {
            Ok(())
        } else {
            Err(Rejection::NotBetter)
        }
    }

    /// This vault's own best proof for the election at `height` on
    /// `parent`: returns the message to gossip when it is the best seen.
    /// `records`: the records the network is thought to hold, from which
    /// the proof's expected place among all the network's proofs follows
    /// ([`Ranked::expected_place`]); 0 when not known.
    pub fn offer_own(
        &mut self,
        height: u64,
        parent: [u8; 32],
        proof: ChainProof,
        rank: Ranked,
        records: f64,
    ) -> Option<ProofMsg> {
        if self.election.height() != height || self.election.parent.hash != parent {
            return None;
        }
        self.election.own = Some((rank, proof.clone()));
        // The best proof's expected place is below 1 two times in three and
        // below 2 six times in seven: it is rarely held back.
        self.election.own_expected_wait =
            (rank.expected_place(records) - 1.0).clamp(0.0, MAX_EXPECTED_WAIT);
        let best = self.election.offer(rank, proof.clone());
        best.then_some(ProofMsg {
            chain_id: self.chain_id,
            height,
            parent,
            proof,
        })
    }

    /// Whether this vault's own proof is still the best seen for the
    /// election at `height` on `parent`.
    pub fn own_is_best(&self, height: u64, parent: &[u8; 32]) -> bool {
        let e = &self.election;
        e.height() == height && e.parent.hash == *parent && e.own_rank() == Some(0)
    }

    /// When this vault may produce the next block, in Unix milliseconds:
    /// one slot after the parent for the best proof, one place later for
    /// each proof seen that beats this vault's own, or for each place its
    /// proof expects to take among the network's beyond the first,
    /// whichever is later. A place is a producer timeout, or twice the
    /// recent [`block_delay_ms`](Self::block_delay_ms) if longer. None
    /// without a proof of its own, or once it has produced.
    ///
    /// The proofs seen space the producers when messages come in time. The
    /// expected place does when they do not: on a loaded machine or across
    /// a distant link the better proofs arrive after the turn has come,
    /// and by the proofs seen alone every vault would be the best it knew
    /// of and produce at once. By its expected place a vault waits in
    /// proportion to how unlikely its proof is to win, and the likely
    /// winner's block reaches it first.
    ///
    /// Never sooner than a proof window after this vault learned of the
    /// parent: a parent that arrives late (a loaded machine, a distant
    /// region) would otherwise find every vault's turn come already, and
    /// every vault would produce before it heard a better proof.
    pub fn production_due(&self) -> Option<u64> {
        let e = &self.election;
        if e.produced {
            return None;
        }
        let seen = e.own_rank()? as f64;
        let places = seen.max(e.own_expected_wait);
        let opens = self
            .spec
            .earliest_ms(e.parent.timestamp_ms)
            .max(e.opened_ms + self.spec.proof_window_ms);
        // A place is a producer timeout, or twice the time blocks have
        // lately taken to arrive if that is longer: a better producer's
        // block must have time to come before this vault's turn.
        let place_ms = (self.spec.producer_timeout_ms as f64).max(2.0 * self.block_delay_ms);
        Some(opens + (places * place_ms).round() as u64)
    }

    /// Whether this vault should produce at once for the height just
    /// settled: its proof beats the new head's, made before its turn came,
    /// and the head is of this slot (an old block met while catching up is
    /// not worth a branch).
    pub fn should_contest(&self, now_ms: u64) -> bool {
        let Some(prev) = &self.previous else {
            return false;
        };
        if now_ms > self.head.timestamp_ms + self.spec.slot_ms {
            return false;
        }
        let Some((own, _)) = &prev.own else {
            return false;
        };
        if prev.produced || prev.height() != self.head.height {
            return false;
        }
        match self.store.info(&self.head.hash) {
            Ok(Some(info)) => info.parent == prev.parent.hash && own.beats(&info.rank),
            _ => false,
        }
    }

    /// Produces the next block from this vault's proof and the pending
    /// transactions that apply, marking the election done. `contest`:
    /// produce for the height just settled instead (see
    /// [`should_contest`](Self::should_contest)).
    pub fn produce(&mut self, key: &Keypair, now_ms: u64, contest: bool) -> Option<Block> {
        let election = if contest {
            self.previous.as_mut()?
        } else {
            &mut self.election
        };
        let (_, proof) = election.own.clone()?;
        if election.produced || proof.farmer_key != key.public() {
            return None;
        }
        election.produced = true;
        let parent = election.parent;
        let timestamp = now_ms.max(self.spec.earliest_ms(parent.timestamp_ms));
        let txs = if contest {
            Vec::new()
        } else {
            self.pending_txs()
        };
        Some(Block::produce(
            key,
            self.chain_id,
            parent.height + 1,
            parent.hash,
            timestamp,
            proof,
            txs,
        ))
    }
}
