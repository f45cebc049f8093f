//! The last slot this vault's farmer key signed a block in, kept beside
//! the key rather than in the store.
//!
//! A key that signs two blocks for one slot is banned for good (see
//! `engine::evidence`), and an honest vault can do it by accident: its
//! store lost, or put back from a copy, its line of slots resumes from
//! where the copy left it, and a vault that keeps time computes the slots
//! it missed as fast as it can and farms each in turn, signing again in
//! slots it signed before. The store cannot guard against that, for it is
//! what was lost; the key's directory outlives it (the CLI keeps the key
//! in the user's config directory, the store in the data directory). A
//! block leaves this vault only once the record says its slot is past
//! every slot signed before, durably.
//!
//! One file per chain (slots are numbered per chain), named by the chain
//! id in hex: `spacevault signed slot v1`, then the slot in decimal. A
//! vault holds an exclusive lock on `<chain id>.lock` beside it while it
//! runs: a second vault of the same key and directory would keep its own
//! count of the slots signed, and sign the same slots.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The first line of a record.
pub const HEADER: &str = "spacevault signed slot v1";

/// Why the record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SignedError {
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "{path} is not a record of the slots this farmer key signed ({why}): move it aside \
         only if no other vault ever farmed with this key on this chain"
    )]
    Malformed { path: PathBuf, why: &'static str },
    #[error(
        "another vault holds {path}: one farmer key runs in one vault (two would sign two \
         blocks for one slot, and every vault would ban the key for good)"
    )]
    Held { path: PathBuf },
}

/// The record of one chain's signed slots.
#[derive(Debug)]
pub struct SignedSlots {
    path: PathBuf,
    last: Mutex<u64>,
    /// Locked for as long as the record is open.
    _lock: std::fs::File,
}

impl SignedSlots {
    /// The record of chain `chain_id` in `dir` (none yet: slot 0), locked
    /// against every other vault until it is dropped.
    pub fn open(dir: &Path, chain_id: &[u8; 32]) -> Result<SignedSlots, SignedError> {
        let path = dir.join(hex::encode(chain_id));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| SignedError::Io { path, cause }
        };
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
            // The new directory's name, durable in its parent.
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::File::open(parent)
                    .and_then(|d| d.sync_all())
                    .map_err(io(parent))?;
            }
        }
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(SignedError::Held { path: lock_path })
            }
            Err(std::fs::TryLockError::Error(cause)) => {
                return Err(SignedError::Io {
                    path: lock_path,
                    cause,
                })
            }
        }
        let last = match std::fs::read_to_string(&path) {
            Ok(text) => parse(&text).map_err(|why| SignedError::Malformed {
                path: path.clone(),
                why,
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(cause) => return Err(SignedError::Io { path, cause }),
        };
        Ok(SignedSlots {
            path,
            last: Mutex::new(last),
            _lock: lock,
        })
    }

    /// The last slot a block of this key was signed in (0 for none).
    pub fn last(&self) -> u64 {
        *self.lock()
    }

    /// Whether a block signed in `slot` may leave this vault: false when
    /// one was signed in `slot` or a later one; true once `slot` is
    /// recorded durably (file, then directory, synced).
    pub fn claim(&self, slot: u64) -> Result<bool, SignedError> {
        let mut last = self.lock();
        if slot <= *last {
            return Ok(false);
        }
        self.write(slot).map_err(|cause| SignedError::Io {
            path: self.path.clone(),
            cause,
        })?;
        *last = slot;
        Ok(true)
    }

    /// A poisoned lock still holds the last slot written: the value moves
    /// only after its write succeeded.
    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        self.last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes the record whole under another name, then renames it over
    /// the old one: a crash leaves the old record or the new, never half.
    fn write(&self, slot: u64) -> std::io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // The lock held keeps any other vault from writing the draft.
        let draft = self.path.with_extension("new");
        let mut f = std::fs::File::create(&draft)?;
        f.write_all(format!("{HEADER}\n{slot}\n").as_bytes())?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&draft, &self.path)?;
        std::fs::File::open(dir)?.sync_all()
    }
}

fn parse(text: &str) -> Result<u64, &'static str> {
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err("its first line is not the record's header");
    }
    let slot = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or("its second line is not a slot number")?;
    if lines.any(|l| !l.trim().is_empty()) {
        return Err("it holds more than a slot");
    }
    Ok(slot)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAIN: [u8; 32] = [7; 32];

    #[test]
    fn a_slot_is_claimed_once_and_the_claim_outlives_the_process() {
        let dir = tempfile::tempdir().unwrap();
        let signed = SignedSlots::open(dir.path(), &CHAIN).unwrap();
        assert_eq!(signed.last(), 0);
        assert!(signed.claim(5).unwrap());
        assert!(!signed.claim(5).unwrap(), "a slot signed twice");
        assert!(!signed.claim(3).unwrap(), "a slot before the last signed");
        assert!(signed.claim(9).unwrap());
        drop(signed);
        let reopened = SignedSlots::open(dir.path(), &CHAIN).unwrap();
        assert_eq!(reopened.last(), 9);
        assert!(!reopened.claim(9).unwrap());
        // Another chain's slots are its own.
        let other = SignedSlots::open(dir.path(), &[8; 32]).unwrap();
        assert!(other.claim(1).unwrap());
        // A second vault of the key and directory is refused while the
        // first runs, and may open the record once it has stopped.
        assert!(matches!(
            SignedSlots::open(dir.path(), &CHAIN),
            Err(SignedError::Held { .. })
        ));
        drop(reopened);
        assert_eq!(SignedSlots::open(dir.path(), &CHAIN).unwrap().last(), 9);
        let text = std::fs::read_to_string(dir.path().join(hex::encode(CHAIN))).unwrap();
        assert_eq!(text, format!("{HEADER}\n9\n"));
    }

    #[test]
    fn a_damaged_record_stops_the_vault_rather_than_read_as_none() {
        let dir = tempfile::tempdir().unwrap();
        for text in [
            "",
            "9\n",
            "spacevault signed slot v1\n",
            "spacevault signed slot v1\nnine\n",
            "spacevault signed slot v1\n9\n10\n",
            "spacevault signed slot v2\n9\n",
        ] {
            std::fs::write(dir.path().join(hex::encode(CHAIN)), text).unwrap();
            assert!(
                matches!(
                    SignedSlots::open(dir.path(), &CHAIN),
                    Err(SignedError::Malformed { .. })
                ),
                "{text:?} was read"
            );
        }
    }

    #[test]
    fn a_record_that_cannot_be_written_refuses_the_claim() {
        let dir = tempfile::tempdir().unwrap();
        let signed = SignedSlots::open(dir.path(), &CHAIN).unwrap();
        // A directory where the draft of the record would be written.
        let draft = dir.path().join(format!("{}.new", hex::encode(CHAIN)));
        std::fs::create_dir(&draft).unwrap();
        assert!(matches!(signed.claim(1), Err(SignedError::Io { .. })));
        assert_eq!(signed.last(), 0);
    }
}
