//! The farmer's page at `/`: the chain (its id, slots, height, this vault's
//! state, reorgs, blocks produced) and recent blocks (who won, by peer id,
//! with what quality), this vault's plots and their lookup time against
//! the proof window, its peers and the data it holds, sizes in units and
//! whole ids on hover. One HTML file that reads `/v1/status` every second,
//! and dims what it shows when the vault stops answering.

pub const HTML: &str = r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>spacevault vault</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 20px; margin: 0 0 .2em; }
h2 { font-size: 16px; margin: 1.4em 0 .4em; }
table { border-collapse: collapse; }
td, th { padding: 2px 10px 2px 0; text-align: left; }
th { color: #666; font-weight: normal; }
code { font-size: 12px; }
.warn { color: #b00; font-weight: bold; }
.ok { color: #070; }
.stat { display: inline-block; margin-right: 2em; }
.stat b { font-size: 22px; display: block; }
.stale .stat, .stale table { opacity: .35; }
</style>
</head>
<body>
<h1>spacevault vault</h1>
<div><code id="farmer">…</code></div>
<div id="chain">…</div>
<div id="error" class="warn"></div>
<div id="clock" class="warn"></div>
<div id="numbers">
<p>
<span class="stat"><b id="height">…</b>height</span>
<span class="stat"><b id="slot">…</b>slot (clock's)</span>
<span class="stat"><b id="state">…</b>state</span>
<span class="stat"><b id="produced">…</b>blocks produced</span>
<span class="stat"><b id="reorgs">…</b>reorgs (deepest)</span>
<span class="stat"><b id="peers">…</b>peers</span>
<span class="stat"><b id="vaults">…</b>vaults alive</span>
<span class="stat"><b id="blobs">…</b>blobs held</span>
<span class="stat"><b id="blob-bytes">…</b>bytes held</span>
<span class="stat"><b id="scrub">…</b>scrub</span>
</p>
<div id="scrub-note"></div>
<h2>Plots</h2>
<div id="lookup-note"></div>
<table id="plots"><tr><th>plot</th><th>k</th><th>last lookup</th></tr></table>
<div id="skipped"></div>
<h2>Recent blocks</h2>
<table id="blocks"><tr><th>height</th><th>producer</th><th>quality</th><th>txs</th><th>age</th></tr></table>
<h2>Peers</h2>
<div id="peer-list"></div>
</div>
<script>
function short(h) { return h ? h.slice(0, 12) + "…" : ""; }
// Peer ids all begin alike (12D3KooW…): their ends tell them apart.
function peerShort(p) { return p ? p.slice(0, 4) + "…" + p.slice(-8) : ""; }
function human(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i == 0 ? n : n.toFixed(1)) + " " + units[i];
}
function idCell(row, id, label, title) {
  const td = row.insertCell();
  td.textContent = label;
  td.title = title || id;
}
let lastGood = null;
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; }
function clear(table) { while (table.rows.length > 1) table.deleteRow(1); }
async function refresh() {
  try {
    const r = await fetch("/v1/status");
    const s = await r.json();
    lastGood = new Date();
    document.getElementById("numbers").className = "";
    document.getElementById("error").textContent = "";
    const chain = document.getElementById("chain");
    chain.textContent = "chain " + short(s.chain_id) + " · slots of " + s.slot_ms + " ms · a block every " + s.block_interval_slots + " slots · the network's space ≈ " + s.network_records.toPrecision(3) + " records";
    chain.title = s.chain_id;
    document.getElementById("state").textContent = s.syncing ? "syncing" : (s.peers.length ? "following" : "alone");
    document.getElementById("produced").textContent = s.blocks_produced;
    document.getElementById("reorgs").textContent = s.reorgs + " (" + s.deepest_reorg + ")";
    document.getElementById("farmer").textContent = "farmer key " + s.farmer_key + " · peer " + s.peer_id;
    document.getElementById("height").textContent = s.height;
    document.getElementById("slot").textContent = s.slot + " (" + s.clock_slot + ")" + (s.timekeeper ? " · timekeeper" : "");
    document.getElementById("slot").title = s.slot + 2 < s.clock_slot
      ? "the proof of time lags the clock: no timekeeper reaches this vault, or a slow one"
      : "the proof of time's last slot checked here, and the slot by this vault's clock";
    document.getElementById("clock").textContent = s.clock_warning || "";
    document.getElementById("peers").textContent = s.peers.length;
    document.getElementById("vaults").textContent = s.vaults;
    document.getElementById("blobs").textContent = s.blobs;
    document.getElementById("blob-bytes").textContent = human(s.blob_bytes);
    document.getElementById("blob-bytes").title = s.blob_bytes + " bytes";
    const sc = s.scrub;
    let scrubText = "off";
    if (sc.rate_bytes_per_s > 0) {
      scrubText = sc.pass_checked < sc.pass_blobs
        ? Math.floor(100 * sc.pass_checked / sc.pass_blobs) + "%"
        : sc.passes + (sc.passes == 1 ? " pass" : " passes");
    }
    document.getElementById("scrub").textContent = scrubText;
    document.getElementById("scrub-note").textContent = sc.damaged > 0
      ? "The scrub found " + sc.damaged + " damaged blob" + (sc.damaged == 1 ? "" : "s") + " on this vault's disk (repaired from other holders where they had copies)."
      : "";
    document.getElementById("scrub-note").className = sc.damaged > 0 ? "warn" : "";
    const plots = document.getElementById("plots");
    clear(plots);
    let slowest = 0;
    for (const p of s.plots) {
      const row = plots.insertRow();
      cell(row, p.path); cell(row, p.k);
      const us = p.last_lookup_us;
      if (us != null) slowest = Math.max(slowest, us);
      cell(row, us == null ? "not yet" : (us / 1000).toFixed(2) + " ms");
    }
    const note = document.getElementById("lookup-note");
    const slotMs = s.slot_ms;
    if (s.plots.length == 0) {
      note.textContent = "This vault farms no plots: it keeps data and follows the chain.";
      note.className = "";
    } else if (slowest / 1000 > slotMs / 4) {
      note.textContent = "Warning: lookups take " + (slowest / 1000).toFixed(1) + " ms, more than a quarter of the " + slotMs + " ms slot: this vault's blocks may come late and lose to others of the same slot.";
      note.className = "warn";
    } else {
      note.textContent = "Lookups take " + (slowest / 1000).toFixed(2) + " ms of the " + slotMs + " ms slot.";
      note.className = "ok";
    }
    document.getElementById("skipped").textContent = s.skipped_plots.map(p => p.path + ": " + p.why).join("; ");
    const blocks = document.getElementById("blocks");
    clear(blocks);
    const now = Date.now();
    for (const b of s.recent_blocks) {
      const row = blocks.insertRow();
      cell(row, b.height);
      const who = b.producer == s.farmer_key ? " (this vault)" : (s.peers.includes(b.producer_peer) ? " (a peer)" : "");
      idCell(row, b.producer, "peer " + peerShort(b.producer_peer) + who, "farmer key " + b.producer + "\npeer id " + b.producer_peer);
      cell(row, b.quality); cell(row, b.txs);
      cell(row, ((now - b.timestamp_ms) / 1000).toFixed(1) + " s");
    }
    let peerText = s.peers.map(p => peerShort(p) + (s.round_trips_ms[p] != null ? " (" + s.round_trips_ms[p].toFixed(1) + " ms)" : "")).join(", ");
    document.getElementById("peer-list").title = s.peers.join("\n");
    if (!peerText) {
      const down = s.bootstrap.filter(b => b.error).map(b => b.address + ": " + b.error + (b.retry_in_s != null ? " (trying again in " + Math.ceil(b.retry_in_s) + " s)" : ""));
      peerText = "none: this vault has no peers" + (down.length ? "; bootstrap unreachable: " + down.join("; ") : "");
    }
    document.getElementById("peer-list").textContent = peerText;
  } catch (e) {
    document.getElementById("numbers").className = "stale";
    document.getElementById("error").textContent = "The vault does not answer (" + e + "): the numbers below are " + (lastGood ? "as of " + lastGood.toLocaleTimeString() : "not yet loaded");
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
"##;
