//! Dead properties (RFC 4918 §4, §9.2): `PROPPATCH`, and what `PROPFIND` reads of them.
//!
//! They are kept by the store with the file or folder (`Store::set_props`: locally an xattr of
//! the file or directory, in a bucket the object's or marker's metadata), so they survive a
//! restart, go with a `MOVE` (the same file, or a copy carrying them) and a `COPY`, and are
//! gone with a `DELETE`; a new `PUT` to the path is a new file, without them. Stored as the
//! properties' elements one after another, each written by `xml::Element::write` (its
//! namespace declared as the default on it, so no prefix is needed outside it), at most
//! `weir_store::MAX_PROPS` (1 KiB) in all: a `PROPPATCH` that would pass it is `507` for
//! every property and changes nothing.
//!
//! `PROPPATCH` applies its `set` and `remove` instructions in document order, all or none
//! (§9.2): a live property (`resourcetype`, `getetag`, ... : the store's, never settable) is
//! `403` `cannot-modify-protected-property`, and then every other property of the request is
//! `424` and nothing is stored.
//!
//! Two properties set the file's time instead of being kept, applied with `Store::set_modified`
//! as a `PUT`'s `X-OC-Mtime` is (`extras.rs`):
//! - ownCloud's `lastmodified` in `DAV:` (seconds since 1970, what rclone's `owncloud` and
//!   `nextcloud` vendors send to set a file's time without sending it again); on a folder, or
//!   removed, it is `403`, a value that is not seconds `409`;
//! - Windows' `Win32LastModifiedTime` (`urn:schemas-microsoft-com:`, an HTTP date: what
//!   Explorer sends after copying a file, to give it the original's time), when set on a file
//!   with a date that parses. Otherwise (a folder's, a removal, another value) it stays the
//!   dead property it was before: Explorer sets every folder's `Win32*` times, and a refusal
//!   there would fail its copy. Its siblings (`Win32CreationTime`, `Win32LastAccessTime`,
//!   `Win32FileAttributes`) are dead properties: weir keeps one time per file.
//!
//! The time is applied before the dead properties are stored: should storing them then fail,
//! the time stays set (the answer says so: `200` for it).

use super::xml::{self, BodyError, DAV, Element};
use super::{Kind, MULTI_STATUS, Resource, XML_DECL, href, kind, locks, status};
use crate::serve::service::Service;
use http::StatusCode;
use std::io::Write;
use std::time::SystemTime;
use weir::{Exchange, http};
use weir_store::{MAX_PROPS, Store, StoreError, StorePath};

/// The `DAV:` properties weir computes: never stored, never settable.
pub(super) fn is_live(ns: &str, name: &str) -> bool {
    ns == DAV
        && matches!(
            name,
            "resourcetype"
                | "getcontentlength"
                | "getlastmodified"
                | "getetag"
                | "getcontenttype"
                | "displayname"
                | "creationdate"
                | "supportedlock"
                | "lockdiscovery"
                | "quota-available-bytes"
                | "quota-used-bytes"
        )
}

/// The stored bytes as elements (nothing when absent or unreadable: a value written by
/// another version of weir is not served rather than served wrong).
pub(super) fn decode(stored: Option<&[u8]>) -> Vec<Element> {
    let Some(stored) = stored.filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    // ALLOCATION: the wrapped value, at most MAX_PROPS and a few bytes, to parse it as one
    // document.
    let mut doc = Vec::with_capacity(stored.len() + 8);
    doc.extend_from_slice(b"<r>");
    doc.extend_from_slice(stored);
    doc.extend_from_slice(b"</r>");
    match xml::parse(&doc) {
        Ok(Some(root)) => root.children,
        _ => Vec::new(),
    }
}

/// The elements as stored.
fn encode(props: &[Element]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in props {
        p.write(&mut out);
    }
    out
}

/// One instruction's outcome for a property.
struct Outcome<'a> {
    prop: &'a Element,
    status: StatusCode,
    /// The property sets the file's time (not a dead property).
    sets_time: bool,
}

impl<'a> Outcome<'a> {
    /// The outcome of a dead or live property's instruction.
    fn of(prop: &'a Element, status: StatusCode) -> Self {
        Self {
            prop,
            status,
            sets_time: false,
        }
    }
}

