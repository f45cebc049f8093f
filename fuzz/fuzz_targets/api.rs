//! Any path and body of a register PUT to the HTTP API: a transaction or a
//! reason, never a panic. The first byte splits the input into the owner,
//! the name and the body.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, rest)) = data.split_first() else {
        return;
    };
    let cut = (cut as usize).min(rest.len());
    let (path, body) = rest.split_at(cut);
    let path = String::from_utf8_lossy(path);
    let (owner, name) = path.split_once('/').unwrap_or((&path, ""));
    let _ = spacevault_node::api::register_tx(owner, name, body);
});
