//! Files larger than one blob through a network of vaults: stored as parts
//! and a tree of manifests, read back through another vault whole and
//! checked, with no more than the window of parts in memory.

mod common;

use common::*;
use spacevault_chain::manifest::{self, Manifest};
use spacevault_node::client::{ClientError, FileOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_of_many_blobs_goes_through_and_reads_back_through_another_vault() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<_> = (0..3).map(|i| vault_files(dir.path(), i)).collect();
    let mut spec = spec(300, 2);
    // 126 entries a manifest: 300 parts make a tree two levels deep.
    spec.max_blob_bytes = 4096;
    let nodes = network(&spec, &files, true).await;
    assert!(
        wait_for(Duration::from_secs(20), || nodes
            .iter()
            .all(|n| n.vaults().count() == 3))
        .await,
        "the vaults did not find each other"
    );
    let data: Vec<u8> = (0..300 * 4096 - 1000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let path = dir.path().join("file");
    std::fs::write(&path, &data).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shown = seen.clone();
    let options = FileOptions {
        parallel: 4,
        progress: Some(Arc::new(move |done, total| {
            shown.lock().unwrap().push((done, total))
        })),
        max_bytes: None,
    };
    let put = client_of(&nodes[0])
        .put_file(&path, &options)
        .await
        .unwrap();
    assert_eq!(put.bytes, data.len() as u64);
    assert_eq!(
        put.hash,
        *blake3::hash(&data).as_bytes(),
        "the root names the file's b3sum"
    );
    assert_eq!(
        (put.parts, put.manifests),
        (300, 4),
        "three of 126 and 48, and the root"
    );
    assert_eq!((put.copies, put.wanted), (2, 2));
    let progress = seen.lock().unwrap().clone();
    assert_eq!(
        progress.last(),
        Some(&(data.len() as u64, data.len() as u64))
    );
    assert!(
        progress.windows(2).all(|w| w[0].0 < w[1].0),
        "progress only grows"
    );

    let reader = client_of(&nodes[2]);
    let root = reader.get_blob(&put.address).await.unwrap();
    let root = Manifest::decode(&root).unwrap();
    assert_eq!((root.depth, root.entries.len()), (1, 3));
    let mut out = Vec::new();
    let got = reader
        .get_file(&put.address, &mut out, &FileOptions::default())
        .await
        .unwrap();
    assert_eq!(
        (got.bytes, got.parts, got.manifests),
        (data.len() as u64, 300, 4)
    );
    assert!(out == data, "the file read back differs");
    // A file that claims more than the reader allows is refused before a
    // byte is written (a small upload can claim any size).
    let mut out = Vec::new();
    let small = FileOptions {
        max_bytes: Some(data.len() as u64 - 1),
        ..FileOptions::default()
    };
    let refused = reader.get_file(&put.address, &mut out, &small).await;
    assert!(
        matches!(refused, Err(ClientError::FileTooLarge { bytes, .. }) if bytes == data.len() as u64),
        "{refused:?}"
    );
    assert!(out.is_empty());

    // A small file that starts as a manifest does is wrapped in one, so
    // that it too reads back as itself.
    let looks_like = [&manifest::MAGIC[..], b" but only text"].concat();
    std::fs::write(&path, &looks_like).unwrap();
    let put = client_of(&nodes[1])
        .put_file(&path, &FileOptions::default())
        .await
        .unwrap();
    assert_eq!((put.parts, put.manifests), (1, 1));
    let mut out = Vec::new();
    reader
        .get_file(&put.address, &mut out, &FileOptions::default())
        .await
        .unwrap();
    assert_eq!(out, looks_like);
    // And a small file is one blob, its address the blob's.
    std::fs::write(&path, b"small").unwrap();
    let put = client_of(&nodes[1])
        .put_file(&path, &FileOptions::default())
        .await
        .unwrap();
    assert_eq!((put.parts, put.manifests), (1, 0));
    assert_eq!(put.address, spacevault_chain::blob_address(b"small"));
    for node in nodes {
        node.stop().await;
    }
}
