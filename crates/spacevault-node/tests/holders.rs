//! Holders that follow from the chain: once the chain is past its
//! bootstrap era, only vaults that registered a proof from a plot hold
//! clients' blobs, a vault that announces itself without one gets
//! nothing to keep, signs no receipt a client counts, and is not listed.

mod common;

use common::*;
use spacevault_chain::holders::{check_registration, Registration, HOLDER_REGISTER};
use spacevault_network::{Request, Response};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bootstrap_era_only_registered_vaults_hold_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let mut files: Vec<_> = (0..4).map(|i| vault_files(dir.path(), i)).collect();
    // The fourth vault has a key but no plot: it cannot register.
    let no_plots = dir.path().join("no-plots");
    std::fs::create_dir_all(&no_plots).unwrap();
    files[3].plots = no_plots;
    let mut spec = spec(150, 4);
    spec.era_blocks = 4;
    let nodes = network(&spec, &files, true).await;
    let registered: Vec<[u8; 32]> = nodes[..3].iter().map(|n| n.farmer_key()).collect();
    let keeper = nodes[3].farmer_key();
    // Era 2 at the latest names the registered vaults: their
    // registrations went into the first blocks.
    let named = wait_for(Duration::from_secs(60), || {
        nodes.iter().all(|n| {
            let v = n.vaults();
            v.era() >= 2 && registered.iter().all(|k| v.is_holder(k))
        })
    })
    .await;
    assert!(named, "the registered vaults were never named holders");
    assert!(nodes.iter().all(|n| !n.vaults().is_holder(&keeper)));

    // The API lists exactly the registered vaults, each registration
    // checkable on its own.
    let client = client_of(&nodes[1]).with_spec(&spec);
    let listed = client.holders(None).await.unwrap();
    assert!(!listed.bootstrap && listed.era >= 2);
    let mut keys: Vec<[u8; 32]> = listed
        .holders
        .iter()
        .map(|h| hex::decode(&h.key).unwrap().try_into().unwrap())
        .collect();
    keys.sort();
    let mut want = registered.clone();
    want.sort();
    assert_eq!(keys, want);
    for h in &listed.holders {
        let tx = h.registration().unwrap();
        assert_eq!(tx.name, HOLDER_REGISTER);
        assert!(tx.signature_ok(&spec.chain_id()));
        assert_eq!(check_registration(&spec, &spec.chain_id(), &tx), Ok(()));
        assert!(Registration::decode(&tx.value).is_ok());
    }

    // A PUT through the plotless vault reaches the three holders, and
    // the client counts their receipts, of the era, and no other.
    let put = client_of(&nodes[3])
        .with_spec(&spec)
        .put(b"a blob for the registered".to_vec())
        .await
        .unwrap();
    assert_eq!(put.copies, 3, "{put:?}");
    for r in &put.receipts {
        assert!(r.era >= 2);
        let holder: [u8; 32] = hex::decode(&r.holder).unwrap().try_into().unwrap();
        assert!(registered.contains(&holder));
    }

    // Asked directly to keep a blob, the plotless vault refuses: it is
    // no holder of anything.
    let asked = nodes[0]
        .network()
        .request(
            nodes[3].peer_id(),
            Request::Store {
                blob: b"keep this".to_vec(),
            },
        )
        .await;
    assert_eq!(asked.ok(), Some(Response::Refused("not_holder".into())));
    for node in nodes {
        node.stop().await;
    }
}