/// `PROPPATCH` (see the module doc).
pub(super) async fn proppatch<S: Store + Clone>(
    svc: &Service,
    store: &S,
    ex: &mut Exchange<'_>,
    res: Resource,
) -> Result<(), weir::Error> {
    let body = match xml::read_body(ex).await.and_then(|b| xml::parse(&b)) {
        Ok(Some(body)) if body.is_dav("propertyupdate") => body,
        Ok(_) => {
            let why = "a PROPPATCH body is a DAV:propertyupdate";
            return BodyError::Invalid(why).answer(ex).await;
        }
        Err(e) => return e.answer(ex).await,
    };
    if let Some(refused) = locks::check_write(svc, store, ex, &res, locks::Change::Content).await {
        return refused;
    }
    let found = match kind(store, res.path.as_ref()).await {
        Ok(Kind::Nothing) => return status(ex, StatusCode::NOT_FOUND).await,
        Ok(found) => found,
        Err(e) => return status(ex, super::store_status(&e)).await,
    };
    let current = match &res.path {
        Some(path) => match store.props(path).await {
            Ok(p) => decode(p.as_deref()),
            Err(e) => return status(ex, super::store_status(&e)).await,
        },
        None => Vec::new(),
    };
    let file = matches!(found, Kind::File(_));
    drop(found);
    let before = current.len();
    let (outcomes, changed, time) = apply(&body, current, res.path.is_some(), file);
    let failed = outcomes.iter().any(|o| o.status != StatusCode::OK);
    let outcomes = if failed {
        settle_failed(outcomes)
    } else {
        let timed = match (&res.path, time) {
            (Some(path), Some(t)) => store.set_modified(path, t).await,
            _ => Ok(()),
        };
        // Dead properties to store: one was set or removed, or a `Win32LastModifiedTime`
        // applied took the place of the dead copy an earlier version kept.
        let dead = outcomes.iter().any(|o| !o.sets_time) || changed.len() != before;
        let stored = encode(&changed);
        let saved = match (timed, &res.path, stored.len()) {
            (Err(e), _, _) => Err(e),
            (Ok(()), _, _) if !dead => Ok(()),
            (Ok(()), _, n) if n > MAX_PROPS => Err(StoreError::NoSpace),
            (Ok(()), Some(path), 0) => store.set_props(path, None).await,
            (Ok(()), Some(path), _) => store.set_props(path, Some(&stored)).await,
            (Ok(()), None, _) => unreachable!("the root's properties are refused in apply"),
        };
        match saved {
            Ok(()) => outcomes,
            Err(e) => {
                let code = super::store_status(&e);
                // A time already set stays set, and says so.
                let kept = time.is_some() && !matches!(e, StoreError::PreconditionFailed);
                outcomes
                    .into_iter()
                    .map(|o| match kept && o.sets_time {
                        true => o,
                        false => Outcome { status: code, ..o },
                    })
                    .collect()
            }
        }
    };
    let mut out = Vec::with_capacity(1024);
    out.extend_from_slice(XML_DECL);
    out.extend_from_slice(b"<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>");
    href(
        &mut out,
        res.path.as_ref().map(StorePath::as_str),
        res.slash,
    );
    out.extend_from_slice(b"</D:href>");
    // One propstat per status, the properties in the request's order.
    let mut statuses: Vec<StatusCode> = Vec::new();
    for o in &outcomes {
        if !statuses.contains(&o.status) {
            statuses.push(o.status);
        }
    }
    for code in statuses {
        out.extend_from_slice(b"<D:propstat><D:prop>");
        for o in outcomes.iter().filter(|o| o.status == code) {
            empty_element(&mut out, &o.prop.ns, &o.prop.name);
        }
        let _ = write!(
            out,
            "</D:prop><D:status>HTTP/1.1 {} {}</D:status>",
            code.as_u16(),
            code.canonical_reason().unwrap_or("")
        );
        if code == StatusCode::FORBIDDEN {
            out.extend_from_slice(b"<D:error><D:cannot-modify-protected-property/></D:error>");
        }
        out.extend_from_slice(b"</D:propstat>");
    }
    out.extend_from_slice(b"</D:response></D:multistatus>\n");
    super::xml_answer(ex, MULTI_STATUS, &out, &[]).await
}

