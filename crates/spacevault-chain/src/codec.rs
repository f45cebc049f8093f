//! The canonical binary encoding of every chain and network message: fixed
//! little-endian integers, fixed-size byte arrays, and byte strings with a
//! 4-byte length. One encoding, so that a hash or a signature over a
//! message means the same to every implementation (`docs/PROTOCOL.md`).
//!
//! Decoding is of untrusted bytes: every length is checked against what is
//! left and against the caller's limit before anything is allocated, and
//! trailing bytes are an error.

/// Why bytes did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("{what} is cut short")]
    Truncated { what: &'static str },
    #[error("{what} is {len} bytes, more than the {max} allowed")]
    TooLong {
        what: &'static str,
        len: u64,
        max: u64,
    },
    #[error("{0} bytes follow the message")]
    Trailing(usize),
    #[error("{what} has version {version}, which this build does not know")]
    UnknownVersion { what: &'static str, version: u16 },
    #[error("unknown {what} kind {kind}")]
    UnknownKind { what: &'static str, kind: u8 },
    #[error("{0}")]
    Invalid(&'static str),
}

/// Appends fields to a buffer.
#[derive(Default)]
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn new() -> Writer {
        Writer(Vec::new())
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }

    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }

    /// Fixed-size bytes, without a length.
    pub fn fixed(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }

    /// Bytes with a 4-byte little-endian length before them.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.fixed(v)
    }

    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads fields from untrusted bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, at: 0 }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(DecodeError::Truncated { what })?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take(2, what)?.try_into().unwrap()))
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    pub fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }

    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        Ok(self.take(N, what)?.try_into().unwrap())
    }

    /// Length-prefixed bytes of at most `max`.
    pub fn bytes(&mut self, what: &'static str, max: usize) -> Result<&'a [u8], DecodeError> {
        let len = self.u32(what)? as usize;
        if len > max {
            return Err(DecodeError::TooLong {
                what,
                len: len as u64,
                max: max as u64,
            });
        }
        self.take(len, what)
    }

    /// A count of items that must each take at least `item_bytes`: checked
    /// against `max` and against what is left, so that a forged count
    /// allocates nothing.
    pub fn count(
        &mut self,
        what: &'static str,
        max: usize,
        item_bytes: usize,
    ) -> Result<usize, DecodeError> {
        let n = self.u32(what)? as usize;
        if n > max {
            return Err(DecodeError::TooLong {
                what,
                len: n as u64,
                max: max as u64,
            });
        }
        if n.saturating_mul(item_bytes.max(1)) > self.buf.len() - self.at {
            return Err(DecodeError::Truncated { what });
        }
        Ok(n)
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), DecodeError> {
        match self.buf.len() - self.at {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_every_cut_is_caught() {
        let mut w = Writer::new();
        w.u8(7).u16(0x1234).u32(0xdead_beef).u64(u64::MAX - 1);
        w.fixed(&[9; 32]).bytes(b"hello");
        let bytes = w.finish();
        let read = |b: &[u8]| -> Result<_, DecodeError> {
            let mut r = Reader::new(b);
            let v = (
                r.u8("a")?,
                r.u16("b")?,
                r.u32("c")?,
                r.u64("d")?,
                r.array::<32>("e")?,
                r.bytes("f", 16)?.to_vec(),
            );
            r.finish()?;
            Ok(v)
        };
        assert_eq!(
            read(&bytes).unwrap(),
            (
                7,
                0x1234,
                0xdead_beef,
                u64::MAX - 1,
                [9; 32],
                b"hello".to_vec()
            )
        );
        for cut in 0..bytes.len() {
            assert!(matches!(
                read(&bytes[..cut]),
                Err(DecodeError::Truncated { .. })
            ));
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(read(&longer), Err(DecodeError::Trailing(1)));
    }

    #[test]
    fn forged_lengths_and_counts_allocate_nothing() {
        let mut w = Writer::new();
        w.u32(u32::MAX);
        let bytes = w.finish();
        assert!(matches!(
            Reader::new(&bytes).bytes("blob", 1 << 20),
            Err(DecodeError::TooLong { .. })
        ));
        assert!(matches!(
            Reader::new(&bytes).count("txs", usize::MAX, 100),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn limits_are_inclusive_and_counts_are_checked_against_what_is_left() {
        let mut w = Writer::new();
        w.bytes(&[1; 16]);
        let bytes = w.finish();
        assert_eq!(Reader::new(&bytes).bytes("b", 16).unwrap().len(), 16);
        assert!(matches!(
            Reader::new(&bytes).bytes("b", 15),
            Err(DecodeError::TooLong {
                len: 16,
                max: 15,
                ..
            })
        ));
        // A count at its maximum, whose items fill what is left exactly.
        let mut w = Writer::new();
        w.u8(9).u32(4).fixed(&[0; 40]);
        let bytes = w.finish();
        let mut r = Reader::new(&bytes);
        r.u8("lead").unwrap();
        assert_eq!(r.count("items", 4, 10), Ok(4));
        let mut r = Reader::new(&bytes);
        r.u8("lead").unwrap();
        assert!(matches!(
            r.count("items", 3, 10),
            Err(DecodeError::TooLong { len: 4, max: 3, .. })
        ));
        // One byte short of its items, after a byte already read.
        let mut r = Reader::new(&bytes[..bytes.len() - 1]);
        r.u8("lead").unwrap();
        assert_eq!(
            r.count("items", 4, 10),
            Err(DecodeError::Truncated { what: "items" })
        );
    }
}
