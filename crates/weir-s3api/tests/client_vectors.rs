//! Requests signed offline by real clients' signers (botocore, boto3's; the AWS Common Runtime,
//! aws-cli v2's and the CRT-based SDKs'), written by `vectors/gen.py`: every one must verify,
//! with its body decoded and checked as the front end would; every mutation of one (a signed
//! header's value, the path, the query, the method, any one bit of the body where the body is
//! protected, the time, the secret) must be refused.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde_json::Value;
use sha2::{Digest, Sha256};
use weir_s3api::checksum::Checksum;
use weir_s3api::chunked::Event;
use weir_s3api::sigv4::{self, Credential, Payload, Request, VerifyConfig};
use weir_s3api::{ErrorCode, S3Error};

struct Case {
    name: String,
    host: String,
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    decoded: Option<Vec<u8>>,
    mutate_body: bool,
    expires: Option<u64>,
}

struct Vectors {
    access_key: String,
    secret: String,
    now: u64,
    cases: Vec<Case>,
}

fn b64(v: &Value) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(v.as_str().unwrap())
        .unwrap()
}

fn load() -> Vectors {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/vectors/clients.json"
    ))
    .unwrap();
    let json: Value = serde_json::from_str(&text).unwrap();
    let s = |v: &Value| v.as_str().unwrap().to_owned();
    let cases = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| Case {
            name: s(&c["name"]),
            host: s(&c["host"]),
            method: s(&c["method"]),
            path: s(&c["path"]),
            query: s(&c["query"]),
            headers: c["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (s(&h[0]), s(&h[1])))
                .collect(),
            body: b64(&c["body_b64"]),
            decoded: c.get("decoded_b64").map(b64),
            mutate_body: c["mutate_body"].as_bool().unwrap(),
            expires: c.get("expires").and_then(Value::as_u64),
        })
        .collect();
    Vectors {
        access_key: s(&json["access_key"]),
        secret: s(&json["secret"]),
        now: json["now"].as_u64().unwrap(),
        cases,
    }
}

/// What the front end does with a request: verify, then check or decode the body.
fn accept(
    case: &Case,
    headers: &HeaderMap,
    body: &[u8],
    keys: &[(&str, &str)],
    now: SystemTime,
) -> Result<(), S3Error> {
    let method = Method::from_bytes(case.method.as_bytes()).unwrap();
    let request = Request {
        method: &method,
        path: &case.path,
        query: &case.query,
        headers,
    };
    let store = |id: &str| {
        keys.iter()
            .find(|(k, _)| *k == id)
            .map(|(_, secret)| Credential {
                secret_access_key: secret.to_string(),
                scope: id.len(),
            })
    };
    let verified = sigv4::verify(
        &request,
        &store,
        &VerifyConfig {
            region: Some("us-east-1".into()),
            ..VerifyConfig::default()
        },
        now,
    )?;
    assert_eq!(
        verified.scope,
        verified.access_key_id.len(),
        "the store's scope object comes back"
    );
    match verified.payload {
        Payload::Sha256(_) => verified.payload.check_sha256(&Sha256::digest(body).into()),
        Payload::Unsigned => Ok(()),
        Payload::Streaming(_) => {
            let mut decoder = verified
                .chunked_decoder()
                .expect("a streaming payload has a decoder");
            let mut decoded = Vec::new();
            let mut pos = 0;
            let trailers = loop {
                let (used, event) = decoder.decode(&body[pos..])?;
                match event {
                    Event::Data(range) => decoded.extend_from_slice(&body[pos..][range]),
                    Event::NeedMore => {
                        if pos + used == body.len() {
                            decoder.finish()?;
                        }
                    }
                    Event::End(trailers) => {
                        assert_eq!(
                            pos + used,
                            body.len(),
                            "{}: the body ends where the framing says",
                            case.name
                        );
                        break trailers;
                    }
                }
                pos += used;
            };
            if let Some(claimed) = trailers.checksum {
                Checksum::of(claimed.algorithm(), &decoded).check(&claimed)?;
            }
            assert_eq!(
                Some(&decoded),
                case.decoded.as_ref(),
                "{}: decoded body",
                case.name
            );
            Ok(())
        }
    }
}

