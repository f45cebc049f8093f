//! The engine and its store against a model a page long.
//!
//! Random trees of blocks (branches from any ancestor, so reorgs of any
//! depth; blocks that write one register several times; blocks whose
//! transactions do not apply, in the middle of a branch; damaged copies
//! under real blocks' hashes) are delivered in any order, some by gossip,
//! some twice, some never, through the real engine and redb store. After
//! every delivery the canonical chain and every register must be what the
//! model says: each block the engine took, in the engine's order, replaces
//! the chain followed when the fork-choice rule written out plainly below
//! prefers its chain (rivals of two slots as heavy keep the one followed,
//! so the chain depends on the order blocks came in, as the engine's does).
//!
//! This is where a new fork-choice rule is written first: change
//! [`Model::better`], watch this test fail, then change the engine.

use proptest::prelude::*;
use spacevault_chain::time::{SlotOutput, FORM_BYTES};
use spacevault_chain::{
    Block, ChainProof, ChainSpec, Keypair, RegisterTx, Rejection, Stamp, Target,
};
use spacevault_node::engine::{Engine, Imported};
use std::collections::{BTreeMap, HashMap};

type Hash = [u8; 32];
/// A register: its owner and name.
type Register = (Hash, Vec<u8>);
/// A register's entry: version, value, the height of the block that wrote
/// it, the writer's signature.
type Entry = (u64, Vec<u8>, u64, [u8; 64]);

/// Eras of two blocks that want four slots: a block comes two to five
/// slots after its parent, so each era moves the target (never harder),
/// and branches of one length weigh differently.
fn spec() -> ChainSpec {
    let mut spec = ChainSpec::new("model", 1_000_000, 1000);
    spec.set_sizes(spacevault_chain::ProofKind::Plain, 16, spacevault::MAX_K);
    spec.era_blocks = 2;
    spec.block_interval_slots = 2;
    spec.initial_records = 2;
    // One era of the proof of time for the tree: every slot is on the
    // chain's first line, whichever branch its block is on (the model is
    // of fork choice; the lines of slots per branch are `time.rs`'s).
    spec.pot_era_slots = MAX_SLOT;
    spec
}

/// Slots a tree's blocks are made in, at most (forty blocks, five slots
/// apart at most).
const MAX_SLOT: u64 = 200;

/// The output the vault's line holds for `slot`.
fn stamp(slot: u64) -> Stamp {
    let mut output = [0; FORM_BYTES];
    output[..8].copy_from_slice(&slot.to_le_bytes());
    Stamp { slot, output }
}

/// Late enough that no block of a test is in the future.
const NOW: u64 = 1_000_000_000_000;

fn owners() -> [Keypair; 2] {
    [
        Keypair::from_secret(&[50; 32]),
        Keypair::from_secret(&[51; 32]),
    ]
}

