//! Files of any size through a vault: cut into parts of the chain's blob
//! size, each part stored as a blob, and manifests that list them
//! ([`spacevault_chain::manifest`]); read back a window of parts at a
//! time, each part checked against its address and each manifest's range
//! against its hash as it completes, so neither way holds more than the
//! window in memory.

use super::{parse_address, Client, ClientError, PutAnswer};
use futures::{stream, StreamExt, TryStreamExt};
use spacevault_chain::manifest::{self, Checker, FileError, Manifest, Next, TreeBuilder, Walker};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How a file goes through.
#[derive(Clone)]
pub struct FileOptions {
    /// Parts under way at once, each up to a blob's size in memory.
    pub parallel: usize,
    /// Called with the bytes done so far and the file's size.
    pub progress: Option<Arc<dyn Fn(u64, u64) + Send + Sync>>,
    /// A file read back whose manifest claims more bytes is refused
    /// before a byte is written: a small upload can list one part many
    /// times and describe a file of any size.
    pub max_bytes: Option<u64>,
}

impl Default for FileOptions {
    fn default() -> FileOptions {
        FileOptions {
            parallel: 8,
            progress: None,
            max_bytes: None,
        }
    }
}

impl FileOptions {
    fn report(&self, done: u64, total: u64) {
        if let Some(progress) = &self.progress {
            progress(done, total);
        }
    }
}

/// A file stored.
#[derive(Clone, Debug, PartialEq)]
pub struct FileAnswer {
    /// The file's address: its manifest's, or its one blob's.
    pub address: [u8; 32],
    pub bytes: u64,
    /// BLAKE3 of the file's bytes (what `b3sum` prints).
    pub hash: [u8; 32],
    /// Blobs of the file's bytes, and manifests listing them.
    pub parts: u64,
    pub manifests: u64,
    /// The fewest copies any of its blobs got, and the copies wanted.
    pub copies: usize,
    pub wanted: usize,
}

/// A file read back.
#[derive(Clone, Debug, PartialEq)]
pub struct FileGot {
    pub bytes: u64,
    pub parts: u64,
    pub manifests: u64,
}

/// The fewest copies over a file's blobs.
struct Copies {
    fewest: usize,
    wanted: usize,
}

impl Copies {
    fn add(&mut self, answer: &PutAnswer) {
        self.fewest = self.fewest.min(answer.copies);
        self.wanted = self.wanted.max(answer.wanted);
    }
}

impl Client {
    /// Stores the file at `path`: as one blob when it fits in one and does
    /// not start as a manifest does, else as parts and manifests. A blob
    /// that fewer vaults took than wanted lowers [`FileAnswer::copies`];
    /// one no vault took fails the file.
    pub async fn put_file(
        &self,
        path: &Path,
        options: &FileOptions,
    ) -> Result<FileAnswer, ClientError> {
        let read_error = |source| ClientError::Read {
            path: path.display().to_string(),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_error)?;
        let meta = file.metadata().map_err(read_error)?;
        if !meta.is_file() {
            return Err(read_error(std::io::Error::other("not a regular file")));
        }
        let len = meta.len();
        let part_bytes = match self.blob_bytes {
            Some(bytes) => {
                self.chain_id().await?;
                bytes
            }
            None => self.status().await?.max_blob_bytes,
        };
        if part_bytes == 0 || part_bytes > manifest::MAX_PART_BYTES {
            return Err(ClientError::BadAnswer(format!(
                "the vault says its blobs hold {part_bytes} bytes: not 1 byte to 64 MiB"
            )));
        }
        let mut head = vec![0; len.min(manifest::MAGIC.len() as u64) as usize];
        file.read_exact_at(&mut head, 0).map_err(read_error)?;
        let mut copies = Copies {
            fewest: usize::MAX,
            wanted: 0,
        };
        if len <= u64::from(part_bytes) && !manifest::is_manifest(&head) {
            let mut blob = vec![0; len as usize];
            file.read_exact_at(&mut blob, 0).map_err(read_error)?;
            let hash = *blake3::hash(&blob).as_bytes();
            let answer = self.put_some(blob).await?;
            copies.add(&answer);
            options.report(len, len);
            return Ok(FileAnswer {
                address: parse_address(&answer.address)?,
                bytes: len,
                hash,
                parts: 1,
                manifests: 0,
                copies: copies.fewest,
                wanted: copies.wanted,
            });
        }
        let fanout = manifest::fanout(part_bytes).ok_or_else(|| ClientError::BadFile {
            address: String::new(),
            why: format!("this chain's blobs ({part_bytes} bytes) are too small for a manifest"),
        })?;
        let parts = len.div_ceil(u64::from(part_bytes));
        if manifest::depth_for(parts, fanout) > manifest::MAX_DEPTH {
            return Err(ClientError::BadFile {
                address: String::new(),
                why: format!(
                    "{len} bytes in blobs of {part_bytes} need a tree of manifests deeper than {}",
                    manifest::MAX_DEPTH
                ),
            });
        }
        let file = Arc::new(file);
        let mut puts = stream::iter(0..parts)
            .map(|i| {
                let (file, client) = (file.clone(), self.clone());
                let path = path.display().to_string();
                async move {
                    let offset = i * u64::from(part_bytes);
                    let n = (len - offset).min(u64::from(part_bytes)) as usize;
                    let data = tokio::task::spawn_blocking(move || {
                        let mut buf = vec![0; n];
                        file.read_exact_at(&mut buf, offset).map(|()| buf)
                    })
                    .await
                    .map_err(std::io::Error::other)
                    .and_then(|read| read)
                    .map_err(|source| ClientError::Read { path, source })?;
                    let answer = client.put_some(data.clone()).await?;
                    Ok::<_, ClientError>((answer, data))
                }
            })
            .buffered(options.parallel.max(1));
        let mut builder = TreeBuilder::new(part_bytes, fanout);
        let mut done = 0u64;
        // Manifests stored, the last one's address.
        let mut stored: Vec<String> = Vec::new();
        while let Some((answer, data)) = puts.try_next().await? {
            copies.add(&answer);
            done += data.len() as u64;
            for m in builder.part(parse_address(&answer.address)?, &data) {
                stored.push(self.put_counted(&m, &mut copies).await?);
            }
            options.report(done, len);
        }
        let (root, rest) = builder.finish().expect("a file past one blob has parts");
        for m in rest {
            stored.push(self.put_counted(&m, &mut copies).await?);
        }
        let root_address = hex::encode(spacevault_chain::blob_address(&root.encode()));
        // A file that ended just as a manifest closed has that one for its
        // root, stored already.
        if stored.last() != Some(&root_address) {
            stored.push(self.put_counted(&root, &mut copies).await?);
        }
        let manifests = stored.len() as u64;
        Ok(FileAnswer {
            address: parse_address(&root_address)?,
            bytes: len,
            hash: root.hash,
            parts,
            manifests,
            copies: copies.fewest,
            wanted: copies.wanted,
        })
    }

