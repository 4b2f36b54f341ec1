//! WebDAV (RFC 4918, classes 1 and 2) under `/dav/`: the front end file managers (GNOME Files,
//! davfs2, macOS Finder, Windows' mini-redirector) and rclone's `webdav` backend speak. Written
//! once, generic over weir-store's `Store` (static dispatch, the same store `/files/` serves):
//! no route asks which store it has.
//!
//! # Design
//! - **Where.** `/dav/` on the same listeners: `/files/`, `/tus/`, `/uploads/` and the page
//!   are untouched; a client mounts `http://host:port/dav/`. `/dav/a/b` is the store path
//!   `a/b`, the one `/files/a/b` names; a collection's href ends in `/`.
//! - **Auth.** The same tokens and scopes as `/files/`: `Authorization: Bearer TOKEN`, or
//!   `Basic` with the token as the password and any user name (`Auth::identify_bearer_or_basic`).
//!   Reads (`PROPFIND`, `GET`, `HEAD`) need the read scope; `PUT`, `MKCOL`, `COPY`, `PROPPATCH`,
//!   `LOCK`, `UNLOCK` the write scope; `DELETE` the delete scope; `MOVE` both. A prefix token
//!   is judged on the request path and on `Destination`. Refusals: `401` with
//!   `WWW-Authenticate: Basic realm="weir"` (so file managers prompt), `403` for a token
//!   without the scope. `OPTIONS` needs nothing (Windows asks it before it authenticates).
//! - **Reuse, never a second copy of a rule.** `GET`/`HEAD` of a file is `files/download.rs`
//!   (ranges, `sendfile`, the same `ETag`); `PUT` is `files/upload.rs` (atomic, verified,
//!   `Content-Digest`, chunked bodies, macOS's `X-Expected-Entity-Length` as the declared
//!   length, a client's `X-OC-Mtime` as the file's time: `extras.rs`); `DELETE` of one file
//!   is `files/delete.rs`; a collection's `GET` is the JSON listing. `getetag` is
//!   `preconditions::etag`, the one definition. WebDAV's own answers (multi-status XML,
//!   locks, `If:`) live here.
//! - **XML.** Hand-written over `Store` with `quick-xml` (`xml.rs`): `dav-server` brings its
//!   own filesystem abstraction (`DavFileSystem`), whose writes would bypass weir's atomic
//!   verified upload path and its listings weir's bounded pages. Request bodies are read whole
//!   up to [`xml::MAX_BODY`] (64 KiB: `413` beyond, before parsing), at most
//!   [`xml::MAX_DEPTH`] elements deep (`400`), and a `DOCTYPE` is refused (`400`): no DTD, so
//!   no entity can expand.
//!
//! | method | module |
//! | --- | --- |
//! | `OPTIONS` | here: `DAV: 1, 2`, `Allow` |
//! | `PROPFIND` | `propfind.rs`: depth 0 and 1 (infinity refused: `403` `propfind-finite-depth`), streamed page by page |
//! | `PROPPATCH` | `props.rs`: dead properties, kept by the store with the file or folder (`Store::set_props`) |
//! | `MKCOL`, `PUT`, `DELETE`, `GET`, `HEAD` | `write.rs` (`GET`/`HEAD`/`PUT` through `files/`) |
//! | `COPY`, `MOVE` | `copymove.rs` |
//! | `LOCK`, `UNLOCK`, the `If:` header | `locks.rs` (a bounded table in memory) |
//!
//! Beside them: `extras.rs` (what clients send with a `PUT` beyond the RFC: `X-OC-Mtime`,
//! `X-Expected-Entity-Length`), `walk.rs` (a folder's tree for `DELETE`, `COPY`, `MOVE`, one
//! page per open folder) and `xml.rs` (request bodies, bounded).

use crate::serve::auth::{Access, Verdict};
use crate::serve::reply::{self, Problem};
use crate::serve::service::Service;
use crate::serve::target::Target;
use http::StatusCode;
use std::io::Write;
use weir::{Exchange, http};
use weir_store::{Store, StoreError, StoreObject, StorePath};

mod copymove;
mod extras;
mod locks;
mod propfind;
mod props;
mod walk;
mod write;
mod xml;

pub(in crate::serve) use locks::Locks;

/// The URL prefix of WebDAV resources.
pub(in crate::serve) const PREFIX: &str = "/dav/";

/// The methods of `Allow` and of `OPTIONS`'s answer.
const ALLOW: &str = "OPTIONS, GET, HEAD, PUT, DELETE, PROPFIND, PROPPATCH, MKCOL, COPY, MOVE, \
                     LOCK, UNLOCK";

