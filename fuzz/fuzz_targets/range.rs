//! The `Range` header evaluation `weir serve` uses (`weir_proto::range`) against a
//! representation size.
#![no_main]

use weir_testkit::fuzz_checks as checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::range(data));
