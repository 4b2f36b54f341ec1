//! Writers of S3's XML answers, one entry at a time.
//!
//! Each listing writer owns its output buffer and appends one entry per call; the caller may
//! drain the buffer between entries ([`Xml::output_mut`] / `take`) to send it on, so a listing
//! of 1000 keys needs no more memory than one entry, whatever the caller's batch. Summary
//! elements that depend on the entries (`KeyCount`, `IsTruncated`, the next markers) are
//! written by `finish`, after the entries: element order is not significant to S3 clients
//! (botocore, the Go and Java SDKs, rclone and s3cmd read by element name), and writing them
//! last is what lets the writer stream.
//!
//! With `encoding-type=url`, the keys, prefixes, delimiters and markers are percent-encoded
//! (RFC 3986 unreserved set and `/` kept; botocore decodes with `unquote_plus`, so `+` and
//! space must both be encoded, and are), and `<EncodingType>url</EncodingType>` says so.

use std::time::{SystemTime, UNIX_EPOCH};

use super::{NAMESPACE, escape_into};
use crate::checksum::{ChecksumAlgorithm, ChecksumType, ChecksumValue};
use crate::percent;

/// An XML output buffer with S3's element shapes.
#[derive(Debug, Default)]
pub struct Xml {
    out: Vec<u8>,
}

impl Xml {
    /// An empty document.
    pub fn new() -> Self {
        Xml {
            out: Vec::with_capacity(1024),
        }
    }

    /// The XML declaration and `<root xmlns="…">`.
    pub fn start_document(&mut self, root: &str) {
        self.out
            .extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<");
        self.out.extend_from_slice(root.as_bytes());
        self.out.extend_from_slice(b" xmlns=\"");
        self.out.extend_from_slice(NAMESPACE.as_bytes());
        self.out.extend_from_slice(b"\">");
    }

    /// `<tag>`.
    pub fn open(&mut self, tag: &str) {
        self.out.push(b'<');
        self.out.extend_from_slice(tag.as_bytes());
        self.out.push(b'>');
    }

    /// `</tag>`.
    pub fn close(&mut self, tag: &str) {
        self.out.extend_from_slice(b"</");
        self.out.extend_from_slice(tag.as_bytes());
        self.out.push(b'>');
    }

    /// `<tag>text</tag>`, escaped.
    pub fn text(&mut self, tag: &str, text: &str) {
        self.open(tag);
        escape_into(&mut self.out, text);
        self.close(tag);
    }

    /// `<tag>text</tag>`, percent-encoded first when `url` (`encoding-type=url`).
    pub fn key_text(&mut self, tag: &str, text: &str, url: bool) {
        if url {
            let encoded = percent::encode(text.as_bytes(), true);
            self.text(tag, &encoded);
        } else {
            self.text(tag, text);
        }
    }

    /// `<tag>n</tag>`.
    pub fn number(&mut self, tag: &str, n: u64) {
        self.open(tag);
        self.out.extend_from_slice(n.to_string().as_bytes());
        self.close(tag);
    }

    /// `<tag>true</tag>` or `false`.
    pub fn boolean(&mut self, tag: &str, b: bool) {
        self.text(tag, if b { "true" } else { "false" });
    }

    /// `<tag>2009-10-12T17:50:30.000Z</tag>`.
    pub fn time(&mut self, tag: &str, t: SystemTime) {
        self.open(tag);
        self.out.extend_from_slice(&format_timestamp(t));
        self.close(tag);
    }

    /// `<tag>"etag"</tag>`: S3's ETags are quoted; `etag` comes without quotes.
    pub fn etag(&mut self, tag: &str, etag: &str) {
        self.open(tag);
        self.out.extend_from_slice(b"&quot;");
        escape_into(&mut self.out, etag);
        self.out.extend_from_slice(b"&quot;");
        self.close(tag);
    }

    /// `<ChecksumCRC32>base64</ChecksumCRC32>` (or the algorithm's element).
    pub fn checksum(&mut self, value: &ChecksumValue) {
        let mut buf = [0u8; crate::checksum::MAX_BASE64_LEN];
        let text = value.encode_base64(&mut buf);
        self.text(value.algorithm().xml_element(), text);
    }

    /// The output so far, to drain between entries.
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        &mut self.out
    }

    /// The whole output.
    pub fn into_inner(self) -> Vec<u8> {
        self.out
    }
}

