//! A vault process killed with SIGKILL while clients write to it, then
//! started again on the same data: every blob PUT and register write it
//! had answered as done is there.

mod common;

use common::*;
use spacevault_chain::Keypair;
use spacevault_node::client::{Client, ClientError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the vault answered as done.
#[derive(Default)]
struct Acknowledged {
    blobs: Vec<([u8; 32], Vec<u8>)>,
    /// Each register's last acknowledged version and value.
    registers: std::collections::BTreeMap<String, (u64, Vec<u8>)>,
    register_writes: usize,
}

/// Writes blobs and registers through `api` until `stop`, recording what
/// the vault acknowledged. `blobs`: whether to PUT blobs too, or set
/// registers only (a blob's write is durable, and makes the chain's
/// earlier writes durable with it).
fn load(
    api: String,
    chain: [u8; 32],
    round: u32,
    stop: Arc<AtomicBool>,
    blobs: Arc<AtomicBool>,
    acked: Arc<Mutex<Acknowledged>>,
) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let owner = Keypair::from_secret(&[42; 32]);
    runtime.block_on(async {
        let c = Client::new(&api).unwrap();
        let mut i = 0u32;
        while !stop.load(Ordering::Relaxed) {
            i += 1;
            if !blobs.load(Ordering::Relaxed) {
                let name = format!("r{}", i % 4);
                let value = format!("round {round} write {i}").into_bytes();
                let set = tokio::time::timeout(
                    Duration::from_secs(30),
                    c.set(&owner, &chain, &name, &value),
                )
                .await;
                if let Ok(Ok(answer)) = set {
                    acked
                        .lock()
                        .unwrap()
                        .registers
                        .insert(name, (answer.version, value));
                    acked.lock().unwrap().register_writes += 1;
                }
                continue;
            }
            let blob = format!("round {round} blob {i} ")
                .repeat(1 + (i as usize * 37) % 900)
                .into_bytes();
            let put = tokio::time::timeout(Duration::from_secs(30), c.put(blob.clone())).await;
            if let Ok(Ok(answer)) = put {
                let address: [u8; 32] = hex::decode(&answer.address).unwrap().try_into().unwrap();
                acked.lock().unwrap().blobs.push((address, blob));
            }
            if i.is_multiple_of(3) {
                let name = format!("r{}", i % 4);
                let value = format!("round {round} write {i}").into_bytes();
                let set = tokio::time::timeout(
                    Duration::from_secs(30),
                    c.set(&owner, &chain, &name, &value),
                )
                .await;
                match set {
                    Ok(Ok(answer)) => {
                        acked
                            .lock()
                            .unwrap()
                            .registers
                            .insert(name, (answer.version, value));
                    }
                    Ok(Err(ClientError::Unreachable { .. })) | Err(_) => {}
                    Ok(Err(_)) => {}
                }
            }
        }
    });
}

#[test]
fn a_vault_killed_under_load_keeps_every_write_it_answered() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("spec.json");
    sv(dir.path())
        .args([
            "chain",
            "init",
            "--slot-ms",
            "300",
            "--replication",
            "1",
            // One plot of k = 16, a block a slot, and a proof of time a
            // loaded machine keeps up with.
            "--initial-records",
            "65536",
            "--block-interval-slots",
            "1",
            "--pot-iterations",
            "2000",
            "--out",
        ])
        .arg(&spec)
        .assert()
        .success();
    let chain_id: [u8; 32] = {
        let text = std::fs::read_to_string(&spec).unwrap();
        spacevault_chain::ChainSpec::from_json(&text)
            .unwrap()
            .chain_id()
    };
    let acked = Arc::new(Mutex::new(Acknowledged::default()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for round in 0..2u32 {
        let mut vault = start_node(dir.path(), "a", &spec, None);
        let stop = Arc::new(AtomicBool::new(false));
        let blobs = Arc::new(AtomicBool::new(true));
        let writer = {
            let (api, stop, acked) = (vault.api.clone(), stop.clone(), acked.clone());
            let blobs = blobs.clone();
            std::thread::spawn(move || load(api, chain_id, round, stop, blobs, acked))
        };
        // Killed once it has answered a few writes of this round, at a
        // moment that differs from round to round.
        let before = acked.lock().unwrap().blobs.len();
        let wrote = wait_until(Duration::from_secs(120), || {
            let a = acked.lock().unwrap();
            a.blobs.len() >= before + 10 + 15 * round as usize && !a.registers.is_empty()
        });
        assert!(wrote, "round {round}: the vault answered too few writes");
        // Then registers alone, and killed as soon as one more is answered:
        // no blob's write has made it durable since.
        blobs.store(false, Ordering::Relaxed);
        let writes = acked.lock().unwrap().register_writes;
        let wrote = wait_until(Duration::from_secs(120), || {
            acked.lock().unwrap().register_writes >= writes + 2
        });
        assert!(wrote, "round {round}: no register write was answered");
        vault.child.kill();
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();

        // Started again on the same data, it has everything it answered.
        let vault = start_node(dir.path(), "a", &spec, None);
        let c = Client::new(&vault.api).unwrap();
        let a = acked.lock().unwrap();
        runtime.block_on(async {
            for (address, blob) in &a.blobs {
                let address_hex = hex::encode(address);
                let got = tokio::time::timeout(Duration::from_secs(60), c.get(&address_hex))
                    .await
                    .expect("the vault answered a GET within a minute");
                assert!(
                    got.as_ref().is_ok_and(|b| b == blob),
                    "round {round}: blob {} lost: {:?}",
                    hex::encode(&address[..4]),
                    got.err()
                );
            }
            let owner = Keypair::from_secret(&[42; 32]).public();
            for (name, (version, value)) in &a.registers {
                let got = tokio::time::timeout(Duration::from_secs(60), c.read(&owner, name))
                    .await
                    .expect("the vault answered a read within a minute");
                let ok = got.as_ref().is_ok_and(|r| {
                    r.version > *version
                        || (r.version == *version
                            && hex::decode(&r.value_hex).ok().as_ref() == Some(value))
                });
                assert!(
                    ok,
                    "round {round}: register {name} at version {version} lost: {got:?}"
                );
            }
        });
        drop(a);
        vault.child.signal(libc::SIGTERM);
        let out = vault.child.finish(Duration::from_secs(60));
        assert_eq!(
            out.status.code(),
            Some(128 + libc::SIGTERM),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
