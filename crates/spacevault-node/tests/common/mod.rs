//! Networks of vaults in one process, over the in-memory transport.

#![allow(dead_code)]

use spacevault_chain::{ChainSpec, Keypair};
use spacevault_network as net;
use spacevault_node::{kit, Node, NodeConfig};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A spec for tests: short slots of a few hundred squarings in small
/// groups (a timekeeper costs the test little), small plots, starting
/// now, and a first target that admits every proof of a plot (each slot,
/// every vault may produce, and the best proof's block wins): a test of a
/// network waits for blocks a slot apart. Eligibility has its own tests.
pub fn spec(slot_ms: u64, replication: u32) -> ChainSpec {
    let mut spec = ChainSpec::new("network-test", spacevault_node::now_ms(), slot_ms);
    spec.set_sizes(spacevault_chain::ProofKind::Plain, 16, spacevault::MAX_K);
    spec.replication = replication;
    spec.pot_iterations = 300;
    spec.pot_era_slots = 16;
    spec.pot_discriminant_bits = 512;
    spec.initial_records = 1;
    spec.block_interval_slots = 1;
    spec
}

/// A vault's key and a directory holding one k = 16 plot of it, made once
/// per test ([`spacevault_node::kit`]).
pub struct VaultFiles {
    pub key: Keypair,
    pub plots: PathBuf,
    pub data: PathBuf,
}

pub fn vault_files(root: &std::path::Path, i: usize) -> VaultFiles {
    VaultFiles {
        key: kit::vault_key(i),
        plots: kit::vault_plot(root, i, 16).unwrap(),
        data: root.join(format!("data{i}")),
    }
}

pub async fn start(
    spec: &ChainSpec,
    files: &VaultFiles,
    bootstrap: Vec<spacevault_network::Address>,
    api: bool,
) -> Node {
    start_with(spec, files, bootstrap, api, |_| {}).await
}

/// [`start`], with the config changed by `tweak` first.
pub async fn start_with(
    spec: &ChainSpec,
    files: &VaultFiles,
    bootstrap: Vec<spacevault_network::Address>,
    api: bool,
    tweak: impl FnOnce(&mut NodeConfig),
) -> Node {
    let mut config =
        kit::memory_config(spec, &files.key, &files.plots, &files.data, bootstrap, api);
    tweak(&mut config);
    Node::start(config).await.unwrap()
}

/// Logs to the test's output when `RUST_LOG` asks for them.
pub fn logs() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}

/// `n` vaults: the first listens and keeps time, the others bootstrap
/// from it.
pub async fn network(spec: &ChainSpec, files: &[VaultFiles], api: bool) -> Vec<Node> {
    network_keeping_time(spec, files, api, &[0]).await
}

/// [`network`], with the vaults in `keepers` keeping time (a test that
/// splits the network needs one on each side).
pub async fn network_keeping_time(
    spec: &ChainSpec,
    files: &[VaultFiles],
    api: bool,
    keepers: &[usize],
) -> Vec<Node> {
    logs();
    let keeps = |i: usize| keepers.contains(&i);
    let first = start_with(spec, &files[0], vec![], api, |c| c.timekeeper = keeps(0)).await;
    let addr = first.listen_addrs(Duration::from_secs(5)).await;
    assert!(!addr.is_empty(), "the first vault does not listen");
    let mut nodes = vec![first];
    for (i, f) in files.iter().enumerate().skip(1) {
        nodes.push(start_with(spec, f, addr.clone(), api, |c| c.timekeeper = keeps(i)).await);
    }
    nodes
}

/// [`network`], once every vault has reached `height` (within 20 s, or
/// the test fails with the heights).
pub async fn network_at(
    spec: &ChainSpec,
    files: &[VaultFiles],
    api: bool,
    height: u64,
) -> Vec<Node> {
    network_keeping_time_at(spec, files, api, height, &[0]).await
}