/// `t` as S3's ISO 8601 timestamp with milliseconds, UTC: `2009-10-12T17:50:30.000Z`.
pub fn format_timestamp(t: SystemTime) -> [u8; 24] {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        // Before 1970: S3 has no such objects; clamp.
        Err(_) => (0, 0),
    };
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
    let text = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{millis:03}Z");
    let mut out = [b'0'; 24];
    // Years after 9999 do not fit the format: clamp rather than write garbage.
    if text.len() == 24 {
        out.copy_from_slice(text.as_bytes());
    } else {
        out.copy_from_slice(b"9999-12-31T23:59:59.999Z");
    }
    out
}

/// Howard Hinnant's `civil_from_days`: (year, month, day) of days since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// One object of a listing.
#[derive(Clone, Debug)]
pub struct ObjectEntry<'a> {
    /// The key.
    pub key: &'a str,
    /// Last modification.
    pub last_modified: SystemTime,
    /// The ETag, without quotes.
    pub etag: &'a str,
    /// Size in bytes.
    pub size: u64,
    /// The algorithm of the object's checksum, if it has one.
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// The owner's ID and display name (V1 always, V2 with `fetch-owner=true`).
    pub owner: Option<&'a str>,
}

fn object_entry(xml: &mut Xml, entry: &ObjectEntry<'_>, url: bool) {
    xml.open("Contents");
    xml.key_text("Key", entry.key, url);
    xml.time("LastModified", entry.last_modified);
    xml.etag("ETag", entry.etag);
    xml.number("Size", entry.size);
    if let Some(alg) = entry.checksum_algorithm {
        xml.text("ChecksumAlgorithm", alg.name());
    }
    if let Some(owner) = entry.owner {
        xml.open("Owner");
        xml.text("ID", owner);
        xml.text("DisplayName", owner);
        xml.close("Owner");
    }
    xml.text("StorageClass", "STANDARD");
    xml.close("Contents");
}

fn common_prefix(xml: &mut Xml, prefix: &str, url: bool) {
    xml.open("CommonPrefixes");
    xml.key_text("Prefix", prefix, url);
    xml.close("CommonPrefixes");
}

/// `ListAllMyBucketsResult`.
#[derive(Debug)]
pub struct ListBucketsWriter {
    xml: Xml,
}

impl ListBucketsWriter {
    /// Starts the listing, with the owner of the buckets.
    pub fn new(owner_id: &str, owner_name: &str) -> Self {
        let mut xml = Xml::new();
        xml.start_document("ListAllMyBucketsResult");
        xml.open("Owner");
        xml.text("ID", owner_id);
        xml.text("DisplayName", owner_name);
        xml.close("Owner");
        xml.open("Buckets");
        ListBucketsWriter { xml }
    }

    /// One bucket.
    pub fn bucket(&mut self, name: &str, created: SystemTime) {
        self.xml.open("Bucket");
        self.xml.text("Name", name);
        self.xml.time("CreationDate", created);
        self.xml.close("Bucket");
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document, with the token of the next page if this one is not the last.
    pub fn finish(mut self, continuation_token: Option<&str>) -> Vec<u8> {
        self.xml.close("Buckets");
        if let Some(token) = continuation_token {
            self.xml.text("ContinuationToken", token);
        }
        self.xml.close("ListAllMyBucketsResult");
        self.xml.into_inner()
    }
}

/// The request side of a ListObjects answer (echoed in it).
#[derive(Clone, Debug, Default)]
pub struct ListHead<'a> {
    /// The bucket.
    pub bucket: &'a str,
    /// `prefix`.
    pub prefix: &'a str,
    /// `delimiter`, if given.
    pub delimiter: Option<&'a str>,
    /// `max-keys` (after clamping).
    pub max_keys: u32,
    /// `encoding-type=url`.
    pub encoding_url: bool,
    /// V2: `start-after`; V1: `marker`.
    pub start_after: Option<&'a str>,
    /// V2: `continuation-token`.
    pub continuation_token: Option<&'a str>,
}

/// `ListBucketResult` of ListObjectsV2.
#[derive(Debug)]
pub struct ListObjectsV2Writer {
    xml: Xml,
    url: bool,
    count: u64,
}

