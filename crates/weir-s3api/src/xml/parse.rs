//! The bounded parser of the request bodies S3 clients send: `CompleteMultipartUpload`,
//! `Delete` (DeleteObjects) and `CreateBucketConfiguration`.
//!
//! Bounds before anything is parsed: the body's size (per body type, `MalformedXML` /
//! `MaxMessageLengthExceeded` past it), the element depth ([`MAX_DEPTH`]), the number of entries
//! (10 000 parts, 1000 keys). A `DOCTYPE` is refused, so no entity can be declared; references
//! other than XML's five predefined entities and character references are refused too (quick-xml
//! reports them as their own events, which are resolved here and nowhere else). Element names
//! are matched by local name (clients send S3's namespace as default or not at all); unknown
//! elements are refused, so a misspelt field is an error instead of a silently ignored one.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::checksum::{ChecksumAlgorithm, ChecksumValue};
use crate::{ErrorCode, S3Error};

/// The deepest element nesting any of these bodies has is 3; a little room, no more.
pub const MAX_DEPTH: usize = 8;

/// The largest `CompleteMultipartUpload` body: 10 000 parts with an ETag and a SHA-256 each
/// take about 2.5 MB.
pub const MAX_COMPLETE_BODY: usize = 4 << 20;

/// The largest `Delete` body: 1000 keys of up to 1024 bytes, escaped.
pub const MAX_DELETE_BODY: usize = 2 << 20;

/// The largest `CreateBucketConfiguration` body.
pub const MAX_BUCKET_CONFIGURATION_BODY: usize = 64 << 10;

/// The most parts an upload has (S3's limit).
pub const MAX_PARTS: usize = 10_000;

/// The most keys one DeleteObjects request names (S3's limit).
pub const MAX_DELETE_KEYS: usize = 1000;

fn malformed(message: &'static str) -> S3Error {
    S3Error::new(ErrorCode::MalformedXML, message)
}

/// An element of the (bounded) body: local name, text content, children.
#[derive(Debug, Default)]
struct Element {
    name: String,
    text: String,
    children: Vec<Element>,
}

impl Element {
    /// The text of a leaf element (no children).
    fn leaf_text(&self) -> Result<&str, S3Error> {
        if self.children.is_empty() {
            Ok(&self.text)
        } else {
            Err(malformed("An element that holds text has children."))
        }
    }
}

/// Resolves a general reference: XML's five entities and character references, nothing else.
fn resolve_reference(r: &quick_xml::events::BytesRef<'_>) -> Result<char, S3Error> {
    if r.is_char_ref() {
        return r
            .resolve_char_ref()
            .ok()
            .flatten()
            .ok_or_else(|| malformed("A character reference is invalid."));
    }
    match &*r.decode().map_err(|_| malformed("The XML is not UTF-8."))? {
        "amp" => Ok('&'),
        "lt" => Ok('<'),
        "gt" => Ok('>'),
        "quot" => Ok('"'),
        "apos" => Ok('\''),
        _ => Err(malformed(
            "Entities other than XML's five predefined ones are refused.",
        )),
    }
}

