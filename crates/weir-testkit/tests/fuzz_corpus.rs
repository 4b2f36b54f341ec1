//! Replays the fuzz corpus (`fuzz/corpus/<target>/`) through the same checks the fuzz targets
//! run (`weir_testkit::fuzz_checks`), so every input the fuzzer found interesting, and every
//! crash it found and weir fixed, is asserted again by `cargo test` on stable Rust.

use weir_testkit::fuzz_checks as checks;

use std::path::Path;

/// Runs `check` over every file of `fuzz/corpus/<target>`; returns how many there were.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("corpus entry").path())
        .collect();
    files.sort();
    for file in &files {
        let data = std::fs::read(file).expect("corpus file");
        let result = std::panic::catch_unwind(|| check(&data));
        assert!(result.is_ok(), "{} fails {target}", file.display());
    }
    files.len()
}

#[test]
fn head_parser_corpus() {
    assert!(replay("head_parser", checks::head_parser) >= 20);
}

#[test]
fn chunked_corpus() {
    assert!(replay("chunked", checks::chunked) >= 20);
}

#[test]
fn content_length_corpus() {
    assert!(replay("content_length", checks::content_length) >= 10);
}

#[test]
fn range_corpus() {
    assert!(replay("range", checks::range) >= 10);
}
