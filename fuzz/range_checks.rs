//! Properties of `weir serve`'s `Range` evaluation (`crates/weir-cli/src/serve/range.rs`, included
//! by path as `crate::range` by the fuzz target and the CI replay, so weir-cli needs no public
//! API for it). The input's first 8 bytes are the representation size, the rest the header.

use crate::range::{RangeAnswer, evaluate};

/// No panic; a partial answer is non-empty and inside the representation; the answer depends
/// only on the header and the size.
pub fn range(data: &[u8]) {
    let (size, header) = match data.split_first_chunk::<8>() {
        Some((size, header)) => (u64::from_le_bytes(*size), header),
        None => (data.len() as u64, data),
    };
    // Small sizes reach the edge cases (empty file, one byte); large ones the overflow ones.
    for size in [size, size % 4096, 0, 1] {
        let answer = evaluate(header, size);
        if let RangeAnswer::Partial { start, len } = answer {
            assert!(len >= 1, "empty partial answer for {header:?} of {size}");
            let end = start.checked_add(len).expect("range end overflows");
            assert!(end <= size, "{start}+{len} past {size} for {header:?}");
        }
        if size == 0 {
            assert!(
                !matches!(answer, RangeAnswer::Partial { .. }),
                "a range of an empty file"
            );
        }
        assert_eq!(evaluate(header, size), answer);
    }
}
