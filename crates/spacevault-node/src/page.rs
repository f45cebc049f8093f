//! The farmer's page at `/`: the chain's height and recent blocks (who won,
//! with what quality), this vault's plots and their lookup time against
//! the proof window, its peers and the data it holds. One HTML file that
//! reads `/v1/status` every second.

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
</style>
</head>
<body>
<h1>spacevault vault</h1>
<div><code id="farmer">…</code></div>
<div id="error" class="warn"></div>
<p>
<span class="stat"><b id="height">…</b>height</span>
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
<script>
function short(h) { return h ? h.slice(0, 12) + "…" : ""; }
function cell(row, text, cls) { const td = row.insertCell(); td.textContent = text; if (cls) td.className = cls; }
function clear(table) { while (table.rows.length > 1) table.deleteRow(1); }
async function refresh() {
  try {
    const r = await fetch("/v1/status");
    const s = await r.json();
    document.getElementById("error").textContent = "";
    document.getElementById("farmer").textContent = "farmer key " + s.farmer_key + " · peer " + s.peer_id;
    document.getElementById("height").textContent = s.height;
    document.getElementById("peers").textContent = s.peers.length;
    document.getElementById("vaults").textContent = s.vaults;
    document.getElementById("blobs").textContent = s.blobs;
    document.getElementById("blob-bytes").textContent = s.blob_bytes;
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
    const windowMs = s.proof_window_ms;
    if (s.plots.length == 0) {
      note.textContent = "This vault farms no plots: it keeps data and follows the chain.";
      note.className = "";
    } else if (slowest / 1000 > windowMs / 2) {
      note.textContent = "Warning: lookups take " + (slowest / 1000).toFixed(1) + " ms, more than half the " + windowMs + " ms proof window: proofs may come too late to win.";
      note.className = "warn";
    } else {
      note.textContent = "Lookups take " + (slowest / 1000).toFixed(2) + " ms of the " + windowMs + " ms proof window.";
      note.className = "ok";
    }
    document.getElementById("skipped").textContent = s.skipped_plots.map(p => p.path + ": " + p.why).join("; ");
    const blocks = document.getElementById("blocks");
    clear(blocks);
    const now = Date.now();
    for (const b of s.recent_blocks) {
      const row = blocks.insertRow();
      cell(row, b.height);
      cell(row, short(b.producer) + (b.producer == s.farmer_key ? " (this vault)" : ""));
      cell(row, b.quality); cell(row, b.txs);
      cell(row, ((now - b.timestamp_ms) / 1000).toFixed(1) + " s");
    }
    let peerText = s.peers.map(short).join(", ");
    if (!peerText) {
      const down = s.bootstrap.filter(b => b.error).map(b => b.address + ": " + b.error + (b.retry_in_s != null ? " (trying again in " + Math.ceil(b.retry_in_s) + " s)" : ""));
      peerText = "none: this vault has no peers" + (down.length ? "; bootstrap unreachable: " + down.join("; ") : "");
    }
    document.getElementById("peer-list").textContent = peerText;
  } catch (e) {
    document.getElementById("error").textContent = "The vault does not answer: " + e;
  }
}
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>
"##;
