//! Faults: vaults killed and restarted, a network split and healed, a
//! damaged blob, a holder that leaves, and messages no honest vault sends.

mod common;

use common::*;
use spacevault_chain::{Block, ChainProof, Keypair, Parent, Stamp};
use std::time::Duration;

async fn put_via(node: &spacevault_node::Node, blob: Vec<u8>) -> spacevault_node::data::Put {
    node.put(blob).await.unwrap()
}

async fn get_via(node: &spacevault_node::Node, address: &[u8; 32]) -> Option<Vec<u8>> {
    node.read(address).await
}

/// Waits until every node knows `n` vaults.
async fn all_know(nodes: &[spacevault_node::Node], n: usize) -> bool {
    wait_for(Duration::from_secs(20), || {
        nodes.iter().all(|x| x.vaults().count() == n)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_vaults_lose_no_stored_blob_and_rejoin() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..6).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    let mut nodes = network(&spec, &files, false).await;
    assert!(
        all_know(&nodes, 6).await,
        "the vaults did not find each other"
    );
    // Clients store blobs through every vault.
    let mut stored = Vec::new();
    for i in 0..12u32 {
        let blob = format!("blob {i} ").repeat(100 + i as usize).into_bytes();
        let put = put_via(&nodes[i as usize % 6], blob.clone()).await;
        assert_eq!(put.receipts.len(), 3);
        stored.push((put.address, blob));
    }
    // Two of six killed at once, mid-work.
    let b = nodes.pop().unwrap();
    let a = nodes.pop().unwrap();
    a.kill().await;
    b.kill().await;
    let height = nodes[0].height();
    // The others go on producing, and every blob is still readable.
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.height() >= height + 3))
        .await
    );
    for (address, blob) in &stored {
        assert_eq!(get_via(&nodes[0], address).await.as_ref(), Some(blob));
    }
    // Restarted, the two catch up.
    let boot = nodes[0].listen_addrs(Duration::from_secs(1)).await;
    nodes.push(start(&spec, &files[4], boot.clone(), false).await);
    nodes.push(start(&spec, &files[5], boot, false).await);
    let target = nodes[0].height() + 2;
    assert!(
        wait_for(Duration::from_secs(30), || nodes
            .iter()
            .all(|n| n.height() >= target))
        .await,
        "heights {:?}",
        nodes.iter().map(|n| n.height()).collect::<Vec<_>>()
    );
    let all: Vec<&_> = nodes.iter().collect();
    assert!(agree_up_to(&all, target - 2));
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_network_heals_into_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..6).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    // A timekeeper on each side of the split to come.
    let nodes = network_keeping_time_at(&spec, &files, false, 3, &[0, 3]).await;
    let (left, right): (Vec<&_>, Vec<&_>) =
        (nodes[..3].iter().collect(), nodes[3..].iter().collect());
    split(&left, &right).await;
    let split_at = nodes.iter().map(|n| n.height()).max().unwrap();
    // Both halves go on, each on a branch of its own.
    let went_on = wait_for(Duration::from_secs(20), || {
        nodes.iter().all(|n| n.height() >= split_at + 4)
    })
    .await;
    assert!(
        went_on,
        "split at {split_at}: heights {:?}, slots {:?}",
        nodes.iter().map(|n| n.height()).collect::<Vec<_>>(),
        nodes.iter().map(|n| n.slot()).collect::<Vec<_>>()
    );
    let forked = hash_at(&nodes[0], split_at + 3) != hash_at(&nodes[3], split_at + 3);
    assert!(forked, "the halves did not fork: the split did not hold");
    heal(&left, &right);
    reconnect(&right, left[0]).await;
    // One chain again: every vault agrees on every block two slots back.
    let healed = wait_for(Duration::from_secs(40), || {
        let h = nodes.iter().map(|n| n.height()).min().unwrap();
        h > split_at + 6 && agree_up_to(&nodes.iter().collect::<Vec<_>>(), h - 2)
    })
    .await;
    assert!(
        healed,
        "heights {:?}, peers {:?}, syncs that did not attach {:?}",
        nodes.iter().map(|n| n.height()).collect::<Vec<_>>(),
        nodes
            .iter()
            .map(|n| n.connected_peers())
            .collect::<Vec<_>>(),
        nodes
            .iter()
            .map(|n| rejected(n, "sync", "does_not_attach"))
            .collect::<Vec<_>>()
    );
    assert!(nodes
        .iter()
        .any(|n| metric(n, "spacevault_reorgs_total") > 0.0));
    for n in nodes {
        n.stop().await;
    }
}

