//! GetObjectAttributes (`GET /bucket/key?attributes`), sans I/O: its request headers parsed
//! and bounded ([`AttributesParams`]), and its answer written (`GetObjectAttributesResponse`,
//! [`write()`]) from what the caller found, with only the attributes asked for, as AWS
//! documents the operation.
//!
//! Request: `x-amz-object-attributes` (required; a comma-separated list of `ETag`,
//! `Checksum`, `ObjectParts`, `StorageClass`, `ObjectSize`: a name outside it, or none, is
//! `InvalidArgument`), `x-amz-max-parts` (parts listed, default and most 1,000) and
//! `x-amz-part-number-marker` (parts listed are numbered above it).
//!
//! Answer: `ETag` without its quotes (as AWS writes it here), `Checksum` with its
//! `ChecksumType`, `ObjectParts` (`PartsCount`, and a page of `Part`s with their sizes and
//! checksums, `IsTruncated`, `NextPartNumberMarker`) for a multipart object only,
//! `StorageClass` (`STANDARD`: weir has one), `ObjectSize`.

use crate::checksum::{ChecksumAlgorithm, ChecksumType};
use crate::route::MAX_LIST;
use crate::xml::write::Xml;
use crate::{ErrorCode, S3Error};

/// Which attributes a request asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub etag: bool,
    pub checksum: bool,
    pub object_parts: bool,
    pub storage_class: bool,
    pub object_size: bool,
}

/// A GetObjectAttributes request's parameters (its headers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributesParams {
    /// `x-amz-object-attributes`.
    pub wanted: Wanted,
    /// `x-amz-max-parts`, clamped to 1,000.
    pub max_parts: u32,
    /// `x-amz-part-number-marker` (0 if none).
    pub part_number_marker: u32,
}

fn invalid(message: &'static str) -> S3Error {
    S3Error::new(ErrorCode::InvalidArgument, message)
}

impl AttributesParams {
    /// Parses the request's headers; `InvalidArgument` for a missing or unknown attribute, or a
    /// count that is not a non-negative integer.
    pub fn parse(headers: &http::HeaderMap) -> Result<Self, S3Error> {
        let mut wanted = Wanted::default();
        let mut any = false;
        // A client may send the list as one header or as several (HTTP's list syntax).
        for value in headers.get_all("x-amz-object-attributes") {
            let text = value
                .to_str()
                .map_err(|_| invalid("Invalid attribute name specified."))?;
            for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let flag = match name {
                    "ETag" => &mut wanted.etag,
                    "Checksum" => &mut wanted.checksum,
                    "ObjectParts" => &mut wanted.object_parts,
                    "StorageClass" => &mut wanted.storage_class,
                    "ObjectSize" => &mut wanted.object_size,
                    _ => return Err(invalid("Invalid attribute name specified.")),
                };
                *flag = true;
                any = true;
            }
        }
        if !any {
            return Err(invalid(
                "The x-amz-object-attributes header specifying the attributes to be retrieved \
                 is either missing or empty",
            ));
        }
        let count = |name: &str| -> Result<Option<u32>, S3Error> {
            let Some(value) = headers.get(name) else {
                return Ok(None);
            };
            let text = value.to_str().unwrap_or_default();
            let digits =
                !text.is_empty() && text.len() <= 10 && text.bytes().all(|b| b.is_ascii_digit());
            match text.parse::<u64>() {
                Ok(n) if digits => Ok(Some(u32::try_from(n).unwrap_or(u32::MAX))),
                _ => Err(invalid(
                    "A part count or marker is not a non-negative integer.",
                )),
            }
        };
        Ok(AttributesParams {
            wanted,
            max_parts: count("x-amz-max-parts")?.map_or(MAX_LIST, |n| n.min(MAX_LIST)),
            part_number_marker: count("x-amz-part-number-marker")?.unwrap_or(0),
        })
    }
}

/// One part of an object, as listed.
#[derive(Clone, Copy, Debug)]
pub struct PartAttributes<'a> {
    pub number: u32,
    pub size: u64,
    /// The part's own checksum (base64), if the object kept it.
    pub checksum: Option<(ChecksumAlgorithm, &'a str)>,
}

/// A multipart object's parts: their count, and one page of them.
#[derive(Clone, Copy, Debug)]
pub struct PartsAttributes<'a> {
    /// How many parts the object has.
    pub count: u32,
    /// The request's `x-amz-part-number-marker` and `x-amz-max-parts`.
    pub marker: u32,
    pub max_parts: u32,
    /// The page: parts numbered above `marker`, at most `max_parts` (empty when the parts'
    /// sizes were not kept).
    pub parts: &'a [PartAttributes<'a>],
    /// More parts follow the page.
    pub truncated: bool,
}

/// What the caller found of the object.
#[derive(Clone, Copy, Debug)]
pub struct ObjectAttributes<'a> {
    /// Its entity tag, without quotes.
    pub etag: &'a str,
    /// Its checksum (base64, `-N` ending a composite one), and how it was formed.
    pub checksum: Option<(ChecksumAlgorithm, &'a str, ChecksumType)>,
    /// Its parts, for a multipart object.
    pub parts: Option<PartsAttributes<'a>>,
    pub size: u64,
}

