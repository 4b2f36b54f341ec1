//! The chunked body decoder, fed whole, byte by byte, split, and drained in different bite sizes.
#![no_main]

// Each target uses one of the shared checks.
#[allow(dead_code)]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::chunked(data));
