//! `PROPFIND` (RFC 4918 §9.1).
//!
//! `PROPFIND` answers depth 0 (the resource) and depth 1 (and its members); depth infinity,
//! or no `Depth` (which means infinity), is refused with `403` and `propfind-finite-depth`
//! (§9.1 lets a server refuse it: an answer as large as the whole tree). The body is
//! `allprop` (or empty), `propname`, or `prop` with the properties wanted (`xml.rs`'s bounds).
//!
//! Live properties: `resourcetype`, `getcontentlength`, `getlastmodified`, `getetag` (the
//! `ETag` `/files/` answers: `preconditions::etag`), `getcontenttype` (the stored media type,
//! else by name, as a download's), `displayname`, `creationdate` (weir keeps no creation time:
//! the commit time of the version, as `getlastmodified`), `supportedlock`, `lockdiscovery`.
//! A folder's time is left out when the store does not know it (a bucket's prefixes). With
//! `--max-storage`, a collection has RFC 4331's `quota-used-bytes` and
//! `quota-available-bytes` (the store's usage and what is left; not in `allprop`). Any other
//! property asked for is `404` in its own `propstat`.
//!
//! Memory: a depth-1 answer is streamed (chunked) page by page through `Store::list_page`
//! ([`PAGE`] = 1,000 entries at a time, each member's `<D:response>` written into one buffer sent
//! when it passes [`FLUSH_AT`]): a folder of any size holds one page and one buffer. Each
//! file member is opened (`Store::open`) for its `ETag` and type, so the `ETag` is the same
//! `/files/` sends: a stat and an xattr read locally, a `HeadObject` in a bucket.
//!
//! Dead properties (`props.rs`) are answered with the live ones: every one for `allprop` and
//! `propname`, those asked for by name; read only when the request needs them (a file's come
//! with its opened version, a folder's are one more store call).

use super::locks::{self, SUPPORTED_LOCK};
use super::props::{self, empty_element};
use super::xml::{self, BodyError, DAV, Element};
use super::{Kind, MULTI_STATUS, Resource, XML_DECL, escape, href, kind, status};
use crate::serve::list_pages;
use crate::serve::mime;
use crate::serve::service::Service;
use http::StatusCode;
use std::io::Write;
use std::num::NonZeroUsize;
use std::time::{SystemTime, UNIX_EPOCH};
use weir::{Exchange, http};
use weir_store::{Store, StoreObject, StorePath};

/// Members listed per page of a depth-1 answer: the JSON listing's default page, so that a
/// local folder of N entries costs N/1000 directory passes, as a client paging the JSON
/// listing would (`weir-store`'s `list.rs`: each page is one pass).
const PAGE: usize = crate::serve::routes::files::listing::DEFAULT_LIMIT;
/// A depth-1 answer's buffer is sent once it holds this much.
const FLUSH_AT: usize = 64 * 1024;

/// The live properties, in the order `allprop` answers them.
const LIVE: [&str; 9] = [
    "resourcetype",
    "getcontentlength",
    "getlastmodified",
    "getetag",
    "getcontenttype",
    "displayname",
    "creationdate",
    "supportedlock",
    "lockdiscovery",
];

/// RFC 4331's quota properties: a collection's, with `--max-storage`; named by `propname`
/// and answered when asked for by name, not by `allprop` (clients that show space ask).
const QUOTA: [&str; 2] = ["quota-available-bytes", "quota-used-bytes"];

/// What a `PROPFIND` asks for.
enum Wanted {
    All,
    Names,
    /// (namespace, local name) of each property asked for.
    Some(Vec<(String, String)>),
}

/// What is known of one member, for its properties.
struct Member {
    collection: bool,
    size: u64,
    modified: SystemTime,
    etag: Option<String>,
    content_type: Option<String>,
    /// (used, limit) of the store, for a collection when `--max-storage` is set.
    quota: Option<(u64, u64)>,
    /// Its dead properties, when the request needs them (`props.rs`).
    dead: Vec<Element>,
}