impl ListObjectsV2Writer {
    /// Starts the listing.
    pub fn new(head: &ListHead<'_>) -> Self {
        let url = head.encoding_url;
        let mut xml = Xml::new();
        xml.start_document("ListBucketResult");
        xml.text("Name", head.bucket);
        xml.key_text("Prefix", head.prefix, url);
        if let Some(d) = head.delimiter {
            xml.key_text("Delimiter", d, url);
        }
        xml.number("MaxKeys", u64::from(head.max_keys));
        if url {
            xml.text("EncodingType", "url");
        }
        if let Some(s) = head.start_after {
            xml.key_text("StartAfter", s, url);
        }
        if let Some(t) = head.continuation_token {
            xml.text("ContinuationToken", t);
        }
        ListObjectsV2Writer { xml, url, count: 0 }
    }

    /// One object.
    pub fn object(&mut self, entry: &ObjectEntry<'_>) {
        object_entry(&mut self.xml, entry, self.url);
        self.count += 1;
    }

    /// One common prefix (a "folder" under the delimiter).
    pub fn common_prefix(&mut self, prefix: &str) {
        common_prefix(&mut self.xml, prefix, self.url);
        self.count += 1;
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document: `KeyCount`, `IsTruncated` and, if truncated, the next token.
    pub fn finish(mut self, next_continuation_token: Option<&str>) -> Vec<u8> {
        self.xml.number("KeyCount", self.count);
        self.xml
            .boolean("IsTruncated", next_continuation_token.is_some());
        if let Some(t) = next_continuation_token {
            self.xml.text("NextContinuationToken", t);
        }
        self.xml.close("ListBucketResult");
        self.xml.into_inner()
    }
}

/// `ListBucketResult` of ListObjects (V1).
#[derive(Debug)]
pub struct ListObjectsV1Writer {
    xml: Xml,
    url: bool,
}

impl ListObjectsV1Writer {
    /// Starts the listing (`head.start_after` is the `marker`).
    pub fn new(head: &ListHead<'_>) -> Self {
        let url = head.encoding_url;
        let mut xml = Xml::new();
        xml.start_document("ListBucketResult");
        xml.text("Name", head.bucket);
        // V1 echoes `Prefix` as given even with `encoding-type=url` (S3 encodes only keys,
        // prefixes, `Delimiter`, `Marker` and `NextMarker` there, the fields SDKs decode in a
        // V1 answer; V2 encodes `Prefix` too).
        xml.text("Prefix", head.prefix);
        xml.key_text("Marker", head.start_after.unwrap_or(""), url);
        if let Some(d) = head.delimiter {
            xml.key_text("Delimiter", d, url);
        }
        xml.number("MaxKeys", u64::from(head.max_keys));
        if url {
            xml.text("EncodingType", "url");
        }
        ListObjectsV1Writer { xml, url }
    }

    /// One object.
    pub fn object(&mut self, entry: &ObjectEntry<'_>) {
        object_entry(&mut self.xml, entry, self.url);
    }

    /// One common prefix.
    pub fn common_prefix(&mut self, prefix: &str) {
        common_prefix(&mut self.xml, prefix, self.url);
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document. `next_marker`: S3 sends it only with a delimiter (clients use the
    /// last key otherwise); pass it when truncated and a delimiter was given.
    pub fn finish(mut self, is_truncated: bool, next_marker: Option<&str>) -> Vec<u8> {
        self.xml.boolean("IsTruncated", is_truncated);
        if let Some(m) = next_marker {
            self.xml.key_text("NextMarker", m, self.url);
        }
        self.xml.close("ListBucketResult");
        self.xml.into_inner()
    }
}

/// One part of a ListParts answer.
#[derive(Clone, Debug)]
pub struct PartEntry<'a> {
    /// 1 to 10000.
    pub part_number: u32,
    /// When it was uploaded.
    pub last_modified: SystemTime,
    /// Its ETag, without quotes.
    pub etag: &'a str,
    /// Its size.
    pub size: u64,
    /// Its checksum, if the upload has an algorithm.
    pub checksum: Option<ChecksumValue>,
}

/// `ListPartsResult`.
#[derive(Debug)]
pub struct ListPartsWriter {
    xml: Xml,
}

impl ListPartsWriter {
    /// Starts the listing.
    pub fn new(
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number_marker: u32,
        max_parts: u32,
        checksum_algorithm: Option<ChecksumAlgorithm>,
    ) -> Self {
        let mut xml = Xml::new();
        xml.start_document("ListPartsResult");
        xml.text("Bucket", bucket);
        xml.text("Key", key);
        xml.text("UploadId", upload_id);
        xml.number("PartNumberMarker", u64::from(part_number_marker));
        xml.number("MaxParts", u64::from(max_parts));
        xml.text("StorageClass", "STANDARD");
        if let Some(alg) = checksum_algorithm {
            xml.text("ChecksumAlgorithm", alg.name());
        }
        ListPartsWriter { xml }
    }

