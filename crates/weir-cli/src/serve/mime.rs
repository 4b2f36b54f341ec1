//! A served file's `Content-Type`: the one its client gave it at upload, kept with the file
//! (weir-store's `MediaType`), else the type of its extension from `mime_guess`'s table
//! (`application/octet-stream` when unknown). Text types guessed by extension carry
//! `charset=utf-8`. Every file response also carries `X-Content-Type-Options: nosniff` and a
//! sandboxing CSP (see `download`), so an uploaded HTML file cannot run scripts in the
//! service's origin, whatever type it was given.

use std::fmt;
use weir::Exchange;
use weir_store::MediaType;

/// A file's `Content-Type`, written into the header without allocating.
pub(crate) enum ContentType {
    /// The client's, kept with the file.
    Stored(MediaType),
    /// By extension: the essence, and whether `charset=utf-8` follows.
    Guessed(&'static str, bool),
}

impl fmt::Display for ContentType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stored(t) => f.write_str(t.as_str()),
            Self::Guessed(essence, false) => f.write_str(essence),
            Self::Guessed(essence, true) => write!(f, "{essence}; charset=utf-8"),
        }
    }
}

/// The type to serve a stored file with: its own (`stored`), else by its name.
pub(crate) fn content_type(stored: Option<MediaType>, name: &str) -> ContentType {
    match stored {
        Some(t) => ContentType::Stored(t),
        None => by_name(name),
    }
}

/// The media type for a file name, by its extension.
pub(crate) fn by_name(name: &str) -> ContentType {
    let essence = mime_guess::from_path(name)
        .first_raw()
        .unwrap_or("application/octet-stream");
    let text = essence.starts_with("text/");
    ContentType::Guessed(essence, text)
}

/// The `Content-Type` of an upload request, to keep with the file: `None` when absent or not a
/// media type (`MediaType::parse`), and for `application/x-www-form-urlencoded`, which curl
/// (`-d`, `--data-binary`) and other tools send by default for any body: it never describes
/// a file, and keeping it would serve a file as a form.
pub(crate) fn of_request(ex: &Exchange<'_>) -> Option<MediaType> {
    let t = MediaType::parse(ex.request().header("content-type")?)?;
    (!essence_is(&t, "application/x-www-form-urlencoded")).then_some(t)
}

fn essence_is(t: &MediaType, essence: &str) -> bool {
    let own = t.as_str().split(';').next().unwrap_or("").trim();
    own.eq_ignore_ascii_case(essence)
}

/// Whether `t` is a resumable protocol's own body type (`application/partial-upload`,
/// tus's `application/offset+octet-stream`), which says nothing of the file.
pub(crate) fn is_upload_framing(t: &MediaType) -> bool {
    essence_is(t, "application/partial-upload") || essence_is(t, "application/offset+octet-stream")
}

/// The type in tus `Upload-Metadata` (`filetype`, or `type`; base64), as [`of_request`] would
/// take it.
pub(crate) fn of_metadata(metadata: &str) -> Option<MediaType> {
    let value = metadata.split(',').find_map(|pair| {
        let (key, value) = pair.trim().split_once(' ')?;
        matches!(key, "filetype" | "type").then_some(value.trim())
    })?;
    // ALLOCATION: the decoded value, once per completing request of a typed upload.
    let t = MediaType::parse(&super::base64::decode(value)?)?;
    let keep = !essence_is(&t, "application/x-www-form-urlencoded") && !is_upload_framing(&t);
    keep.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::{by_name, content_type};
    use weir_store::MediaType;

    #[test]
    fn by_extension() {
        let t = |name: &str| by_name(name).to_string();
        assert_eq!(t("a.txt"), "text/plain; charset=utf-8");
        assert_eq!(t("dir.v2/IMG.JPG"), "image/jpeg");
        assert_eq!(t("archive.tar.gz"), "application/gzip");
        assert_eq!(t("noext"), "application/octet-stream");
        assert_eq!(t("x.unknownlong"), "application/octet-stream");
        assert_eq!(t("trailingdot."), "application/octet-stream");
        // Beyond the 40 types weir listed itself.
        assert_eq!(t("book.epub"), "application/epub+zip");
        assert_eq!(t("model.glb"), "model/gltf-binary");
    }

    #[test]
    fn the_stored_type_wins() {
        let stored = MediaType::parse(b"application/x-custom").unwrap();
        assert_eq!(
            content_type(Some(stored), "a.txt").to_string(),
            "application/x-custom"
        );
        assert_eq!(
            content_type(None, "a.txt").to_string(),
            "text/plain; charset=utf-8"
        );
    }
}
