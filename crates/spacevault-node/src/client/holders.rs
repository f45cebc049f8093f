//! A PUT's receipts checked against the holders of their era: a receipt
//! counts as a copy only when its signer is a registered holder of the
//! era it names, near enough the blob's address. Each holder's
//! registration is checked here (its owner's signature, and, given the
//! chain spec, its proof of space), so a vault cannot pass off a key
//! that registered no space as a holder.
//!
//! What the client still takes on its vault's word: which registrations
//! the chain holds (a vault can leave some out, though not invent any),
//! the places (drawn from the eras' salts, which come from the proof of
//! time), and the era itself; a receipt of the bootstrap era 0, before
//! the chain names holders, is checked by its signature alone.

use super::{Client, ClientError};
use crate::api::types::{HoldersAnswer, PutAnswer};
use crate::data::HOLDER_SLACK;
use spacevault_chain::holders::{nearest, Place};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

/// Eras whose holders a client keeps at a time.
const KEPT_ERAS: usize = 4;

/// The holders of the eras a client checked, by era.
#[derive(Default)]
pub(super) struct Eras(Mutex<HashMap<u64, Arc<Vec<Place>>>>);

impl Client {
    /// The holders of holder era `era` (the vault's current one when
    /// None), as the vault sends them.
    pub async fn holders(&self, era: Option<u64>) -> Result<HoldersAnswer, ClientError> {
        let path = match era {
            Some(era) => format!("/v1/holders?era={era}"),
            None => "/v1/holders".to_string(),
        };
        self.json(hyper::Method::GET, &path, vec![]).await
    }

    /// Era `era`'s holders, every registration checked, asked once.
    async fn era_places(&self, era: u64) -> Result<Arc<Vec<Place>>, ClientError> {
        if let Some(places) = self.eras.0.lock().unwrap().get(&era) {
            return Ok(places.clone());
        }
        let chain = self.chain_id().await?;
        let answer = self.holders(Some(era)).await?;
        if answer.era != era || answer.bootstrap {
            return Err(ClientError::BadAnswer(format!(
                "asked for the holders of era {era}, the vault sent era {}{}",
                answer.era,
                if answer.bootstrap { " (bootstrap)" } else { "" }
            )));
        }
        let mut places = Vec::with_capacity(answer.holders.len());
        for h in &answer.holders {
            let bad = |why: &str| ClientError::BadAnswer(format!("holder {}: {why}", h.key));
            let tx = h.registration().map_err(bad)?;
            if !tx.signature_ok(&chain) {
                return Err(bad("its registration is not signed by its key"));
            }
            if let Some(spec) = &self.spec {
                spacevault_chain::holders::check_registration(spec, &chain, &tx)
                    .map_err(|e| bad(&e.to_string()))?;
            }
            places.push(Place {
                key: tx.owner,
                place: h.place().map_err(bad)?,
            });
        }
        let places = Arc::new(places);
        let mut eras = self.eras.0.lock().unwrap();
        if eras.len() >= KEPT_ERAS {
            if let Some(&oldest) = eras.keys().min() {
                eras.remove(&oldest);
            }
        }
        eras.insert(era, places.clone());
        Ok(places)
    }

    /// Leaves in `answer` only the receipts of holders of their era among
    /// the nearest the blob's address: within the replication factor and
    /// [`HOLDER_SLACK`] places, and as many again for holders the vault
    /// may have found gone. The replication factor is the spec's when
    /// the client has one, else the vault's word. Receipts of more than
    /// two eras are a lie; a receipt of the bootstrap era counts only
    /// when no other names a later era and, given the spec, while the
    /// clock says the chain could still be in it ([`bootstrap_possible`]).
    /// An era the vault cannot list yet (it signed a receipt of the next
    /// era just before crossing into it) is asked again for a few
    /// seconds, then its receipts count for nothing.
    pub(super) async fn keep_holders_receipts(
        &self,
        answer: &mut PutAnswer,
        address: &[u8; 32],
    ) -> Result<(), ClientError> {
        let r = match &self.spec {
            Some(spec) => spec.replication as usize,
            None => answer.wanted.min(MAX_WANTED),
        };
        let ranks = 2 * r + HOLDER_SLACK;
        let eras: BTreeSet<u64> = answer.receipts.iter().map(|r| r.era).collect();
        if eras.len() > 2 {
            return Err(ClientError::BadAnswer(format!(
                "receipts of {} eras for one PUT",
                eras.len()
            )));
        }
        let bootstrap_counts =
            eras.iter().all(|&e| e == 0) && self.spec.as_deref().is_none_or(bootstrap_possible);
        let mut near: HashMap<u64, Vec<[u8; 32]>> = HashMap::new();
        for &era in eras.iter().filter(|&&e| e > 0) {
            if let Some(places) = self.era_places_soon(era).await? {
                near.insert(era, nearest(&places, address, ranks));
            }
        }
        answer.receipts.retain(|receipt| {
            if receipt.era == 0 {
                return bootstrap_counts;
            }
            let holder = hex::decode(&receipt.holder).ok();
            near.get(&receipt.era)
                .is_some_and(|keys| keys.iter().any(|k| Some(k.as_slice()) == holder.as_deref()))
        });
        answer.copies = answer.receipts.len();
        Ok(())
    }

    /// [`era_places`](Self::era_places), asked again while the vault has
    /// not reached the era (404), for at most [`ERA_WAIT`]; None after.
    async fn era_places_soon(&self, era: u64) -> Result<Option<Arc<Vec<Place>>>, ClientError> {
        let deadline = std::time::Instant::now() + ERA_WAIT;
        loop {
            match self.era_places(era).await {
                Ok(places) => return Ok(Some(places)),
                Err(ClientError::Refused { status: 404, .. })
                    if std::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await
                }
                Err(ClientError::Refused { status: 404, .. }) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Copies a vault may say it wants that the client takes, without a spec.
const MAX_WANTED: usize = 1024;

/// How long the client waits for its vault to reach the era a receipt
/// names.
const ERA_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether the chain of `spec` could still be in its bootstrap era by the
/// clock: fewer slots since the genesis than eight times those its first
/// era should take. Past that, a receipt of era 0 is a vault's lie (or a
/// chain so starved of blocks that nothing it says should be counted on).
pub fn bootstrap_possible(spec: &spacevault_chain::ChainSpec) -> bool {
    let slot = spec.clock_slot(crate::now_ms());
    let era_slots = spec
        .era_blocks
        .saturating_mul(spec.block_interval_slots.max(1));
    slot < era_slots.saturating_mul(8)
}
