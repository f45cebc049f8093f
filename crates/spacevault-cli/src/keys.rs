//! Farmer keys, plot seeds and challenges given as hex, and the farmer key
//! kept in the user's config directory.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;

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
/// `~/.config/spacevault`.
pub fn config_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("SPACEVAULT_CONFIG_DIR") {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("spacevault"));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(".config").join("spacevault")),
        None => {
            bail!("no HOME or XDG_CONFIG_HOME to keep the farmer key in; pass --farmer-key HEX")
        }
    }
}

/// The farmer key from the config directory, made on first use. Says on
/// stderr where a new key was saved.
pub fn stored_farmer_key() -> Result<[u8; 32]> {
    let dir = config_dir()?;
    let path = dir.join("farmer.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_hex32(&format!("the farmer key in {}", path.display()), &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key = random32()?;
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            write_private(&path, &format!("{}\n", hex::encode(key)))?;
            eprintln!(
                "created a new farmer key in {} (back it up: plots belong to it)",
                path.display()
            );
            Ok(key)
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn write_private(path: &std::path::Path, text: &str) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_hex32;

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