/// [`network_keeping_time`], once every vault has reached `height`.
pub async fn network_keeping_time_at(
    spec: &ChainSpec,
    files: &[VaultFiles],
    api: bool,
    height: u64,
    keepers: &[usize],
) -> Vec<Node> {
    let nodes = network_keeping_time(spec, files, api, keepers).await;
    let reached = wait_for(Duration::from_secs(20), || {
        nodes.iter().all(|n| n.height() >= height)
    })
    .await;
    let heights: Vec<u64> = nodes.iter().map(Node::height).collect();
    assert!(
        reached,
        "the network never reached height {height}: {heights:?}"
    );
    nodes
}

/// Polls `done` every 20 ms until it holds or `limit` passes.
pub async fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// The canonical hash at `height` on `node`.
pub fn hash_at(node: &Node, height: u64) -> Option<[u8; 32]> {
    node.engine().store().canonical(height).unwrap()
}

/// Vault `i`'s view: its height and canonical hash at `height`.
pub fn metric(node: &Node, name: &str) -> f64 {
    node.metrics_text()
        .lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Whether every node's canonical chain agrees up to `height`.
pub fn agree_up_to(nodes: &[&Node], height: u64) -> bool {
    (1..=height).all(|h| {
        let first = hash_at(nodes[0], h);
        first.is_some() && nodes.iter().all(|n| hash_at(n, h) == first)
    })
}

/// Blocks every peer of `a` from every peer of `b`, both ways, once each
/// side is connected within itself: every vault dialled the first one at
/// start, and a side whose vaults reached each other only through the
/// other side would be cut into pieces with no timekeeper.
pub async fn split(a: &[&Node], b: &[&Node]) {
    for side in [a, b] {
        for (i, to) in side.iter().enumerate() {
            reconnect(&side[i + 1..], to).await;
        }
    }
    for x in a {
        for y in b {
            x.network().block(y.peer_id());
            y.network().block(x.peer_id());
        }
    }
}

pub fn heal(a: &[&Node], b: &[&Node]) {
    for x in a {
        for y in b {
            x.network().unblock(y.peer_id());
            y.network().unblock(x.peer_id());
        }
    }
}

/// Dials `to` from each of `from` until each is connected to it: a dial
/// sent before `to` has taken its unblock is refused, and nothing dials
/// again by itself while a vault has other peers.
pub async fn reconnect(from: &[&Node], to: &Node) {
    let addrs = to.listen_addrs(Duration::from_secs(5)).await;
    let target = to.peer_id();
    let deadline = Instant::now() + Duration::from_secs(20);
    for n in from {
        while !n.network().peers().await.contains(&target) {
            assert!(Instant::now() < deadline, "a vault never reconnected");
            for addr in &addrs {
                n.network().dial(addr.clone());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// How many messages `node` refused on `topic` for `reason`.
pub fn rejected(node: &Node, topic: &str, reason: &str) -> f64 {
    let labels = [format!("topic=\"{topic}\""), format!("reason=\"{reason}\"")];
    node.metrics_text()
        .lines()
        .filter(|l| l.starts_with("spacevault_messages_rejected_total"))
        .filter(|l| labels.iter().all(|label| l.contains(label.as_str())))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Runs `cmd` to its end, its output read as it comes; killed, and the
/// test failed, if it runs past `limit`. The child dies with the test.
pub fn output_within(cmd: &mut std::process::Command, limit: Duration) -> std::process::Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
    let read = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// A peer, outside the vaults, joined to `boot` and linked to `vault`.
pub async fn joined_rogue(
    secret: u8,
    chain: [u8; 32],
    boot: Vec<net::Address>,
    vault: net::Peer,
) -> (net::Handle, tokio::sync::mpsc::Receiver<net::Event>) {
    let mut config = net::Config::new([secret; 32], net::TransportKind::Memory, chain);
    config.listen = vec!["/memory/0".parse().unwrap()];
    config.bootstrap = boot;
    config.heartbeat = Duration::from_millis(100);
    let (rogue, events, _task) = net::start(config).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !rogue.peers().await.contains(&vault) {
        assert!(
            std::time::Instant::now() < deadline,
            "a rogue never connected"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (rogue, events)
}

/// Answers what came to a rogue so far: gossip ignored, requests unknown.
pub async fn drain(rogue: &net::Handle, events: &mut tokio::sync::mpsc::Receiver<net::Event>) {
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_millis(5), events.recv()).await {
        match ev {
            net::Event::Gossip { id, source, .. } => {
                rogue.validate(id, source, net::Verdict::Ignore)
            }
            net::Event::Request { reply, .. } => rogue.respond(reply, net::Response::NotFound),
            _ => {}
        }
    }
}

/// The status line and headers of the next answer on `stream` (empty if
/// the connection closed first), its body read past.
pub fn read_answer_head(stream: &mut std::net::TcpStream) -> String {
    read_answer(stream).0
}

/// The status line and headers of the next answer on `stream`, and its
/// body: none for an interim answer, as long as its Content-Length says,
/// or, chunked or of no length, all that comes until the vault closes the
/// connection.
pub fn read_answer(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    use std::io::Read;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let lower = text.to_ascii_lowercase();
    let len = lower.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
    });
    let body = match len {
        Some(len) => {
            let mut body = vec![0u8; len];
            let _ = stream.read_exact(&mut body);
            body
        }
        // Nothing came, or an interim answer (100 Continue), which has
        // no body.
        None if head.is_empty() || text.starts_with("HTTP/1.1 1") => Vec::new(),
        None => {
            let mut body = Vec::new();
            let _ = stream.read_to_end(&mut body);
            if lower.contains("transfer-encoding: chunked") {
                body = unchunk(&body);
            }
            body
        }
    };
    (text, body)
}

/// A chunked body's bytes.
fn unchunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..line_end]).unwrap().trim(), 16)
                .unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[line_end + 2..line_end + 2 + size]);
        data = &data[line_end + 2 + size + 2..];
    }
}

