//! The Content-Length parser, against a reference built on str::parse.
#![no_main]

use weir_testkit::fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::content_length(data));