/// `207 Multi-Status` (RFC 4918 §11.1).
pub(super) const MULTI_STATUS: StatusCode = StatusCode::MULTI_STATUS;
/// `423 Locked` (RFC 4918 §11.3).
pub(super) const LOCKED: StatusCode = StatusCode::LOCKED;

/// The WebDAV methods, read once from the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Method {
    Options,
    Get,
    Head,
    Put,
    Delete,
    Propfind,
    Proppatch,
    Mkcol,
    Copy,
    Move,
    Lock,
    Unlock,
}

impl Method {
    fn parse(method: &http::Method) -> Option<Self> {
        Some(match method.as_str() {
            "OPTIONS" => Self::Options,
            "GET" => Self::Get,
            "HEAD" => Self::Head,
            "PUT" => Self::Put,
            "DELETE" => Self::Delete,
            "PROPFIND" => Self::Propfind,
            "PROPPATCH" => Self::Proppatch,
            "MKCOL" => Self::Mkcol,
            "COPY" => Self::Copy,
            "MOVE" => Self::Move,
            "LOCK" => Self::Lock,
            "UNLOCK" => Self::Unlock,
            _ => return None,
        })
    }

    /// The scopes a token needs (`MOVE` deletes its source too).
    fn access(self) -> &'static [Access] {
        match self {
            Self::Options => &[],
            Self::Get | Self::Head | Self::Propfind => &[Access::Read],
            Self::Delete => &[Access::Delete],
            Self::Move => &[Access::Write, Access::Delete],
            _ => &[Access::Write],
        }
    }
}

/// Whether a request with `method` may store or delete through WebDAV (it then runs in
/// `stored.rs`'s scope, so the log and the hooks name what it touched).
pub(in crate::serve) fn may_touch(method: &http::Method) -> bool {
    matches!(
        method.as_str(),
        "MKCOL" | "COPY" | "MOVE" | "LOCK" | "PROPPATCH"
    )
}

/// A WebDAV resource: a store path (`None`: the root collection), and whether the URL ended in
/// a slash (a collection named as one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Resource {
    pub(super) path: Option<StorePath>,
    pub(super) slash: bool,
}

impl Resource {
    /// The part of a URL path after [`PREFIX`], still percent-encoded.
    fn parse(raw: &str) -> Result<Self, &'static str> {
        match Target::parse(raw) {
            Ok(Target::Root) => Ok(Self {
                path: None,
                slash: true,
            }),
            Ok(Target::Dir(p)) => Ok(Self {
                path: Some(p),
                slash: true,
            }),
            Ok(Target::File(p)) => Ok(Self {
                path: Some(p),
                slash: false,
            }),
            Err(e) => Err(e.as_str()),
        }
    }

    /// The store path as text (`""`: the root), as scopes and prefixes judge it.
    pub(super) fn as_str(&self) -> &str {
        self.path.as_ref().map_or("", StorePath::as_str)
    }

    /// The parent collection (`None`: the root).
    pub(super) fn parent(&self) -> Option<StorePath> {
        let path = self.path.as_ref()?;
        let (parent, _) = path.as_str().rsplit_once('/')?;
        StorePath::parse(parent).ok()
    }

    /// Whether `self` is `other` or inside it.
    pub(super) fn within(&self, other: &Resource) -> bool {
        match (&self.path, &other.path) {
            (_, None) => true,
            (None, Some(_)) => false,
            (Some(a), Some(b)) => {
                let (a, b) = (a.as_str(), b.as_str());
                a == b || (a.starts_with(b) && a.as_bytes().get(b.len()) == Some(&b'/'))
            }
        }
    }
}

/// What is at a resource.
pub(super) enum Kind<O> {
    File(O),
    Collection,
    Nothing,
}

/// Finds what is at `path` (`None`: the root, always a collection).
pub(super) async fn kind<S: Store>(
    store: &S,
    path: Option<&StorePath>,
) -> Result<Kind<S::Object>, StoreError> {
    let Some(path) = path else {
        return Ok(Kind::Collection);
    };
    match store.open(path).await {
        Ok(o) => Ok(Kind::File(o)),
        Err(StoreError::IsDirectory) => Ok(Kind::Collection),
        // A path through a file names nothing.
        Err(StoreError::NotADirectory) => Ok(Kind::Nothing),
        Err(StoreError::NotFound) => Ok(match store.is_dir(path).await {
            Ok(true) => Kind::Collection,
            Ok(false) | Err(StoreError::NotADirectory | StoreError::NotFound) => Kind::Nothing,
            Err(e) => return Err(e),
        }),
        Err(e) => Err(e),
    }
}

