//! The index of the blobs a store keeps: each blob's bytes are a file of
//! their own ([`crate::blobs`]); the database holds each address with its
//! length, and the count and bytes of them all, changed in the
//! transaction that changes the index.

use crate::{blobs, Store, StoreError, BLOBS, META};
use redb::{ReadableDatabase as _, ReadableTable};
use std::path::{Path, PathBuf};

impl Store {
    /// Keeps a blob's bytes under its address, durably: its file first,
    /// then its place in the index and the counts.
    pub fn put_blob(&self, address: &[u8; 32], bytes: &[u8]) -> Result<(), StoreError> {
        self.blobs.write(address, bytes)?;
        let tx = self.begin_durable_write()?;
        {
            let mut index = tx.open_table(BLOBS)?;
            let len = bytes.len() as u64;
            let before = index
                .insert(address.as_slice(), len.to_le_bytes().as_slice())?
                .map(|v| blob_len(v.value()))
                .transpose()?;
            drop(index);
            let mut meta = tx.open_table(META)?;
            let (count, total) = counts(&meta)?;
            let (count, total) = match before {
                None => (count + 1, total + len),
                Some(old) => (count, total - old.min(total) + len),
            };
            set_counts(&mut meta, count, total)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// A blob's bytes as its file holds them: the caller hashes them
    /// before trusting them. [`StoreError::BlobLost`] when the index has
    /// the blob and its file is gone.
    pub fn get_blob(&self, address: &[u8; 32]) -> Result<Option<Vec<u8>>, StoreError> {
        if !self.has_blob(address)? {
            return Ok(None);
        }
        match self.blobs.read(address)? {
            Some(bytes) => Ok(Some(bytes)),
            None => Err(StoreError::BlobLost(hex::encode(address))),
        }
    }

    pub fn has_blob(&self, address: &[u8; 32]) -> Result<bool, StoreError> {
        let tx = self.db.begin_read()?;
        Ok(tx.open_table(BLOBS)?.get(address.as_slice())?.is_some())
    }

    pub fn delete_blob(&self, address: &[u8; 32]) -> Result<(), StoreError> {
        let tx = self.begin_durable_write()?;
        {
            let removed = tx
                .open_table(BLOBS)?
                .remove(address.as_slice())?
                .map(|v| blob_len(v.value()))
                .transpose()?;
            if let Some(len) = removed {
                let mut meta = tx.open_table(META)?;
                let (count, total) = counts(&meta)?;
                set_counts(
                    &mut meta,
                    count.saturating_sub(1),
                    total.saturating_sub(len),
                )?;
            }
        }
        tx.commit()?;
        self.blobs.remove(address)?;
        Ok(())
    }

    /// The addresses of every blob kept.
    pub fn blob_addresses(&self) -> Result<Vec<[u8; 32]>, StoreError> {
        let tx = self.db.begin_read()?;
        let t = tx.open_table(BLOBS)?;
        let mut out = Vec::new();
        for entry in t.iter()? {
            let (k, _) = entry?;
            out.push(
                k.value()
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("a blob's address"))?,
            );
        }
        Ok(out)
    }

    /// Blobs kept and their bytes, from the counts the index keeps.
    pub fn blob_stats(&self) -> Result<(u64, u64), StoreError> {
        let tx = self.db.begin_read()?;
        let meta = tx.open_table(META)?;
        counts(&meta)
    }

    /// Where the blob of `address` is kept (a file, whether or not the
    /// store holds the blob).
    pub fn blob_path(&self, address: &[u8; 32]) -> PathBuf {
        self.blobs.path_of(address)
    }
}

/// The directory of the blob files of the database at `db`: beside it,
/// named after it (`vault.redb`: `vault.blobs`).
pub fn blob_dir_of(db: &Path) -> PathBuf {
    db.with_extension("blobs")
}

/// A blob's length as the index keeps it.
pub(crate) fn blob_len(value: &[u8]) -> Result<u64, StoreError> {
    Ok(u64::from_le_bytes(
        value
            .try_into()
            .map_err(|_| StoreError::Corrupt("a blob's length"))?,
    ))
}

/// The index's counts: blobs and their bytes.
pub(crate) fn counts(
    meta: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<(u64, u64), StoreError> {
    Ok((
        crate::meta_u64(meta, "blob_count", "the blob counts")?,
        crate::meta_u64(meta, "blob_bytes", "the blob counts")?,
    ))
}

pub(crate) fn set_counts(
    meta: &mut redb::Table<&'static str, &'static [u8]>,
    count: u64,
    bytes: u64,
) -> Result<(), StoreError> {
    meta.insert("blob_count", count.to_le_bytes().as_slice())?;
    meta.insert("blob_bytes", bytes.to_le_bytes().as_slice())?;
    Ok(())
}

/// Brings a store of version 1 to files: each blob's bytes in the index
/// become a file and the index keeps its length. Blob files already there
/// with no entry (a database moved aside and begun anew) are indexed.
pub(crate) fn index_blobs(
    tx: &redb::WriteTransaction,
    files: &blobs::BlobFiles,
) -> Result<(), StoreError> {
    let mut index = tx.open_table(BLOBS)?;
    let mut inline: Vec<([u8; 32], Vec<u8>)> = Vec::new();
    for entry in index.iter()? {
        let (k, v) = entry?;
        let address: [u8; 32] = k
            .value()
            .try_into()
            .map_err(|_| StoreError::Corrupt("a blob's address"))?;
        inline.push((address, v.value().to_vec()));
    }
    for (address, bytes) in &inline {
        files.write(address, bytes)?;
        index.insert(
            address.as_slice(),
            (bytes.len() as u64).to_le_bytes().as_slice(),
        )?;
    }
    for (address, len) in files.list()? {
        if index.get(address.as_slice())?.is_none() {
            index.insert(address.as_slice(), len.to_le_bytes().as_slice())?;
        }
    }
    let (mut count, mut bytes) = (0u64, 0u64);
    for entry in index.iter()? {
        count += 1;
        bytes += blob_len(entry?.1.value())?;
    }
    drop(index);
    set_counts(&mut tx.open_table(META)?, count, bytes)
}
