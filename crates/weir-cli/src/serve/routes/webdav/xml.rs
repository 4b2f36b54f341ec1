//! WebDAV request bodies: read whole within a bound, parsed by `quick-xml` into a small tree
//! of namespace-resolved elements that `propfind.rs` and `locks.rs` read.
//!
//! Invariants (no body can take unbounded memory or time):
//! - a body is at most [`MAX_BODY`] bytes: a `Content-Length` above it is refused before any
//!   byte is read (`413`), a chunked body as soon as it passes it;
//! - a `DOCTYPE` is refused (`400`): without a DTD no entity can be declared, so none can
//!   expand; of references, only XML's five predefined ones and character references are
//!   resolved, anything else is refused;
//! - elements nest at most [`MAX_DEPTH`] deep, and a body has at most [`MAX_ELEMENTS`];
//! - an undeclared namespace prefix is refused (RFC 4918 §8.3: the body is not well formed).
//!
//! The tree is the request's whole parsed content, so it is bounded by the body: each element
//! is a name, its namespace, its text, and its children.

use quick_xml::NsReader;
use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use weir::Exchange;

/// The largest request body taken (a `PROPFIND` naming every property of RFC 4918 is under
/// 2 KiB; a `LOCK`'s owner a few hundred bytes).
pub(super) const MAX_BODY: usize = 64 * 1024;
/// The deepest element nesting taken (WebDAV's bodies are 4 or 5 deep).
pub(super) const MAX_DEPTH: usize = 32;
/// The most elements in one body.
pub(super) const MAX_ELEMENTS: usize = 4096;

/// The `DAV:` namespace.
pub(super) const DAV: &str = "DAV:";

/// One element: its namespace (`""`: none), local name, text and children.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Element {
    pub(super) ns: String,
    pub(super) name: String,
    pub(super) text: String,
    pub(super) children: Vec<Element>,
}

impl Element {
    /// Whether this is `DAV:` `name`.
    pub(super) fn is_dav(&self, name: &str) -> bool {
        self.ns == DAV && self.name == name
    }

    /// The first child that is `DAV:` `name`.
    pub(super) fn dav_child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.is_dav(name))
    }

    /// The element written back as XML, each element declaring its namespace as the default
    /// (so it needs no prefix declared outside it): a lock's owner, as the client sent it.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        out.push(b'<');
        out.extend_from_slice(self.name.as_bytes());
        out.extend_from_slice(b" xmlns=\"");
        super::escape(out, &self.ns);
        out.extend_from_slice(b"\">");
        super::escape(out, &self.text);
        for child in &self.children {
            child.write(out);
        }
        out.extend_from_slice(b"</");
        out.extend_from_slice(self.name.as_bytes());
        out.push(b'>');
    }
}

