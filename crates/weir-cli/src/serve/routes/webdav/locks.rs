//! WebDAV class 2: `LOCK`, `UNLOCK` and the `If:` header (RFC 4918 §§6, 9.10, 9.11, 10.4).
//!
//! Locks are write locks, exclusive or shared, of depth 0 or infinity, kept in a table in
//! memory ([`Locks`]): at most [`MAX_LOCKS`] (a `LOCK` past it is `503`), each for at most
//! [`MAX_TIMEOUT`] (a client asking for `Infinite` gets that, and refreshes), an owner of at
//! most [`xml::MAX_BODY`](super::xml::MAX_BODY). A restart forgets them: clients then see
//! their tokens refused (`412`) and lock again. Tokens are `opaquelocktoken:` UUIDs (version 4,
//! from `/dev/urandom`).
//!
//! Every write method calls [`check_write`] before it changes anything:
//! 1. each lock on the resources it writes (the resource, through depth-infinity locks of its
//!    ancestors; a depth-0 lock of its collection when a member appears or goes; for a
//!    collection operation every lock below it) must have its token among the `If:`
//!    header's state tokens: else `423` with `lock-token-submitted`;
//! 2. the `If:` header, when present, must hold: one of its lists true, a list being true
//!    when each of its conditions is (a state token: a lock with it covers the list's
//!    resource; an entity tag: that resource's current `ETag`, the one `/files/` answers);
//!    else `412`.
//!
//! A `LOCK` of a URL where nothing is stores an empty file there (§7.3), `201`.
//!
//! # Whose lock
//! A lock belongs to the principal that took it: the name of the token of its `LOCK`
//! ([`Principal`]; on a server without tokens everyone is the same nobody). Its token counts
//! only when that principal presents it: another token (or no credential) that sends it in
//! `If:` is refused `423` as if it had sent none, its `UNLOCK` is `403`, its refresh `412`.
//! Lock tokens are not secrets (`lockdiscovery` shows them to any reader, RFC 4918 §6.5), so a
//! token alone must not let a second writer through the first's lock. Two names for one
//! token (a token file that gives the same secret two entries) cannot happen: a token is
//! identified by its secret, which names one entry.

use super::xml::{self, BodyError, Element};
use super::{Kind, LOCKED, Resource, XML_DECL, href, kind, parent_exists, resource_of_url};
use crate::serve::service::Service;
use http::StatusCode;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weir::{Exchange, http};
use weir_store::{FileMeta, Store, StoreError, StoreUpload, UploadOptions};

/// The most locks held at once.
pub(super) const MAX_LOCKS: usize = 10_000;
/// The longest a lock lives without a refresh.
pub(super) const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// One lock.
#[derive(Clone, Debug)]
struct Lock {
    token: String,
    root: Resource,
    /// Depth infinity (else 0).
    deep: bool,
    exclusive: bool,
    /// The owner element's content as the client sent it (re-serialized, `xml.rs`).
    owner: Vec<u8>,
    timeout: Duration,
    expires: Instant,
    /// Who took it: only they may use, refresh or remove it.
    principal: Principal,
}

/// Who a request is, for the locks: the name of its token (`None`: no token was needed or
/// none is configured, every such client being the same principal).
type Principal = Option<Arc<str>>;

/// The principal of the request in `ex` (its credential's name).
fn principal(svc: &Service, ex: &Exchange<'_>) -> Principal {
    let authorization = crate::serve::auth::authorization(ex.request()).ok()?;
    let auth = svc.auth();
    // ALLOCATION: none; the name is a reference count of the credential's.
    auth.identify_bearer_or_basic(authorization)
        .map(|c| Arc::clone(c.name()))
}

impl Lock {
    /// Whether this lock applies to `res`: it is the root, or a depth-infinity lock above it.
    fn covers(&self, res: &Resource) -> bool {
        same(&self.root, res) || (self.deep && res.within(&self.root))
    }
}

fn same(a: &Resource, b: &Resource) -> bool {
    a.path == b.path
}

/// The lock table (see the module doc).
#[derive(Debug, Default)]
pub(in crate::serve) struct Locks {
    table: Mutex<Vec<Lock>>,
}

impl Locks {
    /// The live locks (expired ones dropped), under the table's lock.
    fn with<T>(&self, f: impl FnOnce(&mut Vec<Lock>) -> T) -> T {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        table.retain(|l| l.expires > now);
        f(&mut table)
    }

    /// Forgets the locks at `res` or below it (the resource was deleted or moved away).
    pub(super) fn forget_within(&self, res: &Resource) {
        self.with(|t| t.retain(|l| !l.root.within(res)));
    }
}

