//! The scrub: a background pass over every stored blob, reading it back and
//! hashing it, at a bounded rate, as ZFS and Ceph scrub their disks. A blob
//! damaged on disk (or whose file is gone) is otherwise found only when
//! someone reads it; the scrub finds it first, and repairs it from another
//! holder as a read would. Passes follow one another, a pause apart.

pub use crate::config::{ScrubConfig, SCRUB_PAUSE, SCRUB_RATE};
use crate::data;
pub use crate::shared::ScrubProgress;
use crate::shared::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// What a blob costs the rate beyond its bytes (opening its file).
const PER_BLOB: u64 = 4 << 10;

/// Scrubs until the vault stops.
pub async fn run(shared: Arc<Shared>, config: ScrubConfig) {
    if config.rate == 0 {
        return;
    }
    loop {
        pass(&shared, config.rate).await;
        tokio::time::sleep(config.pause).await;
    }
}

async fn pass(shared: &Arc<Shared>, rate: u64) {
    let store = shared.store.clone();
    let Ok(Ok(addresses)) = shared.spawn_blocking(move || store.blob_addresses()).await else {
        return;
    };
    let progress = &shared.scrub;
    progress
        .pass_blobs
        .store(addresses.len() as u64, Ordering::Relaxed);
    progress.pass_checked.store(0, Ordering::Relaxed);
    let started = tokio::time::Instant::now();
    let mut spent = 0u64;
    for address in addresses {
        let reader = shared.clone();
        let checked = shared
            .spawn_blocking(move || data::read_local(&reader, &address))
            .await;
        let len = match checked {
            Ok(Ok(Some(bytes))) => bytes.len() as u64,
            // Gone since the pass began.
            Ok(Ok(None)) => 0,
            // Damaged (counted where it was found): a good copy replaces it.
            Ok(Err(())) => {
                shared.metrics.scrub_damaged.inc();
                if data::read_verified(shared, &address).await.is_some() {
                    tracing::info!(address = %hex::encode(address), "the scrub repaired a damaged blob");
                }
                0
            }
            Err(_) => 0,
        };
        shared.metrics.scrub_checked.inc();
        progress.pass_checked.fetch_add(1, Ordering::Relaxed);
        // Paced on the whole pass, so that the rate holds on average.
        spent += len + PER_BLOB;
        let due = started + Duration::from_secs_f64(spent as f64 / rate as f64);
        tokio::time::sleep_until(due).await;
    }
    progress.passes.fetch_add(1, Ordering::Relaxed);
    shared.metrics.scrub_passes.inc();
    progress
        .last_pass_ms
        .store(crate::now_ms(), Ordering::Relaxed);
}