/// ownCloud's `lastmodified`: it sets a file's time, or is refused (see the module doc).
fn is_owncloud_time(ns: &str, name: &str) -> bool {
    ns == DAV && name == "lastmodified"
}

/// The time Windows' `Win32LastModifiedTime` sets when `set` on a file (see the module doc);
/// `None`: the property is a dead one.
fn windows_time(prop: &Element, set: bool, file: bool) -> Option<SystemTime> {
    const MICROSOFT: &str = "urn:schemas-microsoft-com:";
    if !(set && file && prop.ns == MICROSOFT && prop.name == "Win32LastModifiedTime") {
        return None;
    }
    httpdate::parse_http_date(prop.text.trim()).ok()
}

/// Applies the instructions in order to `props`: each property's outcome, the properties
/// after them and the time to set (meaningful only when every outcome is `200`). `file`: the
/// resource is a file (only a file's time can be set).
fn apply(
    body: &Element,
    mut props: Vec<Element>,
    storable: bool,
    file: bool,
) -> (Vec<Outcome<'_>>, Vec<Element>, Option<SystemTime>) {
    let mut outcomes = Vec::new();
    let mut time = None;
    for op in &body.children {
        let set = op.is_dav("set");
        if !set && !op.is_dav("remove") {
            continue;
        }
        for prop in op.dav_child("prop").iter().flat_map(|p| &p.children) {
            if is_owncloud_time(&prop.ns, &prop.name) {
                let status = match (set && file, super::extras::mtime(&prop.text)) {
                    (false, _) => StatusCode::FORBIDDEN,
                    (true, None) => StatusCode::CONFLICT,
                    (true, Some(t)) => {
                        time = Some(t);
                        StatusCode::OK
                    }
                };
                let sets_time = true;
                outcomes.push(Outcome {
                    prop,
                    status,
                    sets_time,
                });
                continue;
            }
            if let Some(t) = windows_time(prop, set, file) {
                time = Some(t);
                // An earlier version kept it as a dead property: that copy goes.
                props.retain(|p| !(p.ns == prop.ns && p.name == prop.name));
                outcomes.push(Outcome {
                    prop,
                    status: StatusCode::OK,
                    sets_time: true,
                });
                continue;
            }
            if !storable || is_live(&prop.ns, &prop.name) {
                outcomes.push(Outcome::of(prop, StatusCode::FORBIDDEN));
                continue;
            }
            props.retain(|p| !(p.ns == prop.ns && p.name == prop.name));
            if set {
                props.push(copy(prop));
            }
            outcomes.push(Outcome::of(prop, StatusCode::OK));
        }
    }
    (outcomes, props, time)
}