/// Sends `request` as it is written and reads the answer: its status and
/// body.
pub fn raw_http(addr: std::net::SocketAddr, request: &str) -> (u16, Vec<u8>) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    let (head, body) = read_answer(&mut stream);
    let status = head.split_whitespace().nth(1).expect("a status").parse();
    (status.expect("a numeric status"), body)
}

/// A PUT whose head the vault has taken, waiting for its body (the vault
/// asked for it: 100 Continue).
pub fn put_under_way(api: std::net::SocketAddr, blob: &[u8]) -> std::net::TcpStream {
    let mut put = std::net::TcpStream::connect(api).unwrap();
    put.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "PUT /v1/blobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        blob.len()
    );
    std::io::Write::write_all(&mut put, head.as_bytes()).unwrap();
    let proceed = read_answer_head(&mut put);
    assert!(proceed.starts_with("HTTP/1.1 100"), "{proceed:?}");
    put
}

/// A client of `node`'s API.
pub fn client_of(node: &Node) -> spacevault_node::client::Client {
    let addr = node.api_addr().expect("the API listens");
    spacevault_node::client::Client::new(&format!("http://{addr}")).unwrap()
}

/// The stamp of `slot` as the line `node` follows holds it (None before
/// it reaches the slot).
pub fn stamp_at(node: &Node, slot: u64) -> Option<spacevault_chain::Stamp> {
    let out = node.time().output(slot).unwrap()?;
    Some(spacevault_chain::Stamp {
        slot,
        output: out.output,
    })
}

