//! The media type a client gave a file (its `Content-Type`), kept with the file.
//!
//! Kept in the `user.weir.content_type` xattr of the file itself, set on the temporary file
//! before the commit's fsync and rename ([`Upload::set_media_type`](crate::Upload::set_media_type)),
//! so it becomes visible with the bytes, atomically, and goes with them when the file is
//! replaced (the new version has its own, or none) or deleted. A sidecar file would need its
//! own atomic replacement beside every commit and delete, and could outlive or lag its file.
//! Best effort, like the digest: where the filesystem keeps no user xattrs (some tmpfs, NFS,
//! FAT; every platform but Linux) the type is not kept, and readers fall back to the name's
//! extension.
//!
//! A value is bounded ([`MediaType::MAX`] bytes) and held inline: reading it back for a `GET`
//! allocates nothing.

use std::fs::File;

/// A media type as a client sent it: `type/subtype` and any parameters, visible ASCII and
/// spaces, at most [`MediaType::MAX`] bytes.
#[derive(Clone, Copy)]
pub struct MediaType {
    bytes: [u8; MediaType::MAX],
    len: u8,
}

impl MediaType {
    /// The longest value kept.
    pub const MAX: usize = 127;

    /// `value` if it is a plausible media type: `type/subtype` (tokens) then optional
    /// parameters, visible ASCII or spaces/tabs, at most [`MAX`](Self::MAX) bytes. `None`
    /// otherwise (the caller then ignores it).
    pub fn parse(value: &[u8]) -> Option<MediaType> {
        let value = value.trim_ascii();
        if value.is_empty() || value.len() > Self::MAX {
            return None;
        }
        if !value
            .iter()
            .all(|&b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
        {
            return None;
        }
        let essence = value
            .split(|&b| b == b';')
            .next()
            .unwrap_or(&[])
            .trim_ascii();
        let mut parts = essence.splitn(2, |&b| b == b'/');
        let (Some(kind), Some(subtype)) = (parts.next(), parts.next()) else {
            return None;
        };
        let token = |t: &[u8]| !t.is_empty() && t.iter().all(|&b| is_tchar(b));
        if !token(kind) || !token(subtype) {
            return None;
        }
        let mut bytes = [0u8; Self::MAX];
        bytes[..value.len()].copy_from_slice(value);
        Some(MediaType {
            bytes,
            len: value.len() as u8,
        })
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        // Checked ASCII at parse (or read back through `parse`).
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    /// The media type recorded with a stored file, if any.
    pub fn read_from(file: &File) -> Option<MediaType> {
        let mut buf = [0u8; Self::MAX + 1];
        let n = crate::sys::read_media_type(file, &mut buf)?;
        MediaType::parse(&buf[..n])
    }
}

impl std::fmt::Debug for MediaType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("MediaType").field(&self.as_str()).finish()
    }
}

impl PartialEq for MediaType {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for MediaType {}

/// RFC 9110 §5.6.2's `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::MediaType;

    #[test]
    fn parse() {
        let t = MediaType::parse(b" text/plain; charset=utf-8 ").unwrap();
        assert_eq!(t.as_str(), "text/plain; charset=utf-8");
        assert_eq!(
            MediaType::parse(b"application/vnd.api+json")
                .unwrap()
                .as_str(),
            "application/vnd.api+json"
        );
        for bad in [
            &b""[..],
            b"text",
            b"text/",
            b"/plain",
            b"te xt/plain",
            b"text/plain\x00",
            b"text/pl\xc3\xa9",
            &[b'a'; 200],
        ] {
            assert_eq!(MediaType::parse(bad), None, "{bad:?}");
        }
        let long = format!("a/{}", "b".repeat(MediaType::MAX - 2));
        assert_eq!(MediaType::parse(long.as_bytes()).unwrap().as_str(), long);
        let longer = format!("a/{}", "b".repeat(MediaType::MAX - 1));
        assert_eq!(MediaType::parse(longer.as_bytes()), None);
    }
}