/// `PROPFIND`.
pub(super) async fn propfind<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    let depth1 = match ex.request().header_str("depth").map(str::trim) {
        Some("0") => false,
        Some("1") => true,
        Some(d) if !d.eq_ignore_ascii_case("infinity") => {
            return BodyError::Invalid("Depth is 0, 1 or infinity")
                .answer(ex)
                .await;
        }
        _ => return super::condition(ex, StatusCode::FORBIDDEN, "propfind-finite-depth").await,
    };
    let body = match xml::read_body(ex).await.and_then(|b| xml::parse(&b)) {
        Ok(body) => body,
        Err(e) => return e.answer(ex).await,
    };
    let wanted = match wanted(body.as_ref()) {
        Ok(w) => w,
        Err(why) => return BodyError::Invalid(why).answer(ex).await,
    };
    let found = match kind(store, res.path.as_ref()).await {
        Ok(Kind::Nothing) => return status(ex, StatusCode::NOT_FOUND).await,
        Ok(k) => k,
        Err(e) => return status(ex, super::store_status(&e)).await,
    };
    let dead = wanted.needs_dead();
    let own = match found {
        Kind::File(object) => member_of(&object, res.path.as_ref(), dead),
        _ => Member {
            collection: true,
            size: 0,
            modified: UNIX_EPOCH,
            etag: None,
            content_type: None,
            quota: store.quota(),
            dead: folder_props(store, res.path.as_ref(), dead).await,
        },
    };
    // ALLOCATION: the answer's buffer, reused for every member and sent in pieces.
    let mut out = Vec::with_capacity(FLUSH_AT + 4096);
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<D:multistatus xmlns:D=\"DAV:\">\n");
    let own_res = Resource {
        path: res.path.clone(),
        slash: own.collection,
    };
    response(svc, &mut out, &own_res, &own, &wanted);
    if !(depth1 && own.collection) {
        out.extend_from_slice(b"</D:multistatus>\n");
        return super::xml_answer(ex, MULTI_STATUS, &out, &[]).await;
    }
    let mut writer = ex
        .respond(MULTI_STATUS)
        .header("content-type", "application/xml; charset=utf-8")
        .stream(None)
        .await?;
    let limit = NonZeroUsize::new(PAGE).expect("PAGE is not zero");
    // The store's whole quota, the same for every folder in it.
    let quota = store.quota();
    let mut after: Option<String> = None;
    loop {
        let page =
            list_pages::list_page(svc, store, res.path.as_ref(), after.as_deref(), limit).await;
        let page = match page {
            Ok(p) => p,
            // The status is sent: the answer ends without its end, so the client sees a cut
            // listing rather than a short one.
            Err(e) => return Err(weir::Error::user(format!("WebDAV listing failed: {e}"))),
        };
        for entry in &page.entries {
            // ALLOCATION: each member's store path (to open it and write its href), and for a
            // file its ETag and type as strings (`member_of`): a few small strings per member,
            // freed with it; the answer's bytes go into the one reused buffer.
            let path = match &res.path {
                Some(d) => StorePath::parse(&format!("{}/{}", d.as_str(), entry.name)),
                None => StorePath::parse(&entry.name),
            };
            let Ok(path) = path else { continue };
            let member = if entry.is_dir {
                Member {
                    collection: true,
                    size: 0,
                    modified: entry.modified,
                    etag: None,
                    content_type: None,
                    quota,
                    dead: folder_props(store, Some(&path), dead).await,
                }
            } else {
                match store.open(&path).await {
                    Ok(object) => member_of(&object, Some(&path), dead),
                    // Gone since it was listed.
                    Err(_) => continue,
                }
            };
            let member_res = Resource {
                path: Some(path),
                slash: entry.is_dir,
            };
            response(svc, &mut out, &member_res, &member, &wanted);
            if out.len() >= FLUSH_AT {
                writer.write(&out).await?;
                out.clear();
            }
        }
        after = page.next;
        if after.is_none() {
            break;
        }
    }
    out.extend_from_slice(b"</D:multistatus>\n");
    writer.write(&out).await?;
    writer.finish().await
}

/// A file's properties from its opened version.
fn member_of<O: StoreObject>(object: &O, path: Option<&StorePath>, dead: bool) -> Member {
    let name = path.map_or("", StorePath::file_name);
    let content_type = mime::content_type(object.media_type().copied(), name).to_string();
    Member {
        collection: false,
        size: object.meta().size,
        modified: object.meta().modified,
        etag: Some(super::etag_of(object)),
        content_type: Some(content_type),
        quota: None,
        dead: match dead {
            true => props::decode(object.props().as_deref()),
            false => Vec::new(),
        },
    }
}

/// A folder's dead properties when `wanted` (none for the root, or when they cannot be
/// read: a listing goes on without them).
async fn folder_props<S: Store>(store: &S, path: Option<&StorePath>, wanted: bool) -> Vec<Element> {
    match path {
        Some(path) if wanted => props::decode(store.props(path).await.ok().flatten().as_deref()),
        _ => Vec::new(),
    }
}

impl Wanted {
    /// Whether the answer shows dead properties: `allprop`, `propname`, or a property that
    /// is not live asked for.
    fn needs_dead(&self) -> bool {
        match self {
            Self::All | Self::Names => true,
            Self::Some(list) => list.iter().any(|(ns, name)| !props::is_live(ns, name)),
        }
    }
}

/// What the body asks for (none: everything).
fn wanted(body: Option<&Element>) -> Result<Wanted, &'static str> {
    let Some(root) = body else {
        return Ok(Wanted::All);
    };
    if !root.is_dav("propfind") {
        return Err("a PROPFIND body is a DAV:propfind");
    }
    if root.dav_child("allprop").is_some() {
        return Ok(Wanted::All);
    }
    if root.dav_child("propname").is_some() {
        return Ok(Wanted::Names);
    }
    let prop = root
        .dav_child("prop")
        .ok_or("a DAV:propfind holds allprop, propname or prop")?;
    Ok(Wanted::Some(
        prop.children
            .iter()
            .map(|p| (p.ns.clone(), p.name.clone()))
            .collect(),
    ))
}

