//! [`FileBody`]: a response body that is a range of a file, sent with `sendfile` when the
//! adapter sees it.
//!
//! The adapter recognises it in two places: as the response's body type itself
//! (`http::Response<weir::FileBody>` from a tower service), or, for frameworks that box every
//! body (axum), in the response's extensions with an empty body (`Extension(file_body)` in an
//! axum handler's return value). It then answers with
//! [`Response::file`](crate::Response::file): `sendfile` on Linux over TCP and Unix sockets,
//! a buffered copy elsewhere. A `FileBody` that reaches the adapter inside another body (a
//! compression layer wrapped it) is read as an ordinary body: 64 KiB reads on the connection's
//! task, each into a fresh buffer (ALLOCATION per frame on that path only, since a wrapping body
//! may keep the frames).

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use std::fs::File;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Largest frame of the fallback path (reads on the connection's task: page-cache reads, as
/// `body_to_file`'s writes are).
const FRAME: u64 = 64 * 1024;

/// `len` bytes of a file from `offset`, as a response body. Cheap to clone (the file is shared).
#[derive(Clone, Debug)]
pub struct FileBody {
    file: Arc<File>,
    offset: u64,
    len: u64,
    /// Bytes already handed out by the fallback path.
    sent: u64,
}

impl FileBody {
    /// The whole file (its length read now).
    pub fn new(file: File) -> std::io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self::range(file, 0, len))
    }

    /// `len` bytes from `offset`.
    pub fn range(file: File, offset: u64, len: u64) -> Self {
        Self {
            file: Arc::new(file),
            offset,
            len,
            sent: 0,
        }
    }

    /// The file, from where the fallback path left it, and how many bytes remain.
    pub(crate) fn rest(&self) -> (&File, u64, u64) {
        (&self.file, self.offset + self.sent, self.len - self.sent)
    }
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        let left = this.len - this.sent;
        if left == 0 {
            return Poll::Ready(None);
        }
        let want = left.min(FRAME) as usize;
        // ALLOCATION: the fallback path only (see the module docs).
        let mut buf = vec![0u8; want];
        match read_at(&this.file, &mut buf, this.offset + this.sent) {
            Ok(0) => Poll::Ready(Some(Err(std::io::ErrorKind::UnexpectedEof.into()))),
            Ok(n) => {
                buf.truncate(n);
                this.sent += n as u64;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))))
            }
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.sent == self.len
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.len - self.sent)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}
