use super::*;
use spacevault_chain::{ChainProof, Keypair, RegisterTx, Target};

fn spec() -> ChainSpec {
    ChainSpec::new("store-test", 1_000, 100)
}

fn rank(d: u8) -> Ranked {
    Ranked {
        distance: [d; 32],
        tiebreak: 0,
        plot_id: [0; 32],
        quality: 0,
    }
}

/// A block on `parent` at `height` with these transactions (the store does
/// not check proofs, so any proof will do).
fn block(parent: [u8; 32], height: u64, salt: u8, txs: Vec<RegisterTx>) -> Block {
    let producer = Keypair::from_secret(&[salt; 32]);
    let proof = ChainProof::plain(producer.public(), [salt; 32], 16, height);
    Block::produce(
        &producer,
        spec().chain_id(),
        height,
        parent,
        spacevault_chain::Stamp {
            slot: height,
            output: [salt; spacevault_chain::time::FORM_BYTES],
        },
        proof,
        txs,
    )
}

/// Keeps `blocks`, each of rank 1, weight 1 and child target 1.
fn keep<'a>(store: &Store, blocks: impl IntoIterator<Item = &'a Block>) {
    for b in blocks {
        let lines = spacevault_chain::time::Branch {
            hash: b.hash(),
            slot: b.header.stamp.slot,
            line: [1; 32],
            opening: [2; 32],
        };
        store
            .insert_block(b, rank(1), 1, Target(1), &lines)
            .unwrap();
    }
}

fn set(owner: &Keypair, name: &[u8], version: u64, value: &[u8]) -> RegisterTx {
    RegisterTx::signed(owner, &spec().chain_id(), name, version, value)
}

#[test]
fn a_store_belongs_to_one_chain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    drop(Store::open(&path, &spec()).unwrap());
    let mut other = spec();
    other.name = "another".into();
    let e = Store::open(&path, &other).err().unwrap();
    assert!(e.to_string().contains("another --data directory"), "{e}");
    assert!(Store::open(&path, &spec()).is_ok());
}

#[test]
fn reorgs_roll_registers_back_and_forward() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let owner = Keypair::from_secret(&[9; 32]);
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    // Chain A: v1 = "a", then v2 = "aa".
    let a1 = block(g, 1, 1, vec![set(&owner, b"r", 1, b"a")]);
    let a2 = block(a1.hash(), 2, 1, vec![set(&owner, b"r", 2, b"aa")]);
    // Chain B from genesis: v1 = "b", v2 and v3 in one block, then a
    // register of its own.
    let b1 = block(g, 1, 2, vec![set(&owner, b"r", 1, b"b")]);
    let b2 = block(
        b1.hash(),
        2,
        2,
        vec![set(&owner, b"r", 2, b"bb"), set(&owner, b"r", 3, b"bbb")],
    );
    let b3 = block(b2.hash(), 3, 2, vec![set(&owner, b"s", 1, b"x")]);
    keep(&store, [&a1, &a2, &b1, &b2, &b3]);
    store
        .make_canonical(&[a1.hash(), a2.hash()])
        .unwrap()
        .unwrap();
    assert_eq!(store.head().unwrap(), Some((a2.hash(), 2)));
    assert_eq!(
        store
            .register(&owner.public(), b"r")
            .unwrap()
            .unwrap()
            .value,
        b"aa"
    );

    store
        .make_canonical(&[b1.hash(), b2.hash(), b3.hash()])
        .unwrap()
        .unwrap();
    assert_eq!(store.head().unwrap(), Some((b3.hash(), 3)));
    let r = store.register(&owner.public(), b"r").unwrap().unwrap();
    assert_eq!(
        (r.version, r.value.as_slice(), r.height),
        (3, &b"bbb"[..], 2)
    );
    assert_eq!(store.canonical(1).unwrap(), Some(b1.hash()));
    assert_eq!(
        store.info(&b1.hash()).unwrap().unwrap().status,
        Status::Applied
    );

    // And back: "s" disappears, "r" is A's again.
    store
        .make_canonical(&[a1.hash(), a2.hash()])
        .unwrap()
        .unwrap();
    assert_eq!(store.register(&owner.public(), b"s").unwrap(), None);
    assert_eq!(store.register_version(&owner.public(), b"r").unwrap(), 2);
    assert_eq!(store.canonical(3).unwrap(), None);
}

