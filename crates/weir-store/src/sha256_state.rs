//! SHA-256 whose running state can be written down and taken up again: a resumable upload
//! keeps its hash state with its durable offset (`resumable.rs`), so completing it after any
//! number of interruptions hashes only the bytes of the last request, never the file again.
//!
//! `sha2::Sha256` does not expose its state; this type keeps the same pieces itself (the eight
//! chaining words, the block buffer of fewer than 64 bytes, the length) and runs sha2's own
//! compression function over them (`sha2::compress256`: the same SHA-NI / assembly code as
//! `Sha256`), with the same block buffer type `Sha256` uses, which hands whole blocks of the
//! caller's slice to the compression in place (no copy, no allocation).
//!
//! The saved form ([`ResumableSha256::to_bytes`]) has a fixed layout:
//!
//! | bytes | what |
//! | --- | --- |
//! | 0 | format version, [`FORMAT`] |
//! | 1..9 | bytes hashed so far, u64 little-endian |
//! | 9..41 | the eight chaining words, u32 little-endian |
//! | 41..105 | the pending bytes (`length % 64` of them), then zeros |
//! | 105..113 | the first 8 bytes of the SHA-256 of bytes 0..105 |
//!
//! [`ResumableSha256::from_bytes`] refuses anything else (another length or version, a check
//! that does not match, pending bytes past `length % 64` that are not zero): a damaged state
//! is absent, never wrong. A corrupted record can still hold a well-formed state of other
//! bytes: the caller checks its [`ResumableSha256::len`] against the offset it belongs to.

use sha2::digest::block_buffer::EagerBuffer;
use sha2::digest::typenum::U64;
use sha2::{Digest, Sha256};
use std::fmt;

/// The version written in byte 0 of the saved form.
pub const FORMAT: u8 = 1;

/// Length of the saved form.
pub const SAVED_LEN: usize = 113;

/// SHA-256's initial chaining value (FIPS 180-4 §5.3.3).
const INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Where the check starts in the saved form.
const CHECK_AT: usize = 105;

/// A SHA-256 computation that can be saved and restored at any byte.
#[derive(Clone)]
pub struct ResumableSha256 {
    state: [u32; 8],
    /// The bytes of the block not yet complete (always fewer than 64).
    pending: EagerBuffer<U64>,
    /// Bytes hashed so far.
    len: u64,
}

impl Default for ResumableSha256 {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for ResumableSha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResumableSha256")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl ResumableSha256 {
    /// The hash of nothing yet.
    pub fn new() -> Self {
        ResumableSha256 {
            state: INITIAL,
            pending: EagerBuffer::default(),
            len: 0,
        }
    }

    /// Bytes hashed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was hashed yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Hashes `data` after what came before. Whole blocks of `data` are compressed where they
    /// lie; only a block split between two calls is gathered in the pending buffer.
    pub fn update(&mut self, data: &[u8]) {
        self.len = self.len.wrapping_add(data.len() as u64);
        let state = &mut self.state;
        self.pending
            .digest_blocks(data, |blocks| sha2::compress256(state, blocks));
    }

    /// The digest of every byte given to [`ResumableSha256::update`] (standard padding: `0x80`,
    /// zeros, the length in bits, big-endian).
    pub fn finalize(mut self) -> [u8; 32] {
        let state = &mut self.state;
        self.pending
            .len64_padding_be(self.len.wrapping_mul(8), |block| {
                sha2::compress256(state, std::slice::from_ref(block));
            });
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }

    /// The saved form (see the module doc).
    pub fn to_bytes(&self) -> [u8; SAVED_LEN] {
        let mut out = [0u8; SAVED_LEN];
        out[0] = FORMAT;
        out[1..9].copy_from_slice(&self.len.to_le_bytes());
        for (chunk, word) in out[9..41].chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        let pending = self.pending.get_data();
        out[41..41 + pending.len()].copy_from_slice(pending);
        let check = Sha256::digest(&out[..CHECK_AT]);
        out[CHECK_AT..].copy_from_slice(&check[..SAVED_LEN - CHECK_AT]);
        out
    }

