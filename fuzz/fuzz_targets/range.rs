//! `weir serve`'s `Range` header evaluation against a representation size.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/weir-cli/src/serve/range.rs"]
mod range;

#[path = "../range_checks.rs"]
mod range_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| range_checks::range(data));