#[test]
fn holder_registrations_are_a_history_that_reorgs_roll_back() {
    use spacevault_chain::holders::HOLDER_REGISTER;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let (x, y) = (
        Keypair::from_secret(&[9; 32]),
        Keypair::from_secret(&[8; 32]),
    );
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    // The store keeps what blocks wrote; the values' proofs are checked
    // before a block reaches it.
    let a1 = block(g, 1, 1, vec![set(&x, HOLDER_REGISTER, 1, b"x1")]);
    let a2 = block(
        a1.hash(),
        2,
        1,
        vec![
            set(&y, HOLDER_REGISTER, 1, b"y1"),
            set(&x, b"other", 1, b"z"),
        ],
    );
    // x leaves at 3, and comes back at 4.
    let a3 = block(a2.hash(), 3, 1, vec![set(&x, HOLDER_REGISTER, 2, b"")]);
    let a4 = block(a3.hash(), 4, 1, vec![set(&x, HOLDER_REGISTER, 3, b"x3")]);
    let b2 = block(a1.hash(), 2, 2, vec![]);
    keep(&store, [&a1, &a2, &a3, &a4, &b2]);
    store
        .make_canonical(&[a1.hash(), a2.hash(), a3.hash(), a4.hash()])
        .unwrap()
        .unwrap();
    let owners = |below| -> Vec<([u8; 32], u64, Vec<u8>)> {
        store
            .registered_below(below)
            .unwrap()
            .into_iter()
            .map(|r| (r.owner, r.height, r.tx.value))
            .collect()
    };
    let (xk, yk) = (x.public(), y.public());
    let mut both = vec![(xk, 1, b"x1".to_vec()), (yk, 2, b"y1".to_vec())];
    both.sort();
    assert_eq!(owners(1), vec![]);
    assert_eq!(owners(2), vec![(xk, 1, b"x1".to_vec())]);
    assert_eq!(owners(3), both);
    assert_eq!(owners(4), vec![(yk, 2, b"y1".to_vec())]);
    let mut back = vec![(xk, 4, b"x3".to_vec()), (yk, 2, b"y1".to_vec())];
    back.sort();
    assert_eq!(owners(5), back);
    assert_eq!(owners(u64::MAX), back);
    let writes: Vec<(u64, Vec<u8>)> = store
        .holder_writes(&xk)
        .unwrap()
        .into_iter()
        .map(|w| (w.height, w.tx.value))
        .collect();
    assert_eq!(
        writes,
        vec![(1, b"x1".to_vec()), (3, vec![]), (4, b"x3".to_vec())]
    );
    let at = |k: &[u8; 32], h| store.registered_at(k, h).unwrap();
    assert!(!at(&xk, 1) && at(&xk, 2) && at(&xk, 3) && !at(&xk, 4) && at(&xk, 5));
    assert!(!at(&yk, 2) && at(&yk, 3));
    // A reorg to b2 forgets y and x's leaving and return.
    store.make_canonical(&[b2.hash()]).unwrap().unwrap();
    assert_eq!(owners(u64::MAX), vec![(xk, 1, b"x1".to_vec())]);
}

#[test]
fn challenges_and_answers_are_a_history_by_accused_that_reorgs_roll_back() {
    use spacevault_chain::challenge::{answer_name, challenge_name};
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let (a, x, y) = (
        Keypair::from_secret(&[9; 32]),
        Keypair::from_secret(&[8; 32]),
        Keypair::from_secret(&[7; 32]),
    );
    let (ak, xk, yk) = (a.public(), x.public(), y.public());
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    // a challenges x and y at 1; x answers at 2; a challenges x again at
    // 3. Ordinary registers are no disputes.
    let a1 = block(
        g,
        1,
        1,
        vec![
            set(&a, &challenge_name(&xk), 1, b"c1"),
            set(&a, &challenge_name(&yk), 1, b"c2"),
            set(&x, b"other", 1, b"z"),
        ],
    );
    let a2 = block(a1.hash(), 2, 1, vec![set(&x, &answer_name(&ak), 1, b"r1")]);
    let a3 = block(
        a2.hash(),
        3,
        1,
        vec![set(&a, &challenge_name(&xk), 2, b"c3")],
    );
    let b2 = block(a1.hash(), 2, 2, vec![]);
    keep(&store, [&a1, &a2, &a3, &b2]);
    store
        .make_canonical(&[a1.hash(), a2.hash(), a3.hash()])
        .unwrap()
        .unwrap();
    let of = |k: &[u8; 32]| -> Vec<(u64, [u8; 32], Vec<u8>)> {
        store
            .disputes_of(k, 0..u64::MAX)
            .unwrap()
            .into_iter()
            .map(|w| (w.height, w.tx.owner, w.tx.value))
            .collect()
    };
    assert_eq!(
        of(&xk),
        vec![
            (1, ak, b"c1".to_vec()),
            (2, xk, b"r1".to_vec()),
            (3, ak, b"c3".to_vec())
        ]
    );
    assert_eq!(of(&yk), vec![(1, ak, b"c2".to_vec())]);
    let heights: Vec<u64> = store
        .disputes_of(&xk, 2..3)
        .unwrap()
        .iter()
        .map(|w| w.height)
        .collect();
    assert_eq!(heights, vec![2]);
    assert_eq!(of(&ak), vec![]);
    // A reorg to b2 forgets the answer and the second challenge.
    store.make_canonical(&[b2.hash()]).unwrap().unwrap();
    assert_eq!(of(&xk), vec![(1, ak, b"c1".to_vec())]);
}