    /// Stores manifest `m` ([`put_some`](Self::put_some)), its copies
    /// counted in `copies`; its address.
    async fn put_counted(&self, m: &Manifest, copies: &mut Copies) -> Result<String, ClientError> {
        let answer = self.put_some(m.encode()).await?;
        copies.add(&answer);
        Ok(answer.address)
    }

    /// A PUT that at least one vault took, with its copies counted.
    async fn put_some(&self, blob: Vec<u8>) -> Result<PutAnswer, ClientError> {
        match self.put(blob).await {
            Ok(answer) => Ok(answer),
            Err(ClientError::TooFewCopies(answer)) if answer.copies > 0 => Ok(answer),
            Err(e) => Err(e),
        }
    }

    /// Writes the file at `address` to `out`: the blob itself, or the file
    /// its manifests list, `options.parallel` parts fetched at once and
    /// written in order once checked.
    pub async fn get_file(
        &self,
        address: &[u8; 32],
        out: &mut (dyn Write + Send),
        options: &FileOptions,
    ) -> Result<FileGot, ClientError> {
        if self.expected_chain.is_some() {
            self.chain_id().await?;
        }
        let root = self.get_blob(address).await?;
        let too_large = |bytes: u64| {
            options
                .max_bytes
                .filter(|&max| bytes > max)
                .map(|max| ClientError::FileTooLarge {
                    address: hex::encode(address),
                    bytes,
                    max,
                })
        };
        if !manifest::is_manifest(&root) {
            if let Some(e) = too_large(root.len() as u64) {
                return Err(e);
            }
            out.write_all(&root).map_err(ClientError::Write)?;
            let bytes = root.len() as u64;
            options.report(bytes, bytes);
            return Ok(FileGot {
                bytes,
                parts: 1,
                manifests: 0,
            });
        }
        let bad = |e: FileError| ClientError::BadFile {
            address: hex::encode(address),
            why: e.to_string(),
        };
        let walker = Walker::new(Manifest::decode(&root).map_err(|e| bad(e.into()))?);
        let total = walker.bytes();
        // The size the root claims, before a byte is written: checked
        // against the room the caller has.
        if let Some(e) = too_large(total) {
            return Err(e);
        }
        options.report(0, total);
        let manifests = Arc::new(AtomicU64::new(1));
        let counted = manifests.clone();
        let planned = stream::try_unfold((walker, self.clone()), move |(mut walker, client)| {
            let counted = counted.clone();
            async move {
                loop {
                    match walker.step().map_err(bad)? {
                        Next::Done => return Ok(None),
                        Next::Manifest(at) => {
                            let blob = client.get_blob(&at).await?;
                            let child = Manifest::decode(&blob).map_err(|e| bad(e.into()))?;
                            walker.give(child).map_err(bad)?;
                            counted.fetch_add(1, Ordering::Relaxed);
                        }
                        Next::Part { address, bytes } => {
                            let ranges = walker.take_ranges();
                            return Ok(Some(((address, bytes, ranges), (walker, client))));
                        }
                    }
                }
            }
        });
        let parts = planned
            .map_ok(|(at, bytes, ranges)| {
                let client = self.clone();
                async move {
                    let data = client.get_blob(&at).await?;
                    if data.len() != bytes as usize {
                        return Err(bad(FileError::Inconsistent(
                            "a part is not the size its manifest says",
                        )));
                    }
                    Ok((data, ranges))
                }
            })
            .try_buffered(options.parallel.max(1));
        let mut parts = std::pin::pin!(parts);
        let mut checker = Checker::new();
        let (mut done, mut count) = (0u64, 0u64);
        while let Some((data, ranges)) = parts.try_next().await? {
            checker.expect(ranges);
            checker.feed(&data).map_err(bad)?;
            out.write_all(&data).map_err(ClientError::Write)?;
            done += data.len() as u64;
            count += 1;
            options.report(done, total);
        }
        checker.finish().map_err(bad)?;
        out.flush().map_err(ClientError::Write)?;
        Ok(FileGot {
            bytes: done,
            parts: count,
            manifests: manifests.load(Ordering::Relaxed),
        })
    }
}
