//! Farmer keys, plot seeds and challenges given as hex, and the farmer key
//! kept in the user's config directory.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// 32 bytes from 64 hex digits.
pub fn parse_hex32(what: &str, text: &str) -> Result<[u8; 32]> {
    let t = text.trim();
    let t = t.strip_prefix("0x").unwrap_or(t);
    let bytes = hex::decode(t)
        .map_err(|_| anyhow::anyhow!("{what} must be 64 hex digits, got '{text}'"))?;
    match <[u8; 32]>::try_from(bytes.as_slice()) {
        Ok(b) => Ok(b),
        Err(_) => bail!(
            "{what} must be 32 bytes (64 hex digits), got {} hex digits",
            t.len()
        ),
    }
}

pub fn random32() -> Result<[u8; 32]> {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("no randomness from the OS: {e}"))?;
    Ok(b)
}

/// `$SPACEVAULT_CONFIG_DIR`, else `$XDG_CONFIG_HOME/spacevault`, else
/// `~/.config/spacevault`. An empty variable counts as unset.
pub fn config_dir() -> Result<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("SPACEVAULT_CONFIG_DIR") {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CONFIG_HOME") {
        return Ok(PathBuf::from(d).join("spacevault"));
    }
    match var("HOME") {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("spacevault")),
        None => {
            bail!("no HOME or XDG_CONFIG_HOME to keep the farmer key in; pass --farmer-key HEX")
        }
    }
}

/// The farmer key from the config directory, made on first use. Says on
/// stderr where a new key was saved. Several processes starting at once
/// all end up with the one key: a new key is written whole under a name of
/// its own, then linked into place only if no other process got there
/// first; the others read the winner's.
pub fn stored_farmer_key() -> Result<[u8; 32]> {
    let dir = config_dir()?;
    let path = dir.join("farmer.key");
    let what = format!("the farmer key in {}", path.display());
    match std::fs::read_to_string(&path) {
        Ok(text) => return parse_hex32(&what, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    let key = random32()?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    if create_private(&path, &format!("{}\n", hex::encode(key)))? {
        errln!(
            "created a new farmer key in {} (back it up: plots belong to it)",
            path.display()
        );
        return Ok(key);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_hex32(&what, &text)
}

/// Writes `text` to `path` readable by its owner only, unless `path`
/// exists: false then, and the file there is left as it is. The file
/// appears whole or not at all.
fn create_private(path: &Path, text: &str) -> Result<bool> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let draft = dir.join(format!(
        ".{name}.{}-{}.new",
        std::process::id(),
        hex::encode(&random32()?[..4])
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
        Err(e) => Err(e).with_context(|| format!("creating {}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::{create_private, parse_hex32};

    #[test]
    fn a_private_file_is_created_once_and_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("farmer.key");
        // Many writers at once: exactly one wins, every reader then sees
        // its text whole, and no draft is left behind.
        for round in 0..50 {
            let _ = std::fs::remove_file(&path);
            let winners: usize = std::thread::scope(|s| {
                let writers: Vec<_> = (0..8)
                    .map(|i| {
                        let path = &path;
                        s.spawn(move || create_private(path, &format!("{round} {i}\n")).unwrap())
                    })
                    .collect();
                writers
                    .into_iter()
                    .map(|w| w.join().unwrap() as usize)
                    .sum()
            });
            assert_eq!(winners, 1, "round {round}");
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.starts_with(&format!("{round} ")) && text.ends_with('\n'));
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(names.len(), 1, "round {round}");
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn hex32_takes_64_digits_with_or_without_0x() {
        let hex = "ab".repeat(32);
        assert_eq!(parse_hex32("--seed", &hex).unwrap(), [0xab; 32]);
        assert_eq!(
            parse_hex32("--seed", &format!(" 0x{hex}\n")).unwrap(),
            [0xab; 32]
        );
    }

    #[test]
    fn hex32_says_how_many_digits_it_got() {
        let e = parse_hex32("--seed", "0102").unwrap_err().to_string();
        assert_eq!(
            e,
            "--seed must be 32 bytes (64 hex digits), got 4 hex digits"
        );
        let e = parse_hex32("--seed", "xyz").unwrap_err().to_string();
        assert_eq!(e, "--seed must be 64 hex digits, got 'xyz'");
    }
}
