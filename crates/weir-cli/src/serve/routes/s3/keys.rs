//! Buckets and keys as store paths: a bucket is a top-level folder of the store, a key the
//! path below it, so that `BUCKET/KEY` is the file `/files/BUCKET/KEY` serves.
//!
//! Parse, don't validate: a key becomes a `StorePath` here or is refused with S3's
//! `InvalidArgument` naming weir's rule (weir-store's `path.rs`: no `.` or `..` segment, no
//! empty segment, no invisible or bidirectional character, no `.weir-` name), or, for a
//! control character, with `InvalidURI` as AWS answers it, so no key can name anything
//! outside its bucket. A key ending in `/` is a folder ([`Key::Folder`]).

use weir_s3api::{ErrorCode, S3Error};
use weir_store::{PathError, StorePath};

/// A key of a bucket, as a store path.
#[derive(Debug)]
pub(super) enum Key {
    /// An object: `BUCKET/KEY`.
    Object(StorePath),
    /// A key ending in `/`: the folder `BUCKET/KEY` without the slash.
    Folder(StorePath),
}

/// The bucket's folder.
pub(super) fn bucket_path(bucket: &str) -> Result<StorePath, S3Error> {
    // The router checked S3's bucket-name rules, which are stricter than weir's path rules
    // but for the reserved `.weir-` prefix (a bucket name cannot start with `.`).
    StorePath::parse(bucket).map_err(|_| S3Error::from_code(ErrorCode::InvalidBucketName))
}

/// The store path of `key` in `bucket`.
pub(super) fn key_path(bucket: &str, key: &str) -> Result<Key, S3Error> {
    let (folder, key) = match key.strip_suffix('/') {
        Some(k) => (true, k),
        None => (false, key),
    };
    // ALLOCATION: the path, once per request.
    let path = StorePath::parse(&format!("{bucket}/{key}")).map_err(|e| {
        // A control character (C0, DEL, C1) in a key: AWS answers such a URI `InvalidURI`
        // with this message (Ceph's test_object_read_unreadable, on `\u{ae}\u{8a}-`), so
        // weir gives S3's answer to what its own rule refuses too.
        if matches!(e, PathError::ControlCharacter | PathError::Nul) {
            return S3Error::new(ErrorCode::InvalidURI, "Couldn't parse the specified URI.");
        }
        S3Error::new(
            ErrorCode::InvalidArgument,
            format!(
                "weir cannot store this key: {} (keys are paths below their bucket: no empty, \
                 . or .. segment, no control or invisible character)",
                e.as_str()
            ),
        )
    })?;
    Ok(if folder {
        Key::Folder(path)
    } else {
        Key::Object(path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_stay_in_their_bucket() {
        assert!(
            matches!(key_path("b", "a/c.txt"), Ok(Key::Object(p)) if p.as_str() == "b/a/c.txt")
        );
        assert!(matches!(key_path("b", "dir/"), Ok(Key::Folder(p)) if p.as_str() == "b/dir"));
        for bad in [
            "../x",
            "a/../../x",
            "a//b",
            "./a",
            "a/.",
            ".weir-x",
            "a\u{202e}b",
        ] {
            let e = key_path("b", bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
        }
        for control in ["a\u{1}", "\u{ae}\u{8a}-", "a\u{7f}"] {
            let e = key_path("b", control).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidURI, "{control:?}");
        }
    }
}