#[test]
fn a_block_whose_versions_do_not_follow_is_refused_and_nothing_changes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let owner = Keypair::from_secret(&[9; 32]);
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let b1 = block(g, 1, 1, vec![set(&owner, b"r", 1, b"a")]);
    let replay = block(b1.hash(), 2, 1, vec![set(&owner, b"r", 1, b"a")]);
    keep(&store, [&b1, &replay]);
    store.make_canonical(&[b1.hash()]).unwrap().unwrap();
    let refused = store.make_canonical(&[replay.hash()]).unwrap().unwrap_err();
    assert_eq!(refused.block, replay.hash());
    assert_eq!(refused.why.name(), "bad_tx_version");
    assert_eq!(store.head().unwrap(), Some((b1.hash(), 1)));
    store.mark_invalid(&replay.hash()).unwrap();
    assert_eq!(
        store.info(&replay.hash()).unwrap().unwrap().status,
        Status::Invalid
    );
}

/// `block`, carrying `evidence`, signed again.
fn with_evidence(b: Block, salt: u8, evidence: Vec<spacevault_chain::Equivocation>) -> Block {
    Block::sign(
        &Keypair::from_secret(&[salt; 32]),
        b.header,
        b.txs,
        evidence,
    )
}

/// Evidence that farmer `salt` (as [`block`] makes its blocks) signed two
/// blocks for slot 1.
fn equivocation(salt: u8) -> spacevault_chain::Equivocation {
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let one = block(g, 1, salt, vec![]);
    let other = block([7; 32], 1, salt, vec![]);
    spacevault_chain::Equivocation::of(one.signed_header(), other.signed_header()).unwrap()
}

#[test]
fn evidence_bans_its_key_on_its_chain_until_a_reorg_drops_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let cheat = Keypair::from_secret(&[5; 32]).public();
    // Chain A: block 1 carries the evidence against farmer 5; farmer 5's
    // block 2 on it, and a second piece against it, are refused.
    let a1 = with_evidence(block(g, 1, 1, vec![]), 1, vec![equivocation(5)]);
    let a2_by_cheat = block(a1.hash(), 2, 5, vec![]);
    let a2_again = with_evidence(block(a1.hash(), 2, 2, vec![]), 2, vec![equivocation(5)]);
    // Chain B: no evidence; farmer 5 produces on it.
    let b1 = block(g, 1, 3, vec![]);
    let b2_by_cheat = block(b1.hash(), 2, 5, vec![]);
    keep(&store, [&a1, &a2_by_cheat, &a2_again, &b1, &b2_by_cheat]);
    assert_eq!(store.ban_of(&cheat).unwrap(), None);
    store.make_canonical(&[a1.hash()]).unwrap().unwrap();
    assert_eq!(store.ban_of(&cheat).unwrap(), Some(a1.hash()));
    let refused = store
        .make_canonical(&[a2_by_cheat.hash()])
        .unwrap()
        .unwrap_err();
    assert_eq!(
        (refused.block, refused.why.name()),
        (a2_by_cheat.hash(), "banned")
    );
    let refused = store
        .make_canonical(&[a2_again.hash()])
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.why.name(), "evidence_known");
    assert_eq!(store.head().unwrap(), Some((a1.hash(), 1)));
    // The reorg to B lifts the ban there: the cheat's block applies.
    store
        .make_canonical(&[b1.hash(), b2_by_cheat.hash()])
        .unwrap()
        .unwrap();
    assert_eq!(store.ban_of(&cheat).unwrap(), None);
    // And back to A: banned again.
    store.make_canonical(&[a1.hash()]).unwrap().unwrap();
    assert_eq!(store.ban_of(&cheat).unwrap(), Some(a1.hash()));
    // A reorg above the block that banned the key keeps the ban.
    let a2 = block(a1.hash(), 2, 1, vec![]);
    let a2_rival = block(a1.hash(), 2, 2, vec![]);
    keep(&store, [&a2, &a2_rival]);
    store.make_canonical(&[a2.hash()]).unwrap().unwrap();
    store.make_canonical(&[a2_rival.hash()]).unwrap().unwrap();
    assert_eq!(store.ban_of(&cheat).unwrap(), Some(a1.hash()));
}

