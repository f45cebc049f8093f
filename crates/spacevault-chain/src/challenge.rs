//! Audits on the chain: a holder that an auditor could not get a proof
//! from (it failed audits, or stopped answering) is challenged in a
//! block, and must answer in a block within [`ANSWER_BLOCKS`] with a
//! slice of the blob that everyone can check; a registered holder with a
//! challenge left unanswered leaves the holders from the next era on.
//!
//! The challenge carries the accused's own receipt for the blob, so that
//! a holder is only ever asked for what it signed for keeping, and the
//! answer proves a chunk that the challenge draws (unknown to the holder
//! before the challenge) together with the blob's last chunk, which pins
//! the blob's length: the answer is checked against the address alone,
//! by every vault, on its own ([`check_dispute`]). Whether a challenge
//! went unanswered in time is read from the chain's history
//! ([`failed`]), so every vault and client computes the same holders; a
//! holder that failed holds nothing for [`EVICTION_ERAS`] eras even if it
//! registers again.
//! `docs/PROTOCOL.md` ("Challenges on the chain") is the specification.

use crate::audit::{self, answer_value_bytes};
use crate::codec::{DecodeError, Reader, Writer};
use crate::holders::{effective_era, era_at};
use crate::types::{derive, Receipt, RegisterTx};

/// The register an accuser writes a challenge to, followed by the
/// accused's key: one standing challenge an accuser and an accused.
pub const CHALLENGE_REGISTER: &[u8] = b"\0challenge";

/// The register the accused writes its answer to, followed by the
/// accuser's key.
pub const ANSWER_REGISTER: &[u8] = b"\0answer";

/// Blocks after a challenge's that its answer may be in, besides the
/// challenge's own: a window of `ANSWER_BLOCKS + 1` blocks.
pub const ANSWER_BLOCKS: u64 = 8;

/// The longest name of the two registers: the holder's key after the
/// challenge register's name.
pub const DISPUTE_NAME_BYTES: usize = 10 + 32;

const ANSWER_CONTEXT: &str = "spacevault 2026-11 challenged chunk v1";

/// A challenge's register value: the accused's receipt for the blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge {
    pub receipt: Receipt,
}

impl Challenge {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.receipt.encode_into(&mut w);
        w.finish()
    }

    pub fn decode(bytes: &[u8]) -> Result<Challenge, DecodeError> {
        let mut r = Reader::new(bytes);
        let receipt = Receipt::decode_from(&mut r)?;
        r.finish()?;
        Ok(Challenge { receipt })
    }
}

/// An answer's register value: the version and the signature of the
/// challenge it answers, the blob's address and length, and the slice
/// that proves the drawn chunk and the last ([`audit::prove_with_last`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub challenge_version: u64,
    pub challenge_signature: [u8; 64],
    pub address: [u8; 32],
    pub len: u64,
    pub slice: Vec<u8>,
}

impl Answer {
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.challenge_version)
            .fixed(&self.challenge_signature)
            .fixed(&self.address)
            .u64(self.len)
            .bytes(&self.slice);
        w.finish()
    }

    pub fn decode(bytes: &[u8], max_blob_bytes: u64) -> Result<Answer, DecodeError> {
        let mut r = Reader::new(bytes);
        let challenge_version = r.u64("answer's challenge version")?;
        let challenge_signature = r.array("answer's challenge signature")?;
        let address = r.array("answer's address")?;
        let len = r.u64("answer's blob length")?;
        let slice = r
            .bytes("answer's slice", audit::with_last_bound(max_blob_bytes))?
            .to_vec();
        r.finish()?;
        Ok(Answer {
            challenge_version,
            challenge_signature,
            address,
            len,
            slice,
        })
    }
}

/// The chunk a challenge asks for: drawn from the chain, both keys, the
/// challenge's version and signature, and the blob. The signature is the
/// accuser's, made with its secret key: the holder learns the chunk only
/// from the challenge, and cannot keep the slices of the next versions
/// instead of the blob.
pub fn challenged_chunk(
    chain_id: &[u8; 32],
    accuser: &[u8; 32],
    accused: &[u8; 32],
    challenge: (u64, &[u8; 64]),
    address: &[u8; 32],
    len: u64,
) -> u64 {
    let mut w = Writer::new();
    w.fixed(chain_id)
        .fixed(accuser)
        .fixed(accused)
        .u64(challenge.0)
        .fixed(challenge.1)
        .fixed(address);
    let h = derive(ANSWER_CONTEXT, &w.finish());
    u64::from_le_bytes(h[..8].try_into().expect("8 bytes")) % audit::chunks(len)
}

