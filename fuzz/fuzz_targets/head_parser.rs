//! The request head parser, fed whole, byte by byte and split at input-chosen offsets.
#![no_main]

use weir_testkit::fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::head_parser(data));
