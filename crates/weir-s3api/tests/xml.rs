//! S3's XML: the writers' output read back by quick-xml (escaping, `encoding-type=url`,
//! streaming by entry), the error bodies and their status table, and the bounded parser's
//! refusals (DOCTYPE, entities, size, depth, counts, order).

use std::time::{Duration, UNIX_EPOCH};

use quick_xml::Reader;
use quick_xml::events::Event;
use weir_s3api::checksum::{Checksum, ChecksumAlgorithm, ChecksumType};
use weir_s3api::xml::{errors, parse, write};
use weir_s3api::{ErrorCode, S3Error};

/// Reads a document back: every leaf element as (path, text), with references resolved.
fn leaves(doc: &[u8]) -> Vec<(String, String)> {
    let mut reader = Reader::from_reader(doc);
    reader.config_mut().expand_empty_elements = true;
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut out = Vec::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) => {
                path.push(String::from_utf8(e.local_name().into_inner().to_vec()).unwrap());
                text.clear();
            }
            Event::End(_) => {
                if !text.is_empty()
                    || out
                        .last()
                        .is_none_or(|(p, _): &(String, String)| !p.starts_with(&path.join("/")))
                {
                    out.push((path.join("/"), std::mem::take(&mut text)));
                }
                path.pop();
            }
            Event::Text(t) => text.push_str(&t.xml_content().unwrap()),
            Event::GeneralRef(r) => {
                if r.is_char_ref() {
                    text.push(r.resolve_char_ref().unwrap().unwrap());
                } else {
                    text.push(match &*r.decode().unwrap() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        other => panic!("entity {other}"),
                    });
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

fn get<'a>(leaves: &'a [(String, String)], path: &str) -> Vec<&'a str> {
    leaves
        .iter()
        .filter(|(p, _)| p == path)
        .map(|(_, t)| t.as_str())
        .collect()
}

const NASTY: [&str; 5] = [
    "a<b>c&d\"e'f",
    "ctl\u{1}\u{1f}\u{7f}\r\ttab",
    "ünïcødé/文件 名",
    "plus+space =%25/~",
    "]]>--><!--",
];