    /// One part.
    pub fn part(&mut self, part: &PartEntry<'_>) {
        let xml = &mut self.xml;
        xml.open("Part");
        xml.number("PartNumber", u64::from(part.part_number));
        xml.time("LastModified", part.last_modified);
        xml.etag("ETag", part.etag);
        xml.number("Size", part.size);
        if let Some(c) = &part.checksum {
            xml.checksum(c);
        }
        xml.close("Part");
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document; `next_part_number_marker` when truncated.
    pub fn finish(mut self, next_part_number_marker: Option<u32>) -> Vec<u8> {
        self.xml
            .boolean("IsTruncated", next_part_number_marker.is_some());
        if let Some(n) = next_part_number_marker {
            self.xml.number("NextPartNumberMarker", u64::from(n));
        }
        self.xml.close("ListPartsResult");
        self.xml.into_inner()
    }
}

/// The request side of ListMultipartUploads.
#[derive(Clone, Debug, Default)]
pub struct UploadsHead<'a> {
    /// The bucket.
    pub bucket: &'a str,
    /// `prefix`.
    pub prefix: &'a str,
    /// `delimiter`.
    pub delimiter: Option<&'a str>,
    /// `key-marker`.
    pub key_marker: &'a str,
    /// `upload-id-marker`.
    pub upload_id_marker: &'a str,
    /// `max-uploads`.
    pub max_uploads: u32,
    /// `encoding-type=url`.
    pub encoding_url: bool,
}

/// `ListMultipartUploadsResult`.
#[derive(Debug)]
pub struct ListUploadsWriter {
    xml: Xml,
    url: bool,
}

impl ListUploadsWriter {
    /// Starts the listing.
    pub fn new(head: &UploadsHead<'_>) -> Self {
        let url = head.encoding_url;
        let mut xml = Xml::new();
        xml.start_document("ListMultipartUploadsResult");
        xml.text("Bucket", head.bucket);
        xml.key_text("KeyMarker", head.key_marker, url);
        xml.text("UploadIdMarker", head.upload_id_marker);
        xml.key_text("Prefix", head.prefix, url);
        if let Some(d) = head.delimiter {
            xml.key_text("Delimiter", d, url);
        }
        xml.number("MaxUploads", u64::from(head.max_uploads));
        if url {
            xml.text("EncodingType", "url");
        }
        ListUploadsWriter { xml, url }
    }

    /// One upload in progress.
    pub fn upload(&mut self, key: &str, upload_id: &str, initiated: SystemTime) {
        let xml = &mut self.xml;
        xml.open("Upload");
        xml.key_text("Key", key, self.url);
        xml.text("UploadId", upload_id);
        xml.time("Initiated", initiated);
        xml.text("StorageClass", "STANDARD");
        xml.close("Upload");
    }

