//! Any bytes as a block, transaction, proof message, announcement, slot
//! output, chain spec (binary and JSON), file manifest or crypto trace: no panic, and only
//! canonical encodings decode.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    spacevault_chain::fuzzing::decode_everything(data);
});