/// Register `i` of four: two owners with two names each.
fn register(i: u8) -> (usize, &'static [u8]) {
    let names: [&'static [u8]; 2] = [b"a", b"b"];
    ((i / 2) as usize % 2, names[i as usize % 2])
}

/// A stored block as the model sees it.
struct Stored {
    parent: Hash,
    height: u64,
    /// The target it met, and the one its child must meet.
    target: Target,
    child_target: Target,
    /// What fork choice compares of rivals as heavy: the slot, the
    /// proof's distance, tie-break (a plain proof's nonce) and plot id,
    /// then the block's hash.
    key: (u64, Hash, u64, Hash, Hash),
    txs: Vec<RegisterTx>,
}

/// Every block the engine should hold, the chain it should follow, and
/// the rule that picks a chain.
struct Model {
    genesis: Hash,
    blocks: HashMap<Hash, Stored>,
    /// The chain followed, block 1 first.
    head: Vec<Hash>,
}

impl Model {
    /// The chain from block 1 to `tip`, or none if a block of it is
    /// missing.
    fn chain(&self, tip: Hash) -> Option<Vec<Hash>> {
        let mut out = Vec::new();
        let mut at = tip;
        while at != self.genesis {
            out.push(at);
            at = self.blocks.get(&at)?.parent;
        }
        out.reverse();
        Some(out)
    }

    /// The registers after `chain`, or none if a block's transactions do
    /// not apply: each sets its register's version plus one, in order.
    fn registers(&self, chain: &[Hash]) -> Option<BTreeMap<Register, Entry>> {
        let mut regs: BTreeMap<Register, Entry> = BTreeMap::new();
        for hash in chain {
            let b = &self.blocks[hash];
            for tx in &b.txs {
                let key = (tx.owner, tx.name.clone());
                let current = regs.get(&key).map_or(0, |e| e.0);
                if tx.version != current + 1 {
                    return None;
                }
                regs.insert(key, (tx.version, tx.value.clone(), b.height, tx.signature));
            }
        }
        Some(regs)
    }

    fn valid(&self, tip: Hash) -> bool {
        tip == self.genesis
            || self
                .chain(tip)
                .is_some_and(|c| self.registers(&c).is_some())
    }

    /// A chain's weight: its blocks' targets' weights, added.
    fn weight(&self, chain: &[Hash]) -> u128 {
        chain.iter().map(|h| self.blocks[h].target.weight()).sum()
    }

    /// Fork choice: whether `candidate` replaces `current`, the chain
    /// followed: when it is heavier; of two as heavy, when the blocks where
    /// they first differ are of one slot and the candidate's is better (the
    /// smaller distance, tie-break and plot id, then block hash). Rivals of two
    /// slots keep the chain followed.
    fn replaces(&self, current: &[Hash], candidate: &[Hash]) -> bool {
        let (now, then) = (self.weight(current), self.weight(candidate));
        if now != then {
            return then > now;
        }
        match current.iter().zip(candidate).find(|(x, y)| x != y) {
            Some((x, y)) => {
                let (x, y) = (&self.blocks[x].key, &self.blocks[y].key);
                x.0 == y.0 && y < x
            }
            None => false,
        }
    }

    /// A block stored: its chain is followed if the rule prefers it.
    fn consider(&mut self, tip: Hash) {
        if let Some(chain) = self.chain(tip).filter(|_| self.valid(tip)) {
            if self.replaces(&self.head, &chain) {
                self.head = chain;
            }
        }
    }
}

/// One block of a random tree.
#[derive(Clone, Debug)]
struct Plan {
    /// How many blocks back from the newest its parent is (0: the newest;
    /// past the first block: the genesis).
    back: u8,
    producer: u8,
    seed: u8,
    nonce: u8,
    /// Slots after its parent's, less two.
    late: u8,
    /// (register, what version to write: mostly the next, sometimes a
    /// replay or a gap).
    txs: Vec<(u8, u8)>,
    /// 0: a copy with a bad signature is delivered first; 1: one with
    /// other transactions; else none.
    damaged: u8,
    /// Whether the real block is delivered at all.
    delivered: bool,
}

fn plan() -> impl Strategy<Value = Plan> {
    (
        prop_oneof![10 => Just(0u8), 3 => 1..4u8, 1 => any::<u8>()],
        0..3u8,
        0..2u8,
        0..3u8,
        0..4u8,
        prop::collection::vec((0..4u8, 0..30u8), 0..4),
        0..12u8,
        prop::bool::weighted(0.93),
    )
        .prop_map(
            |(back, producer, seed, nonce, late, txs, damaged, delivered)| Plan {
                back,
                producer,
                seed,
                nonce,
                late,
                txs,
                damaged,
                delivered,
            },
        )
}

/// A delivery: the block, whether by gossip, and the rejection a damaged
/// copy must get (none for a real block).
struct Delivery {
    block: Block,
    gossiped: bool,
    damage: Option<&'static str>,
}

/// A block of a tree, and what fork choice compares it by.
struct Built {
    block: Block,
    key: (u64, Hash, u64, Hash, Hash),
    target: Target,
    child_target: Target,
}

/// The blocks of a tree, from its plans. Each block's target is its
/// parent's child target, which is its parent's own target but after the
/// last block of an era (a height that is a multiple of `era_blocks`),
/// when it is adjusted by the slots from the block `era_blocks` below (the
/// genesis, slot 0, for the first era). Each proof is the plan's record,
/// or the next one of the plot that the block's target admits.
fn build(plans: &[Plan]) -> Vec<Built> {
    let spec = spec();
    let chain_id = spec.chain_id();
    let genesis = spacevault_chain::validate::Parent::genesis(&spec);
    let owners = owners();
    let producers: Vec<Keypair> = (1..=3).map(|i| Keypair::from_secret(&[i; 32])).collect();
    let mut blocks: Vec<Built> = Vec::new();
    // The versions each block leaves, as its producer believed them.
    let mut versions: Vec<BTreeMap<u8, u64>> = Vec::new();
    // Each block's parent, as an index into `blocks` + 1 (0: the genesis).
    let mut parents: Vec<usize> = Vec::new();
    let slot_of = |blocks: &[Built], j: usize| match j {
        0 => 0,
        j => blocks[j - 1].block.header.stamp.slot,
    };
    for (i, p) in plans.iter().enumerate() {
        let parent = i.saturating_sub(p.back as usize);
        let (parent_hash, height, target, mut regs) = match parent {
            0 => (genesis.hash, 1, genesis.child_target, BTreeMap::new()),
            j => {
                let b = &blocks[j - 1];
                (
                    b.block.hash(),
                    b.block.header.height + 1,
                    b.child_target,
                    versions[j - 1].clone(),
                )
            }
        };
        let slot = slot_of(&blocks, parent) + 2 + p.late as u64;
        let child_target = if height % spec.era_blocks == 0 {
            let mut start = parent;
            for _ in 1..spec.era_blocks {
                start = parents[start - 1];
            }
            let took = slot - slot_of(&blocks, start);
            target.adjusted(took, spec.era_blocks, spec.block_interval_slots)
        } else {
            target
        };
        let key = &producers[p.producer as usize];
        let challenge = stamp(slot).challenge(&chain_id);
        let (proof, rank) = (p.nonce as u64..1 << 16)
            .map(|nonce| {
                let proof = ChainProof::plain(key.public(), [p.seed; 32], 16, nonce);
                let rank = proof
                    .verify(&challenge)
                    .expect("any record of any plot verifies");
                (proof, rank)
            })
            .find(|(_, rank)| target.admits(rank))
            .expect("a plot holds a record below any target of the tree");
        let txs = p
            .txs
            .iter()
            .enumerate()
            .map(|(j, &(r, kind))| {
                let current = regs.get(&r).copied().unwrap_or(0);
                let version = match kind {
                    0 => current,
                    1 => current + 2,
                    _ => current + 1,
                };
                regs.insert(r, version);
                let (owner, name) = register(r);
                let value = format!("{i}.{j}");
                RegisterTx::signed(&owners[owner], &chain_id, name, version, value.as_bytes())
            })
            .collect();
        let block = Block::produce(key, chain_id, height, parent_hash, stamp(slot), proof, txs);
        blocks.push(Built {
            key: (
                slot,
                rank.distance,
                rank.tiebreak,
                rank.plot_id,
                block.hash(),
            ),
            block,
            target,
            child_target,
        });
        versions.push(regs);
        parents.push(parent);
    }
    blocks
}

/// A copy of `block` under its hash that must be refused with `why`.
fn damaged(block: &Block, kind: u8) -> (Block, &'static str) {
    let mut copy = block.clone();
    if kind == 0 {
        copy.signature[0] ^= 1;
        (copy, "bad_signature")
    } else {
        let owner = &owners()[0];
        copy.txs
            .push(RegisterTx::signed(owner, &spec().chain_id(), b"x", 1, b"x"));
        (copy, "bad_body_root")
    }
}

fn run(plans: Vec<Plan>, order: Vec<u32>, gossip: Vec<bool>, again: Vec<usize>) {
    let built = build(&plans);
    let blocks: Vec<&Block> = built.iter().map(|b| &b.block).collect();
    let keys: HashMap<Hash, (u64, Hash, u64, Hash, Hash)> =
        built.iter().map(|b| (b.key.4, b.key)).collect();
    let targets: HashMap<Hash, (Target, Target)> = built
        .iter()
        .map(|b| (b.key.4, (b.target, b.child_target)))
        .collect();
    let mut deliveries = Vec::new();
    for (i, (b, p)) in blocks.iter().zip(&plans).enumerate() {
        if p.damaged < 2 {
            let (copy, why) = damaged(b, p.damaged);
            deliveries.push((order[i].wrapping_sub(1), copy, Some(why)));
        }
        if p.delivered {
            deliveries.push((order[i], (*b).clone(), None));
        }
    }
    for &i in &again {
        if plans[i % plans.len()].delivered {
            let i = i % plans.len();
            deliveries.push((order[(i + 7) % order.len()], blocks[i].clone(), None));
        }
    }
    deliveries.sort_by_key(|d| d.0);
    let deliveries: Vec<Delivery> = deliveries
        .into_iter()
        .enumerate()
        .map(|(n, (_, block, damage))| Delivery {
            block,
            gossiped: gossip[n % gossip.len()],
            damage,
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let mut engine = Engine::open(&dir.path().join("store.redb"), spec()).unwrap();
    let line = spacevault_chain::time::first_line(&spec().chain_id());
    for slot in 1..=MAX_SLOT {
        let out = SlotOutput {
            slot,
            line,
            output: stamp(slot).output,
            proof: [0; FORM_BYTES],
        };
        engine.store().put_slot(&out).unwrap();
    }
    let genesis = engine.head().hash;
    let mut model = Model {
        genesis,
        blocks: HashMap::new(),
        head: Vec::new(),
    };
    // Every block of the tree, whether delivered or not: which are valid.
    let tree = Model {
        genesis,
        head: Vec::new(),
        blocks: blocks
            .iter()
            .map(|b| {
                let h = b.hash();
                (
                    h,
                    Stored {
                        parent: b.header.parent,
                        height: b.header.height,
                        target: targets[&h].0,
                        child_target: targets[&h].1,
                        key: keys[&h],
                        txs: b.txs.clone(),
                    },
                )
            })
            .collect(),
    };
    // Real blocks delivered before their parent, by the parent they wait for.
    let mut waiting: HashMap<Hash, Vec<Hash>> = HashMap::new();

    for (n, d) in deliveries.iter().enumerate() {
        let hash = d.block.hash();
        let parent = d.block.header.parent;
        let context = format!("delivery {n} of {}", deliveries.len());
        let head_before = model.head.clone();
        let outcomes = engine.import_with_orphans(d.block.clone(), NOW, d.gossiped);
        let (first_hash, first) = &outcomes[0];
        assert_eq!(*first_hash, hash);
        if let Some(why) = d.damage {
            let parent_valid = tree.valid(d.block.header.parent);
            let ok = match first {
                Err(Rejection::UnknownParent) => !parent_valid,
                Err(r) => r.name() == why,
                Ok(Imported::Duplicate) => true,
                _ => false,
            };
            assert!(ok, "{context}: a damaged copy got {first:?}, not {why}");
            assert_eq!(outcomes.len(), 1, "{context}");
            continue;
        }
        let parent_known = parent == genesis || model.blocks.contains_key(&parent);
        let parent_valid = tree.valid(parent);
        if model.blocks.contains_key(&hash) {
            if parent_valid {
                assert_eq!(*first, Ok(Imported::Duplicate), "{context}");
            }
            assert_eq!(outcomes.len(), 1, "{context}");
        } else if !parent_known {
            assert_eq!(*first, Ok(Imported::Orphan), "{context}");
            let siblings = waiting.entry(parent).or_default();
            if !siblings.contains(&hash) {
                siblings.push(hash);
            }
            assert_eq!(outcomes.len(), 1, "{context}");
        } else {
            let canonical = head_before.get(d.block.header.height as usize - 1);
            // A sibling of another slot, or of the same slot with a worse
            // proof.
            let beaten = d.gossiped
                && canonical.is_some_and(|c| {
                    let (c, ours) = (&model.blocks[c], &keys[&hash]);
                    c.parent == parent && (c.key.0 != ours.0 || c.key < *ours)
                });
            if beaten && parent_valid {
                assert_eq!(*first, Err(Rejection::NotBetter), "{context}");
            }
            if matches!(first, Err(Rejection::NotBetter)) {
                assert!(
                    beaten,
                    "{context}: refused as not better, though nothing canonical beats it"
                );
            }
            if !matches!(first, Err(Rejection::NotBetter)) {
                // Stored, and the orphans that waited for it after it, in
                // the engine's order, each checked against the model: every
                // valid block that waited comes, and nothing that did not
                // wait (an orphan under an invalid block may stay).
                let mut waited = vec![hash];
                let mut at = 0;
                while at < waited.len() {
                    waited.extend(waiting.get(&waited[at]).into_iter().flatten());
                    at += 1;
                }
                let got: Vec<Hash> = outcomes.iter().map(|o| o.0).collect();
                assert!(
                    got.iter().all(|h| waited.contains(h)),
                    "{context}: adopted a block that did not wait"
                );
                for h in &waited {
                    assert!(
                        !tree.valid(*h) || got.contains(h),
                        "{context}: a valid orphan was not adopted"
                    );
                }
                for (h, outcome) in &outcomes {
                    let before = model.head.clone();
                    if !model.blocks.contains_key(h) {
                        let b = &tree.blocks[h];
                        model.blocks.insert(
                            *h,
                            Stored {
                                parent: b.parent,
                                height: b.height,
                                target: b.target,
                                child_target: b.child_target,
                                key: b.key,
                                txs: b.txs.clone(),
                            },
                        );
                    }
                    model.consider(*h);
                    let after = model.head.clone();
                    if !tree.valid(model.blocks[h].parent) {
                        continue;
                    }
                    if after != before {
                        let common = before
                            .iter()
                            .zip(&after)
                            .take_while(|(x, y)| x == y)
                            .count();
                        assert_eq!(
                            *outcome,
                            Ok(Imported::NewHead {
                                left: before.len() - common
                            }),
                            "{context}"
                        );
                    } else if model.valid(*h) {
                        assert_eq!(*outcome, Ok(Imported::Kept), "{context}");
                    } else {
                        // Its transactions do not apply: refused if its
                        // chain would have won, else kept as a loser.
                        let chain = model.chain(*h).expect("its parent is stored");
                        if model.replaces(&before, &chain) {
                            assert!(
                                matches!(outcome, Err(Rejection::BadTxVersion { .. })),
                                "{context}: {outcome:?}"
                            );
                        } else {
                            assert_eq!(*outcome, Ok(Imported::Kept), "{context}");
                        }
                    }
                }
                for (h, outcome) in &outcomes {
                    if matches!(outcome, Ok(Imported::NewHead { .. }) | Ok(Imported::Kept)) {
                        waiting.remove(h);
                    }
                }
            }
        }
        check(&engine, &model, &context);
    }
}

/// The engine's head, canonical table and registers are the model's.
fn check(engine: &Engine, model: &Model, context: &str) {
    let head = &model.head;
    let store = engine.store();
    assert_eq!(
        engine.head().hash,
        *head.last().unwrap_or(&model.genesis),
        "{context}: the head"
    );
    assert_eq!(engine.head().height, head.len() as u64, "{context}");
    assert_eq!(engine.head().weight, model.weight(head), "{context}");
    if let Some(tip) = head.last() {
        assert_eq!(
            engine.head().child_target,
            model.blocks[tip].child_target,
            "{context}"
        );
    }
    for (i, h) in head.iter().enumerate() {
        assert_eq!(
            store.canonical(i as u64 + 1).unwrap(),
            Some(*h),
            "{context}"
        );
    }
    assert_eq!(
        store.canonical(head.len() as u64 + 1).unwrap(),
        None,
        "{context}"
    );
    let regs = model.registers(head).expect("the head is valid");
    for r in 0..4u8 {
        let (owner, name) = register(r);
        let owner = owners()[owner].public();
        let got = store
            .register(&owner, name)
            .unwrap()
            .map(|e| (e.version, e.value, e.height, e.signature));
        assert_eq!(
            got.as_ref(),
            regs.get(&(owner, name.to_vec())),
            "{context}: register {r}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 128,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_engine_follows_the_model_through_any_tree_in_any_order(
        plans in prop::collection::vec(plan(), 1..40),
        order in prop::collection::vec(any::<u32>(), 40),
        gossip in prop::collection::vec(prop::bool::weighted(0.3), 1..16),
        again in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        run(plans, order, gossip, again);
    }
}
