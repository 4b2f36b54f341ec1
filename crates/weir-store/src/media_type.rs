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
//! allocates nothing. Whether a file has one is also recorded in its digest record (read
//! anyway at open, `sys::DigestRecord`), so a `GET` of a file without one does not ask for
//! the attribute (an `fgetxattr` failing with `ENODATA` on every request); a file whose record
//! predates that flag, or has none, is asked as before.

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

    /// The digest record's flag decides whether the attribute is read. Shown without a
    /// counter: a media type attribute set behind the store's back on a file committed
    /// without one is not seen (the store did not ask), while a file whose record predates
    /// the flag (52 bytes, an older binary's) is asked, and its type found. Files committed
    /// with a type through every path that writes a record (a commit, a second commit in the
    /// same second whose date is marked, a copy) keep it.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_digest_record_says_when_there_is_no_media_type_to_read() {
        use crate::testutil::{p, store};
        use crate::{CopyMeta, Store, StoreObject, UploadOptions};
        let (dir, store) = store();
        let typed = MediaType::parse(b"text/x-typed").unwrap();
        let put = |path: &str, media_type: Option<&MediaType>| {
            let mut up = store.begin(&p(path), UploadOptions::default()).unwrap();
            up.write(path.as_bytes()).unwrap();
            let kept = media_type.is_none_or(|m| up.set_media_type(m));
            up.commit().unwrap();
            kept
        };
        if !put("typed", Some(&typed)) {
            eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
            return;
        }
        // Twice in a row: the second commit usually shares the first's second, and its date
        // is then marked (the record written again for the marked time).
        assert!(put("typed", Some(&typed)));
        put("plain", None);
        Store::copy(&store, &p("typed"), &p("copied"), None, CopyMeta::Source)
            .await
            .unwrap();
        let media = async |path: &str| {
            let object = Store::open(&store, &p(path)).await.unwrap();
            assert!(object.meta().sha256.is_some(), "{path}: digest recorded");
            object.media_type().map(|m| m.as_str().to_owned())
        };
        for path in ["typed", "copied"] {
            assert_eq!(media(path).await.as_deref(), Some("text/x-typed"), "{path}");
        }
        assert_eq!(media("plain").await, None);

        // Behind the store's back (no change of size or mtime, so the record stays valid).
        let file = dir.path().join("root/plain");
        rustix::fs::setxattr(
            &file,
            crate::sys::MEDIA_TYPE_XATTR,
            b"text/x-sneaked",
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        assert_eq!(
            media("plain").await,
            None,
            "not asked: the record says none"
        );
        // The record an older binary wrote: the first 52 bytes, no flag.
        let mut record = [0u8; 64];
        let n = rustix::fs::getxattr(&file, crate::sys::DIGEST_XATTR, &mut record[..]).unwrap();
        assert_eq!(n, crate::sys::DigestRecord::LEN);
        let old = &record[..crate::sys::DigestRecord::OLD_LEN];
        rustix::fs::setxattr(
            &file,
            crate::sys::DIGEST_XATTR,
            old,
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        assert_eq!(
            media("plain").await.as_deref(),
            Some("text/x-sneaked"),
            "an older record: asked, and found"
        );
    }

    /// A resumable upload given its media type by an earlier request, completed by a later
    /// one (whose adopted file the completing upload did not type itself): the record says
    /// "has one", asked of the file at the commit, and the type is served.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_type_given_by_an_earlier_append_is_recorded_at_completion() {
        use crate::testutil::{p, store};
        use crate::{AppendEnd, Resumables, Store, StoreObject};
        let (_dir, store) = store();
        let r = Resumables::open(&store, std::time::Duration::from_secs(3600)).unwrap();
        let typed = MediaType::parse(b"text/x-resumed").unwrap();
        for (path, media_type) in [("typed", Some(&typed)), ("plain", None)] {
            let (id, _) = r.create(&p(path), None, None, true).unwrap();
            let (appending, mut up) = r.append(id, 0, None).unwrap();
            up.write(b"first ").unwrap();
            if let Some(m) = media_type {
                if !up.set_media_type(m) {
                    eprintln!("skipped: the test directory's filesystem keeps no user xattrs");
                    return;
                }
            }
            assert!(matches!(
                appending.finish(up, false).unwrap(),
                AppendEnd::Incomplete(_)
            ));
            let (appending, mut up) = r.append(id, 6, None).unwrap();
            up.write(b"second").unwrap();
            assert!(matches!(
                appending.finish(up, true).unwrap(),
                AppendEnd::Completed(_)
            ));
            let object = Store::open(&store, &p(path)).await.unwrap();
            assert!(object.meta().sha256.is_some(), "{path}: digest recorded");
            assert_eq!(
                object.media_type().map(|m| m.as_str().to_owned()),
                media_type.map(|m| m.as_str().to_owned()),
                "{path}"
            );
        }
    }
}