/// The register name of `accuser`'s challenge to `accused`.
pub fn challenge_name(accused: &[u8; 32]) -> Vec<u8> {
    [CHALLENGE_REGISTER, accused].concat()
}

/// The register name of the answer to `accuser`'s challenge.
pub fn answer_name(accuser: &[u8; 32]) -> Vec<u8> {
    [ANSWER_REGISTER, accuser].concat()
}

/// What a transaction means for the disputes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispute {
    /// A challenge (or, empty, its withdrawal) by the transaction's owner
    /// to this holder.
    Challenge { accused: [u8; 32] },
    /// An answer by the transaction's owner to this accuser.
    Answer { accuser: [u8; 32] },
}

/// Whether `tx` writes a challenge or an answer register: a name with one
/// of their prefixes, and of the key's length after it (another length is
/// no dispute, and [`check_dispute`] refuses it).
pub fn dispute_of(tx: &RegisterTx) -> Option<Dispute> {
    let key = |prefix: &[u8]| -> Option<[u8; 32]> { tx.name.strip_prefix(prefix)?.try_into().ok() };
    if let Some(accused) = key(CHALLENGE_REGISTER) {
        return Some(Dispute::Challenge { accused });
    }
    key(ANSWER_REGISTER).map(|accuser| Dispute::Answer { accuser })
}

/// Why a challenge or answer is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisputeError {
    #[error("a challenge or answer register's name must end with a 32-byte key")]
    BadName,
    #[error("undecodable: {0}")]
    Undecodable(String),
    #[error("the receipt is not the challenged holder's")]
    OtherHolder,
    #[error("a holder cannot challenge itself")]
    OwnReceipt,
    #[error("the receipt's signature does not verify")]
    BadReceipt,
    #[error("the slice does not prove the challenged chunk: {0}")]
    BadSlice(String),
    #[error("an answer of {got} bytes is past the {max} the chain's blobs allow")]
    TooLarge { got: usize, max: usize },
}

/// The checks of a challenge or answer write beyond any transaction's,
/// on the transaction alone: a challenge's value (empty: withdrawn) is
/// the accused's receipt, signed, for another vault than the accuser; an
/// answer's slice proves the chunk its challenge version draws and the
/// blob's last chunk against the address.
pub fn check_dispute(
    chain_id: &[u8; 32],
    max_blob_bytes: u64,
    tx: &RegisterTx,
) -> Result<(), DisputeError> {
    let starts = |p: &[u8]| tx.name.starts_with(p);
    let Some(dispute) = dispute_of(tx) else {
        if starts(CHALLENGE_REGISTER) || starts(ANSWER_REGISTER) {
            return Err(DisputeError::BadName);
        }
        return Ok(());
    };
    if tx.value.is_empty() {
        return Ok(());
    }
    match dispute {
        Dispute::Challenge { accused } => {
            let challenge = Challenge::decode(&tx.value)
                .map_err(|e| DisputeError::Undecodable(e.to_string()))?;
            if challenge.receipt.holder != accused {
                return Err(DisputeError::OtherHolder);
            }
            if accused == tx.owner {
                return Err(DisputeError::OwnReceipt);
            }
            if !challenge.receipt.verify(chain_id) {
                return Err(DisputeError::BadReceipt);
            }
        }
        Dispute::Answer { accuser } => {
            let max = answer_value_bytes(max_blob_bytes);
            if tx.value.len() > max {
                return Err(DisputeError::TooLarge {
                    got: tx.value.len(),
                    max,
                });
            }
            let answer = Answer::decode(&tx.value, max_blob_bytes)
                .map_err(|e| DisputeError::Undecodable(e.to_string()))?;
            if answer.len > max_blob_bytes {
                return Err(DisputeError::TooLarge {
                    got: answer.len as usize,
                    max: max_blob_bytes as usize,
                });
            }
            let chunk = challenged_chunk(
                chain_id,
                &accuser,
                &tx.owner,
                (answer.challenge_version, &answer.challenge_signature),
                &answer.address,
                answer.len,
            );
            audit::verify_with_last(&answer.address, answer.len, chunk, &answer.slice)
                .map_err(|e| DisputeError::BadSlice(e.to_string()))?;
        }
    }
    Ok(())
}

