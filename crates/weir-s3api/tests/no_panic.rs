//! Hostile input never panics: random paths, queries, headers and bodies (fixed seed) through
//! routing, verification, the XML parsers and the checksum parsers. Each must answer `Ok` or an
//! `S3Error`, whatever the bytes.

use std::time::{Duration, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use weir_s3api::checksum::{ChecksumAlgorithm, ChecksumValue, ContentMd5, parse_composite};
use weir_s3api::route::{self, RouteConfig};
use weir_s3api::sigv4::{self, Credential, Request, VerifyConfig};
use weir_s3api::xml::parse;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
    /// A string of pieces that matter to the parsers.
    fn text(&mut self, pieces: &[&str], max: u64) -> String {
        (0..self.next() % max).map(|_| self.pick(pieces)).collect()
    }
}

const PATH: &[&str] = &[
    "/", "bucket", "%", "%2", "%2F", "%FF", "%C3%BC", "ü", "+", " ", "..", ".", "a", "~", "%zz",
    "?",
];
const QUERY: &[&str] = &[
    "&",
    "=",
    "uploads",
    "uploadId",
    "partNumber",
    "1",
    "0",
    "10001",
    "list-type",
    "2",
    "max-keys",
    "-1",
    "X-Amz-Signature",
    "X-Amz-Algorithm",
    "AWS4-HMAC-SHA256",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "host",
    "%",
    "%2F",
    "+",
    "acl",
    "delete",
    "location",
    "encoding-type",
    "url",
    "versionId",
    "attributes",
];
const AUTH: &[&str] = &[
    "AWS4-HMAC-SHA256",
    " ",
    ",",
    "=",
    "/",
    ";",
    "Credential",
    "SignedHeaders",
    "Signature",
    "AK",
    "20130524",
    "us-east-1",
    "s3",
    "aws4_request",
    "host",
    "x-amz-date",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
];
const XML: &[&str] = &[
    "<",
    ">",
    "/",
    "</",
    "<?xml version=\"1.0\"?>",
    "<!DOCTYPE x>",
    "<![CDATA[",
    "]]>",
    "&amp;",
    "&#",
    "&#x",
    ";",
    "&x;",
    "Delete",
    "Object",
    "Key",
    "Quiet",
    "true",
    "CompleteMultipartUpload",
    "Part",
    "PartNumber",
    "ETag",
    "1",
    "\"",
    "ChecksumCRC32",
    "AAAAAA==",
    "CreateBucketConfiguration",
    "LocationConstraint",
    " xmlns=\"a\"",
    "é",
    "\u{0}",
];

#[test]
fn routing_and_verification_never_panic() {
    let mut rng = Rng(0x0bad_5eed);
    let config = RouteConfig {
        base_domains: vec!["s3.example.com".into()],
    };
    let store = |id: &str| {
        (id == "AK").then(|| Credential {
            secret_access_key: "s".into(),
            scope: (),
        })
    };
    let now = UNIX_EPOCH + Duration::from_secs(1_369_353_600);
    for _ in 0..20_000 {
        let path = format!("/{}", rng.text(PATH, 12));
        let query = rng.text(QUERY, 16);
        let mut headers = HeaderMap::new();
        let host = format!("{}s3.example.com", rng.text(&["b", ".", "x", ":", "9"], 6));
        if let Ok(v) = HeaderValue::from_str(&host) {
            headers.insert("host", v);
        }
        if rng.next() % 2 == 0
            && let Ok(v) = HeaderValue::from_str(&rng.text(AUTH, 20))
        {
            headers.insert("authorization", v);
        }
        for (name, values) in [
            ("x-amz-date", &["20130524T000000Z", "2013", "x"][..]),
            (
                "x-amz-content-sha256",
                &[
                    "UNSIGNED-PAYLOAD",
                    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
                    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                    "zz",
                ][..],
            ),
            (
                "x-amz-decoded-content-length",
                &["10", "-1", "99999999999999999999"][..],
            ),
            ("x-amz-trailer", &["x-amz-checksum-crc32", "x"][..]),
            (
                "x-amz-copy-source",
                &["b/k", "/bucket/k%20?versionId=null", "%", "bucket"][..],
            ),
            (
                "x-amz-copy-source-range",
                &["bytes=0-1", "bytes=-", "bytes=99999999999999999999-1"][..],
            ),
            (
                "x-amz-object-attributes",
                &["ETag,ObjectParts", "", ",,", "Size", "ETag, Checksum"][..],
            ),
            (
                "x-amz-max-parts",
                &["0", "1", "-1", "99999999999999999999"][..],
            ),
            (
                "x-amz-part-number-marker",
                &["4294967295", "4294967296", "x", ""][..],
            ),
        ] {
            if rng.next() % 2 == 0 {
                headers.insert(
                    HeaderName::from_static(name),
                    HeaderValue::from_static(rng.pick(values)),
                );
            }
        }
        for method in [
            Method::GET,
            Method::PUT,
            Method::POST,
            Method::DELETE,
            Method::HEAD,
        ] {
            let request = Request {
                method: &method,
                path: &path,
                query: &query,
                headers: &headers,
            };
            let _ = route::classify(&request, &config);
            if let Ok(v) = sigv4::verify(&request, &store, &VerifyConfig::default(), now) {
                let _ = v.chunked_decoder();
            }
        }
    }
}

#[test]
fn parsers_never_panic() {
    let mut rng = Rng(0xfeed_f00d);
    for _ in 0..20_000 {
        let body = rng.text(XML, 40);
        let _ = parse::complete_multipart_upload(body.as_bytes());
        let _ = parse::delete_objects(body.as_bytes());
        let _ = parse::create_bucket_configuration(body.as_bytes());
        let value = rng.text(
            &[
                "A", "=", "+", "/", "-", "1", "é", "AAAAAA==", "-0", "-10001",
            ],
            8,
        );
        for alg in ChecksumAlgorithm::ALL {
            let _ = ChecksumValue::parse_base64(alg, &value);
            let _ = parse_composite(alg, &value);
        }
        let _ = ContentMd5::parse(&value);
    }
}
