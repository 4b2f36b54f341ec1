//! Request classification: every operation of the API, both addressing styles, decoded keys,
//! list parameters, and the refusals (unknown subresources, bad names, bad numbers).

use http::{HeaderMap, HeaderValue, Method};
use weir_s3api::ErrorCode;
use weir_s3api::route::{
    self, CopySource, ListBucketsParams, ListObjectsParams, Operation, RouteConfig, S3Request,
};
use weir_s3api::sigv4::Request;

fn config() -> RouteConfig {
    RouteConfig {
        base_domains: vec!["s3.example.com".into()],
    }
}

fn classify_with(
    method: Method,
    host: &str,
    target: &str,
    extra: &[(&str, &str)],
) -> Result<S3Request, ErrorCode> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut headers = HeaderMap::new();
    headers.insert("host", HeaderValue::from_str(host).unwrap());
    for (n, v) in extra {
        headers.insert(
            http::HeaderName::from_bytes(n.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    route::classify(
        &Request {
            method: &method,
            path,
            query,
            headers: &headers,
        },
        &config(),
    )
    .map_err(|e| e.code)
}

fn classify(method: Method, target: &str) -> Result<S3Request, ErrorCode> {
    classify_with(method, "127.0.0.1:9000", target, &[])
}

fn op(method: Method, target: &str) -> Operation {
    classify(method, target).unwrap().operation
}

#[test]
fn every_operation() {
    use Method as M;
    assert_eq!(
        op(M::GET, "/"),
        Operation::ListBuckets(ListBucketsParams::default())
    );
    assert_eq!(
        op(M::GET, "/?max-buckets=1&continuation-token=b1&prefix=b"),
        Operation::ListBuckets(ListBucketsParams {
            max_buckets: Some(1),
            continuation_token: Some("b1".into()),
            prefix: "b".into(),
        })
    );
    assert!(classify(M::GET, "/?max-buckets=0").is_err());
    assert!(classify(M::GET, "/?max-buckets=10001").is_err());
    assert_eq!(op(M::PUT, "/bucket"), Operation::CreateBucket);
    assert_eq!(op(M::PUT, "/bucket/"), Operation::CreateBucket);
    assert_eq!(op(M::HEAD, "/bucket"), Operation::HeadBucket);
    assert_eq!(op(M::DELETE, "/bucket"), Operation::DeleteBucket);
    assert_eq!(op(M::GET, "/bucket?location"), Operation::GetBucketLocation);
    assert!(matches!(
        op(M::GET, "/bucket?list-type=2"),
        Operation::ListObjectsV2(_)
    ));
    assert!(matches!(op(M::GET, "/bucket"), Operation::ListObjectsV1(_)));
    assert_eq!(op(M::PUT, "/bucket/key"), Operation::PutObject);
    assert!(matches!(op(M::GET, "/bucket/key"), Operation::GetObject(_)));
    assert!(matches!(
        op(M::HEAD, "/bucket/key"),
        Operation::HeadObject(_)
    ));
    assert_eq!(op(M::DELETE, "/bucket/key"), Operation::DeleteObject);
    assert_eq!(op(M::POST, "/bucket?delete"), Operation::DeleteObjects);
    assert_eq!(
        op(M::POST, "/bucket/key?uploads"),
        Operation::CreateMultipartUpload
    );
    assert_eq!(
        op(M::PUT, "/bucket/key?partNumber=7&uploadId=u%2B1"),
        Operation::UploadPart {
            part_number: 7,
            upload_id: "u+1".into()
        }
    );
    assert_eq!(
        op(M::POST, "/bucket/key?uploadId=u1"),
        Operation::CompleteMultipartUpload {
            upload_id: "u1".into()
        }
    );
    assert_eq!(
        op(M::DELETE, "/bucket/key?uploadId=u1"),
        Operation::AbortMultipartUpload {
            upload_id: "u1".into()
        }
    );
    assert_eq!(
        op(M::GET, "/bucket/key?uploadId=u1"),
        Operation::ListParts {
            upload_id: "u1".into(),
            max_parts: 1000,
            part_number_marker: 0
        }
    );
    assert_eq!(
        op(
            M::GET,
            "/bucket/key?uploadId=u1&max-parts=5&part-number-marker=3"
        ),
        Operation::ListParts {
            upload_id: "u1".into(),
            max_parts: 5,
            part_number_marker: 3
        }
    );
    assert!(
        matches!(op(M::GET, "/bucket?uploads&prefix=a&max-uploads=5000"), Operation::ListMultipartUploads(p) if p.max_uploads == 1000 && p.prefix == "a")
    );
    // botocore adds x-id=…; S3 ignores it.
    assert_eq!(
        op(M::PUT, "/bucket/key?x-id=PutObject"),
        Operation::PutObject
    );

    let copy = |target: &str, headers: &[(&str, &str)]| {
        classify_with(M::PUT, "h", target, headers)
            .unwrap()
            .operation
    };
    assert_eq!(
        copy(
            "/bucket/dst",
            &[("x-amz-copy-source", "/src-bucket/a%20b%2Bc/d")]
        ),
        Operation::CopyObject(CopySource {
            bucket: "src-bucket".into(),
            key: "a b+c/d".into(),
            range: None
        })
    );
    assert_eq!(
        copy(
            "/bucket/dst?partNumber=2&uploadId=u",
            &[
                ("x-amz-copy-source", "src-bucket/k?versionId=null"),
                ("x-amz-copy-source-range", "bytes=0-99")
            ]
        ),
        Operation::UploadPartCopy {
            part_number: 2,
            upload_id: "u".into(),
            source: CopySource {
                bucket: "src-bucket".into(),
                key: "k".into(),
                range: Some((0, 99))
            }
        }
    );
    let copy_err = |headers: &[(&str, &str)]| {
        classify_with(M::PUT, "h", "/bucket/dst?partNumber=2&uploadId=u", headers).unwrap_err()
    };
    assert_eq!(
        copy_err(&[("x-amz-copy-source", "src-bucket/k?versionId=v1")]),
        ErrorCode::NotImplemented
    );
    assert_eq!(
        copy_err(&[("x-amz-copy-source", "src-bucket")]),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        copy_err(&[("x-amz-copy-source", "src-bucket/")]),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        copy_err(&[
            ("x-amz-copy-source", "src-bucket/k"),
            ("x-amz-copy-source-range", "bytes=9-1")
        ]),
        ErrorCode::InvalidArgument
    );
    assert_eq!(
        copy_err(&[
            ("x-amz-copy-source", "src-bucket/k"),
            ("x-amz-copy-source-range", "0-1")
        ]),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn keys_are_decoded_and_kept_byte_for_byte() {
    for (target, key) in [
        ("/bucket/a%20b", "a b"),
        ("/bucket/a+b", "a+b"),
        ("/bucket/%C3%BC/%E6%96%87", "ü/文"),
        ("/bucket/a//b///c/", "a//b///c/"),
        ("/bucket/./../x", "./../x"),
        ("/bucket/%2F", "/"),
        ("/bucket/~%7E", "~~"),
    ] {
        let r = classify(Method::GET, target).unwrap();
        assert_eq!(
            (r.bucket.as_deref(), r.key.as_deref()),
            (Some("bucket"), Some(key)),
            "{target}"
        );
    }
    assert_eq!(
        classify(Method::GET, "/bucket/%zz").unwrap_err(),
        ErrorCode::InvalidURI
    );
    assert_eq!(
        classify(Method::GET, "/bucket/%FF").unwrap_err(),
        ErrorCode::InvalidURI
    );
    assert_eq!(
        classify(Method::GET, "bucket/key").unwrap_err(),
        ErrorCode::InvalidURI
    );
    let long = format!("/bucket/{}", "k".repeat(1025));
    assert_eq!(
        classify(Method::GET, &long).unwrap_err(),
        ErrorCode::KeyTooLongError
    );
    assert!(classify(Method::GET, &format!("/bucket/{}", "k".repeat(1024))).is_ok());
}

#[test]
fn virtual_hosted_style() {
    let r = classify_with(Method::GET, "photos.s3.example.com:9000", "/a/b.jpg", &[]).unwrap();
    assert_eq!(
        (r.bucket.as_deref(), r.key.as_deref()),
        (Some("photos"), Some("a/b.jpg"))
    );
    let r = classify_with(Method::GET, "my.dotted.bucket.S3.Example.com", "/", &[]).unwrap();
    assert_eq!(
        (r.bucket.as_deref(), r.key, &r.operation),
        (
            Some("my.dotted.bucket"),
            None,
            &Operation::ListObjectsV1(ListObjectsParams {
                max_keys: 1000,
                ..Default::default()
            })
        )
    );
    // The base domain itself, another host, an IPv6 literal: path style.
    for host in [
        "s3.example.com",
        "other.example.org",
        "[::1]:9000",
        "xs3.example.com",
    ] {
        let r = classify_with(Method::GET, host, "/bucket/key", &[]).unwrap();
        assert_eq!(
            (r.bucket.as_deref(), r.key.as_deref()),
            (Some("bucket"), Some("key")),
            "{host}"
        );
    }
    assert_eq!(
        classify_with(Method::GET, "Bad_Name.s3.example.com", "/", &[]).unwrap_err(),
        ErrorCode::InvalidBucketName
    );
}

#[test]
fn bucket_names() {
    for good in ["abc", "a-b.c", "0bucket", &"a".repeat(63)] {
        assert!(route::valid_bucket_name(good), "{good}");
    }
    for bad in [
        "ab",
        "Abc",
        "a_b",
        "-ab",
        "ab-",
        "a..b",
        "a.-b",
        "192.168.1.1",
        &"a".repeat(64),
        "a b",
    ] {
        assert!(!route::valid_bucket_name(bad), "{bad}");
        assert_eq!(
            classify(Method::GET, &format!("/{}/k", bad.replace(' ', "%20"))).unwrap_err(),
            ErrorCode::InvalidBucketName,
            "{bad}"
        );
    }
}

#[test]
fn list_parameters() {
    let Operation::ListObjectsV2(p) = op(
        Method::GET,
        "/bucket?list-type=2&prefix=a%20b%2Bc&delimiter=%2F&max-keys=2&continuation-token=t%3D&start-after=s&encoding-type=url&fetch-owner=true",
    ) else {
        panic!()
    };
    assert_eq!(
        p,
        ListObjectsParams {
            prefix: "a b+c".into(),
            delimiter: Some("/".into()),
            max_keys: 2,
            encoding_url: true,
            continuation_token: Some("t=".into()),
            start_after: Some("s".into()),
            marker: None,
            fetch_owner: true,
        }
    );
    // `+` in a query is a space, as S3 reads it.
    let Operation::ListObjectsV1(p) = op(
        Method::GET,
        "/bucket?prefix=a+b&marker=m&max-keys=5000&delimiter=",
    ) else {
        panic!()
    };
    assert_eq!(
        (
            p.prefix.as_str(),
            p.marker.as_deref(),
            p.max_keys,
            p.delimiter
        ),
        ("a b", Some("m"), 1000, None)
    );
    for bad in [
        "max-keys=-1",
        "max-keys=abc",
        "max-keys=",
        "max-keys=99999999999",
        "encoding-type=base64",
        "list-type=3",
        "prefix=a&prefix=b",
    ] {
        assert_eq!(
            classify(Method::GET, &format!("/bucket?list-type=2&{bad}")).unwrap_err(),
            ErrorCode::InvalidArgument,
            "{bad}"
        );
    }
    assert!(
        matches!(op(Method::GET, "/bucket?max-keys=0"), Operation::ListObjectsV1(p) if p.max_keys == 0)
    );
}

#[test]
fn get_parameters() {
    let Operation::GetObject(p) = op(
        Method::GET,
        "/bucket/k?response-content-type=text%2Fplain&response-content-disposition=attachment&partNumber=2",
    ) else {
        panic!()
    };
    assert_eq!(p.part_number, Some(2));
    assert_eq!(p.response_headers.len(), 2);
    assert!(
        p.response_headers
            .contains(&(http::header::CONTENT_TYPE, "text/plain".into()))
    );
    assert_eq!(
        classify(Method::GET, "/bucket/k?partNumber=0").unwrap_err(),
        ErrorCode::InvalidArgument
    );
}

#[test]
fn refusals() {
    use Method as M;
    for target in [
        "/bucket/k?tagging",
        "/bucket?versioning",
        "/bucket/k?versions",
        "/bucket?lifecycle",
        "/bucket?policy",
        "/bucket?cors",
        "/bucket/k?restore",
        "/bucket/k?versionId=3",
        "/bucket/k?select&select-type=2",
    ] {
        for method in [M::GET, M::PUT, M::POST, M::DELETE] {
            assert_eq!(
                classify(method.clone(), target).unwrap_err(),
                ErrorCode::NotImplemented,
                "{method} {target}"
            );
        }
    }
    assert!(classify(M::GET, "/bucket/k?versionId=null").is_ok());
    // `?attributes` is GetObjectAttributes: an object's GET, with its header; nothing else.
    let asked = [("x-amz-object-attributes", "ETag,ObjectSize")];
    let attributes = classify_with(M::GET, "h", "/bucket/k?attributes", &asked);
    assert!(matches!(
        attributes.unwrap().operation,
        Operation::GetObjectAttributes(p) if p.wanted.etag && p.wanted.object_size && !p.wanted.checksum
    ));
    assert_eq!(
        classify(M::GET, "/bucket/k?attributes").unwrap_err(),
        ErrorCode::InvalidArgument
    );
    for (method, target) in [
        (M::GET, "/bucket?attributes"),
        (M::GET, "/bucket/?attributes"),
        (M::HEAD, "/bucket/k?attributes"),
        (M::PUT, "/bucket/k?attributes"),
        (M::POST, "/bucket/k?attributes"),
        (M::DELETE, "/bucket/k?attributes"),
    ] {
        let refused = classify_with(method.clone(), "h", target, &asked).unwrap_err();
        assert_eq!(refused, ErrorCode::NotImplemented, "{method} {target}");
    }
    // `?acl` is read and set (the one owner's full control), never deleted or posted, and
    // never taken for the plain operation.
    for target in ["/bucket?acl", "/bucket/k?acl"] {
        let op = |m: M| classify(m, target).map(|r| r.operation);
        assert_eq!(op(M::GET).unwrap(), Operation::GetAcl, "{target}");
        assert_eq!(op(M::PUT).unwrap(), Operation::PutAcl, "{target}");
        for method in [M::POST, M::DELETE, M::HEAD] {
            assert_eq!(
                classify(method.clone(), target).unwrap_err(),
                ErrorCode::NotImplemented,
                "{method} {target}"
            );
        }
    }
    // A bucket's versions are listed (every object its one version, `null`); nothing else
    // takes `?versions`.
    assert!(classify(M::GET, "/bucket?versions").is_ok());
    for method in [M::PUT, M::POST, M::DELETE] {
        assert_eq!(
            classify(method.clone(), "/bucket?versions").unwrap_err(),
            ErrorCode::NotImplemented,
            "{method}"
        );
    }
    assert_eq!(
        classify(M::PUT, "/").unwrap_err(),
        ErrorCode::MethodNotAllowed
    );
    assert_eq!(
        classify(M::PATCH, "/bucket/k").unwrap_err(),
        ErrorCode::MethodNotAllowed
    );
    // A CORS preflight, without a CORS configuration: S3's answers.
    assert_eq!(
        classify(M::OPTIONS, "/bucket/k?X-Amz-Expires=100").unwrap_err(),
        ErrorCode::BadRequest
    );
    assert_eq!(
        classify_with(
            M::OPTIONS,
            "127.0.0.1:9000",
            "/bucket",
            &[("origin", "https://example.com")]
        )
        .unwrap_err(),
        ErrorCode::AccessForbidden
    );
    assert_eq!(
        classify(M::POST, "/bucket").unwrap_err(),
        ErrorCode::NotImplemented
    );
    assert_eq!(
        classify(M::POST, "/bucket/k").unwrap_err(),
        ErrorCode::NotImplemented
    );
    for bad in [
        "partNumber=0&uploadId=u",
        "partNumber=10001&uploadId=u",
        "partNumber=x&uploadId=u",
        "uploadId=u",
        "partNumber=1&partNumber=2&uploadId=u",
    ] {
        assert_eq!(
            classify(M::PUT, &format!("/bucket/k?{bad}")).unwrap_err(),
            ErrorCode::InvalidArgument,
            "{bad}"
        );
    }
    assert_eq!(
        classify(M::PUT, "/bucket/k?partNumber=1").unwrap_err(),
        ErrorCode::NoSuchUpload
    );
    assert_eq!(
        classify(M::PUT, "/bucket/k?partNumber=1&uploadId=").unwrap_err(),
        ErrorCode::NoSuchUpload
    );
}
