//! Any bytes as a request or response between vaults: no panic, and only
//! canonical encodings decode.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    spacevault_network::wire::check_decoders(data);
});