fn headers_of(case: &Case) -> HeaderMap {
    let mut map = HeaderMap::new();
    map.insert(
        http::header::HOST,
        HeaderValue::from_str(&case.host).unwrap(),
    );
    for (name, value) in &case.headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

fn signed_headers(case: &Case, headers: &HeaderMap) -> Vec<String> {
    let list = match headers.get("authorization") {
        Some(auth) => auth
            .to_str()
            .unwrap()
            .split("SignedHeaders=")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .to_owned(),
        None => {
            let raw = case
                .query
                .split('&')
                .find_map(|p| p.strip_prefix("X-Amz-SignedHeaders="))
                .unwrap();
            raw.replace("%3B", ";")
        }
    };
    list.split(';').map(str::to_owned).collect()
}

/// A different value of the same length class: the last character changed.
fn mutate(value: &str) -> String {
    let mut chars: Vec<char> = value.chars().collect();
    match chars.last_mut() {
        Some(c) => {
            *c = if *c == 'Z' {
                'Y'
            } else if c.is_ascii_digit() {
                if *c == '9' { '8' } else { '9' }
            } else {
                'Z'
            }
        }
        None => chars.push('Z'),
    }
    chars.into_iter().collect()
}

#[test]
fn every_vector_verifies() {
    let v = load();
    assert!(v.cases.len() >= 60, "the vectors are all there");
    let now = UNIX_EPOCH + Duration::from_secs(v.now);
    let keys = [(v.access_key.as_str(), v.secret.as_str())];
    for case in &v.cases {
        let result = accept(case, &headers_of(case), &case.body, &keys, now);
        assert!(result.is_ok(), "{}: {result:?}", case.name);
    }
}

fn refused(
    case: &Case,
    headers: &HeaderMap,
    body: &[u8],
    keys: &[(&str, &str)],
    now: SystemTime,
    what: &str,
) {
    let result = accept(case, headers, body, keys, now);
    assert!(result.is_err(), "{}: accepted with {what}", case.name);
}

#[test]
fn every_mutation_is_refused() {
    let v = load();
    let now = UNIX_EPOCH + Duration::from_secs(v.now);
    let keys = [(v.access_key.as_str(), v.secret.as_str())];
    let mut checked = 0;
    for case in &v.cases {
        let headers = headers_of(case);
        for name in signed_headers(case, &headers) {
            let mut changed = headers.clone();
            let value = headers.get(&name).unwrap().to_str().unwrap();
            changed.insert(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(&mutate(value)).unwrap(),
            );
            refused(
                case,
                &changed,
                &case.body,
                &keys,
                now,
                &format!("header {name} changed"),
            );
            checked += 1;
        }
        for path in [
            format!("{}x", case.path),
            case.path.replacen("/", "/a", 1),
            case.path.to_uppercase(),
        ] {
            if path != case.path {
                let c = Case {
                    path,
                    ..clone_case(case)
                };
                refused(&c, &headers, &case.body, &keys, now, "the path changed");
                checked += 1;
            }
        }
        let mut queries = vec![format!(
            "{}{}extra=1",
            case.query,
            if case.query.is_empty() { "" } else { "&" }
        )];
        if let Some((first, rest)) = case.query.split_once('=') {
            queries.push(format!("{first}=Z{rest}"));
        }
        for query in queries {
            let c = Case {
                query,
                ..clone_case(case)
            };
            refused(&c, &headers, &case.body, &keys, now, "the query changed");
            checked += 1;
        }
        let other = if case.method == "GET" { "PUT" } else { "GET" };
        refused(
            &Case {
                method: other.into(),
                ..clone_case(case)
            },
            &headers,
            &case.body,
            &keys,
            now,
            "another method",
        );
        let wrong_secret = [(v.access_key.as_str(), "not the secret")];
        let err = accept(case, &headers, &case.body, &wrong_secret, now).unwrap_err();
        assert_eq!(err.code, ErrorCode::SignatureDoesNotMatch, "{}", case.name);
        let err = accept(case, &headers, &case.body, &[("OTHERKEY", "x")], now).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidAccessKeyId, "{}", case.name);
        // Time: header auth allows 15 minutes of skew either way; a presigned URL its
        // X-Amz-Expires after X-Amz-Date.
        match case.expires {
            None => {
                for skew in [-901i64, 901] {
                    let then = UNIX_EPOCH + Duration::from_secs((v.now as i64 + skew) as u64);
                    let err = accept(case, &headers, &case.body, &keys, then).unwrap_err();
                    assert_eq!(err.code, ErrorCode::RequestTimeTooSkewed, "{}", case.name);
                }
                let edge = UNIX_EPOCH + Duration::from_secs(v.now + 900);
                assert!(
                    accept(case, &headers, &case.body, &keys, edge).is_ok(),
                    "{}: 15 minutes",
                    case.name
                );
            }
            Some(expires) => {
                let last = UNIX_EPOCH + Duration::from_secs(v.now + expires);
                assert!(
                    accept(case, &headers, &case.body, &keys, last).is_ok(),
                    "{}: last second",
                    case.name
                );
                let after = last + Duration::from_secs(1);
                let err = accept(case, &headers, &case.body, &keys, after).unwrap_err();
                assert_eq!(
                    (err.code, &*err.message),
                    (ErrorCode::AccessDenied, "Request has expired"),
                    "{}",
                    case.name
                );
            }
        }
        if case.mutate_body {
            // Every bit position of small bodies; a spread of positions for larger ones.
            let step = (case.body.len() / 3000).max(1);
            for i in (0..case.body.len()).step_by(step) {
                for bit in [0x01u8, 0x80] {
                    let mut body = case.body.clone();
                    body[i] ^= bit;
                    refused(
                        case,
                        &headers,
                        &body,
                        &keys,
                        now,
                        &format!("byte {i} ^ {bit:#x}"),
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 5000, "{checked} mutations checked");
}

fn clone_case(c: &Case) -> Case {
    Case {
        name: c.name.clone(),
        host: c.host.clone(),
        method: c.method.clone(),
        path: c.path.clone(),
        query: c.query.clone(),
        headers: c.headers.clone(),
        body: c.body.clone(),
        decoded: c.decoded.clone(),
        mutate_body: c.mutate_body,
        expires: c.expires,
    }
}