/// Whether the collection that would hold `resource` exists (`409` for `PUT`, `MKCOL`,
/// `COPY`/`MOVE` destinations otherwise: RFC 4918 §9.7.1, §9.3.1).
pub(super) async fn parent_exists<S: Store>(
    store: &S,
    resource: &Resource,
) -> Result<bool, StoreError> {
    match resource.parent() {
        None => Ok(true),
        Some(parent) => match store.is_dir(&parent).await {
            Err(StoreError::NotADirectory | StoreError::NotFound) => Ok(false),
            other => other,
        },
    }
}

/// Routes a `/dav` request to `store` (see the module doc): the method, the credential, the
/// path and the scope, then the method's module.
pub(in crate::serve) async fn serve<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
) -> Result<(), weir::Error> {
    let Some(method) = Method::parse(ex.request().method()) else {
        return ex
            .respond(StatusCode::METHOD_NOT_ALLOWED)
            .header("allow", ALLOW)
            .empty()
            .await;
    };
    if method == Method::Options {
        return options(ex).await;
    }
    let raw = ex.request().path().strip_prefix(PREFIX).unwrap_or("");
    let resource = match Resource::parse(raw) {
        Ok(r) => r,
        Err(message) => return reply::error(ex, Problem::InvalidPath, message, &[]).await,
    };
    let authorization = match crate::serve::auth::authorization(ex.request()) {
        Ok(a) => a,
        Err(message) => return reply::error(ex, Problem::BadRequest, message, &[]).await,
    };
    let auth = svc.auth();
    for &access in method.access() {
        let verdict = auth.check_bearer_or_basic(authorization, access, Some(resource.as_str()));
        match verdict {
            Verdict::Allowed => {}
            Verdict::Unauthorized => return unauthorized(ex).await,
            Verdict::Forbidden => return forbidden(ex).await,
        }
    }
    match method {
        Method::Options => unreachable!("answered above"),
        Method::Get | Method::Head => write::get(svc, store, ex, resource).await,
        Method::Put => write::put(svc, store, ex, resource).await,
        Method::Delete => write::delete(svc, store, ex, resource).await,
        Method::Mkcol => write::mkcol(svc, store, ex, resource).await,
        Method::Propfind => propfind::propfind(svc, store, ex, resource).await,
        Method::Proppatch => props::proppatch(svc, store, ex, resource).await,
        Method::Copy | Method::Move => {
            let moving = method == Method::Move;
            copymove::serve(svc, store, ex, resource, moving).await
        }
        Method::Lock => locks::lock(svc, store, ex, resource).await,
        Method::Unlock => locks::unlock(svc, ex, resource).await,
    }
}

/// `OPTIONS`: classes 1 and 2, and the methods (also the answer to `OPTIONS /`: Windows asks
/// the server's root before it maps a folder).
pub(in crate::serve) async fn options(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    ex.respond(StatusCode::OK)
        .header("dav", "1, 2")
        .header("allow", ALLOW)
        // Windows' mini-redirector looks for it before it mounts.
        .header("ms-author-via", "DAV")
        .empty()
        .await
}

/// `401` asking for Basic (file managers prompt for it) or a bearer token.
async fn unauthorized(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    ex.respond(StatusCode::UNAUTHORIZED)
        .header("www-authenticate", "Basic realm=\"weir\"")
        .header("www-authenticate", "Bearer realm=\"weir\"")
        .header("content-type", "text/plain; charset=utf-8")
        .body("a token is needed: as the password of Basic auth, or as a bearer token\n")
        .await
}

async fn forbidden(ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
    ex.respond(StatusCode::FORBIDDEN)
        .header("content-type", "text/plain; charset=utf-8")
        .body("this token may not do that here (scope or path prefix)\n")
        .await
}

/// An empty answer with `status` (the bodies WebDAV clients ignore).
pub(super) async fn status(ex: &mut Exchange<'_>, status: StatusCode) -> Result<(), weir::Error> {
    ex.respond(status).empty().await
}