/// Why a body was refused.
#[derive(Debug)]
pub(super) enum BodyError {
    /// Over [`MAX_BODY`]: `413`.
    TooLarge,
    /// Not a body WebDAV takes: `400`, with the reason.
    Invalid(&'static str),
    /// The connection failed while reading it.
    Read(weir::Error),
}

impl BodyError {
    /// Answers the refusal (a read failure is returned: the connection is gone).
    pub(super) async fn answer(self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        use crate::serve::reply::{self, Problem};
        match self {
            Self::TooLarge => {
                let message = "a WebDAV request body is at most 64 KiB";
                reply::error(ex, Problem::TooLarge, message, &[]).await
            }
            Self::Invalid(why) => reply::error(ex, Problem::BadRequest, why, &[]).await,
            Self::Read(e) => Err(e),
        }
    }
}

/// The request body, read whole (at most [`MAX_BODY`] bytes).
pub(super) async fn read_body(ex: &mut Exchange<'_>) -> Result<Vec<u8>, BodyError> {
    if ex
        .request()
        .content_length()
        .is_some_and(|n| n > MAX_BODY as u64)
    {
        return Err(BodyError::TooLarge);
    }
    // ALLOCATION: the body, at most MAX_BODY, held while it is parsed.
    let mut body = Vec::new();
    loop {
        match ex.read_body_chunk().await {
            Ok(Some(chunk)) => {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(BodyError::TooLarge);
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(BodyError::Read(e)),
        }
    }
}

/// Parses a body into its root element (`None`: an empty body, or only whitespace).
pub(super) fn parse(body: &[u8]) -> Result<Option<Element>, BodyError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let invalid = BodyError::Invalid;
    let mut reader = NsReader::from_reader(body);
    let config = reader.config_mut();
    config.expand_empty_elements = true;
    config.check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root = None;
    let mut count = 0;
    loop {
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|_| invalid("the body is not well-formed XML"))?;
        match event {
            Event::DocType(_) => return Err(invalid("a DOCTYPE is refused in WebDAV bodies")),
            Event::Start(start) => {
                count += 1;
                if stack.len() >= MAX_DEPTH || count > MAX_ELEMENTS {
                    return Err(invalid(
                        "the XML body nests too deep or has too many elements",
                    ));
                }
                if root.is_some() {
                    return Err(invalid("the XML body has more than one root element"));
                }
                let ns = match ns {
                    // `xmlns:p=""` cannot undeclare a prefix (Namespaces in XML 1.0 §2.2).
                    ResolveResult::Bound(ns) if ns.as_ref().is_empty() => {
                        return Err(invalid("an empty namespace name"));
                    }
                    ResolveResult::Bound(ns) => String::from_utf8_lossy(ns.as_ref()).into_owned(),
                    ResolveResult::Unbound => String::new(),
                    ResolveResult::Unknown(_) => {
                        return Err(invalid("an undeclared namespace prefix"));
                    }
                };
                let name = std::str::from_utf8(start.local_name().as_ref())
                    .map_err(|_| invalid("a name is not UTF-8"))?
                    .to_owned();
                stack.push(Element {
                    ns,
                    name,
                    ..Element::default()
                });
            }
            Event::End(_) => {
                let done = stack.pop().ok_or(invalid("an unbalanced end tag"))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => root = Some(done),
                }
            }
            Event::Text(text) => {
                let text = text.decode().map_err(|_| invalid("text is not UTF-8"))?;
                match stack.last_mut() {
                    Some(e) => e.text.push_str(&text),
                    None if text.trim().is_empty() => {}
                    None => return Err(invalid("text outside the root element")),
                }
            }
            Event::CData(data) => {
                let text = data.decode().map_err(|_| invalid("text is not UTF-8"))?;
                if let Some(e) = stack.last_mut() {
                    e.text.push_str(&text);
                }
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    Ok(None) => {
                        let name = std::str::from_utf8(&reference)
                            .map_err(|_| invalid("a reference is not UTF-8"))?;
                        quick_xml::escape::resolve_predefined_entity(name)
                            .ok_or(invalid("only XML's predefined entities are taken"))?
                            .to_owned()
                    }
                    Err(_) => return Err(invalid("a bad character reference")),
                };
                if let Some(e) = stack.last_mut() {
                    e.text.push_str(&resolved);
                }
            }
            Event::Eof => break,
            // Declarations, comments, processing instructions: nothing to keep.
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(invalid("the XML body ends inside an element"));
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_are_resolved() {
        let body = br#"<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>
            <D:getetag/><x:a xmlns:x="urn:x">t&amp;&#x41;</x:a></D:prop></D:propfind>"#;
        let root = parse(body).unwrap().unwrap();
        assert!(root.is_dav("propfind"));
        let prop = root.dav_child("prop").unwrap();
        assert!(prop.children[0].is_dav("getetag"));
        assert_eq!(prop.children[1].ns, "urn:x");
        assert_eq!(prop.children[1].text, "t&A");
        let mut out = Vec::new();
        prop.children[1].write(&mut out);
        assert_eq!(out, b"<a xmlns=\"urn:x\">t&amp;A</a>");
    }

    #[test]
    fn dangerous_or_broken_bodies_are_refused() {
        let doctype = br#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>"#;
        assert!(matches!(parse(doctype), Err(BodyError::Invalid(_))));
        assert!(matches!(parse(b"<x>&a;</x>"), Err(BodyError::Invalid(_))));
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(matches!(parse(deep.as_bytes()), Err(BodyError::Invalid(_))));
        let ok = "<a>".repeat(MAX_DEPTH) + &"</a>".repeat(MAX_DEPTH);
        assert!(parse(ok.as_bytes()).unwrap().is_some());
        assert!(matches!(parse(b"<x:a/>"), Err(BodyError::Invalid(_))));
        assert!(matches!(parse(b"<a><b></a>"), Err(BodyError::Invalid(_))));
        assert!(matches!(parse(b"<a>"), Err(BodyError::Invalid(_))));
        assert!(parse(b" \n").unwrap().is_none());
    }
}