    /// One common prefix.
    pub fn common_prefix(&mut self, prefix: &str) {
        common_prefix(&mut self.xml, prefix, self.url);
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document; the next markers when truncated.
    pub fn finish(mut self, next: Option<(&str, &str)>) -> Vec<u8> {
        self.xml.boolean("IsTruncated", next.is_some());
        if let Some((key, upload_id)) = next {
            self.xml.key_text("NextKeyMarker", key, self.url);
            self.xml.text("NextUploadIdMarker", upload_id);
        }
        self.xml.close("ListMultipartUploadsResult");
        self.xml.into_inner()
    }
}

/// `InitiateMultipartUploadResult`.
pub fn initiate_multipart_upload(bucket: &str, key: &str, upload_id: &str) -> Vec<u8> {
    let mut xml = Xml::new();
    xml.start_document("InitiateMultipartUploadResult");
    xml.text("Bucket", bucket);
    xml.text("Key", key);
    xml.text("UploadId", upload_id);
    xml.close("InitiateMultipartUploadResult");
    xml.into_inner()
}

/// `CompleteMultipartUploadResult`. `checksum`: the object's checksum text (`base64-N` for a
/// composite one) and algorithm.
pub fn complete_multipart_upload(
    location: &str,
    bucket: &str,
    key: &str,
    etag: &str,
    checksum: Option<(ChecksumAlgorithm, &str, ChecksumType)>,
) -> Vec<u8> {
    let mut xml = Xml::new();
    xml.start_document("CompleteMultipartUploadResult");
    xml.text("Location", location);
    xml.text("Bucket", bucket);
    xml.text("Key", key);
    xml.etag("ETag", etag);
    if let Some((alg, text, kind)) = checksum {
        xml.text(alg.xml_element(), text);
        xml.text("ChecksumType", kind.as_str());
    }
    xml.close("CompleteMultipartUploadResult");
    xml.into_inner()
}

/// `CopyObjectResult` (CopyObject) or, with `part`, `CopyPartResult` (UploadPartCopy).
pub fn copy_result(
    part: bool,
    etag: &str,
    last_modified: SystemTime,
    checksum: Option<&ChecksumValue>,
) -> Vec<u8> {
    let root = if part {
        "CopyPartResult"
    } else {
        "CopyObjectResult"
    };
    let mut xml = Xml::new();
    xml.start_document(root);
    xml.etag("ETag", etag);
    xml.time("LastModified", last_modified);
    if let Some(c) = checksum {
        xml.checksum(c);
    }
    xml.close(root);
    xml.into_inner()
}

/// `LocationConstraint`: empty for `us-east-1` (S3's historic answer), else the region.
pub fn bucket_location(region: &str) -> Vec<u8> {
    let mut xml = Xml::new();
    xml.start_document("LocationConstraint");
    if region != "us-east-1" {
        escape_into(xml.output_mut(), region);
    }
    xml.close("LocationConstraint");
    xml.into_inner()
}

/// `AccessControlPolicy` of GetBucketAcl and GetObjectAcl: the owner, and its one grant,
/// `FULL_CONTROL` to itself (S3's private ACL, the only one weir has).
pub fn owner_full_control(owner: &str) -> Vec<u8> {
    let mut xml = Xml::new();
    xml.start_document("AccessControlPolicy");
    xml.open("Owner");
    xml.text("ID", owner);
    xml.text("DisplayName", owner);
    xml.close("Owner");
    xml.open("AccessControlList");
    xml.open("Grant");
    xml.output_mut().extend_from_slice(
        b"<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
          xsi:type=\"CanonicalUser\">",
    );
    xml.text("ID", owner);
    xml.text("DisplayName", owner);
    xml.close("Grantee");
    xml.text("Permission", "FULL_CONTROL");
    xml.close("Grant");
    xml.close("AccessControlList");
    xml.close("AccessControlPolicy");
    xml.into_inner()
}

/// `DeleteResult` of DeleteObjects. In quiet mode, successes are not listed.
#[derive(Debug)]
pub struct DeleteResultWriter {
    xml: Xml,
    quiet: bool,
}

impl DeleteResultWriter {
    /// Starts the result.
    pub fn new(quiet: bool) -> Self {
        let mut xml = Xml::new();
        xml.start_document("DeleteResult");
        DeleteResultWriter { xml, quiet }
    }

    /// A key deleted (or absent: S3 reports both as deleted).
    pub fn deleted(&mut self, key: &str) {
        if !self.quiet {
            self.xml.open("Deleted");
            self.xml.text("Key", key);
            self.xml.close("Deleted");
        }
    }

    /// A key that could not be deleted.
    pub fn error(&mut self, key: &str, error: &crate::S3Error) {
        self.xml.open("Error");
        self.xml.text("Key", key);
        self.xml.text("Code", error.code.as_str());
        self.xml.text("Message", &error.message);
        self.xml.close("Error");
    }

    /// The output so far (drain it to stream).
    pub fn output_mut(&mut self) -> &mut Vec<u8> {
        self.xml.output_mut()
    }

    /// Ends the document.
    pub fn finish(mut self) -> Vec<u8> {
        self.xml.close("DeleteResult");
        self.xml.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        let t = UNIX_EPOCH + Duration::from_millis(1_255_369_830_123);
        assert_eq!(&format_timestamp(t), b"2009-10-12T17:50:30.123Z");
        assert_eq!(&format_timestamp(UNIX_EPOCH), b"1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(1_709_251_199);
        assert_eq!(&format_timestamp(leap), b"2024-02-29T23:59:59.000Z");
    }
}
