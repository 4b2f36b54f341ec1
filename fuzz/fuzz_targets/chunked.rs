//! The chunked body decoder, fed whole, byte by byte, split, and drained in different bite sizes.
#![no_main]

use weir_testkit::fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::chunked(data));