/// Parses `body` into its root element, within `max` bytes and [`MAX_DEPTH`].
fn parse_tree(body: &[u8], max: usize) -> Result<Element, S3Error> {
    if body.len() > max {
        return Err(S3Error::new(
            ErrorCode::MaxMessageLengthExceeded,
            "The XML body is larger than this request allows.",
        ));
    }
    let mut reader = Reader::from_reader(body);
    let config = reader.config_mut();
    config.expand_empty_elements = true;
    config.check_end_names = true;
    let not_utf8 = || malformed("The XML is not UTF-8.");
    // The open elements, innermost last; its length is the depth.
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|_| malformed("The XML is not well-formed."))?;
        match event {
            Event::Start(e) => {
                if root.is_some() {
                    return Err(malformed("The XML has more than one root element."));
                }
                if stack.len() == MAX_DEPTH {
                    return Err(malformed("The XML is nested too deeply."));
                }
                let name =
                    std::str::from_utf8(e.local_name().into_inner()).map_err(|_| not_utf8())?;
                stack.push(Element {
                    name: name.to_owned(),
                    ..Element::default()
                });
            }
            Event::End(_) => {
                let done = stack
                    .pop()
                    .ok_or_else(|| malformed("The XML is not well-formed."))?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(done),
                    None => root = Some(done),
                }
            }
            Event::Text(t) => {
                let text = t.xml_content().map_err(|_| not_utf8())?;
                match stack.last_mut() {
                    Some(open) => open.text.push_str(&text),
                    None if text.trim().is_empty() => {}
                    None => return Err(malformed("Text outside the root element.")),
                }
            }
            Event::CData(t) => {
                let text = t.decode().map_err(|_| not_utf8())?;
                stack
                    .last_mut()
                    .ok_or_else(|| malformed("CDATA outside the root element."))?
                    .text
                    .push_str(&text);
            }
            Event::GeneralRef(r) => {
                let c = resolve_reference(&r)?;
                stack
                    .last_mut()
                    .ok_or_else(|| malformed("A reference outside the root element."))?
                    .text
                    .push(c);
            }
            Event::DocType(_) => return Err(malformed("DOCTYPE is not allowed.")),
            Event::PI(_) => return Err(malformed("Processing instructions are not allowed.")),
            Event::Decl(_) | Event::Comment(_) => {}
            // `expand_empty_elements` turns `<a/>` into Start and End.
            Event::Empty(_) => return Err(malformed("The XML is not well-formed.")),
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(malformed("The XML ends inside an element."));
    }
    root.ok_or_else(|| malformed("The XML has no root element."))
}

fn expect_root(root: &Element, name: &str) -> Result<(), S3Error> {
    if root.name == name {
        Ok(())
    } else {
        Err(malformed(
            "The XML's root element is not the one this request takes.",
        ))
    }
}

/// One part of a `CompleteMultipartUpload` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletedPart {
    /// 1 to 10000.
    pub part_number: u32,
    /// The part's ETag as the client sent it, quotes removed.
    pub etag: String,
    /// The part's checksums the client sent (`ChecksumCRC32`, …).
    pub checksums: Vec<ChecksumValue>,
}

/// Parses `CompleteMultipartUpload`: at least one part, at most 10 000, in ascending part order
/// (`InvalidPartOrder` otherwise, as S3).
///
/// A number listed again right after itself stands for that part once, named by its last entry:
/// a client that sent a part twice (two uploads of it raced) may list both answers, the one
/// that finished last last, and that is the one the upload holds; the earlier entries name a
/// version that was replaced. Nothing is lost by this leniency: the last entry's ETag must
/// still name the part recorded (`InvalidPart` otherwise), so a stale ETag listed last is
/// refused. (Amazon S3 refuses such a list; Ceph RGW takes it, and s3-tests'
/// `test_multipart_resend_first_finishes_last` sends it.) The list returned is strictly
/// ascending.
pub fn complete_multipart_upload(body: &[u8]) -> Result<Vec<CompletedPart>, S3Error> {
    let root = parse_tree(body, MAX_COMPLETE_BODY)?;
    expect_root(&root, "CompleteMultipartUpload")?;
    if root.children.len() > MAX_PARTS {
        return Err(malformed("A multipart upload has at most 10000 parts."));
    }
    let mut parts: Vec<CompletedPart> = Vec::with_capacity(root.children.len());
    for part in &root.children {
        if part.name != "Part" {
            return Err(malformed(
                "CompleteMultipartUpload holds Part elements only.",
            ));
        }
        let (mut number, mut etag, mut checksums) = (None, None, Vec::new());
        for field in &part.children {
            let text = field.leaf_text()?.trim();
            match field.name.as_str() {
                "PartNumber" => {
                    let n = text
                        .parse::<u32>()
                        .ok()
                        .filter(|n| {
                            (1..=10_000).contains(n) && text.bytes().all(|b| b.is_ascii_digit())
                        })
                        .ok_or_else(|| {
                            S3Error::new(
                                ErrorCode::InvalidArgument,
                                "Part number must be an integer between 1 and 10000, inclusive",
                            )
                        })?;
                    if number.replace(n).is_some() {
                        return Err(malformed("A part has one PartNumber."));
                    }
                }
                "ETag" => {
                    let unquoted = text
                        .strip_prefix('"')
                        .and_then(|t| t.strip_suffix('"'))
                        .unwrap_or(text);
                    if etag.replace(unquoted.to_owned()).is_some() {
                        return Err(malformed("A part has one ETag."));
                    }
                }
                name => {
                    let alg = ChecksumAlgorithm::from_xml_element(name)
                        .ok_or_else(|| malformed("A part has an unknown element."))?;
                    checksums.push(ChecksumValue::parse_base64(alg, text)?);
                }
            }
        }
        let (Some(part_number), Some(etag)) = (number, etag) else {
            return Err(malformed("A part needs PartNumber and ETag."));
        };
        let part = CompletedPart {
            part_number,
            etag,
            checksums,
        };
        match parts.last_mut() {
            Some(prev) if prev.part_number > part_number => {
                return Err(S3Error::from_code(ErrorCode::InvalidPartOrder));
            }
            Some(prev) if prev.part_number == part_number => *prev = part,
            _ => parts.push(part),
        }
    }
    if parts.is_empty() {
        return Err(malformed(
            "CompleteMultipartUpload needs at least one part.",
        ));
    }
    Ok(parts)
}