/// Slot `slot`'s output on the line of `node`'s canonical chain: the
/// branch through its last canonical block before the slot (None when the
/// vault has not kept it).
pub fn canonical_output(node: &Node, slot: u64) -> Option<spacevault_chain::time::SlotOutput> {
    let engine = node.engine();
    let spec = engine.spec().clone();
    let store = engine.store();
    let mut branch = spacevault_chain::time::Branch::genesis(&spec.chain_id());
    for h in 1..=engine.head().height {
        let hash = store.canonical(h).unwrap()?;
        let info = store.info(&hash).unwrap()?;
        if info.slot >= slot {
            break;
        }
        branch = spacevault_chain::time::Branch {
            hash,
            slot: info.slot,
            line: info.line,
            opening: info.opening,
        };
    }
    let params = spec.time();
    let line = branch
        .line_of_era(&spec.chain_id(), &params, params.era_of(slot), |l, s| {
            store.output_on(l, s)
        })
        .unwrap()
        .ok()?;
    store.slot_on(&line, slot).unwrap()
}

/// The first `n` slots of `spec`'s proof of time, computed here as a
/// timekeeper computes them: a test that needs a slot before the
/// network's timekeeper reaches it runs ahead of the clock. Only eras 0
/// and 1 are the same line on every branch (the genesis is their
/// entropy); later eras follow blocks ([`slots_ahead`]).
pub fn slots_of(spec: &ChainSpec, n: u64) -> Vec<spacevault_chain::time::SlotOutput> {
    assert!(
        n <= 2 * spec.pot_era_slots,
        "slots past era 1 depend on the blocks of a branch"
    );
    let chain = spec.chain_id();
    let entropy = spacevault_chain::genesis_hash(&chain);
    let mut line = spacevault_chain::time::Timeline::first(chain, spec.time()).unwrap();
    (1..=n)
        .map(|_| {
            if line.needs_era() {
                line.begin_era(&entropy);
            }
            let out = line.prove_next();
            line.advance(&out).unwrap();
            out
        })
        .collect()
}

/// The next `n` slots of the line `node` follows, computed here ahead of
/// its timekeeper (new eras begun with its head's branch's entropy: right
/// while the head stays on that branch).
pub fn slots_ahead(node: &Node, n: usize) -> Vec<spacevault_chain::time::SlotOutput> {
    let spec = node.engine().spec().clone();
    let mut line = node.time().next_line().unwrap();
    let tip = node.engine().head().branch();
    (0..n)
        .map(|_| {
            if line.needs_era() {
                let era = spec.time().era_of(line.slot() + 1);
                line.begin_era(&tip.entropy(&spec.time(), era));
            }
            let out = line.prove_next();
            line.advance(&out).unwrap();
            out
        })
        .collect()
}

/// A block by `key` on `head` (hash and height) in `out`'s slot, with a
/// made-up proof (record `nonce` of a plot of seed [9; 32]) and no
/// transactions: what a rogue with a slot's output sends.
pub fn rogue_block(
    key: &Keypair,
    chain: [u8; 32],
    head: ([u8; 32], u64),
    out: &spacevault_chain::time::SlotOutput,
    nonce: u64,
) -> spacevault_chain::Block {
    let proof = spacevault_chain::ChainProof::plain(key.public(), [9; 32], 16, nonce % (1 << 16));
    let stamp = spacevault_chain::Stamp {
        slot: out.slot,
        output: out.output,
    };
    spacevault_chain::Block::produce(key, chain, head.1 + 1, head.0, stamp, proof, vec![])
}

/// A block by `key` at `height` on a parent nobody has (made of `nonce`,
/// which makes each one new), in slot 1: kept as an orphan, if anything,
/// by a vault whose line has reached slot 1.
pub fn orphan_block(
    key: &Keypair,
    chain: [u8; 32],
    height: u64,
    nonce: u64,
) -> spacevault_chain::Block {
    let mut parent = [1; 32];
    parent[..8].copy_from_slice(&nonce.to_le_bytes());
    let out = spacevault_chain::time::SlotOutput {
        slot: 1,
        line: [1; 32],
        output: [1; spacevault_chain::time::FORM_BYTES],
        proof: [1; spacevault_chain::time::FORM_BYTES],
    };
    rogue_block(key, chain, (parent, height - 1), &out, nonce)
}