#[test]
fn a_branch_refused_partway_leaves_no_ban_and_a_block_may_carry_evidence_against_its_producer() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let owner = Keypair::from_secret(&[9; 32]);
    let cheat = Keypair::from_secret(&[5; 32]).public();
    // Block 1 bans farmer 5; block 2 writes version 2 of a register that
    // has none: the branch is refused at block 2, and block 1's ban with it.
    let c1 = with_evidence(block(g, 1, 1, vec![]), 1, vec![equivocation(5)]);
    let c2 = block(c1.hash(), 2, 1, vec![set(&owner, b"r", 2, b"x")]);
    keep(&store, [&c1, &c2]);
    let refused = store
        .make_canonical(&[c1.hash(), c2.hash()])
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.block, c2.hash());
    assert_eq!(store.ban_of(&cheat).unwrap(), None);
    assert_eq!(store.head().unwrap(), None);
    // Farmer 5's own block carrying the evidence against it applies: the
    // ban starts at its child.
    let own = with_evidence(block(g, 1, 5, vec![]), 5, vec![equivocation(5)]);
    keep(&store, [&own]);
    store.make_canonical(&[own.hash()]).unwrap().unwrap();
    assert_eq!(store.ban_of(&cheat).unwrap(), Some(own.hash()));
}

#[test]
fn blobs_are_kept_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let blob = b"some data".to_vec();
    let addr = spacevault_chain::blob_address(&blob);
    assert!(!store.has_blob(&addr).unwrap());
    store.put_blob(&addr, &blob).unwrap();
    assert!(store.has_blob(&addr).unwrap());
    assert_eq!(store.get_blob(&addr).unwrap(), Some(blob.clone()));
    assert_eq!(store.blob_addresses().unwrap(), vec![addr]);
    assert_eq!(store.blob_stats().unwrap(), (1, blob.len() as u64));
    store.delete_blob(&addr).unwrap();
    assert_eq!(store.get_blob(&addr).unwrap(), None);
    assert!(!store.has_blob(&addr).unwrap());
}

#[test]
fn blob_bytes_live_in_files_and_the_counts_follow_every_change() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let (a, b) = (b"aaaa".to_vec(), b"bbbbbbbb".to_vec());
    let (ha, hb) = (
        spacevault_chain::blob_address(&a),
        spacevault_chain::blob_address(&b),
    );
    store.put_blob(&ha, &a).unwrap();
    store.put_blob(&hb, &b).unwrap();
    store.put_blob(&ha, &a).unwrap();
    assert_eq!(store.blob_stats().unwrap(), (2, 12));
    let file = store.blob_path(&ha);
    assert!(file.starts_with(dir.path().join("s.blobs")));
    assert_eq!(std::fs::read(&file).unwrap(), a);
    // A damaged file is read as it is: the caller's hash finds it.
    std::fs::write(&file, b"aaab").unwrap();
    assert_eq!(store.get_blob(&ha).unwrap().as_deref(), Some(&b"aaab"[..]));
    // A good copy written over it repairs it.
    store.put_blob(&ha, &a).unwrap();
    assert_eq!(store.get_blob(&ha).unwrap(), Some(a.clone()));
    assert_eq!(store.blob_stats().unwrap(), (2, 12));
    // A file gone is said to be gone, not taken for a blob never kept.
    std::fs::remove_file(&file).unwrap();
    assert!(matches!(store.get_blob(&ha), Err(StoreError::BlobLost(_))));
    store.delete_blob(&hb).unwrap();
    assert_eq!(store.blob_stats().unwrap(), (1, 4));
    assert!(!store.blob_path(&hb).exists());
}

