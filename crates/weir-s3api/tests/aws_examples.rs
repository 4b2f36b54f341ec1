//! AWS's published Signature V4 examples for S3 (the S3 API reference: "Examples: Signature
//! calculations", "Authenticating requests: using query parameters", "Signature calculations
//! for the Authorization header: transferring payload in multiple chunks"), with their
//! published signatures: credentials `AKIAIOSFODNN7EXAMPLE` /
//! `wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY`, 2013-05-24T00:00:00Z, us-east-1.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use sha2::{Digest, Sha256};
use weir_s3api::chunked::Event;
use weir_s3api::sigv4::{
    self, AuthKind, Credential, Payload, Request, StreamingMode, Verified, VerifyConfig,
};
use weir_s3api::{ErrorCode, S3Error};

const ACCESS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
/// Fri, 24 May 2013 00:00:00 GMT.
const EXAMPLE_TIME: u64 = 1_369_353_600;
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

fn at(offset: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs((EXAMPLE_TIME as i64 + offset) as u64)
}

fn store(id: &str) -> Option<Credential<&'static str>> {
    (id == ACCESS_KEY).then(|| Credential {
        secret_access_key: SECRET.to_owned(),
        scope: "example-scope",
    })
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

fn authorization(signed_headers: &str, signature: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/20130524/us-east-1/s3/aws4_request,SignedHeaders={signed_headers},Signature={signature}"
    )
}

fn verify(
    method: Method,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    now: SystemTime,
) -> Result<Verified<&'static str>, S3Error> {
    let request = Request {
        method: &method,
        path,
        query,
        headers,
    };
    let config = VerifyConfig {
        region: Some("us-east-1".into()),
        ..VerifyConfig::default()
    };
    sigv4::verify(&request, &store, &config, now)
}