/// Blocks 1..=n of a branch made with `files`' plot and key, from genesis,
/// block n in slot n.
fn branch(spec: &spacevault_chain::ChainSpec, files: &VaultFiles, n: u64) -> Vec<Block> {
    let chain = spec.chain_id();
    let path = std::fs::read_dir(&files.plots)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let plot = spacevault::PlotFile::open(&path).unwrap();
    let mut parent = Parent::genesis(spec).hash;
    let mut blocks = Vec::new();
    for (height, out) in (1..=n).zip(slots_of(spec, n)) {
        let stamp = Stamp {
            slot: out.slot,
            output: out.output,
        };
        let answer = plot.prove(&stamp.challenge(&chain)).unwrap();
        let proof = ChainProof::plain(files.key.public(), plot.header().seed, 16, answer.nonce);
        let block = Block::produce(&files.key, chain, height, parent, stamp, proof, vec![]);
        parent = block.hash();
        blocks.push(block);
    }
    blocks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vaults_on_branches_of_one_height_meet_on_one() {
    // Two vaults that farm nothing, each holding a branch of its own of one
    // height: no block will come to settle it, "longer wins" cannot, and
    // only syncing from a peer as high as itself brings them together.
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    let mut spec = spec(300, 2);
    spec.genesis_unix_ms -= 10_000;
    let idle = |f: &VaultFiles| VaultFiles {
        key: f.key.clone(),
        plots: dir.path().join("no-plots"),
        data: f.data.clone(),
    };
    std::fs::create_dir_all(dir.path().join("no-plots")).unwrap();
    let a = start(&spec, &idle(&files[2]), vec![], false).await;
    let b = start(&spec, &idle(&files[3]), vec![], false).await;
    let now = spacevault_node::now_ms();
    for (node, maker) in [(&a, &files[0]), (&b, &files[1])] {
        // No timekeeper runs: the vaults are given the slots.
        for out in slots_of(&spec, 3) {
            node.time().offer(&out, now).unwrap();
        }
        for block in branch(&spec, maker, 3) {
            node.engine().import(block, now).unwrap();
        }
    }
    let head = |n: &spacevault_node::Node| n.engine().head();
    assert_eq!(head(&a).height, 3);
    assert_eq!(head(&b).height, 3);
    assert_ne!(head(&a).hash, head(&b).hash);
    for addr in a.listen_addrs(Duration::from_secs(1)).await {
        b.network().dial(addr);
    }
    let met = wait_for(Duration::from_secs(20), || head(&a).hash == head(&b).hash).await;
    assert!(met, "the vaults stayed on their own branches");
    assert_eq!(head(&a).height, 3);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bit_flipped_in_a_blob_file_or_a_file_gone_is_found_on_the_next_read_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    let mut nodes = network(&spec, &files, false).await;
    assert!(all_know(&nodes, 4).await);
    let blob = |what: &[u8]| {
        let mut blob = vec![0u8; 50_000];
        blake3::Hasher::new()
            .update(what)
            .finalize_xof()
            .fill(&mut blob);
        blob
    };
    let flipped = blob(b"to flip");
    let put = put_via(&nodes[0], flipped.clone()).await;
    let at = nodes
        .iter()
        .position(|n| n.farmer_key() == put.receipts[0].holder)
        .unwrap();
    // Two more blobs that vault holds.
    let held_by = |n: &spacevault_node::Node, b: &[u8]| {
        let address = spacevault_chain::blob_address(b);
        let v = n.vaults();
        v.holders(&address, spec.replication as usize)
            .contains(&n.farmer_key())
    };
    let mut theirs = (0u32..)
        .map(|i| blob(format!("another blob {i}").as_bytes()))
        .filter(|b| held_by(&nodes[at], b));
    let (lost, untouched) = (theirs.next().unwrap(), theirs.next().unwrap());
    let gone = put_via(&nodes[at], lost.clone()).await;
    let kept = put_via(&nodes[at], untouched.clone()).await;
    let holder = nodes.remove(at);
    let holds = |a: &[u8; 32]| holder.engine().store().has_blob(a).unwrap();
    assert!(holds(&put.address) && holds(&gone.address) && holds(&kept.address));
    // It stops; on its disk a bit of one blob's file flips, and another
    // blob's file is gone.
    holder.stop().await;
    let store_path = files[at].data.join("vault.redb");
    let blob_file = |a: &[u8; 32]| {
        let hex = hex::encode(a);
        spacevault_store::blob_dir_of(&store_path)
            .join(&hex[..2])
            .join(&hex[2..])
    };
    let mut bytes = std::fs::read(blob_file(&put.address)).unwrap();
    bytes[1017] ^= 0x08;
    std::fs::write(blob_file(&put.address), &bytes).unwrap();
    std::fs::remove_file(blob_file(&gone.address)).unwrap();
    // Restarted on its disk alone, it finds the damage on the next read
    // and serves nothing rather than the damaged bytes; the rest is whole.
    // (Its scrub is off: reading every blob on its own, it would count
    // the same damage too.)
    let holder = start_with(&spec, &files[at], vec![], false, |c| c.scrub.rate = 0).await;
    assert_eq!(get_via(&holder, &put.address).await, None);
    assert_eq!(get_via(&holder, &gone.address).await, None);
    assert_eq!(get_via(&holder, &kept.address).await, Some(untouched));
    assert_eq!(
        metric(&holder, "spacevault_blob_reverify_failures_total"),
        2.0
    );
    // Back among the others, it has good copies again, from a read or a
    // holder's push, and serves them.
    for addr in nodes[0].listen_addrs(Duration::from_secs(1)).await {
        holder.network().dial(addr);
    }
    nodes.push(holder);
    let holder = nodes.last().unwrap();
    for (address, blob) in [(put.address, flipped), (gone.address, lost)] {
        let good = |n: &spacevault_node::Node| {
            n.engine().store().get_blob(&address).ok() == Some(Some(blob.clone()))
        };
        let repaired = wait_for(Duration::from_secs(20), || good(holder)).await
            || get_via(holder, &address).await == Some(blob.clone());
        assert!(repaired, "the damaged copy was never replaced");
        assert!(wait_for(Duration::from_secs(20), || good(holder)).await);
    }
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scrub_finds_and_repairs_a_damaged_blob_that_nobody_reads() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 3);
    logs();
    let fast = |c: &mut spacevault_node::NodeConfig| {
        c.scrub = spacevault_node::scrub::ScrubConfig {
            rate: 1 << 30,
            pause: Duration::from_millis(100),
        }
    };
    let first = start_with(&spec, &files[0], vec![], false, fast).await;
    let boot = first.listen_addrs(Duration::from_secs(5)).await;
    let mut nodes = vec![first];
    for f in &files[1..] {
        nodes.push(start_with(&spec, f, boot.clone(), false, fast).await);
    }
    assert!(all_know(&nodes, 3).await);
    let mut blob = vec![0u8; 20_000];
    blake3::Hasher::new()
        .update(b"a blob the scrub repairs")
        .finalize_xof()
        .fill(&mut blob);
    let put = put_via(&nodes[0], blob.clone()).await;
    assert_eq!(put.receipts.len(), 3);
    // The copies a change of the vault set sends (which would replace a
    // damaged one too) are sent by now: two scrub passes have passed.
    let passes = metric(&nodes[1], "spacevault_scrub_passes_total");
    assert!(
        wait_for(Duration::from_secs(20), || metric(
            &nodes[1],
            "spacevault_scrub_passes_total"
        ) >= passes + 2.0)
        .await
    );
    // A bit flips in vault 1's copy while it runs; nobody reads the blob.
    let file = nodes[1].engine().store().blob_path(&put.address);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[123] ^= 0x10;
    std::fs::write(&file, &bytes).unwrap();
    let found = wait_for(Duration::from_secs(30), || {
        metric(&nodes[1], "spacevault_scrub_blobs_damaged_total") >= 1.0
    })
    .await;
    assert!(found, "the scrub never found the damage");
    let repaired = wait_for(Duration::from_secs(30), || {
        std::fs::read(&file).is_ok_and(|b| b == blob)
    })
    .await;
    assert!(repaired, "the scrub never repaired the copy");
    assert!(metric(&nodes[1], "spacevault_scrub_passes_total") >= 1.0);
    assert_eq!(
        metric(&nodes[0], "spacevault_scrub_blobs_damaged_total"),
        0.0
    );
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_register_damaged_on_disk_is_refused_rather_than_served() {
    let dir = tempfile::tempdir().unwrap();
    let files = [vault_files(dir.path(), 0)];
    let spec = spec(300, 1);
    let node = start_with(&spec, &files[0], vec![], true, |c| c.timekeeper = true).await;
    let owner = Keypair::from_secret(&[91; 32]);
    // A value that repeats nowhere, so that it can be found in the file.
    let mut value = vec![0u8; 64];
    blake3::Hasher::new()
        .update(b"a register to damage")
        .finalize_xof()
        .fill(&mut value);
    client_of(&node)
        .set(&owner, &spec.chain_id(), "r", &value)
        .await
        .unwrap();
    node.stop().await;
    // A bit of the value flips wherever it lies in the database (its
    // block's copy too).
    let path = files[0].data.join("vault.redb");
    let mut bytes = std::fs::read(&path).unwrap();
    let at: Vec<usize> = bytes
        .windows(64)
        .enumerate()
        .filter(|(_, w)| *w == value.as_slice())
        .map(|(i, _)| i)
        .collect();
    assert!(!at.is_empty(), "the value in the file");
    for i in at {
        bytes[i + 9] ^= 0x04;
    }
    std::fs::write(&path, &bytes).unwrap();
    let node = start(&spec, &files[0], vec![], true).await;
    let read = client_of(&node).read(&owner.public(), "r").await;
    match read {
        Err(spacevault_node::client::ClientError::Refused {
            status: 500,
            reason,
        }) => {
            assert!(reason.contains("damaged"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        metric(&node, "spacevault_register_reverify_failures_total"),
        1.0
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_holders_blobs_are_copied_back_to_r() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..5).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(200, 3);
    let mut nodes = network(&spec, &files, false).await;
    assert!(all_know(&nodes, 5).await);
    let mut addresses = Vec::new();
    for i in 0..10u32 {
        let put = put_via(&nodes[0], format!("churn {i}").into_bytes()).await;
        addresses.push(put.address);
    }
    let copies = |nodes: &[spacevault_node::Node], a: &[u8; 32]| {
        nodes
            .iter()
            .filter(|n| n.engine().store().has_blob(a).unwrap())
            .count()
    };
    // The vault holding the most blobs leaves.
    let leaving = (0..5)
        .max_by_key(|&i| {
            addresses
                .iter()
                .filter(|a| nodes[i].engine().store().has_blob(a).unwrap())
                .count()
        })
        .unwrap();
    nodes.remove(leaving).kill().await;
    let started = std::time::Instant::now();
    let back = wait_for(Duration::from_secs(30), || {
        addresses.iter().all(|a| copies(&nodes, a) >= 3)
    })
    .await;
    assert!(
        back,
        "copies: {:?}",
        addresses
            .iter()
            .map(|a| copies(&nodes, a))
            .collect::<Vec<_>>()
    );
    eprintln!(
        "back at 3 copies {:?} after the holder left",
        started.elapsed()
    );
    for n in nodes {
        n.stop().await;
    }
}

/// A block as the test's fork choice compares it: its hash, its rank, and
/// the chain's weight through it.
type Weighed = ([u8; 32], spacevault_chain::Ranked, u128);

/// The chain ending at `tip` in `node`'s store, from block 1.
fn chain_of(node: &spacevault_node::Node, tip: [u8; 32]) -> Vec<Weighed> {
    let engine = node.engine();
    let genesis = Parent::genesis(engine.spec()).hash;
    let mut out = Vec::new();
    let mut at = tip;
    while at != genesis {
        let info = engine.store().info(&at).unwrap().expect("a stored block");
        out.push((at, info.rank, info.weight));
        at = info.parent;
    }
    out.reverse();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healed_split_follows_the_branch_fork_choice_prefers() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    let spec = spec(300, 2);
    // A timekeeper on each side of the split to come.
    let nodes = network_keeping_time_at(&spec, &files, false, 2, &[0, 2]).await;
    let (left, right): (Vec<&_>, Vec<&_>) =
        (nodes[..2].iter().collect(), nodes[2..].iter().collect());
    split(&left, &right).await;
    let split_at = nodes.iter().map(|n| n.height()).max().unwrap();
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.height() >= split_at + 3))
        .await
    );
    // The halves stop producing: every vault stops, and comes back with no
    // plots, so that the branches they hold are all there will be.
    for n in nodes {
        n.stop().await;
    }
    std::fs::create_dir_all(dir.path().join("no-plots")).unwrap();
    let idle = |f: &VaultFiles| VaultFiles {
        key: f.key.clone(),
        plots: dir.path().join("no-plots"),
        data: f.data.clone(),
    };
    let mut nodes = Vec::new();
    for f in &files {
        nodes.push(start(&spec, &idle(f), vec![], false).await);
    }
    // Each vault's chain as it reopened, before any meets another.
    let mut chains = Vec::new();
    for n in &nodes {
        let head = n.engine().head().hash;
        chains.push(chain_of(n, head));
    }
    let at = split_at as usize + 1;
    assert!(
        chains.iter().all(|c| c.len() > at) && chains.iter().any(|c| c[at] != chains[0][at]),
        "the halves did not fork"
    );
    // Fork choice written out: the heaviest; of the heaviest, the one
    // whose block is better where they first differ (rank, then hash).
    let better = |a: &[Weighed], b: &[Weighed]| {
        let weight = |c: &[Weighed]| c.last().map_or(0, |b| b.2);
        if weight(a) != weight(b) {
            return weight(a) > weight(b);
        }
        match a.iter().zip(b).find(|(x, y)| x.0 != y.0) {
            Some((x, y)) => x.1.beats(&y.1) || (x.1 == y.1 && x.0 < y.0),
            None => false,
        }
    };
    let mut winner = &chains[0];
    for c in &chains {
        if better(c, winner) {
            winner = c;
        }
    }
    let winner = winner.last().unwrap().0;
    let addrs = nodes[0].listen_addrs(Duration::from_secs(5)).await;
    for n in &nodes[1..] {
        for a in &addrs {
            n.network().dial(a.clone());
        }
    }
    let met = wait_for(Duration::from_secs(30), || {
        nodes.iter().all(|n| n.engine().head().hash == winner)
    })
    .await;
    // Each sync found where the branches meet with its first request (a
    // locate): none had to go back a batch at a time.
    for n in &nodes {
        let (syncs, requests) = (
            metric(n, "spacevault_syncs_total"),
            metric(n, "spacevault_sync_requests_total"),
        );
        assert!(requests <= syncs, "{requests} requests in {syncs} syncs");
    }
    assert!(
        met,
        "heads {:?}, the better branch ends at {}",
        nodes
            .iter()
            .map(|n| hex::encode(&n.engine().head().hash[..4]))
            .collect::<Vec<_>>(),
        hex::encode(&winner[..4])
    );
    for n in nodes {
        n.stop().await;
    }
}