/// The `GetObjectAttributesResponse` body: the attributes `wanted`, in AWS's order.
pub fn write(wanted: Wanted, object: &ObjectAttributes<'_>) -> Vec<u8> {
    let mut xml = Xml::new();
    xml.start_document("GetObjectAttributesResponse");
    if wanted.etag {
        xml.text("ETag", object.etag);
    }
    if let (true, Some((algorithm, value, kind))) = (wanted.checksum, object.checksum) {
        xml.open("Checksum");
        xml.text(algorithm.xml_element(), value);
        xml.text("ChecksumType", kind.as_str());
        xml.close("Checksum");
    }
    if let (true, Some(parts)) = (wanted.object_parts, &object.parts) {
        xml.open("ObjectParts");
        xml.number("PartsCount", u64::from(parts.count));
        xml.number("PartNumberMarker", u64::from(parts.marker));
        let next = parts.parts.last().map_or(parts.marker, |p| p.number);
        xml.number("NextPartNumberMarker", u64::from(next));
        xml.number("MaxParts", u64::from(parts.max_parts));
        xml.boolean("IsTruncated", parts.truncated);
        for part in parts.parts {
            xml.open("Part");
            if let Some((algorithm, value)) = part.checksum {
                xml.text(algorithm.xml_element(), value);
            }
            xml.number("PartNumber", u64::from(part.number));
            xml.number("Size", part.size);
            xml.close("Part");
        }
        xml.close("ObjectParts");
    }
    if wanted.storage_class {
        xml.text("StorageClass", "STANDARD");
    }
    if wanted.object_size {
        xml.number("ObjectSize", object.size);
    }
    xml.close("GetObjectAttributesResponse");
    xml.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn the_attributes_and_the_page_are_parsed_and_bounded() {
        let p = AttributesParams::parse(&headers(&[
            ("x-amz-object-attributes", "ETag, Checksum"),
            ("x-amz-object-attributes", "ObjectSize"),
            ("x-amz-max-parts", "5000"),
            ("x-amz-part-number-marker", "2"),
        ]))
        .unwrap();
        let want = Wanted {
            etag: true,
            checksum: true,
            object_size: true,
            ..Wanted::default()
        };
        assert_eq!(p.wanted, want);
        assert_eq!((p.max_parts, p.part_number_marker), (1000, 2));
        let p = AttributesParams::parse(&headers(&[("x-amz-object-attributes", "ObjectParts")]));
        assert_eq!(p.unwrap().max_parts, 1000);
        for bad in [
            &[][..],
            &[("x-amz-object-attributes", "")],
            &[("x-amz-object-attributes", "ETag,Size")],
            &[("x-amz-object-attributes", "etag")],
            &[
                ("x-amz-object-attributes", "ETag"),
                ("x-amz-max-parts", "-1"),
            ],
            &[
                ("x-amz-object-attributes", "ETag"),
                ("x-amz-part-number-marker", "x"),
            ],
        ] {
            let e = AttributesParams::parse(&headers(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad:?}");
        }
    }

    #[test]
    fn only_the_attributes_asked_for_are_written() {
        let parts = [PartAttributes {
            number: 3,
            size: 10,
            checksum: Some((ChecksumAlgorithm::Crc32, "YAgjqw==")),
        }];
        let object = ObjectAttributes {
            etag: "sha256-ab",
            checksum: Some((
                ChecksumAlgorithm::Crc32,
                "WgDhBQ==",
                ChecksumType::FullObject,
            )),
            parts: Some(PartsAttributes {
                count: 3,
                marker: 2,
                max_parts: 1,
                parts: &parts,
                truncated: false,
            }),
            size: 12,
        };
        let all = Wanted {
            etag: true,
            checksum: true,
            object_parts: true,
            storage_class: true,
            object_size: true,
        };
        let text = String::from_utf8(write(all, &object)).unwrap();
        for piece in [
            "<ETag>sha256-ab</ETag>",
            "<Checksum><ChecksumCRC32>WgDhBQ==</ChecksumCRC32><ChecksumType>FULL_OBJECT</ChecksumType></Checksum>",
            "<PartsCount>3</PartsCount><PartNumberMarker>2</PartNumberMarker><NextPartNumberMarker>3</NextPartNumberMarker><MaxParts>1</MaxParts><IsTruncated>false</IsTruncated>",
            "<Part><ChecksumCRC32>YAgjqw==</ChecksumCRC32><PartNumber>3</PartNumber><Size>10</Size></Part>",
            "<StorageClass>STANDARD</StorageClass><ObjectSize>12</ObjectSize>",
        ] {
            assert!(text.contains(piece), "{piece} not in {text}");
        }
        let size_only = Wanted {
            object_size: true,
            ..Wanted::default()
        };
        let text = String::from_utf8(write(size_only, &object)).unwrap();
        assert!(text.contains("<ObjectSize>12</ObjectSize>"));
        assert!(!text.contains("ETag") && !text.contains("Checksum") && !text.contains("Part"));
    }
}