/// An XML answer.
pub(super) async fn xml_answer(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Result<(), weir::Error> {
    let mut response = ex
        .respond(status)
        .header("content-type", "application/xml; charset=utf-8");
    for (name, value) in headers {
        response = response.header(name, value);
    }
    response.body(body).await
}

/// An `error` body naming a precondition or postcondition (RFC 4918 §16), e.g.
/// `propfind-finite-depth`.
pub(super) async fn condition(
    ex: &mut Exchange<'_>,
    status: StatusCode,
    name: &str,
) -> Result<(), weir::Error> {
    let mut body = Vec::with_capacity(128);
    body.extend_from_slice(XML_DECL);
    let _ = write!(body, "<D:error xmlns:D=\"DAV:\"><D:{name}/></D:error>");
    xml_answer(ex, status, &body, &[]).await
}

/// The XML declaration every body starts with.
pub(super) const XML_DECL: &[u8] = b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n";

/// Appends the href of `path` (`None`: the root): `/dav/` then each segment percent-encoded,
/// a collection with a final slash.
pub(super) fn href(out: &mut Vec<u8>, path: Option<&str>, collection: bool) {
    out.extend_from_slice(PREFIX.as_bytes());
    if let Some(path) = path.filter(|p| !p.is_empty()) {
        for (i, segment) in path.split('/').enumerate() {
            if i > 0 {
                out.push(b'/');
            }
            percent_encode(out, segment);
        }
        if collection {
            out.push(b'/');
        }
    }
}

/// `s` percent-encoded but for RFC 3986's unreserved characters.
fn percent_encode(out: &mut Vec<u8>, s: &str) {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// `s` with XML's special characters as references.
pub(super) fn escape(out: &mut Vec<u8>, s: &str) {
    for b in s.bytes() {
        match b {
            b'&' => out.extend_from_slice(b"&amp;"),
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            _ => out.push(b),
        }
    }
}

/// Appends one `<D:response>` with an href and a status (a member that failed, in a `207`).
pub(super) fn status_response(
    out: &mut Vec<u8>,
    path: Option<&str>,
    collection: bool,
    status: StatusCode,
) {
    out.extend_from_slice(b"<D:response><D:href>");
    href(out, path, collection);
    let _ = writeln!(
        out,
        "</D:href><D:status>HTTP/1.1 {} {}</D:status></D:response>",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
}

/// A `Destination` (or tagged `If:` list) URL as a resource of this server: an absolute URL
/// (scheme and authority not compared: proxies rewrite them) or an absolute path, under
/// [`PREFIX`]. `None`: not one of ours (`502` for `COPY`/`MOVE`, RFC 4918 §9.8.5).
pub(super) fn resource_of_url(url: &str) -> Option<Result<Resource, &'static str>> {
    let path = match url.find("://") {
        Some(i) => {
            let rest = &url[i + 3..];
            &rest[rest.find('/')?..]
        }
        None => url,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    if path == "/dav" {
        return Some(Resource::parse(""));
    }
    Some(Resource::parse(path.strip_prefix(PREFIX)?))
}

/// The store's answer to a failure, as a status (for multi-status members and bare answers).
pub(super) fn store_status(e: &StoreError) -> StatusCode {
    match e {
        StoreError::NoSpace | StoreError::QuotaExceeded { .. } => StatusCode::INSUFFICIENT_STORAGE,
        StoreError::PreconditionFailed => StatusCode::PRECONDITION_FAILED,
        _ => reply::store_problem(e).status(),
    }
}

/// The object's `ETag`, as `/files/` answers it.
pub(super) fn etag_of<O: StoreObject>(object: &O) -> String {
    crate::serve::preconditions::etag(object.meta())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(raw: &str) -> Resource {
        Resource::parse(raw).unwrap()
    }

    #[test]
    fn urls_name_resources_under_the_prefix() {
        let r = resource_of_url("http://h:1/dav/a%20b/c/").unwrap().unwrap();
        assert_eq!((r.as_str(), r.slash), ("a b/c", true));
        assert_eq!(resource_of_url("/dav/x").unwrap().unwrap().as_str(), "x");
        assert_eq!(resource_of_url("/dav").unwrap().unwrap().as_str(), "");
        assert!(resource_of_url("http://h/files/x").is_none());
        assert!(resource_of_url("/dav/../x").unwrap().is_err());
    }

    #[test]
    fn parents_and_containment() {
        assert_eq!(res("a/b/c").parent().unwrap().as_str(), "a/b");
        assert!(res("a").parent().is_none());
        assert!(res("a/b").within(&res("a/")));
        assert!(!res("ab").within(&res("a/")));
        assert!(res("a").within(&res("")));
        let mut out = Vec::new();
        href(&mut out, Some("a b/é"), true);
        assert_eq!(out, b"/dav/a%20b/%C3%A9/");
    }
}
