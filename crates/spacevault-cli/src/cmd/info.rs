//! `spacevault info`: every header field of a plot.

use anyhow::Result;
use clap::Args;
use serde::Serialize;
use spacevault::format::VERSION;
use spacevault::PlotFile;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The plot file.
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct LayoutJson {
    region_size: u32,
    bucket_bits: u8,
    buckets: u64,
    buckets_per_group: u32,
    slots_per_region: u32,
    groups: u64,
    regions: u64,
}

#[derive(Serialize)]
struct InfoJson {
    path: PathBuf,
    scheme: &'static str,
    format_version: u16,
    k: u8,
    plot_id: String,
    farmer_key: String,
    seed: String,
    records: u64,
    file_size: u64,
    bits_per_record: f64,
    created_unix: u64,
    layout: LayoutJson,
}

#[derive(Serialize)]
struct LevelJson {
    level: u8,
    entries: u64,
    bytes: u64,
    /// The section's bits over its entries, parks' slack included.
    bits_per_entry: f64,
    /// Bits of a value: a park's first (middle levels) or a top entry's.
    value_bits: u32,
    /// Middle levels only.
    park_bytes: Option<u64>,
    fixed_bits: Option<u32>,
}

#[derive(Serialize)]
struct HardInfoJson {
    path: PathBuf,
    scheme: &'static str,
    format_version: u16,
    k: u8,
    levels: u8,
    plot_id: String,
    farmer_key: String,
    seed: String,
    file_size: u64,
    bytes_per_entry: f64,
    created_unix: u64,
    bucket_bits: u8,
    stored: Vec<LevelJson>,
}

/// A table-chain plot's header.
fn run_hard(args: &InfoArgs) -> Result<()> {
    let plot = spacevault::hard::HardPlotFile::open(&args.path)?;
    let (h, l) = (plot.header(), plot.layout());
    let entries: u64 = h.counts().iter().sum();
    let info = HardInfoJson {
        path: args.path.clone(),
        scheme: "hard",
        format_version: spacevault::hard::format::VERSION,
        k: h.k,
        levels: h.levels,
        plot_id: hex::encode(h.plot_id),
        farmer_key: hex::encode(h.farmer_key),
        seed: hex::encode(h.seed),
        file_size: l.file_size,
        bytes_per_entry: l.file_size as f64 / entries.max(1) as f64,
        created_unix: h.created_unix,
        bucket_bits: l.bucket_bits,
        stored: l
            .sections
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let middle = i + 1 < l.sections.len();
                LevelJson {
                    level: i as u8 + 2,
                    entries: s.count,
                    bytes: s.bytes,
                    bits_per_entry: 8.0 * s.bytes as f64 / s.count.max(1) as f64,
                    value_bits: s.width,
                    park_bytes: middle.then_some(s.park_bytes),
                    fixed_bits: middle.then_some(s.fixed_bits),
                }
            })
            .collect(),
    };
    if args.json {
        return crate::cmd::print_json(&info);
    }
    outln!("path               {}", info.path.display());
    outln!(
        "scheme             hard (table chain of {} levels)",
        info.levels
    );
    outln!("format version     {}", info.format_version);
    outln!("k                  {}", info.k);
    outln!("plot id            {}", info.plot_id);
    outln!("farmer key         {}", info.farmer_key);
    outln!("seed               {}", info.seed);
    outln!(
        "file size          {} ({})",
        info.file_size,
        crate::size::format_size(info.file_size)
    );
    outln!("bytes per entry    {:.3}", info.bytes_per_entry);
    outln!("created (unix)     {}", info.created_unix);
    for s in &info.stored {
        let how = match (s.park_bytes, s.fixed_bits) {
            (Some(park), Some(fixed_bits)) => {
                format!("parks of {park} bytes, {fixed_bits} fixed bits")
            }
            _ => format!("values of {} bits, in buckets", s.value_bits),
        };
        outln!(
            "level {}            {} entries, {:.2} bits each ({how})",
            s.level,
            s.entries,
            s.bits_per_entry
        );
    }
    outln!("bucket bits        {}", info.bucket_bits);
    Ok(())
}

pub fn run(args: InfoArgs) -> Result<()> {
    if spacevault::any::kind_of_file(&args.path).ok().flatten()
        == Some(<spacevault::Hard as spacevault::ProofScheme>::KIND)
    {
        return run_hard(&args);
    }
    let plot = PlotFile::open(&args.path)?;
    let h = plot.header();
    let l = h.layout;
    let info = InfoJson {
        path: args.path.clone(),
        scheme: "plain",
        format_version: VERSION,
        k: h.k(),
        plot_id: hex::encode(h.plot_id),
        farmer_key: hex::encode(h.farmer_key),
        seed: hex::encode(h.seed),
        records: h.record_count(),
        file_size: h.file_size(),
        bits_per_record: l.bits_per_record(h.region_count),
        created_unix: h.created_unix,
        layout: LayoutJson {
            region_size: l.region_size,
            bucket_bits: l.bucket_bits,
            buckets: l.bucket_count(),
            buckets_per_group: l.buckets_per_group,
            slots_per_region: l.slots_per_region,
            groups: l.group_count(),
            regions: h.region_count,
        },
    };
    if args.json {
        return crate::cmd::print_json(&info);
    }
    outln!("path               {}", info.path.display());
    outln!("format version     {}", info.format_version);
    outln!("k                  {}", info.k);
    outln!("plot id            {}", info.plot_id);
    outln!("farmer key         {}", info.farmer_key);
    outln!("seed               {}", info.seed);
    outln!("records            {}", info.records);
    outln!(
        "file size          {} ({})",
        info.file_size,
        crate::size::format_size(info.file_size)
    );
    outln!("bits per record    {:.3}", info.bits_per_record);
    outln!("created (unix)     {}", info.created_unix);
    outln!("region size        {}", l.region_size);
    outln!(
        "bucket bits        {} ({} buckets)",
        l.bucket_bits,
        info.layout.buckets
    );
    outln!("buckets per group  {}", l.buckets_per_group);
    outln!("slots per region   {}", l.slots_per_region);
    outln!("groups             {}", info.layout.groups);
    outln!("regions            {}", info.layout.regions);
    Ok(())
}
