//! Base64 as the service's fields carry it (tus `Upload-Metadata` and `Upload-Checksum`, digest
//! field values, the page's `Upload-Metadata`): the `base64` crate's standard alphabet, the one
//! base64 of the workspace (weir-proto's digest fields use it too). Decoding takes a value with
//! its `=` padding or without it, since some tus clients leave it out.

use base64::Engine as _;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::{DecodePaddingMode, GeneralPurpose as Engine};

/// The standard alphabet, padding optional when decoding.
const LENIENT: GeneralPurpose = Engine::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes standard base64, padded or not; `None` if it is not base64.
pub(super) fn decode(text: &str) -> Option<Vec<u8>> {
    LENIENT.decode(text).ok()
}

/// Appends the padded standard base64 of `data` to `out`.
pub(super) fn encode_into(data: &[u8], out: &mut String) {
    STANDARD.encode_string(data, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_or_without_padding() {
        for len in 0..10 {
            let data: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let mut text = String::new();
            encode_into(&data, &mut text);
            assert_eq!(decode(&text).unwrap(), data);
            assert_eq!(decode(text.trim_end_matches('=')).unwrap(), data);
        }
        assert_eq!(decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode("a"), None);
        assert_eq!(decode("a!=="), None);
    }
}
