//! Blob bytes as files, one a blob, named by address, beside the database:
//! `blobs/AA/REST` (the address in lowercase hex, its first byte as the
//! directory). A damaged file is one damaged blob, found when it is read
//! and hashed, and repaired by writing a good copy over it; the database,
//! which keeps the chain and registers, holds no blob bytes that a flipped
//! bit among them could make unopenable.
//!
//! A file is written to `blobs/tmp/`, synced, renamed into place, and its
//! directory synced: once [`BlobFiles::write`] returns, the blob survives a
//! crash, and a crash before leaves at most a temporary file, removed at
//! the next open.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The directory of a store's blob files.
pub struct BlobFiles {
    dir: PathBuf,
}

impl BlobFiles {
    /// Opens (creating) the blob directory `dir`, and removes temporary
    /// files a crash left.
    pub fn open(dir: &Path) -> io::Result<BlobFiles> {
        let files = BlobFiles {
            dir: dir.to_path_buf(),
        };
        fs::create_dir_all(files.tmp())?;
        for entry in fs::read_dir(files.tmp())? {
            let _ = fs::remove_file(entry?.path());
        }
        Ok(files)
    }

    fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Where the blob of `address` lives.
    pub fn path_of(&self, address: &[u8; 32]) -> PathBuf {
        let hex = hex::encode(address);
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Writes `bytes` as the blob of `address`, durably, replacing any
    /// file there.
    pub fn write(&self, address: &[u8; 32], bytes: &[u8]) -> io::Result<()> {
        let path = self.path_of(address);
        let parent = path.parent().expect("a blob file has a directory");
        if !parent.exists() {
            fs::create_dir_all(parent)?;
            sync_dir(&self.dir)?;
        }
        let tmp = self
            .tmp()
            .join(format!("{}.{}", hex::encode(address), std::process::id()));
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, &path)?;
        sync_dir(parent)
    }

    /// The bytes of the blob of `address`, as the file holds them; `None`
    /// when there is no file.
    pub fn read(&self, address: &[u8; 32]) -> io::Result<Option<Vec<u8>>> {
        match fs::read(self.path_of(address)) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn remove(&self, address: &[u8; 32]) -> io::Result<()> {
        match fs::remove_file(self.path_of(address)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Every blob file's address and length, in no order; names that are
    /// not addresses are skipped.
    pub fn list(&self) -> io::Result<Vec<([u8; 32], u64)>> {
        let mut out = Vec::new();
        for outer in fs::read_dir(&self.dir)? {
            let outer = outer?;
            let prefix = outer.file_name().to_string_lossy().to_string();
            if prefix.len() != 2 || !outer.file_type()?.is_dir() {
                continue;
            }
            for inner in fs::read_dir(outer.path())? {
                let inner = inner?;
                let name = format!("{prefix}{}", inner.file_name().to_string_lossy());
                let Ok(address) = hex::decode(&name) else {
                    continue;
                };
                let Ok(address) = <[u8; 32]>::try_from(address) else {
                    continue;
                };
                if inner.file_type()?.is_file() {
                    out.push((address, inner.metadata()?.len()));
                }
            }
        }
        Ok(out)
    }
}

/// Makes a directory's entries (a file renamed into it) durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_written_read_replaced_listed_and_removed_by_address() {
        let dir = tempfile::tempdir().unwrap();
        let files = BlobFiles::open(&dir.path().join("blobs")).unwrap();
        let (a, b) = ([0xab; 32], [0x01; 32]);
        assert_eq!(files.read(&a).unwrap(), None);
        files.write(&a, b"first").unwrap();
        files.write(&b, b"").unwrap();
        assert_eq!(files.read(&a).unwrap().as_deref(), Some(&b"first"[..]));
        assert_eq!(files.read(&b).unwrap().as_deref(), Some(&b""[..]));
        files.write(&a, b"second").unwrap();
        assert_eq!(files.read(&a).unwrap().as_deref(), Some(&b"second"[..]));
        let path = files.path_of(&a);
        assert!(path.ends_with(format!("ab/{}", "ab".repeat(31))));
        let mut listed = files.list().unwrap();
        listed.sort();
        assert_eq!(listed, vec![(b, 0), (a, 6)]);
        files.remove(&a).unwrap();
        files.remove(&a).unwrap();
        assert_eq!(files.read(&a).unwrap(), None);
        // A temporary file a crash left goes at the next open.
        fs::write(dir.path().join("blobs/tmp/leftover"), b"x").unwrap();
        let files = BlobFiles::open(&dir.path().join("blobs")).unwrap();
        assert_eq!(fs::read_dir(files.tmp()).unwrap().count(), 0);
        assert_eq!(files.list().unwrap(), vec![(b, 0)]);
    }
}
