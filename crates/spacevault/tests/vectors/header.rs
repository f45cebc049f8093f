//! The plot file's fixed parts (docs/FORMAT.md): the layout each k gets,
//! the 4 KiB header, and one region's bytes and checksum.

use crate::file::Vector;
use crate::{FARMER_KEY, SEED};
use spacevault::format::bits::SlotWriter;
use spacevault::format::{seal, Header, Layout, Region, HEADER_SIZE, REGION_HEADER_SIZE};
use spacevault::plot_id;

#[test]
fn the_layout_of_every_k() {
    // A reader refuses a header whose layout is not the one derived from
    // its k, bucket bits and region size: the derivation is the format.
    let mut v = Vector::new(
        "layouts",
        "Layout::for_k(k) for k = 16 to 40, one field each: u8 k, u8 bucket_bits,\n\
         u32 LE region_size, u32 LE buckets_per_group, u32 LE slots_per_region",
    );
    for k in spacevault::MIN_K..=spacevault::MAX_K {
        let l = Layout::for_k(k).unwrap();
        let mut bytes = vec![l.k, l.bucket_bits];
        bytes.extend_from_slice(&l.region_size.to_le_bytes());
        bytes.extend_from_slice(&l.buckets_per_group.to_le_bytes());
        bytes.extend_from_slice(&l.slots_per_region.to_le_bytes());
        v = v.field(format!("k{k}"), bytes);
    }
    v.check();
}

fn sample_header() -> Header {
    let layout = Layout::for_k(20).unwrap();
    Header {
        layout,
        region_count: layout.group_count() + 1,
        created_unix: 1_790_000_000,
        farmer_key: FARMER_KEY,
        seed: SEED,
        plot_id: plot_id(&FARMER_KEY, &SEED, 20),
    }
}

#[test]
fn the_header() {
    let header = sample_header();
    let bytes = header.encode();
    let c = Vector::new(
        "header",
        "Header::encode of the k = 20 default layout, region_count = group_count + 1,\n\
         created_unix 1790000000, farmer_key [1; 32], seed [2; 32] and their plot id;\n\
         checksum: the CRC-32 of bytes 0 to 4091 (u32 LE), the header's last 4 bytes",
    )
    .field("encoding", bytes)
    .field(
        "checksum",
        crc32fast::hash(&bytes[..HEADER_SIZE - 4]).to_le_bytes(),
    )
    .check();
    let committed = c.get("encoding");
    let decoded = Header::decode(committed).expect("the committed header decodes");
    assert_eq!(decoded, header);
    assert_eq!(decoded.encode().as_slice(), committed);
    assert_eq!(committed[HEADER_SIZE - 4..], *c.get("checksum"));
}

/// The sample region's contents: the layout of k = 16, a group offset, a
/// count for each bucket, and a value in every slot.
struct RegionFields {
    layout: Layout,
    group_offset: u32,
    counts: Vec<u8>,
    slots: Vec<u64>,
}

impl RegionFields {
    fn sample() -> RegionFields {
        let layout = Layout::for_k(16).unwrap();
        RegionFields {
            layout,
            group_offset: 7,
            counts: (0..layout.buckets_per_group)
                .map(|i| 30 + (i % 5) as u8)
                .collect(),
            slots: (0..layout.slots_per_region as u64)
                .map(|j| (j * 40503 + 1) & 0xFFFF)
                .collect(),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut region = vec![0u8; self.layout.region_size as usize];
        region[4..8].copy_from_slice(&self.group_offset.to_le_bytes());
        region[REGION_HEADER_SIZE..self.layout.slot_area_offset()].copy_from_slice(&self.counts);
        let area = &mut region[self.layout.slot_area_offset()..];
        let mut w = SlotWriter::new(area, 0, self.layout.k as u32);
        for &s in &self.slots {
            w.push(s);
        }
        w.finish();
        seal(&mut region);
        region
    }

    fn decode(bytes: &[u8], layout: Layout) -> RegionFields {
        let r = Region {
            bytes,
            layout: &layout,
        };
        assert!(r.crc_ok(), "the committed region's checksum holds");
        RegionFields {
            layout,
            group_offset: r.group_offset(),
            counts: r.counts().to_vec(),
            slots: (0..layout.slots_per_region as usize)
                .map(|j| r.slot(j))
                .collect(),
        }
    }
}

#[test]
fn a_region() {
    let fields = RegionFields::sample();
    let bytes = fields.encode();
    let c = Vector::new(
        "region",
        "a sealed 4096-byte region of the k = 16 default layout (61 buckets, 2013\n\
         slots of 16 bits): group_offset 7, bucket i's count 30 + i mod 5, slot j\n\
         holding (40503 j + 1) mod 2^16; checksum: the CRC-32 of bytes 4 to 4095\n\
         (u32 LE), the region's first 4 bytes",
    )
    .field("region", &bytes)
    .field("checksum", crc32fast::hash(&bytes[4..]).to_le_bytes())
    .check();
    let committed = c.get("region");
    let decoded = RegionFields::decode(committed, fields.layout);
    assert_eq!(decoded.group_offset, fields.group_offset);
    assert_eq!(decoded.counts, fields.counts);
    assert_eq!(decoded.slots, fields.slots);
    assert_eq!(decoded.encode(), committed);
    assert_eq!(committed[..4], *c.get("checksum"));
}