#[test]
fn a_database_moved_aside_is_rebuilt_with_the_blob_files_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vault.redb");
    let blobs: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 100 + i as usize]).collect();
    {
        let store = Store::open(&path, &spec()).unwrap();
        for blob in &blobs {
            store
                .put_blob(&spacevault_chain::blob_address(blob), blob)
                .unwrap();
        }
    }
    // Damaged beyond opening: refused with the way out.
    std::fs::write(&path, vec![0x5a; 64 << 10]).unwrap();
    let why = Store::open(&path, &spec())
        .err()
        .expect("refused")
        .to_string();
    assert!(why.contains("move") && why.contains("vault.blobs"), "{why}");
    // Moved aside: a new database indexes every blob file.
    std::fs::rename(&path, dir.path().join("vault.redb.damaged")).unwrap();
    let store = Store::open(&path, &spec()).unwrap();
    assert_eq!(store.blob_stats().unwrap(), (5, 510));
    for blob in &blobs {
        let address = spacevault_chain::blob_address(blob);
        assert_eq!(store.get_blob(&address).unwrap().as_ref(), Some(blob));
    }
}

#[test]
fn a_store_of_version_1_has_its_blobs_moved_to_files_and_a_later_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vault.redb");
    let blob = b"kept inline by version 1".to_vec();
    let address = spacevault_chain::blob_address(&blob);
    {
        // What version 1 wrote: the chain id, and blob bytes in the index.
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(META)
            .unwrap()
            .insert("chain_id", spec().chain_id().as_slice())
            .unwrap();
        tx.open_table(BLOBS)
            .unwrap()
            .insert(address.as_slice(), blob.as_slice())
            .unwrap();
        tx.commit().unwrap();
    }
    {
        let store = Store::open(&path, &spec()).unwrap();
        assert_eq!(store.get_blob(&address).unwrap(), Some(blob.clone()));
        assert_eq!(store.blob_stats().unwrap(), (1, blob.len() as u64));
        assert_eq!(std::fs::read(store.blob_path(&address)).unwrap(), blob);
    }
    // Opened again, nothing moves twice.
    let store = Store::open(&path, &spec()).unwrap();
    assert_eq!(store.get_blob(&address).unwrap(), Some(blob));
    drop(store);
    {
        let db = redb::Database::create(&path).unwrap();
        let tx = db.begin_write().unwrap();
        tx.open_table(META)
            .unwrap()
            .insert(
                "store_version",
                (STORE_VERSION + 1).to_le_bytes().as_slice(),
            )
            .unwrap();
        tx.commit().unwrap();
    }
    let why = Store::open(&path, &spec())
        .err()
        .expect("refused")
        .to_string();
    assert!(why.contains("newer"), "{why}");
}

/// The child half of the kill test: commits blocks and blobs as fast as it
/// can until it is killed. Run only by that test.
#[test]
#[ignore = "the child of a_store_killed_at_any_moment…, which runs it"]
fn store_writer_child() {
    let Some(path) = std::env::var_os("SPACEVAULT_STORE_KILL_TEST") else {
        return;
    };
    let store = Store::open(Path::new(&path), &spec()).unwrap();
    let owner = Keypair::from_secret(&[9; 32]);
    let (mut parent, mut height) = match store.head().unwrap() {
        Some(head) => head,
        None => (spacevault_chain::genesis_hash(&spec().chain_id()), 0),
    };
    loop {
        height += 1;
        let version = store.register_version(&owner.public(), b"counter").unwrap();
        let b = block(
            parent,
            height,
            1,
            vec![set(&owner, b"counter", version + 1, &height.to_le_bytes())],
        );
        keep(&store, [&b]);
        store.make_canonical(&[b.hash()]).unwrap().unwrap();
        parent = b.hash();
        // Chain writes become durable with a blob, a flush, or neither yet.
        match height % 3 {
            0 => {
                let blob = vec![height as u8; 1000 + height as usize % 5000];
                store
                    .put_blob(&spacevault_chain::blob_address(&blob), &blob)
                    .unwrap();
            }
            1 => store.flush().unwrap(),
            _ => {
                println!("committed {height}");
                continue;
            }
        }
        println!("committed {height} durable");
    }
}