/// What a write changes, for the locks that protect it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// The resource's content or properties (`PUT` over a file, `PROPPATCH`).
    Content,
    /// A member of its collection appears (`PUT` of a new file, `MKCOL`): a depth-0 lock on
    /// the collection protects its membership too (RFC 4918 §7.5).
    Member,
    /// The resource and everything below it, appearing or going (`DELETE`, `MOVE`, a `COPY`'s
    /// destination): every lock below it too.
    Tree,
}

impl Locks {
    /// Whether a depth-0 lock is on the collection that holds `res` (only then does a `PUT`
    /// need to ask whether it creates a member).
    pub(super) fn on_parent(&self, res: &Resource) -> bool {
        let Some(parent) = parent_of(res) else {
            return false;
        };
        self.with(|t| t.iter().any(|l| !l.deep && same(&l.root, &parent)))
    }
}

/// The collection that holds `res` (`None` for the root).
fn parent_of(res: &Resource) -> Option<Resource> {
    res.path.as_ref()?;
    Some(Resource {
        path: res.parent(),
        slash: true,
    })
}

/// Checks a write of `res` (see [`Change`]) against the locks and the `If:` header; `Some`
/// once a refusal was answered.
pub(super) async fn check_write<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: &Resource,
    change: Change,
) -> Option<Result<(), weir::Error>> {
    let deep = change == Change::Tree;
    let parent = parent_of(res).filter(|_| change != Change::Content);
    let lists = match if_header(ex) {
        Ok(lists) => lists,
        Err(why) => {
            let answer =
                crate::serve::reply::error(ex, crate::serve::reply::Problem::BadRequest, why, &[]);
            return Some(answer.await);
        }
    };
    let who = principal(svc, ex);
    let missing = svc.dav_locks.with(|t| {
        t.iter()
            .find(|l| {
                let on_parent = parent.as_ref().is_some_and(|p| !l.deep && same(&l.root, p));
                // Its token counts only from its own principal (see "Whose lock").
                (l.covers(res) || (deep && l.root.within(res)) || on_parent)
                    && !(l.principal == who && submitted(&lists, &l.token))
            })
            .map(|l| l.root.clone())
    });
    if let Some(root) = missing {
        return Some(lock_token_submitted(ex, &root).await);
    }
    if !lists.is_empty() && !holds(svc, store, res, &lists).await {
        return Some(super::status(ex, StatusCode::PRECONDITION_FAILED).await);
    }
    None
}

/// Whether `token` is one of the `If:` lists' state tokens (not under `Not`).
fn submitted(lists: &[List], token: &str) -> bool {
    lists.iter().any(|list| {
        list.conditions
            .iter()
            .any(|c| !c.not && c.token.as_deref() == Some(token))
    })
}

/// `423` naming the lock whose token was not submitted.
async fn lock_token_submitted(ex: &mut Exchange<'_>, root: &Resource) -> Result<(), weir::Error> {
    let mut body = Vec::with_capacity(256);
    body.extend_from_slice(XML_DECL);
    body.extend_from_slice(b"<D:error xmlns:D=\"DAV:\"><D:lock-token-submitted><D:href>");
    href(
        &mut body,
        root.path.as_ref().map(|p| p.as_str()),
        root.slash,
    );
    body.extend_from_slice(b"</D:href></D:lock-token-submitted></D:error>");
    super::xml_answer(ex, LOCKED, &body, &[]).await
}

/// One condition of an `If:` list.
#[derive(Debug, PartialEq, Eq)]
struct Condition {
    not: bool,
    /// A state token (`<...>`), else an entity tag.
    token: Option<String>,
    etag: Option<String>,
}

/// One list of an `If:` header, with the resource it is tagged with.
#[derive(Debug, PartialEq, Eq)]
struct List {
    tag: Option<String>,
    conditions: Vec<Condition>,
}