/// Appends one member's `<D:response>`.
fn response(svc: &Service, out: &mut Vec<u8>, res: &Resource, m: &Member, wanted: &Wanted) {
    out.extend_from_slice(b"<D:response><D:href>");
    href(out, res.path.as_ref().map(StorePath::as_str), m.collection);
    out.extend_from_slice(b"</D:href><D:propstat><D:prop>");
    let mut missing: Vec<(&str, &str)> = Vec::new();
    match wanted {
        Wanted::All => {
            for name in LIVE {
                live(svc, out, res, m, name, false);
            }
            for p in &m.dead {
                p.write(out);
            }
        }
        Wanted::Names => {
            for name in LIVE.iter().chain(&QUOTA) {
                live(svc, out, res, m, name, true);
            }
            for p in &m.dead {
                empty_element(out, &p.ns, &p.name);
            }
        }
        Wanted::Some(props) => {
            for (ns, name) in props {
                if ns == DAV && live(svc, out, res, m, name, false) {
                    continue;
                }
                match m.dead.iter().find(|p| p.ns == *ns && p.name == *name) {
                    Some(p) => p.write(out),
                    None => missing.push((ns, name)),
                }
            }
        }
    }
    out.extend_from_slice(b"</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>");
    if !missing.is_empty() {
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for (ns, name) in missing {
            empty_element(out, ns, name);
        }
        out.extend_from_slice(b"</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>");
    }
    out.extend_from_slice(b"</D:response>\n");
}

/// Appends the live property `name` (only its name with `name_only`); `false` when the
/// member has no such property.
fn live(
    svc: &Service,
    out: &mut Vec<u8>,
    res: &Resource,
    m: &Member,
    name: &str,
    name_only: bool,
) -> bool {
    let known_time = m.modified != UNIX_EPOCH;
    let has = match name {
        "resourcetype" | "displayname" | "supportedlock" | "lockdiscovery" => true,
        "getcontentlength" | "getetag" | "getcontenttype" => !m.collection,
        "getlastmodified" | "creationdate" => known_time,
        "quota-available-bytes" | "quota-used-bytes" => m.quota.is_some(),
        _ => false,
    };
    if !has {
        return false;
    }
    if name_only {
        let _ = write!(out, "<D:{name}/>");
        return true;
    }
    match name {
        "resourcetype" if m.collection => {
            out.extend_from_slice(b"<D:resourcetype><D:collection/></D:resourcetype>");
        }
        "resourcetype" => out.extend_from_slice(b"<D:resourcetype/>"),
        "getcontentlength" => {
            let _ = write!(out, "<D:getcontentlength>{}</D:getcontentlength>", m.size);
        }
        "getlastmodified" => {
            let _ = write!(
                out,
                "<D:getlastmodified>{}</D:getlastmodified>",
                httpdate::fmt_http_date(m.modified)
            );
        }
        "creationdate" => {
            out.extend_from_slice(b"<D:creationdate>");
            rfc3339(out, m.modified);
            out.extend_from_slice(b"</D:creationdate>");
        }
        "getetag" => {
            out.extend_from_slice(b"<D:getetag>");
            escape(out, m.etag.as_deref().unwrap_or(""));
            out.extend_from_slice(b"</D:getetag>");
        }
        "getcontenttype" => {
            out.extend_from_slice(b"<D:getcontenttype>");
            escape(out, m.content_type.as_deref().unwrap_or(""));
            out.extend_from_slice(b"</D:getcontenttype>");
        }
        "displayname" => {
            out.extend_from_slice(b"<D:displayname>");
            escape(out, res.path.as_ref().map_or("", StorePath::file_name));
            out.extend_from_slice(b"</D:displayname>");
        }
        "supportedlock" => out.extend_from_slice(SUPPORTED_LOCK.as_bytes()),
        "lockdiscovery" => locks::lock_discovery(svc, out, res),
        "quota-available-bytes" | "quota-used-bytes" => {
            let (used, max) = m.quota.unwrap_or_default();
            let value = match name {
                "quota-used-bytes" => used,
                _ => max.saturating_sub(used),
            };
            let _ = write!(out, "<D:{name}>{value}</D:{name}>");
        }
        _ => unreachable!("checked above"),
    }
    true
}

/// `t` as RFC 3339 (UTC, whole seconds): `creationdate`'s format.
fn rfc3339(out: &mut Vec<u8>, t: SystemTime) {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn creation_dates_are_rfc3339() {
        let mut out = Vec::new();
        rfc3339(
            &mut out,
            UNIX_EPOCH + Duration::from_secs(951_782_400 + 3661),
        );
        assert_eq!(out, b"2000-02-29T01:01:01Z");
    }
}