#[test]
fn a_store_killed_at_any_moment_opens_and_is_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.redb");
    for round in 0..4 {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "tests::store_writer_child",
                "--nocapture",
                "--ignored",
            ])
            .env("SPACEVAULT_STORE_KILL_TEST", &path)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Killed after a varying number of commits, mid-way through the
        // next: the child reports each commit on stdout.
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let mut commits = 0;
        let mut durable = 0;
        while commits < 3 + 5 * round {
            match lines.next() {
                Some(Ok(line)) if line.starts_with("committed") => {
                    commits += 1;
                    if let Some(h) = line.strip_suffix(" durable") {
                        durable = h["committed ".len()..].parse().unwrap();
                    }
                }
                Some(_) => {}
                None => panic!("the writer stopped after {commits} commits"),
            }
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let store = Store::open(&path, &spec()).unwrap();
        let (head, height) = store.head().unwrap().expect("some blocks were committed");
        assert!(height >= durable, "round {round}: {height} < {durable}");
        // Every height up to the head is canonical and links to its parent,
        // and the register's value is the head's.
        let mut at = head;
        for h in (1..=height).rev() {
            assert_eq!(
                store.canonical(h).unwrap(),
                Some(at),
                "round {round}, height {h}"
            );
            at = store.block(&at).unwrap().unwrap().header.parent;
        }
        let owner = Keypair::from_secret(&[9; 32]);
        let r = store
            .register(&owner.public(), b"counter")
            .unwrap()
            .unwrap();
        assert_eq!(r.value, height.to_le_bytes(), "round {round}");
        for addr in store.blob_addresses().unwrap() {
            let blob = store.get_blob(&addr).unwrap().unwrap();
            assert_eq!(spacevault_chain::blob_address(&blob), addr);
        }
    }
}

#[test]
fn a_rollback_short_of_genesis_restores_what_a_block_that_wrote_one_register_twice_found() {
    // a1 sets r to 1; a2 sets it to 2 then 3 in one block. Rolling a2 back
    // onto a1 must leave r at a1's version 1, which b2 then builds on:
    // undone in the order they were written, the two records would leave
    // a2's first write instead.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.redb"), &spec()).unwrap();
    let owner = Keypair::from_secret(&[9; 32]);
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let a1 = block(g, 1, 1, vec![set(&owner, b"r", 1, b"one")]);
    let a2 = block(
        a1.hash(),
        2,
        1,
        vec![set(&owner, b"r", 2, b"two"), set(&owner, b"r", 3, b"three")],
    );
    let b2 = block(a1.hash(), 2, 2, vec![set(&owner, b"r", 2, b"other two")]);
    let b3 = block(b2.hash(), 3, 2, vec![]);
    keep(&store, [&a1, &a2, &b2, &b3]);
    store
        .make_canonical(&[a1.hash(), a2.hash()])
        .unwrap()
        .unwrap();
    assert_eq!(store.register_version(&owner.public(), b"r").unwrap(), 3);
    store
        .make_canonical(&[b2.hash(), b3.hash()])
        .unwrap()
        .unwrap();
    let r = store.register(&owner.public(), b"r").unwrap().unwrap();
    assert_eq!(
        (r.version, r.value.as_slice(), r.height),
        (2, &b"other two"[..], 2)
    );
    // And back onto a1's branch: a2's two writes apply again.
    store.make_canonical(&[a2.hash()]).unwrap().unwrap();
    let r = store.register(&owner.public(), b"r").unwrap().unwrap();
    assert_eq!((r.version, r.value.as_slice()), (3, &b"three"[..]));
    assert_eq!(store.canonical(3).unwrap(), None);
}

/// A chain of `n` blocks on `parent` from `height`, with `salt` in each.
fn chain_on(parent: [u8; 32], height: u64, n: u64, salt: u8) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    for h in height..height + n {
        let p = out.last().map_or(parent, Block::hash);
        out.push(block(p, h, salt, vec![]));
    }
    out
}

fn store_of(dir: &std::path::Path, name: &str, chain: &[Block]) -> Store {
    let store = Store::open(&dir.join(name), &spec()).unwrap();
    keep(&store, chain);
    let hashes: Vec<[u8; 32]> = chain.iter().map(Block::hash).collect();
    store.make_canonical(&hashes).unwrap().unwrap();
    store
}