#[test]
fn get_object_with_range() {
    let h = headers(&[
        ("host", "examplebucket.s3.amazonaws.com"),
        ("range", "bytes=0-9"),
        ("x-amz-content-sha256", EMPTY_SHA256),
        ("x-amz-date", "20130524T000000Z"),
        (
            "authorization",
            &authorization(
                "host;range;x-amz-content-sha256;x-amz-date",
                "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            ),
        ),
    ]);
    let verified = verify(Method::GET, "/test.txt", "", &h, at(0)).unwrap();
    assert_eq!(verified.access_key_id, ACCESS_KEY);
    assert_eq!(verified.scope, "example-scope");
    assert_eq!(verified.kind, AuthKind::Header);
    assert!(
        verified
            .payload
            .check_sha256(&Sha256::digest(b"").into())
            .is_ok()
    );
    // The range is signed: another range is another request. The error carries what the
    // server signed, as S3's does: here AWS's published canonical request, with the other range.
    let mut other = h.clone();
    other.insert("range", HeaderValue::from_static("bytes=0-10"));
    let err = verify(Method::GET, "/test.txt", "", &other, at(0)).unwrap_err();
    assert_eq!(err.code, ErrorCode::SignatureDoesNotMatch);
    assert_eq!(
        err.detail("CanonicalRequest"),
        Some(
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-10\n\
             x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\
             x-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\n\
             e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        )
    );
    assert_eq!(
        err.detail("SignatureProvided"),
        Some("f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    );
    assert_eq!(err.detail("AWSAccessKeyId"), Some(ACCESS_KEY));
    // With the published range and a wrong signature: the published string to sign (whose
    // last line is AWS's hash of the canonical request).
    let mut wrong = h.clone();
    let zeros = "0".repeat(64);
    wrong.insert(
        "authorization",
        HeaderValue::from_str(&authorization(
            "host;range;x-amz-content-sha256;x-amz-date",
            &zeros,
        ))
        .unwrap(),
    );
    let err = verify(Method::GET, "/test.txt", "", &wrong, at(0)).unwrap_err();
    assert_eq!(
        err.detail("StringToSign"),
        Some(
            "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972"
        )
    );
}

#[test]
fn put_object_with_signed_payload() {
    let body = b"Welcome to Amazon S3.";
    let h = headers(&[
        ("host", "examplebucket.s3.amazonaws.com"),
        ("date", "Fri, 24 May 2013 00:00:00 GMT"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        (
            "x-amz-content-sha256",
            "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
        ),
        (
            "authorization",
            &authorization(
                "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
                "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
            ),
        ),
    ]);
    // The key is `test$file.text`: sent raw or encoded, its canonical form is `test%24file.text`.
    for path in ["/test$file.text", "/test%24file.text"] {
        let verified = verify(Method::PUT, path, "", &h, at(0)).unwrap();
        assert!(
            verified
                .payload
                .check_sha256(&Sha256::digest(body).into())
                .is_ok()
        );
        let err = verified
            .payload
            .check_sha256(&Sha256::digest(b"Welcome to Amazon S3!").into())
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::XAmzContentSHA256Mismatch);
        assert_eq!(err.status(), http::StatusCode::BAD_REQUEST);
        assert!(matches!(verified.payload, Payload::Sha256(_)));
        assert_eq!(
            verified.payload.expected_sha256(),
            Some(&Sha256::digest(body).into())
        );
    }
}

#[test]
fn get_bucket_lifecycle_and_list_objects() {
    let base = [
        ("host", "examplebucket.s3.amazonaws.com"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-content-sha256", EMPTY_SHA256),
    ];
    let signed = "host;x-amz-content-sha256;x-amz-date";
    for (query, signature) in [
        (
            "lifecycle",
            "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
        ),
        (
            "max-keys=2&prefix=J",
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
        ),
        // The canonical query is sorted: the order on the wire does not matter.
        (
            "prefix=J&max-keys=2",
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
        ),
    ] {
        let auth = authorization(signed, signature);
        let mut pairs = base.to_vec();
        pairs.push(("authorization", &auth));
        let h = headers(&pairs);
        assert!(
            verify(Method::GET, "/", query, &h, at(0)).is_ok(),
            "{query}"
        );
        assert!(
            verify(Method::GET, "/", &format!("{query}&x"), &h, at(0)).is_err(),
            "{query}"
        );
    }
}

#[test]
fn presigned_get_object() {
    let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404";
    let h = headers(&[("host", "examplebucket.s3.amazonaws.com")]);
    let verified = verify(Method::GET, "/test.txt", query, &h, at(3600)).unwrap();
    assert_eq!(
        verified.kind,
        AuthKind::Presigned {
            expires_at: EXAMPLE_TIME as i64 + 86_400
        }
    );
    assert_eq!(verified.payload, Payload::Unsigned);
    assert!(verify(Method::GET, "/test.txt", query, &h, at(86_400)).is_ok());
    let err = verify(Method::GET, "/test.txt", query, &h, at(86_401)).unwrap_err();
    assert_eq!(
        (err.code, err.status()),
        (ErrorCode::AccessDenied, http::StatusCode::FORBIDDEN)
    );
    // Not yet valid beyond the allowed skew.
    assert_eq!(
        verify(Method::GET, "/test.txt", query, &h, at(-901))
            .unwrap_err()
            .code,
        ErrorCode::AccessDenied
    );
    assert!(verify(Method::GET, "/test.txt", query, &h, at(-900)).is_ok());
    // Both mechanisms at once.
    let mut both = h.clone();
    both.insert(
        "authorization",
        HeaderValue::from_str(&authorization("host", &"0".repeat(64))).unwrap(),
    );
    assert_eq!(
        verify(Method::GET, "/test.txt", query, &both, at(0))
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
    // An expiry outside 1 to 604800 can never be valid: refused as an expired URL is, even
    // when signed; a value that is not a number is a malformed URL.
    for bad in ["604801", "0", "-7"] {
        let out = query.replace("X-Amz-Expires=86400", &format!("X-Amz-Expires={bad}"));
        let e = verify(Method::GET, "/test.txt", &out, &h, at(0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::AccessDenied, "{bad}");
        assert_eq!(e.status(), 403, "{bad}");
    }
    let week = query.replace("X-Amz-Expires=86400", "X-Amz-Expires=604800");
    // A week is within the range: what fails is the signature, over another query.
    assert_eq!(
        verify(Method::GET, "/test.txt", &week, &h, at(0))
            .unwrap_err()
            .code,
        ErrorCode::SignatureDoesNotMatch
    );
    let nan = query.replace("X-Amz-Expires=86400", "X-Amz-Expires=1e3");
    assert_eq!(
        verify(Method::GET, "/test.txt", &nan, &h, at(0))
            .unwrap_err()
            .code,
        ErrorCode::AuthorizationQueryParametersError
    );
    let missing = query.replace("X-Amz-Date=20130524T000000Z&", "");
    assert_eq!(
        verify(Method::GET, "/test.txt", &missing, &h, at(0))
            .unwrap_err()
            .code,
        ErrorCode::AuthorizationQueryParametersError
    );
    let token = format!("{query}&X-Amz-Security-Token=abc");
    assert_eq!(
        verify(Method::GET, "/test.txt", &token, &h, at(0))
            .unwrap_err()
            .code,
        ErrorCode::InvalidArgument
    );
}

/// The streaming request of the chunked-upload example, with its body.
pub fn streaming_example() -> (HeaderMap, Vec<u8>) {
    let h = headers(&[
        ("host", "s3.amazonaws.com"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"),
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", "66560"),
        ("content-length", "66824"),
        (
            "authorization",
            &authorization(
                "content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class",
                "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
            ),
        ),
    ]);
    let mut body = Vec::new();
    for (size, signature) in [
        (
            65536,
            "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
        ),
        (
            1024,
            "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
        ),
        (
            0,
            "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
        ),
    ] {
        body.extend_from_slice(format!("{size:x};chunk-signature={signature}\r\n").as_bytes());
        body.extend(std::iter::repeat_n(b'a', size));
        body.extend_from_slice(b"\r\n");
    }
    assert_eq!(body.len(), 66824, "the example's Content-Length");
    (h, body)
}

fn decode(
    verified: &Verified<&'static str>,
    body: &[u8],
    pieces: &[usize],
) -> Result<Vec<u8>, S3Error> {
    let mut decoder = verified.chunked_decoder().unwrap();
    let mut out = Vec::new();
    let mut start = 0;
    for &end in pieces.iter().chain(std::iter::once(&body.len())) {
        let piece = &body[start..end];
        let mut pos = 0;
        while pos < piece.len() {
            let (used, event) = decoder.decode(&piece[pos..])?;
            if let Event::Data(r) = event {
                out.extend_from_slice(&piece[pos..][r]);
            }
            pos += used;
            if decoder.is_done() {
                break;
            }
        }
        start = end;
    }
    decoder.finish()?;
    Ok(out)
}

#[test]
fn streaming_put_object() {
    let (h, body) = streaming_example();
    let verified = verify(Method::PUT, "/examplebucket/chunkObject.txt", "", &h, at(0)).unwrap();
    assert_eq!(verified.payload, Payload::Streaming(StreamingMode::Signed));
    assert_eq!(verified.decoded_content_length, Some(66560));
    assert_eq!(decode(&verified, &body, &[]).unwrap(), vec![b'a'; 66560]);
    // Split points in the framing and in the data, and one byte at a time across each
    // chunk header.
    let mut pieces: Vec<usize> = (1..200)
        .chain(65_600..65_700)
        .chain(66_700..66_824)
        .collect();
    pieces.push(66_824);
    pieces.dedup();
    assert_eq!(
        decode(&verified, &body, &pieces[..pieces.len() - 1]).unwrap(),
        vec![b'a'; 66560]
    );
    // One byte of data changed in the second chunk: its signature no longer matches.
    let mut bad = body.clone();
    bad[65_536 + 90 + 100] = b'b';
    assert_eq!(
        decode(&verified, &bad, &[]).unwrap_err().code,
        ErrorCode::SignatureDoesNotMatch
    );
    // Without the seed's own time the chain is another: the request fails first.
    let mut later = h.clone();
    later.insert("x-amz-date", HeaderValue::from_static("20130524T000001Z"));
    assert_eq!(
        verify(
            Method::PUT,
            "/examplebucket/chunkObject.txt",
            "",
            &later,
            at(0)
        )
        .unwrap_err()
        .code,
        ErrorCode::SignatureDoesNotMatch
    );
}

#[test]
fn header_errors_carry_s3_codes() {
    let good = authorization(
        "host;x-amz-content-sha256;x-amz-date",
        "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543",
    );
    let base = |auth: &str, date: &str, sha: &str| {
        headers(&[
            ("host", "examplebucket.s3.amazonaws.com"),
            ("x-amz-date", date),
            ("x-amz-content-sha256", sha),
            ("authorization", auth),
        ])
    };
    let check = |h: &HeaderMap, now: SystemTime, code: ErrorCode| {
        assert_eq!(
            verify(Method::GET, "/", "lifecycle", h, now)
                .unwrap_err()
                .code,
            code,
            "{h:?}"
        );
    };
    check(
        &base(&good, "20130524T000000Z", EMPTY_SHA256),
        at(901),
        ErrorCode::RequestTimeTooSkewed,
    );
    check(
        &base(&good, "20130524T000000Z", EMPTY_SHA256),
        at(-901),
        ErrorCode::RequestTimeTooSkewed,
    );
    let skewed = verify(
        Method::GET,
        "/",
        "lifecycle",
        &base(&good, "20130524T000000Z", EMPTY_SHA256),
        at(901),
    )
    .unwrap_err();
    assert_eq!(skewed.detail("RequestTime"), Some("20130524T000000Z"));
    assert_eq!(
        skewed.detail("ServerTime"),
        Some("2013-05-24T00:15:01.000Z")
    );
    assert_eq!(skewed.detail("MaxAllowedSkewMilliseconds"), Some("900000"));
    check(
        &base(&good, "20130525T000000Z", EMPTY_SHA256),
        at(86_400),
        ErrorCode::AuthorizationHeaderMalformed,
    );
    check(
        &base(&good, "2013-05-24", EMPTY_SHA256),
        at(0),
        ErrorCode::AccessDenied,
    );
    check(
        &base(
            &good.replace("us-east-1", "eu-west-1"),
            "20130524T000000Z",
            EMPTY_SHA256,
        ),
        at(0),
        ErrorCode::AuthorizationHeaderMalformed,
    );
    check(
        &base(
            &good.replace("/s3/", "/ec2/"),
            "20130524T000000Z",
            EMPTY_SHA256,
        ),
        at(0),
        ErrorCode::AuthorizationHeaderMalformed,
    );
    check(
        &base(
            &good.replace(ACCESS_KEY, "AKIANOTKNOWN"),
            "20130524T000000Z",
            EMPTY_SHA256,
        ),
        at(0),
        ErrorCode::InvalidAccessKeyId,
    );
    check(
        &base(&good.replace("host;", ""), "20130524T000000Z", EMPTY_SHA256),
        at(0),
        ErrorCode::AuthorizationHeaderMalformed,
    );
    check(
        &base(&good, "20130524T000000Z", "not-a-hash"),
        at(0),
        ErrorCode::InvalidArgument,
    );
    check(
        &base(
            &good,
            "20130524T000000Z",
            "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
        ),
        at(0),
        ErrorCode::NotImplemented,
    );
    check(
        &base(
            "AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
            "20130524T000000Z",
            EMPTY_SHA256,
        ),
        at(0),
        ErrorCode::InvalidRequest,
    );
    check(
        &base(
            &good.replace("Signature=fea4", "Signature=fea5"),
            "20130524T000000Z",
            EMPTY_SHA256,
        ),
        at(0),
        ErrorCode::SignatureDoesNotMatch,
    );
    // A streaming body needs its decoded length.
    check(
        &base(
            &good,
            "20130524T000000Z",
            "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
        ),
        at(0),
        ErrorCode::MissingContentLength,
    );
    // An unsigned x-amz-* header.
    let mut extra = base(&good, "20130524T000000Z", EMPTY_SHA256);
    extra.insert("x-amz-meta-unsigned", HeaderValue::from_static("1"));
    check(&extra, at(0), ErrorCode::AccessDenied);
    // Session tokens are not weir's.
    let mut token = base(&good, "20130524T000000Z", EMPTY_SHA256);
    token.insert("x-amz-security-token", HeaderValue::from_static("t"));
    check(&token, at(0), ErrorCode::InvalidArgument);
    // Anonymous.
    check(
        &headers(&[("host", "examplebucket.s3.amazonaws.com")]),
        at(0),
        ErrorCode::AccessDenied,
    );
    let anonymous = headers(&[("host", "h")]);
    let m = Method::GET;
    assert!(!sigv4::has_credentials(&Request {
        method: &m,
        path: "/",
        query: "",
        headers: &anonymous
    }));
    // Without a configured region, any region's scope is accepted (the signature still binds it).
    let h = base(&good, "20130524T000000Z", EMPTY_SHA256);
    let request = Request {
        method: &m,
        path: "/",
        query: "lifecycle",
        headers: &h,
    };
    assert!(sigv4::verify(&request, &store, &VerifyConfig::default(), at(0)).is_ok());
}

/// A store that caches signing keys per (key id, date, region): `verify` asks the store for the
/// key, so one derivation serves a day of requests.
#[test]
fn signing_keys_can_be_cached_by_the_store() {
    use sigv4::{CredentialStore, SigningKey};
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    #[derive(Default)]
    struct Caching {
        keys: RefCell<HashMap<(String, String, String), SigningKey>>,
        derivations: Cell<u32>,
    }
    impl CredentialStore for Caching {
        type Scope = ();
        fn lookup(&self, id: &str) -> Option<Credential<()>> {
            (id == ACCESS_KEY).then(|| Credential {
                secret_access_key: SECRET.to_owned(),
                scope: (),
            })
        }
        fn signing_key(
            &self,
            id: &str,
            credential: &Credential<()>,
            date: &str,
            region: &str,
        ) -> SigningKey {
            let mut keys = self.keys.borrow_mut();
            keys.entry((id.to_owned(), date.to_owned(), region.to_owned()))
                .or_insert_with(|| {
                    self.derivations.set(self.derivations.get() + 1);
                    SigningKey::derive(&credential.secret_access_key, date, region, sigv4::SERVICE)
                })
                .clone()
        }
    }
    let store = Caching::default();
    let h = headers(&[
        ("host", "examplebucket.s3.amazonaws.com"),
        ("x-amz-date", "20130524T000000Z"),
        ("x-amz-content-sha256", EMPTY_SHA256),
        (
            "authorization",
            &authorization(
                "host;x-amz-content-sha256;x-amz-date",
                "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
            ),
        ),
    ]);
    let m = Method::GET;
    let request = Request {
        method: &m,
        path: "/",
        query: "max-keys=2&prefix=J",
        headers: &h,
    };
    for _ in 0..3 {
        assert!(sigv4::verify(&request, &store, &VerifyConfig::default(), at(0)).is_ok());
    }
    assert_eq!(store.derivations.get(), 1);
}
