//! `spacevault identity`: the farmer key, and the peer id a node has.

use anyhow::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct IdentityArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: IdentityArgs) -> Result<()> {
    let path = crate::keys::farmer_key_path()?;
    let (key, _) = spacevault_node::identity::load_or_create(&path)?;
    let farmer = key.public();
    let peer = spacevault_network::peer_of(&farmer).map(|p| p.to_string());
    let signs = matches!(key, spacevault_node::identity::KeyFile::Pair(_));
    if args.json {
        crate::cmd::print_json(&serde_json::json!({
            "path": path,
            "farmer_key": hex::encode(farmer),
            "peer_id": peer,
            "can_run_a_node": signs,
        }))?;
    } else {
        outln!("farmer key  {}", hex::encode(farmer));
        if let Some(peer) = peer {
            outln!("peer id     {peer}");
        }
        if !signs {
            errln!(
                "note: {} holds the farmer key without its secret: it plots, but no node can farm its plots",
                path.display()
            );
        }
    }
    Ok(())
}