#[test]
fn a_locator_finds_where_two_branches_meet_in_one_answer() {
    let dir = tempfile::tempdir().unwrap();
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let shared = chain_on(g, 1, 300, 1);
    // Ours left the shared chain above 300 for 40 blocks; theirs for 500.
    let mut ours = shared.clone();
    ours.extend(chain_on(shared[299].hash(), 301, 40, 2));
    let mut theirs = shared.clone();
    theirs.extend(chain_on(shared[299].hash(), 301, 500, 3));
    let ours_store = store_of(dir.path(), "ours.redb", &ours);
    let theirs_store = store_of(dir.path(), "theirs.redb", &theirs);
    let locator = ours_store.locator().unwrap();
    assert_eq!(locator[0], ours[339].hash(), "the head first");
    assert!(locator.len() <= spacevault_chain::locator::MAX_LOCATOR);
    let answer = theirs_store
        .canonical_after(&locator, 256, usize::MAX)
        .unwrap();
    let first = Block::decode(&answer[0], &Limits::of(&spec())).unwrap();
    // The highest shared height the locator names is at most 2 × 40 below
    // the fork: the answer starts at or below 301 and no lower than that.
    assert!(first.header.height <= 301, "{}", first.header.height);
    assert!(first.header.height >= 301 - 80, "{}", first.header.height);
    assert_eq!(
        first.header.parent,
        theirs[first.header.height as usize - 2].hash()
    );
    assert_eq!(answer.len(), 256);
    // A peer on our very chain answers what we lack, nothing we have.
    let ahead = store_of(dir.path(), "ahead.redb", &theirs[..320]);
    let behind = store_of(dir.path(), "behind.redb", &theirs[..310]);
    let answer = ahead
        .canonical_after(&behind.locator().unwrap(), 256, usize::MAX)
        .unwrap();
    assert_eq!(answer.len(), 10);
    assert_eq!(answer[0], theirs[310].encode());
    // A peer behind answers from the highest height both have that the
    // locator names (309): what it has above it, no more.
    let answer = behind
        .canonical_after(&ahead.locator().unwrap(), 256, usize::MAX)
        .unwrap();
    assert_eq!(answer, vec![theirs[309].encode()]);
    // A locator of nothing known: from height 1.
    let answer = theirs_store
        .canonical_after(&[[7; 32]], 3, usize::MAX)
        .unwrap();
    assert_eq!(answer[0], theirs[0].encode());
    // An empty store's locator is empty.
    let empty = Store::open(&dir.path().join("empty.redb"), &spec()).unwrap();
    assert!(empty.locator().unwrap().is_empty());
}

#[test]
fn canonical_blocks_come_in_order_up_to_the_count_and_the_bytes_and_one_at_least() {
    let dir = tempfile::tempdir().unwrap();
    let g = spacevault_chain::genesis_hash(&spec().chain_id());
    let chain = chain_on(g, 1, 10, 1);
    let store = store_of(dir.path(), "db", &chain);
    let encoded: Vec<Vec<u8>> = chain.iter().map(Block::encode).collect();
    // Each block costs its bytes and 4 for its length in an answer.
    let size = encoded[0].len() + 4;
    assert!(encoded.iter().all(|e| e.len() + 4 == size));
    assert_eq!(
        store.canonical_blocks(3, 4, usize::MAX).unwrap(),
        encoded[2..6]
    );
    // Height 0 is the genesis, which no answer holds: from 1.
    assert_eq!(
        store.canonical_blocks(0, 2, usize::MAX).unwrap(),
        encoded[..2]
    );
    // As many as the bytes hold, exactly at the bound and one short of it.
    assert_eq!(
        store.canonical_blocks(1, 10, 3 * size).unwrap(),
        encoded[..3]
    );
    assert_eq!(
        store.canonical_blocks(1, 10, 3 * size - 1).unwrap(),
        encoded[..2]
    );
    // One block, however small the bound, so that a sync goes on.
    assert_eq!(store.canonical_blocks(5, 10, 1).unwrap(), encoded[4..5]);
    // Past the head, nothing.
    assert!(store
        .canonical_blocks(11, 10, usize::MAX)
        .unwrap()
        .is_empty());
}
