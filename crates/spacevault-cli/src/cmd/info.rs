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

pub fn run(args: InfoArgs) -> Result<()> {
    let plot = PlotFile::open(&args.path)?;
    let h = plot.header();
    let l = h.layout;
    let info = InfoJson {
        path: args.path.clone(),
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
