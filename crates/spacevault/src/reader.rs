//! Opening a plot file and reading its regions.

use crate::aligned::{open_read, AlignedBuf};
use crate::format::{FormatError, Header, Region, HEADER_SIZE};
use crate::kernel::Kernel;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Why a plot could not be read. The message names the file and its cause
/// (the cause is a field, not the error's `source()`, so that reporters
/// that walk the chain do not print it twice).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{path}: {cause}")]
    Format { path: PathBuf, cause: FormatError },
    #[error("{path}: {}", damage(*.region, .what))]
    Damaged {
        path: PathBuf,
        region: u64,
        what: &'static str,
    },
    /// An entry of a table-chain plot that cannot be what the plotter
    /// wrote: a pointer past its level, or a proof that does not verify.
    #[error("{path}: {}", table_damage(*.level, *.index, .what))]
    TableDamaged {
        path: PathBuf,
        level: u8,
        index: u64,
        what: &'static str,
    },
}

impl ReadError {
    /// What went wrong, without the file's name: for reports that name the
    /// file already.
    pub fn reason(&self) -> String {
        match self {
            ReadError::Io { cause, .. } => cause.to_string(),
            ReadError::Format { cause, .. } => cause.to_string(),
            ReadError::Damaged { region, what, .. } => damage(*region, what),
            ReadError::TableDamaged {
                level, index, what, ..
            } => table_damage(*level, *index, what),
        }
    }
}

fn damage(region: u64, what: &str) -> String {
    format!("region {region} is damaged ({what})")
}

fn table_damage(level: u8, index: u64, what: &str) -> String {
    format!("entry {index} of level {level} is damaged ({what})")
}

/// How lookups read the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Through the page cache.
    #[default]
    Buffered,
    /// O_DIRECT, bypassing the page cache (falls back to buffered where the
    /// file system has no O_DIRECT).
    Direct,
}

/// An open plot: its header, checked, and the file to read regions from.
pub struct PlotFile {
    path: PathBuf,
    file: File,
    header: Header,
    direct: bool,
    reads: std::sync::atomic::AtomicU64,
    pub(crate) kernel: Kernel,
}

impl PlotFile {
    pub fn open(path: impl AsRef<Path>) -> Result<PlotFile, ReadError> {
        PlotFile::open_with(path, ReadMode::Buffered)
    }

    /// Opens and checks the header: magic, version, checksum, layout, plot
    /// id, and that the file has exactly the size the header implies.
    pub fn open_with(path: impl AsRef<Path>, mode: ReadMode) -> Result<PlotFile, ReadError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |cause| ReadError::Io {
            path: path.clone(),
            cause,
        };
        let (file, direct) = open_read(&path, mode == ReadMode::Direct).map_err(io_err)?;
        let size = file.metadata().map_err(io_err)?.len();
        let mut head = AlignedBuf::zeroed(HEADER_SIZE);
        let n = read_up_to(&file, &mut head, 0).map_err(io_err)?;
        let fmt_err = |cause| ReadError::Format {
            path: path.clone(),
            cause,
        };
        let header = Header::decode(&head[..n]).map_err(fmt_err)?;
        if size != header.file_size() {
            return Err(fmt_err(FormatError::WrongSize {
                expected: header.file_size(),
                actual: size,
            }));
        }
        let kernel = Kernel::new(&header.plot_id);
        Ok(PlotFile {
            path,
            file,
            header,
            direct,
            reads: Default::default(),
            kernel,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether reads bypass the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Read calls made so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Regions `first .. first + count` (clipped to the file) in one read,
    /// each checked against its checksum.
    pub fn read_checked_regions(&self, first: u64, count: u64) -> Result<RegionBuf, ReadError> {
        let buf = self.read_regions(first, count)?;
        for r in buf.first..buf.first + buf.count {
            if !buf.region(&self.header, r).crc_ok() {
                return Err(self.damaged(r, "checksum mismatch"));
            }
        }
        Ok(buf)
    }

    /// Regions `first .. first + count` (clipped to the file) in one read.
    pub fn read_regions(&self, first: u64, count: u64) -> Result<RegionBuf, ReadError> {
        let layout = &self.header.layout;
        let count = count.min(self.header.region_count.saturating_sub(first));
        let size = layout.region_size as usize;
        let mut buf = AlignedBuf::zeroed(count as usize * size);
        let offset = HEADER_SIZE as u64 + first * size as u64;
        self.reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.file
            .read_exact_at(&mut buf[..count as usize * size], offset)
            .map_err(|cause| ReadError::Io {
                path: self.path.clone(),
                cause,
            })?;
        Ok(RegionBuf { first, count, buf })
    }

    pub(crate) fn damaged(&self, region: u64, what: &'static str) -> ReadError {
        ReadError::Damaged {
            path: self.path.clone(),
            region,
            what,
        }
    }
}

/// Consecutive regions read in one go.
#[doc(hidden)]
pub struct RegionBuf {
    pub first: u64,
    pub count: u64,
    buf: AlignedBuf,
}

impl RegionBuf {
    pub fn contains(&self, region: u64) -> bool {
        (self.first..self.first + self.count).contains(&region)
    }

    pub fn region<'a>(&'a self, header: &'a Header, r: u64) -> Region<'a> {
        // A buffer clipped to the end of the file may hold fewer regions than
        // were asked for (none at all past the end).
        assert!(self.contains(r), "region {r} is not in this buffer");
        let size = header.layout.region_size as usize;
        let i = (r - self.first) as usize;
        Region {
            bytes: &self.buf[i * size..(i + 1) * size],
            layout: &header.layout,
        }
    }
}

fn read_up_to(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_names_its_file_and_its_reason_does_not() {
        let e = ReadError::Damaged {
            path: PathBuf::from("a/x.plot"),
            region: 3,
            what: "checksum mismatch",
        };
        assert_eq!(e.reason(), "region 3 is damaged (checksum mismatch)");
        assert_eq!(
            e.to_string(),
            "a/x.plot: region 3 is damaged (checksum mismatch)"
        );
    }
}