/// Whether `answer` answers `challenge` in its window: written by the
/// accused to the accuser, in the challenge's block or one of the
/// [`ANSWER_BLOCKS`] after it, naming its version, its signature and its
/// receipt's address.
pub fn answers(answer: &Written, challenge: &Written) -> bool {
    let (Some(Dispute::Challenge { accused }), Ok(c)) = (
        dispute_of(&challenge.tx),
        Challenge::decode(&challenge.tx.value),
    ) else {
        return false;
    };
    let window = challenge.height..=challenge.height.saturating_add(ANSWER_BLOCKS);
    answer.tx.owner == accused
        && dispute_of(&answer.tx)
            == Some(Dispute::Answer {
                accuser: challenge.tx.owner,
            })
        && window.contains(&answer.height)
        && Answer::decode(&answer.tx.value, u64::MAX).is_ok_and(|a| {
            a.challenge_version == challenge.tx.version
                && a.challenge_signature == challenge.tx.signature
                && a.address == c.receipt.address
        })
}

/// A challenge, an answer or a holder registration on the canonical
/// chain, and the height of the block that holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub height: u64,
    pub tx: RegisterTx,
}

/// Eras after the one a failed challenge's window closed in during which
/// the holder holds nothing, even registered again: a failure costs more
/// than one proof of space.
pub const EVICTION_ERAS: u64 = 4;

/// A challenge a holder left unanswered: its accuser, and the height its
/// window closed at (its last block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub accuser: [u8; 32],
    pub closes: u64,
}

/// Whether `accused` stands failed as the chain stands at `first_height`
/// (an era's first block), and by which challenge. `registrations`: its
/// holder register writes (registrations, and leaves with an empty value)
/// by height; `disputes`: the challenges to it and its answers, each as
/// checked by [`check_dispute`]; `registered_at(key, h)`: whether `key`'s
/// latest holder register write below height `h` is a registration.
///
/// A challenge written at height `h` counts when its window (`h` to `h +
/// ANSWER_BLOCKS`) closed below `first_height`, when the accused was
/// registered below `h` (the registration in force) and the accuser too,
/// when its receipt is of an era from the registration's effective era to
/// `h`'s (a holder keeps what it signed for while its registration
/// stands), and when its accuser did not replace or withdraw it within
/// the window. It is answered by an answer of the accused in the window
/// naming its version and signature and the receipt's address. An
/// unanswered one fails the accused while the registration in force at
/// `h` stands, and, whatever it registers since, until [`EVICTION_ERAS`]
/// eras after the one the window closed in.
pub fn failed(
    accused: &[u8; 32],
    first_height: u64,
    era_blocks: u64,
    registrations: &[Written],
    disputes: &[Written],
    registered_at: impl Fn(&[u8; 32], u64) -> bool,
) -> Option<Failure> {
    let in_force = |h: u64| {
        registrations
            .iter()
            .filter(|w| w.height < h)
            .max_by_key(|w| w.height)
            .filter(|w| !w.tx.value.is_empty())
    };
    let current = in_force(first_height)?;
    let challenges = disputes.iter().filter(|w| {
        !w.tx.value.is_empty()
            && dispute_of(&w.tx) == Some(Dispute::Challenge { accused: *accused })
    });
    for c in challenges {
        let accuser = c.tx.owner;
        let closes = c.height.saturating_add(ANSWER_BLOCKS);
        if closes >= first_height {
            continue;
        }
        let Some(registration) = in_force(c.height) else {
            continue;
        };
        let evicted = registration.height == current.height
            || era_at(first_height, era_blocks) <= era_at(closes, era_blocks) + EVICTION_ERAS;
        if !evicted || !registered_at(&accuser, c.height) {
            continue;
        }
        let Ok(challenge) = Challenge::decode(&c.tx.value) else {
            continue;
        };
        let era = era_at(c.height, era_blocks);
        let since = effective_era(registration.height, era_blocks);
        if challenge.receipt.era > era || challenge.receipt.era < since {
            continue;
        }
        let replaced = disputes.iter().any(|w| {
            w.tx.owner == accuser
                && w.tx.name == c.tx.name
                && w.tx.version > c.tx.version
                && w.height <= closes
        });
        if replaced {
            continue;
        }
        if !disputes.iter().any(|w| answers(w, c)) {
            return Some(Failure { accuser, closes });
        }
    }
    None
}

#[cfg(test)]
mod tests;