/// After a failure nothing is stored: the properties that would have been changed are `424`.
fn settle_failed(outcomes: Vec<Outcome<'_>>) -> Vec<Outcome<'_>> {
    outcomes
        .into_iter()
        .map(|o| match o.status {
            StatusCode::OK => Outcome {
                status: StatusCode::FAILED_DEPENDENCY,
                ..o
            },
            _ => o,
        })
        .collect()
}

/// A property element, as set.
fn copy(e: &Element) -> Element {
    Element {
        ns: e.ns.clone(),
        name: e.name.clone(),
        text: e.text.clone(),
        children: e.children.iter().map(copy).collect(),
    }
}

/// `<name xmlns="ns"/>`: a property named in an answer without its value.
pub(super) fn empty_element(out: &mut Vec<u8>, ns: &str, name: &str) {
    out.push(b'<');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" xmlns=\"");
    super::escape(out, ns);
    out.extend_from_slice(b"\"/>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(xml: &str) -> Element {
        xml::parse(xml.as_bytes()).unwrap().unwrap()
    }

    #[test]
    fn instructions_apply_in_order_all_or_none() {
        let b = body(
            r#"<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z">
            <D:set><D:prop><Z:a>1</Z:a><Z:b><Z:c>x</Z:c></Z:b></D:prop></D:set>
            <D:remove><D:prop><Z:a/></D:prop></D:remove>
            <D:set><D:prop><Z:a>2</Z:a></D:prop></D:set></D:propertyupdate>"#,
        );
        let (outcomes, props, time) = apply(&b, Vec::new(), true, true);
        assert_eq!(time, None);
        assert!(outcomes.iter().all(|o| o.status == StatusCode::OK));
        let stored = encode(&props);
        assert_eq!(
            String::from_utf8(stored.clone()).unwrap(),
            r#"<b xmlns="urn:z"><c xmlns="urn:z">x</c></b><a xmlns="urn:z">2</a>"#
        );
        assert_eq!(decode(Some(&stored)), props);
        let b = body(
            r#"<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getetag>x</D:getetag>
            <D:other>y</D:other></D:prop></D:set></D:propertyupdate>"#,
        );
        let (outcomes, _, _) = apply(&b, Vec::new(), true, true);
        let outcomes = settle_failed(outcomes);
        assert_eq!(outcomes[0].status, StatusCode::FORBIDDEN);
        assert_eq!(outcomes[1].status, StatusCode::FAILED_DEPENDENCY);
    }

    #[test]
    fn owncloud_lastmodified_sets_a_files_time() {
        let set = |value: &str| {
            format!(
                r#"<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>
                <lastmodified xmlns="DAV:">{value}</lastmodified></D:prop></D:set>
                </D:propertyupdate>"#
            )
        };
        let b = body(&set("1700000000"));
        let (outcomes, props, time) = apply(&b, Vec::new(), true, true);
        assert_eq!(outcomes[0].status, StatusCode::OK);
        assert!(props.is_empty(), "not kept as a dead property");
        let want = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(time, Some(want));
        // A folder's, or a value that is not seconds: refused, nothing set.
        let (outcomes, _, time) = apply(&b, Vec::new(), true, false);
        assert_eq!((outcomes[0].status, time), (StatusCode::FORBIDDEN, None));
        let b = body(&set("yesterday"));
        let (outcomes, _, time) = apply(&b, Vec::new(), true, true);
        assert_eq!((outcomes[0].status, time), (StatusCode::CONFLICT, None));
    }

    #[test]
    fn windows_last_modified_time_sets_a_files_time_and_is_dead_elsewhere() {
        let update = |op: &str, value: &str| {
            body(&format!(
                r#"<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:">
                <D:{op}><D:prop><Z:Win32LastModifiedTime>{value}</Z:Win32LastModifiedTime>
                <Z:Win32FileAttributes>00000020</Z:Win32FileAttributes></D:prop></D:{op}>
                </D:propertyupdate>"#
            ))
        };
        let date = "Tue, 02 Jan 2024 10:00:00 GMT";
        let b = update("set", date);
        // A stale dead copy, as an earlier version kept it, goes.
        let stale = decode(Some(
            br#"<Win32LastModifiedTime xmlns="urn:schemas-microsoft-com:">x</Win32LastModifiedTime>"#,
        ));
        assert_eq!(stale.len(), 1);
        let (outcomes, props, time) = apply(&b, stale, true, true);
        assert!(outcomes.iter().all(|o| o.status == StatusCode::OK));
        assert_eq!(
            outcomes.iter().map(|o| o.sets_time).collect::<Vec<_>>(),
            [true, false]
        );
        let want = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_189_600);
        assert_eq!(time, Some(want));
        assert_eq!(
            props.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["Win32FileAttributes"],
            "the time is not kept as a dead property; the attributes are"
        );
        // A folder's, or a date that does not parse: a dead property, as any other.
        for (b, file) in [(update("set", date), false), (update("set", "soon"), true)] {
            let (outcomes, props, time) = apply(&b, Vec::new(), true, file);
            assert!(
                outcomes
                    .iter()
                    .all(|o| o.status == StatusCode::OK && !o.sets_time)
            );
            assert_eq!((props.len(), time), (2, None));
        }
        let remove = update("remove", "");
        let (outcomes, props, time) = apply(&remove, Vec::new(), true, true);
        assert!(outcomes.iter().all(|o| !o.sets_time));
        assert_eq!((props.len(), time), (0, None));
    }
}
