//! Key files: the farmer's identity and a client's, in the config
//! directory.
//!
//! A farmer's identity is one ed25519 key pair: its public key is the
//! farmer key F its plots belong to, its libp2p peer id, and the key that
//! signs its blocks and storage receipts. The file holds the secret:
//!
//! ```text
//! spacevault ed25519 secret key v1
//! <64 hex digits>
//! ```
//!
//! Files from before nodes existed hold a farmer key alone (64 hex digits,
//! no secret). Plots made for it still belong to it and `plot` still uses
//! it, but no node can sign for it: a node refuses it with a message that
//! says what to do, rather than making a new identity the plots do not
//! belong to.

use spacevault_chain::Keypair;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The first line of a key file.
pub const HEADER: &str = "spacevault ed25519 secret key v1";

/// What a key file holds.
#[derive(Clone, Debug)]
pub enum KeyFile {
    /// An ed25519 key pair.
    Pair(Keypair),
    /// A farmer key without its secret, from an earlier spacevault.
    PublicOnly([u8; 32]),
}

impl KeyFile {
    /// The farmer key F: the public key.
    pub fn public(&self) -> [u8; 32] {
        match self {
            KeyFile::Pair(k) => k.public(),
            KeyFile::PublicOnly(p) => *p,
        }
    }
}

/// Why a key could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    #[error("reading {path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path} is not a spacevault key file: {why}")]
    Malformed { path: PathBuf, why: String },
    #[error(
        "{path} holds a farmer key without its secret, made by a spacevault without nodes: \
         a node signs with the key its plots belong to, so it cannot farm them. Keep plotting \
         with it, or move it aside: the next run makes a key pair, for which you plot anew"
    )]
    NoSecret { path: PathBuf },
    #[error("no randomness from the operating system: {0}")]
    Random(String),
}

fn random_secret() -> Result<[u8; 32], KeyError> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| KeyError::Random(e.to_string()))?;
    Ok(secret)
}

/// Reads a key file.
pub fn read(path: &Path) -> Result<KeyFile, KeyError> {
    let text = std::fs::read_to_string(path).map_err(|cause| KeyError::Io {
        path: path.to_path_buf(),
        cause,
    })?;
    parse(path, &text)
}

fn parse(path: &Path, text: &str) -> Result<KeyFile, KeyError> {
    let malformed = |why: &str| KeyError::Malformed {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let hex32 = |s: &str| -> Option<[u8; 32]> {
        let s = s.trim();
        hex::decode(s.strip_prefix("0x").unwrap_or(s))
            .ok()?
            .try_into()
            .ok()
    };
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next(), lines.next()) {
        (Some(HEADER), Some(secret), None) => hex32(secret)
            .map(|s| KeyFile::Pair(Keypair::from_secret(&s)))
            .ok_or_else(|| malformed("its key is not 64 hex digits")),
        (Some(public), None, None) => hex32(public)
            .map(KeyFile::PublicOnly)
            .ok_or_else(|| malformed("it is neither a key pair nor 64 hex digits")),
        _ => Err(malformed("it is neither a key pair nor 64 hex digits")),
    }
}

/// The key in `path`, made on first use. Several processes starting at
/// once all end up with one key: a new key is written whole under a name
/// of its own, then linked into place only if no other process got there
/// first. Returns the key and whether this call made it.
pub fn load_or_create(path: &Path) -> Result<(KeyFile, bool), KeyError> {
    match read(path) {
        Err(KeyError::Io { cause, .. }) if cause.kind() == std::io::ErrorKind::NotFound => {}
        other => return other.map(|k| (k, false)),
    }
    let secret = random_secret()?;
    let text = format!("{HEADER}\n{}\n", hex::encode(secret));
    let io = |cause| KeyError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    if create_private(path, &text).map_err(io)? {
        return Ok((KeyFile::Pair(Keypair::from_secret(&secret)), true));
    }
    read(path).map(|k| (k, false))
}

/// Writes `text` to `path` readable by its owner only, unless `path`
/// exists: false then, and the file there is left as it is. The file
/// appears whole or not at all.
pub fn create_private(path: &Path, text: &str) -> std::io::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let mut tag = [0u8; 4];
    let _ = getrandom::fill(&mut tag);
    let draft = dir.join(format!(
        ".{name}.{}-{}.new",
        std::process::id(),
        hex::encode(tag)
    ));
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&draft)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    })();
    // A link, unlike a rename, fails where the name is taken.
    let linked = written.and_then(|()| std::fs::hard_link(&draft, path));
    let _ = std::fs::remove_file(&draft);
    match linked {
        Ok(()) => {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).ok();
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// The farmer's key pair, for a node: a file without a secret is refused.
pub fn farmer_keypair(path: &Path) -> Result<(Keypair, bool), KeyError> {
    match load_or_create(path)? {
        (KeyFile::Pair(k), made) => Ok((k, made)),
        (KeyFile::PublicOnly(_), _) => Err(KeyError::NoSecret {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_pair_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfg").join("farmer.key");
        let (first, made) = farmer_keypair(&path).unwrap();
        assert!(made);
        let (again, made) = farmer_keypair(&path).unwrap();
        assert!(!made);
        assert_eq!(first.public(), again.public());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(HEADER));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn an_old_farmer_key_is_kept_for_plots_and_refused_for_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("farmer.key");
        std::fs::write(&path, format!("{}\n", "ab".repeat(32))).unwrap();
        let (key, made) = load_or_create(&path).unwrap();
        assert!(!made);
        assert_eq!(key.public(), [0xab; 32]);
        let e = farmer_keypair(&path).unwrap_err().to_string();
        assert!(
            e.contains("without its secret") && e.contains("move it aside"),
            "{e}"
        );
        // The file is left alone.
        assert_eq!(
            std::fs::read_to_string(&path).unwrap().trim(),
            "ab".repeat(32)
        );
        std::fs::write(&path, "garbage").unwrap();
        assert!(matches!(read(&path), Err(KeyError::Malformed { .. })));
    }

    #[test]
    fn processes_racing_to_make_the_key_share_one() {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..20 {
            let path = dir.path().join(format!("k{round}"));
            let keys: Vec<[u8; 32]> = std::thread::scope(|s| {
                let all: Vec<_> = (0..6)
                    .map(|_| s.spawn(|| load_or_create(&path).unwrap().0.public()))
                    .collect();
                all.into_iter().map(|t| t.join().unwrap()).collect()
            });
            assert!(keys.iter().all(|k| *k == keys[0]), "round {round}");
        }
    }
}