/// The request's `If:` header, parsed (RFC 4918 §10.4.2); empty when there is none.
fn if_header(ex: &Exchange<'_>) -> Result<Vec<List>, &'static str> {
    let mut lists = Vec::new();
    for value in ex.request().header_all("if") {
        let value = std::str::from_utf8(value).map_err(|_| "the If header is not UTF-8")?;
        parse_if(value, &mut lists)?;
    }
    Ok(lists)
}

fn parse_if(mut s: &str, lists: &mut Vec<List>) -> Result<(), &'static str> {
    const BAD: &str = "malformed If header";
    let mut tag = None;
    loop {
        s = s.trim_start();
        let Some(c) = s.chars().next() else {
            return Ok(());
        };
        match c {
            '<' => {
                let end = s.find('>').ok_or(BAD)?;
                tag = Some(s[1..end].to_owned());
                s = &s[end + 1..];
            }
            '(' => {
                let end = s.find(')').ok_or(BAD)?;
                let mut inner = &s[1..end];
                let mut conditions = Vec::new();
                loop {
                    inner = inner.trim_start();
                    if inner.is_empty() {
                        break;
                    }
                    let not = inner.len() >= 3 && inner[..3].eq_ignore_ascii_case("not");
                    if not {
                        inner = inner[3..].trim_start();
                    }
                    let (token, etag, rest) = match inner.chars().next() {
                        Some('<') => {
                            let e = inner.find('>').ok_or(BAD)?;
                            (Some(inner[1..e].to_owned()), None, &inner[e + 1..])
                        }
                        Some('[') => {
                            let e = inner.find(']').ok_or(BAD)?;
                            (None, Some(inner[1..e].to_owned()), &inner[e + 1..])
                        }
                        _ => return Err(BAD),
                    };
                    conditions.push(Condition { not, token, etag });
                    inner = rest;
                }
                if conditions.is_empty() {
                    return Err(BAD);
                }
                lists.push(List {
                    tag: tag.clone(),
                    conditions,
                });
                s = &s[end + 1..];
            }
            _ => return Err(BAD),
        }
    }
}

/// Whether one of the `If:` lists is true (see the module doc).
async fn holds<S: Store>(svc: &Service, store: &S, res: &Resource, lists: &[List]) -> bool {
    for list in lists {
        let target = match &list.tag {
            None => res.clone(),
            Some(url) => match resource_of_url(url) {
                Some(Ok(r)) => r,
                // A resource not of this server: no condition on it can hold.
                _ => continue,
            },
        };
        let mut etag = None;
        let mut all = true;
        for c in &list.conditions {
            let value = if let Some(token) = &c.token {
                svc.dav_locks
                    .with(|t| t.iter().any(|l| l.token == *token && l.covers(&target)))
            } else {
                if etag.is_none() {
                    etag = Some(match kind(store, target.path.as_ref()).await {
                        Ok(Kind::File(o)) => Some(super::etag_of(&o)),
                        _ => None,
                    });
                }
                let wanted = c.etag.as_deref().unwrap_or("");
                let strip = |t: &str| t.trim_start_matches("W/").to_owned();
                etag.as_ref()
                    .and_then(|e| e.as_deref())
                    .is_some_and(|e| strip(e) == strip(wanted))
            };
            if value == c.not {
                all = false;
                break;
            }
        }
        if all {
            return true;
        }
    }
    false
}

