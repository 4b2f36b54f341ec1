//! The request head parser, fed whole, byte by byte and split at input-chosen offsets.
#![no_main]

// Each target uses one of the shared checks.
#[allow(dead_code)]
#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::head_parser(data));