    /// Takes up a state saved by [`ResumableSha256::to_bytes`]; `None` if `bytes` is not one.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != SAVED_LEN || bytes[0] != FORMAT {
            return None;
        }
        let check = Sha256::digest(&bytes[..CHECK_AT]);
        if bytes[CHECK_AT..] != check[..SAVED_LEN - CHECK_AT] {
            return None;
        }
        let len = u64::from_le_bytes(bytes[1..9].try_into().ok()?);
        let mut state = [0u32; 8];
        for (word, chunk) in state.iter_mut().zip(bytes[9..41].chunks_exact(4)) {
            *word = u32::from_le_bytes(chunk.try_into().ok()?);
        }
        // Below 64: the cast cannot truncate.
        let pending_len = (len % 64) as usize;
        let (pending, zeros) = bytes[41..CHECK_AT].split_at(pending_len);
        if zeros.iter().any(|&b| b != 0) {
            return None;
        }
        Some(ResumableSha256 {
            state,
            pending: EagerBuffer::try_new(pending).ok()?,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn reference(data: &[u8]) -> [u8; 32] {
        Sha256::digest(data).into()
    }

    /// Deterministic bytes (xorshift), so that a failure is reproducible.
    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn known_vectors() {
        // FIPS 180-2 appendix B and the empty string.
        let cases: [(&[u8], &str); 3] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
        ];
        for (input, want) in cases {
            let mut h = ResumableSha256::new();
            h.update(input);
            assert_eq!(hex(&h.finalize()), want);
        }
        let mut h = ResumableSha256::new();
        for _ in 0..1000 {
            h.update(&[b'a'; 1000]);
        }
        assert_eq!(
            hex(&h.finalize()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn every_length_and_split_matches_sha2_through_a_save_and_restore() {
        let data = bytes(700, 7);
        // Every length around the padding boundaries (55, 56, 64, 119, 120...), each split at
        // a few points, the state saved and restored at the split.
        for len in 0..=data.len() {
            let input = &data[..len];
            let want = reference(input);
            for split in [0, 1, len / 3, len / 2, len.saturating_sub(1), len] {
                let split = split.min(len);
                let mut h = ResumableSha256::new();
                h.update(&input[..split]);
                let saved = h.to_bytes();
                let mut restored = ResumableSha256::from_bytes(&saved).expect("well formed");
                assert_eq!(restored.len(), split as u64);
                restored.update(&input[split..]);
                assert_eq!(restored.finalize(), want, "len {len}, split {split}");
            }
        }
    }

    #[test]
    fn many_small_updates_match_one_big_one() {
        let data = bytes(256 * 1024 + 77, 3);
        let mut h = ResumableSha256::new();
        let mut at = 0;
        let mut step = 1;
        while at < data.len() {
            let end = (at + step).min(data.len());
            h.update(&data[at..end]);
            // Save and restore now and then, as checkpoints do.
            if step % 5 == 0 {
                h = ResumableSha256::from_bytes(&h.to_bytes()).unwrap();
            }
            at = end;
            step = step * 7 % 9973 + 1;
        }
        assert_eq!(h.finalize(), reference(&data));
    }

    #[test]
    fn a_damaged_saved_state_is_refused() {
        let mut h = ResumableSha256::new();
        h.update(&bytes(1000, 5));
        let saved = h.to_bytes();
        assert!(ResumableSha256::from_bytes(&saved).is_some());
        // Any one bit flipped, anywhere.
        for i in 0..SAVED_LEN {
            let mut bad = saved;
            bad[i] ^= 0x10;
            assert!(ResumableSha256::from_bytes(&bad).is_none(), "byte {i}");
        }
        assert!(ResumableSha256::from_bytes(&saved[..SAVED_LEN - 1]).is_none());
        let mut longer = saved.to_vec();
        longer.push(0);
        assert!(ResumableSha256::from_bytes(&longer).is_none());
        // Another version, even with a matching check.
        let mut other = saved;
        other[0] = FORMAT + 1;
        let check = Sha256::digest(&other[..CHECK_AT]);
        other[CHECK_AT..].copy_from_slice(&check[..SAVED_LEN - CHECK_AT]);
        assert!(ResumableSha256::from_bytes(&other).is_none());
        // Pending bytes past `len % 64` that are not zero, with a matching check.
        let mut stray = saved;
        stray[41 + 63] = 1;
        let check = Sha256::digest(&stray[..CHECK_AT]);
        stray[CHECK_AT..].copy_from_slice(&check[..SAVED_LEN - CHECK_AT]);
        assert_eq!(1000 % 64, 40);
        assert!(ResumableSha256::from_bytes(&stray).is_none());
    }
}