/// One key of a `Delete` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectToDelete {
    /// The key.
    pub key: String,
    /// `VersionId`, if the client named one (weir has no versions: the front end refuses or
    /// treats `null` as none).
    pub version_id: Option<String>,
}

/// A parsed `Delete` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteRequest {
    /// `<Quiet>true</Quiet>`: report errors only.
    pub quiet: bool,
    /// The keys, 1 to 1000, in the order sent.
    pub objects: Vec<ObjectToDelete>,
}

/// Parses `Delete` (DeleteObjects).
pub fn delete_objects(body: &[u8]) -> Result<DeleteRequest, S3Error> {
    let root = parse_tree(body, MAX_DELETE_BODY)?;
    expect_root(&root, "Delete")?;
    let mut request = DeleteRequest {
        quiet: false,
        objects: Vec::new(),
    };
    for child in &root.children {
        match child.name.as_str() {
            "Quiet" => {
                request.quiet = match child.leaf_text()?.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(malformed("Quiet is true or false.")),
                }
            }
            "Object" => {
                if request.objects.len() == MAX_DELETE_KEYS {
                    return Err(malformed("DeleteObjects takes at most 1000 keys."));
                }
                let (mut key, mut version_id) = (None, None);
                for field in &child.children {
                    let text = field.leaf_text()?;
                    let slot = match field.name.as_str() {
                        "Key" => &mut key,
                        "VersionId" => &mut version_id,
                        // Conditional deletes (2024) are not supported by weir yet.
                        "ETag" | "LastModifiedTime" | "Size" => {
                            return Err(S3Error::new(
                                ErrorCode::NotImplemented,
                                "Conditional DeleteObjects is not implemented.",
                            ));
                        }
                        _ => return Err(malformed("An Object has an unknown element.")),
                    };
                    if slot.replace(text.to_owned()).is_some() {
                        return Err(malformed("An Object repeats an element."));
                    }
                }
                let key = key.ok_or_else(|| malformed("An Object needs a Key."))?;
                request.objects.push(ObjectToDelete { key, version_id });
            }
            _ => return Err(malformed("Delete holds Object and Quiet elements only.")),
        }
    }
    if request.objects.is_empty() {
        return Err(malformed("DeleteObjects needs at least one key."));
    }
    Ok(request)
}

/// Parses `CreateBucketConfiguration`: the `LocationConstraint`, if any. An empty body is no
/// configuration (`None`).
pub fn create_bucket_configuration(body: &[u8]) -> Result<Option<String>, S3Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let root = parse_tree(body, MAX_BUCKET_CONFIGURATION_BODY)?;
    expect_root(&root, "CreateBucketConfiguration")?;
    let mut location = None;
    for child in &root.children {
        match child.name.as_str() {
            "LocationConstraint" => {
                if location
                    .replace(child.leaf_text()?.trim().to_owned())
                    .is_some()
                {
                    return Err(malformed("LocationConstraint is repeated."));
                }
            }
            // Directory buckets and tags: not weir's.
            "Location" | "Bucket" | "Tags" => {
                return Err(S3Error::new(
                    ErrorCode::NotImplemented,
                    "Only LocationConstraint is supported.",
                ));
            }
            _ => {
                return Err(malformed(
                    "CreateBucketConfiguration has an unknown element.",
                ));
            }
        }
    }
    Ok(location.filter(|l| !l.is_empty()))
}