#[test]
fn listing_escapes_keys_and_reads_back() {
    let t = UNIX_EPOCH + Duration::from_millis(1_764_504_000_250);
    for url in [false, true] {
        let head = write::ListHead {
            bucket: "bucket",
            prefix: "p<&>",
            delimiter: Some("/"),
            max_keys: 1000,
            encoding_url: url,
            start_after: Some("after&"),
            continuation_token: Some("tok&en"),
        };
        let mut w = write::ListObjectsV2Writer::new(&head);
        // Streamed: the caller drains the buffer after each entry.
        let mut doc = std::mem::take(w.output_mut());
        for key in NASTY {
            w.object(&write::ObjectEntry {
                key,
                last_modified: t,
                etag: "abc\"def",
                size: 42,
                checksum_algorithm: Some(ChecksumAlgorithm::Crc64Nvme),
                owner: Some("me & co"),
            });
            doc.extend_from_slice(&std::mem::take(w.output_mut()));
        }
        w.common_prefix("dir <x>/");
        doc.extend_from_slice(&w.finish(Some("next&token")));
        let l = leaves(&doc);
        let decode = |s: &str| -> String {
            if url {
                let mut out = Vec::new();
                let b = s.as_bytes();
                let mut i = 0;
                while i < b.len() {
                    if b[i] == b'%' {
                        out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                        i += 3;
                    } else {
                        assert!(
                            b[i].is_ascii_alphanumeric() || b"-._~/".contains(&b[i]),
                            "{s}: only unreserved and / unencoded"
                        );
                        out.push(b[i]);
                        i += 1;
                    }
                }
                String::from_utf8(out).unwrap()
            } else {
                s.to_owned()
            }
        };
        let keys: Vec<String> = get(&l, "ListBucketResult/Contents/Key")
            .into_iter()
            .map(decode)
            .collect();
        assert_eq!(keys, NASTY, "url={url}");
        assert_eq!(
            get(&l, "ListBucketResult/Contents/Owner/DisplayName"),
            vec!["me & co"; NASTY.len()]
        );
        assert_eq!(get(&l, "ListBucketResult/Contents/ETag")[0], "\"abc\"def\"");
        assert_eq!(
            get(&l, "ListBucketResult/Contents/LastModified")[0],
            "2025-11-30T12:00:00.250Z"
        );
        assert_eq!(get(&l, "ListBucketResult/Contents/Size")[0], "42");
        assert_eq!(
            get(&l, "ListBucketResult/Contents/ChecksumAlgorithm")[0],
            "CRC64NVME"
        );
        assert_eq!(
            decode(get(&l, "ListBucketResult/CommonPrefixes/Prefix")[0]),
            "dir <x>/"
        );
        assert_eq!(decode(get(&l, "ListBucketResult/Prefix")[0]), "p<&>");
        assert_eq!(decode(get(&l, "ListBucketResult/StartAfter")[0]), "after&");
        assert_eq!(get(&l, "ListBucketResult/KeyCount"), ["6"]);
        assert_eq!(get(&l, "ListBucketResult/IsTruncated"), ["true"]);
        assert_eq!(
            get(&l, "ListBucketResult/NextContinuationToken"),
            ["next&token"]
        );
        assert_eq!(get(&l, "ListBucketResult/ContinuationToken"), ["tok&en"]);
        assert_eq!(
            get(&l, "ListBucketResult/EncodingType").len(),
            usize::from(url)
        );
        let text = String::from_utf8(doc).unwrap();
        assert!(text.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"));
        if !url {
            assert!(
                text.contains("ctl&#1;&#31;&#127;&#13;\ttab"),
                "control characters as references"
            );
        }
    }
}

#[test]
fn v1_url_encoding_leaves_the_prefix_as_given() {
    let head = write::ListHead {
        bucket: "b",
        prefix: "\n",
        delimiter: Some("\n"),
        max_keys: 1000,
        encoding_url: true,
        start_after: Some("a b"),
        ..write::ListHead::default()
    };
    let l = leaves(&write::ListObjectsV1Writer::new(&head).finish(false, None));
    assert_eq!(get(&l, "ListBucketResult/Prefix"), ["\n"]);
    assert_eq!(get(&l, "ListBucketResult/Delimiter"), ["%0A"]);
    assert_eq!(get(&l, "ListBucketResult/Marker"), ["a%20b"]);
}

#[test]
fn thousand_key_listing_streams_in_bounded_pieces() {
    let head = write::ListHead {
        bucket: "b",
        max_keys: 1000,
        ..write::ListHead::default()
    };
    let mut w = write::ListObjectsV1Writer::new(&head);
    let mut doc = std::mem::take(w.output_mut());
    let mut largest = 0;
    for i in 0..1000 {
        let key = format!("key-{i:04}-{}", "x".repeat(900));
        w.object(&write::ObjectEntry {
            key: &key,
            last_modified: UNIX_EPOCH,
            etag: "e",
            size: i,
            checksum_algorithm: None,
            owner: None,
        });
        let piece = std::mem::take(w.output_mut());
        largest = largest.max(piece.len());
        doc.extend_from_slice(&piece);
    }
    doc.extend_from_slice(&w.finish(true, Some("key-0999")));
    assert!(largest < 1200, "one entry at a time: {largest} bytes");
    let l = leaves(&doc);
    assert_eq!(get(&l, "ListBucketResult/Contents/Key").len(), 1000);
    assert_eq!(get(&l, "ListBucketResult/IsTruncated"), ["true"]);
    assert_eq!(get(&l, "ListBucketResult/NextMarker"), ["key-0999"]);
    assert_eq!(get(&l, "ListBucketResult/Marker"), [""]);
}

#[test]
fn other_writers_read_back() {
    let t = UNIX_EPOCH + Duration::from_secs(1_764_504_000);
    let mut w = write::ListBucketsWriter::new("owner-id", "owner & co");
    w.bucket("photos", t);
    w.bucket("logs", t);
    let l = leaves(&w.finish(Some("logs")));
    assert_eq!(
        get(&l, "ListAllMyBucketsResult/Buckets/Bucket/Name"),
        ["photos", "logs"]
    );
    assert_eq!(
        get(&l, "ListAllMyBucketsResult/Owner/DisplayName"),
        ["owner & co"]
    );
    assert_eq!(
        get(&l, "ListAllMyBucketsResult/ContinuationToken"),
        ["logs"]
    );
    assert_eq!(
        get(&l, "ListAllMyBucketsResult/Buckets/Bucket/CreationDate"),
        ["2025-11-30T12:00:00.000Z"; 2]
    );

    let crc = Checksum::of(ChecksumAlgorithm::Crc32, b"part");
    let mut w =
        write::ListPartsWriter::new("b", "k<1>", "up&id", 0, 2, Some(ChecksumAlgorithm::Crc32));
    w.part(&write::PartEntry {
        part_number: 1,
        last_modified: t,
        etag: "e1",
        size: 5 << 20,
        checksum: Some(crc),
    });
    w.part(&write::PartEntry {
        part_number: 2,
        last_modified: t,
        etag: "e2",
        size: 1,
        checksum: Some(crc),
    });
    let l = leaves(&w.finish(Some(2)));
    assert_eq!(get(&l, "ListPartsResult/Key"), ["k<1>"]);
    assert_eq!(get(&l, "ListPartsResult/UploadId"), ["up&id"]);
    assert_eq!(get(&l, "ListPartsResult/Part/PartNumber"), ["1", "2"]);
    assert_eq!(get(&l, "ListPartsResult/Part/Size"), ["5242880", "1"]);
    assert_eq!(
        get(&l, "ListPartsResult/Part/ChecksumCRC32"),
        [crc.to_base64(), crc.to_base64()]
    );
    assert_eq!(get(&l, "ListPartsResult/NextPartNumberMarker"), ["2"]);
    assert_eq!(get(&l, "ListPartsResult/IsTruncated"), ["true"]);

    let head = write::UploadsHead {
        bucket: "b",
        max_uploads: 1000,
        encoding_url: true,
        ..write::UploadsHead::default()
    };
    let mut w = write::ListUploadsWriter::new(&head);
    w.upload("a key", "id1", t);
    w.common_prefix("dir/");
    let l = leaves(&w.finish(None));
    assert_eq!(
        get(&l, "ListMultipartUploadsResult/Upload/Key"),
        ["a%20key"]
    );
    assert_eq!(
        get(&l, "ListMultipartUploadsResult/Upload/UploadId"),
        ["id1"]
    );
    assert_eq!(get(&l, "ListMultipartUploadsResult/IsTruncated"), ["false"]);

    let l = leaves(&write::initiate_multipart_upload("b", "k&", "id"));
    assert_eq!(get(&l, "InitiateMultipartUploadResult/Key"), ["k&"]);
    let l = leaves(&write::complete_multipart_upload(
        "http://h/b/k",
        "b",
        "k",
        "abc-2",
        Some((ChecksumAlgorithm::Sha256, "xyz=-2", ChecksumType::Composite)),
    ));
    assert_eq!(get(&l, "CompleteMultipartUploadResult/ETag"), ["\"abc-2\""]);
    assert_eq!(
        get(&l, "CompleteMultipartUploadResult/ChecksumSHA256"),
        ["xyz=-2"]
    );
    assert_eq!(
        get(&l, "CompleteMultipartUploadResult/ChecksumType"),
        ["COMPOSITE"]
    );
    let l = leaves(&write::copy_result(false, "e", t, Some(&crc)));
    assert_eq!(get(&l, "CopyObjectResult/ETag"), ["\"e\""]);
    assert_eq!(get(&l, "CopyObjectResult/ChecksumCRC32"), [crc.to_base64()]);
    let l = leaves(&write::copy_result(true, "e", t, None));
    assert_eq!(
        get(&l, "CopyPartResult/LastModified"),
        ["2025-11-30T12:00:00.000Z"]
    );
    assert_eq!(
        get(
            &leaves(&write::bucket_location("eu-west-1")),
            "LocationConstraint"
        ),
        ["eu-west-1"]
    );
    assert_eq!(
        get(
            &leaves(&write::bucket_location("us-east-1")),
            "LocationConstraint"
        ),
        [""]
    );

    let mut w = write::DeleteResultWriter::new(false);
    w.deleted("gone<");
    w.error("kept", &S3Error::from_code(ErrorCode::AccessDenied));
    let l = leaves(&w.finish());
    assert_eq!(get(&l, "DeleteResult/Deleted/Key"), ["gone<"]);
    assert_eq!(get(&l, "DeleteResult/Error/Code"), ["AccessDenied"]);
    let mut quiet = write::DeleteResultWriter::new(true);
    quiet.deleted("gone");
    assert!(get(&leaves(&quiet.finish()), "DeleteResult/Deleted/Key").is_empty());
}

#[test]
fn error_bodies_and_statuses() {
    let err = S3Error::new(ErrorCode::NoSuchKey, "The key <a&b> does not exist.");
    let l = leaves(&errors::error_body(&err, "/bucket/a&b", "req-1"));
    assert_eq!(get(&l, "Error/Code"), ["NoSuchKey"]);
    assert_eq!(get(&l, "Error/Message"), ["The key <a&b> does not exist."]);
    assert_eq!(get(&l, "Error/Resource"), ["/bucket/a&b"]);
    assert_eq!(get(&l, "Error/RequestId"), ["req-1"]);
    let detailed = S3Error::from_code(ErrorCode::SignatureDoesNotMatch)
        .with_detail("CanonicalRequest", "GET\n/a&b\n");
    let l = leaves(&errors::error_body(&detailed, "/a&b", "r"));
    assert_eq!(get(&l, "Error/CanonicalRequest"), ["GET\n/a&b\n"]);
    for (code, status) in [
        (ErrorCode::AccessDenied, 403),
        (ErrorCode::SignatureDoesNotMatch, 403),
        (ErrorCode::InvalidAccessKeyId, 403),
        (ErrorCode::RequestTimeTooSkewed, 403),
        (ErrorCode::AuthorizationHeaderMalformed, 400),
        (ErrorCode::XAmzContentSHA256Mismatch, 400),
        (ErrorCode::NoSuchBucket, 404),
        (ErrorCode::NoSuchUpload, 404),
        (ErrorCode::BucketNotEmpty, 409),
        (ErrorCode::MethodNotAllowed, 405),
        (ErrorCode::MissingContentLength, 411),
        (ErrorCode::PreconditionFailed, 412),
        (ErrorCode::InvalidRange, 416),
        (ErrorCode::InternalError, 500),
        (ErrorCode::NotImplemented, 501),
        (ErrorCode::SlowDown, 503),
    ] {
        assert_eq!(code.status().as_u16(), status, "{}", code.as_str());
    }
    for code in ErrorCode::ALL {
        assert!(code.status().is_client_error() || code.status().is_server_error());
        let l = leaves(&errors::error_body(&S3Error::from_code(*code), "/", "r"));
        assert_eq!(get(&l, "Error/Code"), [code.as_str()]);
    }
}

fn complete(parts: &[(u32, &str)]) -> Vec<u8> {
    let mut body =
        String::from("<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
    for (n, etag) in parts {
        body.push_str(&format!(
            "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
        ));
    }
    body.push_str("</CompleteMultipartUpload>");
    body.into_bytes()
}

#[test]
fn complete_multipart_upload_body() {
    let crc = Checksum::of(ChecksumAlgorithm::Crc32c, b"x").to_base64();
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n \
         <Part>\n  <ETag>&quot;etag1&quot;</ETag>\n  <PartNumber>1</PartNumber>\n  <ChecksumCRC32C>{crc}</ChecksumCRC32C>\n </Part>\n \
         <!-- a comment --><Part><PartNumber>3</PartNumber><ETag><![CDATA[\"etag3\"]]></ETag></Part>\n</CompleteMultipartUpload>"
    );
    let parts = parse::complete_multipart_upload(body.as_bytes()).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!((parts[0].part_number, parts[0].etag.as_str()), (1, "etag1"));
    assert_eq!(
        parts[0].checksums,
        [Checksum::of(ChecksumAlgorithm::Crc32c, b"x")]
    );
    assert_eq!((parts[1].part_number, parts[1].etag.as_str()), (3, "etag3"));

    let code = |body: &[u8]| parse::complete_multipart_upload(body).unwrap_err().code;
    assert_eq!(
        code(&complete(&[(2, "a"), (1, "b")])),
        ErrorCode::InvalidPartOrder
    );
    assert_eq!(
        code(&complete(&[(1, "a"), (2, "b"), (1, "c")])),
        ErrorCode::InvalidPartOrder
    );
    // A number listed again stands for its part once, named by its last entry.
    let parts = parse::complete_multipart_upload(&complete(&[(1, "a"), (1, "b"), (2, "c")]));
    let parts = parts.unwrap();
    let listed: Vec<_> = parts
        .iter()
        .map(|p| (p.part_number, p.etag.as_str()))
        .collect();
    assert_eq!(listed, [(1, "b"), (2, "c")]);
    assert_eq!(code(&complete(&[(0, "a")])), ErrorCode::InvalidArgument);
    assert_eq!(
        code(&complete(&[(10_001, "a")])),
        ErrorCode::InvalidArgument
    );
    assert_eq!(code(&complete(&[])), ErrorCode::MalformedXML);
    assert_eq!(code(b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber></Part></CompleteMultipartUpload>"), ErrorCode::MalformedXML);
    assert_eq!(code(b"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>a</ETag><Bogus/></Part></CompleteMultipartUpload>"), ErrorCode::MalformedXML);
    assert_eq!(code(b"<Other/>"), ErrorCode::MalformedXML);
    assert_eq!(
        code(b"<CompleteMultipartUpload><Part>"),
        ErrorCode::MalformedXML
    );
    assert_eq!(
        code(b"<CompleteMultipartUpload></Complete>"),
        ErrorCode::MalformedXML
    );
    assert_eq!(code(b"<a/><b/>"), ErrorCode::MalformedXML);
    assert_eq!(code(b""), ErrorCode::MalformedXML);
    let many: Vec<(u32, &str)> = (1..=10_000).map(|n| (n, "e")).collect();
    assert_eq!(
        parse::complete_multipart_upload(&complete(&many))
            .unwrap()
            .len(),
        10_000
    );
    let mut too_many = String::from("<CompleteMultipartUpload>");
    for _ in 0..10_001 {
        too_many.push_str("<Part><PartNumber>1</PartNumber><ETag>e</ETag></Part>");
    }
    too_many.push_str("</CompleteMultipartUpload>");
    assert_eq!(code(too_many.as_bytes()), ErrorCode::MalformedXML);
}

#[test]
fn hostile_xml_is_refused() {
    let laughs = b"<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]><Delete><Object><Key>&lol2;</Key></Object></Delete>";
    let external = b"<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><Delete><Object><Key>&x;</Key></Object></Delete>";
    let undeclared = b"<Delete><Object><Key>&x;</Key></Object></Delete>";
    let pi = b"<?xml-stylesheet href=\"x\"?><Delete><Object><Key>k</Key></Object></Delete>";
    let deep = format!(
        "<Delete>{}k{}</Delete>",
        "<Object>".repeat(10),
        "</Object>".repeat(10)
    );
    for (name, body) in [
        ("billion laughs", &laughs[..]),
        ("external entity", external),
        ("undeclared entity", undeclared),
        ("processing instruction", pi),
        ("deep", deep.as_bytes()),
    ] {
        assert_eq!(
            parse::delete_objects(body).unwrap_err().code,
            ErrorCode::MalformedXML,
            "{name}"
        );
        assert_eq!(
            parse::create_bucket_configuration(body).unwrap_err().code,
            ErrorCode::MalformedXML,
            "{name}"
        );
        assert_eq!(
            parse::complete_multipart_upload(body).unwrap_err().code,
            ErrorCode::MalformedXML,
            "{name}"
        );
    }
    let big = vec![b' '; parse::MAX_DELETE_BODY + 1];
    assert_eq!(
        parse::delete_objects(&big).unwrap_err().code,
        ErrorCode::MaxMessageLengthExceeded
    );
    let big = vec![b' '; parse::MAX_COMPLETE_BODY + 1];
    assert_eq!(
        parse::complete_multipart_upload(&big).unwrap_err().code,
        ErrorCode::MaxMessageLengthExceeded
    );
    let big = format!(
        "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
        "x".repeat(parse::MAX_BUCKET_CONFIGURATION_BODY)
    );
    assert_eq!(
        parse::create_bucket_configuration(big.as_bytes())
            .unwrap_err()
            .code,
        ErrorCode::MaxMessageLengthExceeded
    );
}

#[test]
fn delete_objects_body() {
    let body = b"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>\
        <Object><Key>a &amp; b &#x263A; &#60;</Key></Object><Object><Key><![CDATA[c<d]]></Key><VersionId>null</VersionId></Object></Delete>";
    let parsed = parse::delete_objects(body).unwrap();
    assert!(parsed.quiet);
    assert_eq!(parsed.objects[0].key, "a & b \u{263a} <");
    assert_eq!(parsed.objects[0].version_id, None);
    assert_eq!(parsed.objects[1].key, "c<d");
    assert_eq!(parsed.objects[1].version_id.as_deref(), Some("null"));
    let keys = |n: usize| {
        let mut s = String::from("<Delete>");
        for i in 0..n {
            s.push_str(&format!("<Object><Key>k{i}</Key></Object>"));
        }
        s.push_str("</Delete>");
        s.into_bytes()
    };
    assert_eq!(
        parse::delete_objects(&keys(1000)).unwrap().objects.len(),
        1000
    );
    assert_eq!(
        parse::delete_objects(&keys(1001)).unwrap_err().code,
        ErrorCode::MalformedXML
    );
    assert_eq!(
        parse::delete_objects(&keys(0)).unwrap_err().code,
        ErrorCode::MalformedXML
    );
    assert_eq!(
        parse::delete_objects(b"<Delete><Object/></Delete>")
            .unwrap_err()
            .code,
        ErrorCode::MalformedXML
    );
    assert_eq!(
        parse::delete_objects(b"<Delete><Quiet>yes</Quiet><Object><Key>k</Key></Object></Delete>")
            .unwrap_err()
            .code,
        ErrorCode::MalformedXML
    );
    assert_eq!(
        parse::delete_objects(b"<Delete><Object><Key>k</Key><ETag>e</ETag></Object></Delete>")
            .unwrap_err()
            .code,
        ErrorCode::NotImplemented
    );
}

#[test]
fn create_bucket_configuration_body() {
    assert_eq!(parse::create_bucket_configuration(b"").unwrap(), None);
    assert_eq!(parse::create_bucket_configuration(b" \n").unwrap(), None);
    let body = b"<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>";
    assert_eq!(
        parse::create_bucket_configuration(body).unwrap().as_deref(),
        Some("eu-west-1")
    );
    assert_eq!(
        parse::create_bucket_configuration(b"<CreateBucketConfiguration/>").unwrap(),
        None
    );
    assert_eq!(
        parse::create_bucket_configuration(
            b"<CreateBucketConfiguration><Foo/></CreateBucketConfiguration>"
        )
        .unwrap_err()
        .code,
        ErrorCode::MalformedXML
    );
}
