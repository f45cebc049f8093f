//! The writing end of the plotter: merges each partition's spill into the
//! next, seals region checksums and writes regions in file order.

use super::pack::{BufPool, Packed};
use super::partition::Partitioning;
use crate::aligned::AlignedBuf;
use crate::format::seal;
use crate::format::{Layout, HEADER_SIZE};
use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

pub(crate) struct RegionSink<'a> {
    file: &'a File,
    layout: Layout,
    /// Regions of the previous partition that reach into the next one.
    carry: Option<(u64, Vec<u8>)>,
    /// Partitions that arrived before their turn.
    waiting: BTreeMap<u64, Packed>,
    next_partition: u64,
    parting: Partitioning,
    pub regions_written: u64,
    pub bytes_written: u64,
}

impl<'a> RegionSink<'a> {
    pub fn new(file: &'a File, parting: &Partitioning) -> Self {
        RegionSink {
            file,
            layout: parting.layout,
            carry: None,
            waiting: BTreeMap::new(),
            next_partition: 0,
            parting: parting.clone(),
            regions_written: 0,
            bytes_written: 0,
        }
    }

    /// Takes a packed partition in any order; writes whatever is now in order.
    /// Written buffers go back to `pool`.
    pub fn accept(&mut self, packed: Packed, pool: &BufPool) -> io::Result<()> {
        self.waiting.insert(packed.index, packed);
        while let Some(packed) = self.waiting.remove(&self.next_partition) {
            let buf = self.write_in_order(packed)?;
            pool.give(buf);
            self.next_partition += 1;
        }
        Ok(())
    }

    fn write_in_order(&mut self, mut packed: Packed) -> io::Result<AlignedBuf> {
        let size = self.layout.region_size as usize;
        if let Some((first, bytes)) = self.carry.take() {
            assert_eq!(
                first, packed.first_region,
                "spill lands on the next partition's first region"
            );
            for (dst, src) in packed.buf.iter_mut().zip(bytes.iter()) {
                *dst |= *src;
            }
            if bytes.len() > packed.regions as usize * size {
                // A spill longer than the whole next partition: astronomically
                // rare, but it must not be lost.
                let mut merged = AlignedBuf::zeroed(bytes.len());
                merged[..packed.regions as usize * size]
                    .copy_from_slice(&packed.buf[..packed.regions as usize * size]);
                for (dst, src) in merged
                    .iter_mut()
                    .zip(bytes.iter())
                    .skip(packed.regions as usize * size)
                {
                    *dst |= *src;
                }
                packed.buf = merged;
                packed.regions = (bytes.len() / size) as u64;
            }
        }
        let end = packed.first_region + packed.regions;
        let final_end = if packed.index + 1 < self.parting.count {
            self.parting.groups(packed.index + 1).start.min(end)
        } else {
            end
        };
        let final_regions = (final_end - packed.first_region) as usize;
        for r in 0..final_regions {
            seal(&mut packed.buf[r * size..(r + 1) * size]);
        }
        let bytes = &packed.buf[..final_regions * size];
        let offset = HEADER_SIZE as u64 + packed.first_region * size as u64;
        self.file.write_all_at(bytes, offset)?;
        self.regions_written += final_regions as u64;
        self.bytes_written += bytes.len() as u64;
        if final_end < end {
            let rest = packed.buf[final_regions * size..packed.regions as usize * size].to_vec();
            self.carry = Some((final_end, rest));
        }
        Ok(packed.buf)
    }

    /// Whether every partition arrived and nothing is left unwritten.
    pub fn is_complete(&self) -> bool {
        self.waiting.is_empty() && self.carry.is_none()
    }
}
