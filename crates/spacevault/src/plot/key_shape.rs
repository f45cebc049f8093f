//! How a four-byte sort key splits into the bucket within its partition
//! (on top) and the low bits of the nonce (below). The hashing loops, their
//! AVX-512 forms, the temp file and the packers all read and write keys of
//! a shape; the epochs that complete a key are in `keys.rs`.

use super::partition::Partitioning;

/// How a 4-byte key splits into bucket and nonce bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KeyShape {
    pub low_bits: u32,
}

impl KeyShape {
    /// Keys that carry the bucket within a partition of `parting`.
    pub fn with_buckets(parting: &Partitioning) -> KeyShape {
        let local_bits = 64 - (parting.buckets_per_part.max(2) - 1).leading_zeros();
        KeyShape {
            low_bits: 32 - local_bits,
        }
    }

    /// Keys that are the low 32 bits of the nonce and nothing else.
    pub fn nonces_only() -> KeyShape {
        KeyShape { low_bits: 32 }
    }

    pub fn has_buckets(&self) -> bool {
        self.low_bits < 32
    }

    #[inline(always)]
    pub fn key(&self, local: u64, nonce: u64) -> u32 {
        ((local << self.low_bits) | (nonce & (self.epoch_len() - 1))) as u32
    }

    /// The bucket within the partition (0 for a shape without buckets).
    #[inline(always)]
    pub fn local(&self, key: u32) -> usize {
        (key as u64 >> self.low_bits) as usize
    }

    #[inline(always)]
    pub fn nonce(&self, key: u32, epoch: u64) -> u64 {
        (epoch << self.low_bits) | (key as u64 & (self.epoch_len() - 1))
    }

    pub fn epoch_len(&self) -> u64 {
        1 << self.low_bits
    }

    /// Epoch marks a thread takes for `records` nonces, at most.
    pub fn epochs(&self, records: u64) -> u64 {
        records.div_ceil(self.epoch_len()) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_give_back_bucket_and_nonce() {
        let shape = KeyShape { low_bits: 20 };
        let key = shape.key(0x5A5, 0x1_2345_6789);
        assert_eq!(shape.local(key), 0x5A5);
        assert_eq!(shape.nonce(key, 0x1_2345_6789 >> 20), 0x1_2345_6789);
        let nonces = KeyShape::nonces_only();
        assert!(!nonces.has_buckets());
        let key = nonces.key(0, 0x7_DEAD_BEEF);
        assert_eq!(nonces.local(key), 0);
        assert_eq!(nonces.nonce(key, 7), 0x7_DEAD_BEEF);
    }
}
