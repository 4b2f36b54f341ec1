//! What real clients send with a `PUT` beyond RFC 4918, read into `files/upload.rs`'s
//! [`PutExtras`]:
//!
//! | header | sent by | weir |
//! | --- | --- | --- |
//! | `X-OC-Mtime: <seconds>` | rclone's `webdav` backend with `--webdav-vendor` `owncloud`, `nextcloud`, `fastmail`, `rclone`; ownCloud's and Nextcloud's own clients | the file's modification time, set with the commit (`UploadOptions::modified`); the answer says `X-OC-Mtime: accepted`, which rclone reads to know it needs no `PROPPATCH` |
//! | `X-Expected-Entity-Length: <bytes>` | macOS Finder (its `PUT`s are chunked, without `Content-Length`) | the body's declared length: over `--max-upload` `413` before the body, and a body of any other length stores nothing |
//!
//! Invariants: a value that is not what the header means (not a decimal number, a time past
//! the year 9999 that HTTP dates cannot write) is `400` before any body byte is read, and
//! nothing is stored; a whole-second time keeps its second (a fraction, as ownCloud's Python
//! client sends, is dropped: `getlastmodified` has seconds only).

use crate::serve::routes::files::upload::PutExtras;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use weir::Request;

/// The last second an HTTP date can write (9999-12-31T23:59:59Z): `getlastmodified` must
/// be able to answer the time a client set.
const LAST_SECOND: u64 = 253_402_300_799;

/// The extras of a WebDAV `PUT`; `Err`: the reason for a `400`.
pub(super) fn of_put(request: &Request) -> Result<PutExtras, &'static str> {
    let modified = match request.header_str("x-oc-mtime") {
        None => None,
        Some(v) => Some(mtime(v).ok_or("X-OC-Mtime is seconds since 1970 (up to year 9999)")?),
    };
    // `Content-Length`, when sent, is the body's framing and wins.
    let expected_len = match request.header_str("x-expected-entity-length") {
        Some(v) if request.content_length().is_none() => {
            Some(length(v).ok_or("X-Expected-Entity-Length is a number of bytes")?)
        }
        _ => None,
    };
    Ok(PutExtras {
        modified,
        expected_len,
    })
}

/// `X-OC-Mtime`'s value (and ownCloud's `lastmodified`'s, `props.rs`): decimal seconds,
/// maybe with a fraction (dropped).
pub(super) fn mtime(value: &str) -> Option<SystemTime> {
    let value = value.trim();
    let (secs, fraction) = value.split_once('.').unwrap_or((value, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if secs.is_empty() || !digits(secs) || !digits(fraction) {
        return None;
    }
    let secs: u64 = secs.parse().ok().filter(|&s| s <= LAST_SECOND)?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// A length: decimal digits only.
fn length(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modification_times_are_decimal_seconds() {
        let at = |s| Some(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(mtime("1700000000"), at(1_700_000_000));
        assert_eq!(mtime(" 1700000000.75 "), at(1_700_000_000));
        assert_eq!(mtime("0"), at(0));
        assert_eq!(mtime("253402300799"), at(LAST_SECOND));
        for bad in [
            "",
            "-1",
            "1e9",
            "12a",
            ".5",
            "1.2.3",
            "253402300800",
            "99999999999999999999",
        ] {
            assert_eq!(mtime(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn lengths_are_decimal_bytes() {
        assert_eq!(length("0"), Some(0));
        assert_eq!(length(" 1234 "), Some(1234));
        for bad in ["", "-1", "+5", "1 2", "0x10", "18446744073709551616"] {
            assert_eq!(length(bad), None, "{bad:?}");
        }
    }
}
