//! k-bit slots packed into a little-endian bit stream: slot j occupies bits
//! `j*k .. (j+1)*k`, least significant bit first.

/// The value of slot `j`. Bits past the end of `area` read as zero.
#[inline]
pub fn read_slot(area: &[u8], j: usize, k: u32) -> u64 {
    let bit = j * k as usize;
    let byte = bit / 8;
    let shift = bit % 8;
    let word = if byte + 8 <= area.len() {
        u64::from_le_bytes(area[byte..byte + 8].try_into().unwrap())
    } else {
        let mut buf = [0u8; 8];
        let end = area.len().min(byte + 8);
        if byte < end {
            buf[..end - byte].copy_from_slice(&area[byte..end]);
        }
        u64::from_le_bytes(buf)
    };
    // k <= 40 and shift <= 7, so the slot lies within one u64.
    (word >> shift) & ((1u64 << k) - 1)
}

/// Slot `j`, bit by bit: the plain twin of [`read_slot`].
pub fn read_slot_plain(area: &[u8], j: usize, k: u32) -> u64 {
    let mut value = 0u64;
    for i in 0..k as usize {
        let bit = j * k as usize + i;
        let set = area.get(bit / 8).is_some_and(|b| (b >> (bit % 8)) & 1 == 1);
        value |= (set as u64) << i;
    }
    value
}

/// Writes consecutive slots starting at slot `first`. Bits of `area` before
/// the first slot are kept; from the first slot on, the writer owns the
/// bytes it reaches and stores whole 32-bit words.
pub struct SlotWriter<'a> {
    area: &'a mut [u8],
    k: u32,
    byte: usize,
    /// Up to 31 pending bits plus a 40-bit slot: more than a u64 holds.
    acc: u128,
    bits: u32,
}

impl<'a> SlotWriter<'a> {
    pub fn new(area: &'a mut [u8], first: usize, k: u32) -> SlotWriter<'a> {
        let bit = first * k as usize;
        let byte = bit / 8;
        let bits = (bit % 8) as u32;
        // Keep the bits of the slot before ours that share our first byte.
        let acc = if bits > 0 {
            (area[byte] & ((1u8 << bits) - 1)) as u128
        } else {
            0
        };
        SlotWriter {
            area,
            k,
            byte,
            acc,
            bits,
        }
    }

    #[inline]
    pub fn push(&mut self, value: u64) {
        debug_assert!(value < 1u64 << self.k);
        self.acc |= (value as u128) << self.bits;
        self.bits += self.k;
        while self.bits >= 32 {
            let word = (self.acc as u32).to_le_bytes();
            match self.area.get_mut(self.byte..self.byte + 4) {
                Some(dst) => dst.copy_from_slice(&word),
                // The last word of an area that ends mid-word: the bytes
                // past the end can only hold zero bits.
                None => {
                    let rest = &mut self.area[self.byte..];
                    let n = rest.len();
                    rest.copy_from_slice(&word[..n]);
                    debug_assert!(word[n..].iter().all(|&b| b == 0));
                }
            }
            self.byte += 4;
            self.acc >>= 32;
            self.bits -= 32;
        }
    }

    /// Writes out the last partial word.
    pub fn finish(self) {
        let bytes = (self.bits.div_ceil(8) as usize).min(self.area.len().saturating_sub(self.byte));
        let le = (self.acc as u64).to_le_bytes();
        self.area[self.byte..self.byte + bytes].copy_from_slice(&le[..bytes]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fast_reader_matches_plain_reader(
            k in 16u32..=40,
            first in 0usize..40,
            values in proptest::collection::vec(any::<u64>(), 1..60),
        ) {
            let values: Vec<u64> = values.iter().map(|v| v & ((1u64 << k) - 1)).collect();
            let mut area = vec![0u8; ((first + values.len()) * k as usize).div_ceil(8)];
            let mut w = SlotWriter::new(&mut area, first, k);
            for &v in &values {
                w.push(v);
            }
            w.finish();
            for (i, &v) in values.iter().enumerate() {
                prop_assert_eq!(read_slot(&area, first + i, k), v);
                prop_assert_eq!(read_slot_plain(&area, first + i, k), v);
            }
            for j in 0..first {
                prop_assert_eq!(read_slot(&area, j, k), 0);
            }
        }
    }

    #[test]
    fn writers_side_by_side_do_not_disturb_each_other() {
        let k = 19;
        let mut area = vec![0u8; 64];
        let mut a = SlotWriter::new(&mut area, 0, k);
        a.push(0x7FFFF);
        a.push(1);
        a.finish();
        let mut b = SlotWriter::new(&mut area, 2, k);
        b.push(0x5A5A5);
        b.finish();
        assert_eq!(read_slot(&area, 0, k), 0x7FFFF);
        assert_eq!(read_slot(&area, 1, k), 1);
        assert_eq!(read_slot(&area, 2, k), 0x5A5A5);
    }
}
