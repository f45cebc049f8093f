//! The plot file: a 4 KiB header, then fixed-size regions that each hold a
//! group of buckets. `docs/FORMAT.md` describes every byte; this module is
//! its implementation.

#[doc(hidden)]
pub mod bits;
mod header;
mod layout;
mod region;

pub use header::{Header, HEADER_SIZE, MAGIC, VERSION};
pub use layout::{Layout, DEFAULT_REGION_SIZE};
/// Unstable: region parsing, for spacevault's fuzz targets.
#[doc(hidden)]
pub use region::{seal, Region, REGION_HEADER_SIZE};

/// What can be wrong with a plot file's structure.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    #[error("not a spacevault plot (bad magic bytes)")]
    NotAPlot,
    /// A plot of the other scheme than the reader's.
    #[error("a plot of the {found} scheme, where a {wanted} plot was expected")]
    OtherScheme {
        found: &'static str,
        wanted: &'static str,
    },
    #[error("plot format version {0} is not supported (this build reads version {VERSION})")]
    UnsupportedVersion(u16),
    #[error("the plot header is damaged (checksum mismatch)")]
    HeaderChecksum,
    #[error(
        "the file is truncated or has extra bytes: {actual} bytes where the header says {expected}"
    )]
    WrongSize { expected: u64, actual: u64 },
    #[error("k = {0} is not supported (spacevault supports {min} to {max})", min = crate::MIN_K, max = crate::MAX_K)]
    UnsupportedK(u8),
    #[error("invalid layout: {0}")]
    InvalidLayout(String),
    #[error("the header's plot id does not match its farmer key, seed and k")]
    PlotIdMismatch,
}