/// A fresh lock token: a version 4 UUID as an `opaquelocktoken:` URI (RFC 4918 Appendix C).
fn new_token() -> std::io::Result<String> {
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = crate::serve::reply::hex(&b);
    Ok(format!(
        "opaquelocktoken:{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

/// The `Timeout` asked for (RFC 4918 §10.7), at most [`MAX_TIMEOUT`].
fn timeout(ex: &Exchange<'_>) -> Duration {
    let asked = ex.request().header_str("timeout").unwrap_or("");
    for part in asked.split(',') {
        let part = part.trim();
        if part.eq_ignore_ascii_case("infinite") {
            return MAX_TIMEOUT;
        }
        if let Some(secs) = part.strip_prefix("Second-").and_then(|s| s.parse().ok()) {
            return Duration::from_secs(secs).min(MAX_TIMEOUT);
        }
    }
    MAX_TIMEOUT
}

/// Appends a lock's `activelock` element.
fn active_lock(out: &mut Vec<u8>, lock: &Lock) {
    let scope = if lock.exclusive {
        "exclusive"
    } else {
        "shared"
    };
    let depth = if lock.deep { "infinity" } else { "0" };
    let _ = write!(
        out,
        "<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope><D:{scope}/>\
         </D:lockscope><D:depth>{depth}</D:depth>"
    );
    if !lock.owner.is_empty() {
        out.extend_from_slice(b"<D:owner>");
        out.extend_from_slice(&lock.owner);
        out.extend_from_slice(b"</D:owner>");
    }
    let _ = write!(
        out,
        "<D:timeout>Second-{}</D:timeout><D:locktoken><D:href>{}</D:href></D:locktoken>\
         <D:lockroot><D:href>",
        lock.timeout.as_secs(),
        lock.token
    );
    href(
        out,
        lock.root.path.as_ref().map(|p| p.as_str()),
        lock.root.slash,
    );
    out.extend_from_slice(b"</D:href></D:lockroot></D:activelock>");
}

/// Appends the `lockdiscovery` property of `res` (its locks, with those of ancestors that
/// cover it).
pub(super) fn lock_discovery(svc: &Service, out: &mut Vec<u8>, res: &Resource) {
    out.extend_from_slice(b"<D:lockdiscovery>");
    svc.dav_locks.with(|t| {
        for lock in t.iter().filter(|l| l.covers(res)) {
            active_lock(out, lock);
        }
    });
    out.extend_from_slice(b"</D:lockdiscovery>");
}

/// The `supportedlock` property: exclusive and shared write locks.
pub(super) const SUPPORTED_LOCK: &str = "<D:supportedlock><D:lockentry><D:lockscope><D:exclusive/>\
    </D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry><D:lockentry><D:lockscope>\
    <D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock>";

/// `LOCK`: a new lock, or a refresh (no body, the token in `If:`).
pub(super) async fn lock<S: Store>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    let body = match xml::read_body(ex).await.and_then(|b| xml::parse(&b)) {
        Ok(body) => body,
        Err(e) => return e.answer(ex).await,
    };
    let Some(info) = body else {
        return refresh(svc, ex, &res).await;
    };
    let Some((exclusive, owner)) = lock_info(&info) else {
        let why = "a LOCK body is a DAV:lockinfo with a write lock's scope";
        return BodyError::Invalid(why).answer(ex).await;
    };
    let deep = match ex.request().header_str("depth").map(str::trim) {
        None => true,
        Some(d) if d.eq_ignore_ascii_case("infinity") => true,
        Some("0") => false,
        Some(_) => {
            let why = "a LOCK's Depth is 0 or infinity";
            return BodyError::Invalid(why).answer(ex).await;
        }
    };
    // A lock on a resource another client holds is refused before anything is created.
    let conflict = svc.dav_locks.with(|t| {
        t.iter().any(|l| {
            (l.exclusive || exclusive) && (l.covers(&res) || (deep && l.root.within(&res)))
        })
    });
    if conflict {
        return super::condition(ex, LOCKED, "no-conflicting-lock").await;
    }
    // Not `check_write`: a shared lock beside another's needs no token of it; the conflict
    // rule above is the whole of what other locks decide.
    let mut status = StatusCode::OK;
    match kind(store, res.path.as_ref()).await {
        Ok(Kind::Nothing) => {
            match parent_exists(store, &res).await {
                Ok(true) => {}
                Ok(false) => return super::status(ex, StatusCode::CONFLICT).await,
                Err(e) => return super::status(ex, super::store_status(&e)).await,
            }
            let Some(path) = res.path.as_ref() else {
                unreachable!("the root is a collection");
            };
            // An empty file, created only if nothing is there meanwhile.
            let created = match store.begin(path, UploadOptions::default(), None).await {
                Ok(upload) => {
                    let check = |m: Option<&FileMeta>| m.is_none();
                    upload.commit(Some(&check)).await
                }
                Err(e) => Err(e),
            };
            match created {
                Ok(committed) => {
                    svc.on_stored(path.as_str(), &committed);
                    status = StatusCode::CREATED;
                }
                Err(StoreError::PreconditionFailed) => {}
                Err(e) => return super::status(ex, super::store_status(&e)).await,
            }
        }
        Ok(_) => {}
        Err(e) => return super::status(ex, super::store_status(&e)).await,
    }
    let token = match new_token() {
        Ok(t) => t,
        Err(e) => {
            tracing::error!(error = %e, "reading /dev/urandom for a lock token");
            return super::status(ex, StatusCode::INTERNAL_SERVER_ERROR).await;
        }
    };
    let timeout = timeout(ex);
    let lock = Lock {
        principal: principal(svc, ex),
        token: token.clone(),
        root: res,
        deep,
        exclusive,
        owner,
        timeout,
        expires: Instant::now() + timeout,
    };
    // Checked again under the table's lock: another LOCK may have taken it meanwhile.
    let taken = svc.dav_locks.with(|t| {
        let clash = t.iter().any(|l| {
            (l.exclusive || lock.exclusive)
                && (l.covers(&lock.root) || (lock.deep && l.root.within(&lock.root)))
        });
        if clash {
            Err(LOCKED)
        } else if t.len() >= MAX_LOCKS {
            Err(StatusCode::SERVICE_UNAVAILABLE)
        } else {
            t.push(lock.clone());
            Ok(())
        }
    });
    if let Err(code) = taken {
        return super::status(ex, code).await;
    }
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>");
    active_lock(&mut out, &lock);
    out.extend_from_slice(b"</D:lockdiscovery></D:prop>");
    let header = format!("<{token}>");
    super::xml_answer(ex, status, &out, &[("lock-token", &header)]).await
}

/// A `lockinfo` body: (exclusive, the owner's content); `None` unless it asks for a write lock
/// with a scope.
fn lock_info(info: &Element) -> Option<(bool, Vec<u8>)> {
    if !info.is_dav("lockinfo") {
        return None;
    }
    let scope = info.dav_child("lockscope")?;
    let exclusive = if scope.dav_child("exclusive").is_some() {
        true
    } else if scope.dav_child("shared").is_some() {
        false
    } else {
        return None;
    };
    info.dav_child("locktype")?.dav_child("write")?;
    let mut owner = Vec::new();
    if let Some(o) = info.dav_child("owner") {
        super::escape(&mut owner, &o.text);
        for child in &o.children {
            child.write(&mut owner);
        }
    }
    Some((exclusive, owner))
}

/// `LOCK` without a body: the lock named in `If:` that covers `res` lives [`timeout`] more.
async fn refresh(svc: &Service, ex: &mut Exchange<'_>, res: &Resource) -> Result<(), weir::Error> {
    let lists = match if_header(ex) {
        Ok(l) => l,
        Err(why) => return BodyError::Invalid(why).answer(ex).await,
    };
    let timeout = timeout(ex);
    let who = principal(svc, ex);
    let refreshed = svc.dav_locks.with(|t| {
        let lock = t
            .iter_mut()
            .find(|l| l.covers(res) && l.principal == who && submitted(&lists, &l.token))?;
        lock.timeout = timeout;
        lock.expires = Instant::now() + timeout;
        Some(lock.clone())
    });
    let Some(lock) = refreshed else {
        return super::condition(
            ex,
            StatusCode::PRECONDITION_FAILED,
            "lock-token-matches-request-uri",
        )
        .await;
    };
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery>");
    active_lock(&mut out, &lock);
    out.extend_from_slice(b"</D:lockdiscovery></D:prop>");
    super::xml_answer(ex, StatusCode::OK, &out, &[]).await
}

/// `UNLOCK`: the lock named by `Lock-Token`, which must cover `res`, removed.
pub(super) async fn unlock(
    svc: &Service,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    let token = ex.request().header_str("lock-token").map(|t| {
        t.trim()
            .trim_start_matches('<')
            .trim_end_matches('>')
            .to_owned()
    });
    let Some(token) = token else {
        return BodyError::Invalid("UNLOCK needs a Lock-Token")
            .answer(ex)
            .await;
    };
    let who = principal(svc, ex);
    let removed = svc.dav_locks.with(|t| {
        let i = t.iter().position(|l| l.token == token && l.covers(&res))?;
        // Another principal's lock stays (RFC 4918 §9.11: `403` when the principal may not).
        if t[i].principal != who {
            return Some(Err(()));
        }
        t.swap_remove(i);
        Some(Ok(()))
    });
    match removed {
        Some(Ok(())) => super::status(ex, StatusCode::NO_CONTENT).await,
        Some(Err(())) => super::status(ex, StatusCode::FORBIDDEN).await,
        None => super::condition(ex, StatusCode::CONFLICT, "lock-token-matches-request-uri").await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_headers_parse() {
        let mut lists = Vec::new();
        parse_if(
            "<http://h/dav/a> (<opaquelocktoken:x> [\"e\"]) (Not <DAV:no-lock> [W/\"f\"])",
            &mut lists,
        )
        .unwrap();
        assert_eq!(lists.len(), 2);
        assert_eq!(lists[0].tag.as_deref(), Some("http://h/dav/a"));
        assert_eq!(lists[1].tag.as_deref(), Some("http://h/dav/a"));
        assert_eq!(
            lists[0].conditions[0].token.as_deref(),
            Some("opaquelocktoken:x")
        );
        assert_eq!(lists[0].conditions[1].etag.as_deref(), Some("\"e\""));
        assert!(lists[1].conditions[0].not);
        for bad in ["(", "(<a>", "x", "()", "(Nat <a>)"] {
            assert!(parse_if(bad, &mut Vec::new()).is_err(), "{bad}");
        }
    }

    #[test]
    fn tokens_are_uuids() {
        let t = new_token().unwrap();
        assert_eq!(t.len(), "opaquelocktoken:".len() + 36);
        assert_ne!(t, new_token().unwrap());
    }
}
