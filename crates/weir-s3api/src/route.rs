//! Which S3 operation a request is: from method, path, query and `Host`, with the bucket and key
//! decoded and the operation's query parameters parsed and bounded.
//!
//! Addressing: virtual-hosted style when `Host` is `<bucket>.<base domain>` for one of the
//! configured base domains, path style (`/<bucket>/<key>`) otherwise. The path is percent-decoded
//! once (strictly: a bad escape is `InvalidURI`) and must be UTF-8; the bucket is the first
//! segment (path style) and must be a valid S3 bucket name; the key is everything after it,
//! byte for byte — `//`, `.` and `..` segments included, because S3 keys are opaque strings.
//! Whether a key is acceptable as a path on disk is the store's decision (weir's path rules),
//! not the router's.
//!
//! Subresources weir does not implement (`?tagging`, `?versioning`, `?versionId`, …) are
//! `NotImplemented`, never silently treated as the plain operation: a client that sets a tag
//! must not believe it did. `?acl` is GetBucketAcl/GetObjectAcl and PutBucketAcl/PutObjectAcl
//! with `GET` and `PUT`, `NotImplemented` with any other method; `?attributes` is
//! GetObjectAttributes with an object's `GET` (`attributes.rs` parses its headers). Parameters that are not subresources and that weir does not use
//! (`x-id`, the presigned `X-Amz-*`) are ignored, as S3 ignores them.

use http::Method;

use crate::attributes::AttributesParams;
use crate::percent;
use crate::sigv4::Request;
use crate::{ErrorCode, S3Error};

/// The most keys, parts or uploads a listing returns (S3's limit; larger requests are clamped).
pub const MAX_LIST: u32 = 1000;

/// The longest key, in bytes (S3's limit).
pub const MAX_KEY_LEN: usize = 1024;

/// Subresources S3 has and weir does not implement.
const UNSUPPORTED: &[&str] = &[
    "accelerate",
    "analytics",
    "cors",
    "encryption",
    "intelligent-tiering",
    "inventory",
    "legal-hold",
    "lifecycle",
    "logging",
    "metadataConfiguration",
    "metadataTable",
    "metrics",
    "notification",
    "object-lock",
    "ownershipControls",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "renameObject",
    "replication",
    "requestPayment",
    "restore",
    "retention",
    "select",
    "select-type",
    "session",
    "tagging",
    "torrent",
    "versioning",
    "website",
];

/// How requests are addressed.
#[derive(Clone, Debug, Default)]
pub struct RouteConfig {
    /// Base domains of virtual-hosted-style requests (`s3.example.com`: then
    /// `photos.s3.example.com` is bucket `photos`), lower case, without port.
    pub base_domains: Vec<String>,
}

/// A classified request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Request {
    /// The bucket, if the request names one.
    pub bucket: Option<String>,
    /// The key (decoded), if the request names one.
    pub key: Option<String>,
    /// The operation and its parameters.
    pub operation: Operation,
}

/// Parameters of ListObjects (V1 and V2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListObjectsParams {
    /// `prefix` (empty if none).
    pub prefix: String,
    /// `delimiter`.
    pub delimiter: Option<String>,
    /// `max-keys`, clamped to 1000 (the default).
    pub max_keys: u32,
    /// `encoding-type=url`.
    pub encoding_url: bool,
    /// V2: `continuation-token`.
    pub continuation_token: Option<String>,
    /// V2: `start-after`.
    pub start_after: Option<String>,
    /// V1: `marker`.
    pub marker: Option<String>,
    /// V2: `fetch-owner=true`.
    pub fetch_owner: bool,
}

/// Parameters of ListBuckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListBucketsParams {
    /// `max-buckets` (1 to 10000); `None`: every bucket in one answer, as without it.
    pub max_buckets: Option<u32>,
    /// `continuation-token`: where the previous page ended (weir's token is the last bucket
    /// name answered; S3's is opaque).
    pub continuation_token: Option<String>,
    /// `prefix` (empty if none).
    pub prefix: String,
}

/// The most `max-buckets` S3 accepts.
pub const MAX_BUCKETS: u32 = 10_000;

/// Parameters of ListMultipartUploads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListUploadsParams {
    /// `prefix`.
    pub prefix: String,
    /// `delimiter`.
    pub delimiter: Option<String>,
    /// `key-marker`.
    pub key_marker: Option<String>,
    /// `upload-id-marker`.
    pub upload_id_marker: Option<String>,
    /// `max-uploads`, clamped to 1000.
    pub max_uploads: u32,
    /// `encoding-type=url`.
    pub encoding_url: bool,
}

/// The source of CopyObject and UploadPartCopy (`x-amz-copy-source`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopySource {
    /// Source bucket.
    pub bucket: String,
    /// Source key (decoded).
    pub key: String,
    /// `x-amz-copy-source-range: bytes=first-last` (UploadPartCopy only), inclusive.
    pub range: Option<(u64, u64)>,
}

/// Parameters of GetObject and HeadObject.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetObjectParams {
    /// `response-content-type` and the like: the answer header and its value.
    pub response_headers: Vec<(http::HeaderName, String)>,
    /// `partNumber`: one part of a multipart object.
    pub part_number: Option<u32>,
}

/// The S3 operations weir's API serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    /// `GET /`.
    ListBuckets(ListBucketsParams),
    /// `PUT /bucket`.
    CreateBucket,
    /// `HEAD /bucket`.
    HeadBucket,
    /// `DELETE /bucket`.
    DeleteBucket,
    /// `GET /bucket?location`.
    GetBucketLocation,
    /// `GET /bucket?list-type=2`.
    ListObjectsV2(ListObjectsParams),
    /// `GET /bucket`.
    ListObjectsV1(ListObjectsParams),
    /// `PUT /bucket/key`.
    PutObject,
    /// `PUT /bucket/key` with `x-amz-copy-source`.
    CopyObject(CopySource),
    /// `GET /bucket/key`.
    GetObject(GetObjectParams),
    /// `HEAD /bucket/key`.
    HeadObject(GetObjectParams),
    /// `GET /bucket/key?attributes`.
    GetObjectAttributes(AttributesParams),
    /// `DELETE /bucket/key`.
    DeleteObject,
    /// `POST /bucket?delete`.
    DeleteObjects,
    /// `POST /bucket/key?uploads`.
    CreateMultipartUpload,
    /// `PUT /bucket/key?partNumber=N&uploadId=U`.
    UploadPart {
        /// 1 to 10000.
        part_number: u32,
        /// The upload.
        upload_id: String,
    },
    /// `PUT /bucket/key?partNumber=N&uploadId=U` with `x-amz-copy-source`.
    UploadPartCopy {
        /// 1 to 10000.
        part_number: u32,
        /// The upload.
        upload_id: String,
        /// What to copy.
        source: CopySource,
    },
    /// `POST /bucket/key?uploadId=U`.
    CompleteMultipartUpload {
        /// The upload.
        upload_id: String,
    },
    /// `DELETE /bucket/key?uploadId=U`.
    AbortMultipartUpload {
        /// The upload.
        upload_id: String,
    },
    /// `GET /bucket/key?uploadId=U`.
    ListParts {
        /// The upload.
        upload_id: String,
        /// `max-parts`, clamped to 1000.
        max_parts: u32,
        /// `part-number-marker` (0 if none).
        part_number_marker: u32,
    },
    /// `GET /bucket?uploads`.
    ListMultipartUploads(ListUploadsParams),
    /// `GET /bucket?acl` (GetBucketAcl) or `GET /bucket/key?acl` (GetObjectAcl).
    GetAcl,
    /// `PUT /bucket?acl` (PutBucketAcl) or `PUT /bucket/key?acl` (PutObjectAcl).
    PutAcl,
    /// `GET /bucket?versions`: weir keeps no versions, so every object is its one version
    /// `null` (clients and test suites list versions to empty a bucket). `key-marker` is the
    /// parameters' `marker`.
    ListObjectVersions(ListObjectsParams),
}

/// The decoded query, with the lookups routing needs.
struct Query(Vec<(String, String)>);

impl Query {
    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _)| n == name)
    }

    /// The value of `name`; `InvalidArgument` if it is given twice.
    fn get(&self, name: &str) -> Result<Option<&str>, S3Error> {
        let mut found = self.0.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, v)), None) => Ok(Some(v)),
            (None, _) => Ok(None),
            (Some(_), Some(_)) => Err(S3Error::new(
                ErrorCode::InvalidArgument,
                format!("The query parameter {name} is given more than once."),
            )),
        }
    }

    fn owned(&self, name: &str) -> Result<Option<String>, S3Error> {
        Ok(self.get(name)?.map(str::to_owned))
    }

    /// A count parameter: absent → 1000; above 1000 → 1000 (S3 clamps); not a non-negative
    /// integer → `InvalidArgument`.
    fn max(&self, name: &str) -> Result<u32, S3Error> {
        match self.get(name)? {
            None => Ok(MAX_LIST),
            Some(v) => parse_u32(v).map(|n| n.min(MAX_LIST)).ok_or_else(|| {
                S3Error::new(
                    ErrorCode::InvalidArgument,
                    format!("Provided {name} not an integer or within integer range"),
                )
            }),
        }
    }

    fn encoding_url(&self) -> Result<bool, S3Error> {
        match self.get("encoding-type")? {
            None => Ok(false),
            Some("url") => Ok(true),
            Some(_) => Err(S3Error::new(
                ErrorCode::InvalidArgument,
                "Invalid Encoding Method specified in Request",
            )),
        }
    }
}

fn parse_u32(v: &str) -> Option<u32> {
    if v.is_empty() || v.len() > 10 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    v.parse().ok()
}

fn part_number(v: Option<&str>) -> Result<u32, S3Error> {
    v.and_then(parse_u32)
        .filter(|n| (1..=10_000).contains(n))
        .ok_or_else(|| {
            S3Error::new(
                ErrorCode::InvalidArgument,
                "Part number must be an integer between 1 and 10000, inclusive",
            )
        })
}

fn upload_id(v: Option<&str>) -> Result<String, S3Error> {
    match v {
        Some(id) if !id.is_empty() => Ok(id.to_owned()),
        _ => Err(S3Error::from_code(ErrorCode::NoSuchUpload)),
    }
}

/// Whether `name` is a valid S3 bucket name (the current rules: 3–63 characters of lower-case
/// letters, digits, `.` and `-`, beginning and ending with a letter or digit, no `..`, not an
/// IPv4 address).
pub fn valid_bucket_name(name: &str) -> bool {
    let b = name.as_bytes();
    (3..=63).contains(&b.len())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && !name.contains("..")
        && !name.contains(".-")
        && !name.contains("-.")
        && name.parse::<std::net::Ipv4Addr>().is_err()
}

fn bucket(name: &str) -> Result<String, S3Error> {
    if valid_bucket_name(name) {
        Ok(name.to_owned())
    } else {
        Err(S3Error::from_code(ErrorCode::InvalidBucketName))
    }
}

fn check_key(key: &str) -> Result<(), S3Error> {
    if key.len() > MAX_KEY_LEN {
        return Err(S3Error::from_code(ErrorCode::KeyTooLongError));
    }
    Ok(())
}

/// Parses `x-amz-copy-source`: `bucket/key` or `/bucket/key`, URL-encoded; a `?versionId=`
/// other than `null` is `NotImplemented` (weir keeps no versions).
pub fn parse_copy_source(value: &str) -> Result<CopySource, S3Error> {
    let invalid = || {
        S3Error::new(
            ErrorCode::InvalidArgument,
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
        )
    };
    let (path, query) = match value.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (value, None),
    };
    if let Some(q) = query {
        let pairs = percent::query_pairs(q)?;
        if pairs.iter().any(|(n, v)| n != "versionId" || v != "null") {
            return Err(S3Error::new(
                ErrorCode::NotImplemented,
                "Copying a version is not implemented.",
            ));
        }
    }
    let decoded = percent::decode_utf8(path, false)?;
    let decoded = decoded.strip_prefix('/').unwrap_or(&decoded);
    let (b, k) = decoded.split_once('/').ok_or_else(invalid)?;
    if k.is_empty() {
        return Err(invalid());
    }
    check_key(k)?;
    Ok(CopySource {
        bucket: bucket(b)?,
        key: k.to_owned(),
        range: None,
    })
}

/// Parses `x-amz-copy-source-range: bytes=first-last`.
fn parse_copy_range(value: &str) -> Result<(u64, u64), S3Error> {
    let invalid = || {
        S3Error::new(
            ErrorCode::InvalidArgument,
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
        )
    };
    let spec = value.strip_prefix("bytes=").ok_or_else(invalid)?;
    let (first, last) = spec.split_once('-').ok_or_else(invalid)?;
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (first, last) = (
        num(first).ok_or_else(invalid)?,
        num(last).ok_or_else(invalid)?,
    );
    if first > last {
        return Err(invalid());
    }
    Ok((first, last))
}

/// Splits `Host` into (bucket, via virtual host) for the configured base domains.
fn virtual_host_bucket<'h>(host: Option<&'h str>, config: &RouteConfig) -> Option<&'h str> {
    let host = host?;
    // Strip the port; IPv6 literals (`[::1]:9000`) never name a bucket.
    if host.starts_with('[') {
        return None;
    }
    let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
    config.base_domains.iter().find_map(|base| {
        let prefix = host.get(..host.len().checked_sub(base.len())?)?;
        let suffix = &host[prefix.len()..];
        if !suffix.eq_ignore_ascii_case(base) {
            return None;
        }
        prefix.strip_suffix('.').filter(|b| !b.is_empty())
    })
}

fn get_params(query: &Query) -> Result<GetObjectParams, S3Error> {
    const OVERRIDES: [(&str, http::HeaderName); 6] = [
        ("response-cache-control", http::header::CACHE_CONTROL),
        (
            "response-content-disposition",
            http::header::CONTENT_DISPOSITION,
        ),
        ("response-content-encoding", http::header::CONTENT_ENCODING),
        ("response-content-language", http::header::CONTENT_LANGUAGE),
        ("response-content-type", http::header::CONTENT_TYPE),
        ("response-expires", http::header::EXPIRES),
    ];
    let mut params = GetObjectParams::default();
    for (name, header) in OVERRIDES {
        if let Some(v) = query.get(name)? {
            params.response_headers.push((header, v.to_owned()));
        }
    }
    if let Some(n) = query.get("partNumber")? {
        params.part_number = Some(part_number(Some(n))?);
    }
    Ok(params)
}

fn list_buckets(query: &Query) -> Result<ListBucketsParams, S3Error> {
    let max_buckets = match query.get("max-buckets")? {
        None => None,
        Some(v) => Some(
            parse_u32(v)
                .filter(|n| (1..=MAX_BUCKETS).contains(n))
                .ok_or_else(|| {
                    S3Error::new(
                        ErrorCode::InvalidArgument,
                        "Argument max-buckets must be an integer between 1 and 10000.",
                    )
                })?,
        ),
    };
    Ok(ListBucketsParams {
        max_buckets,
        continuation_token: query.owned("continuation-token")?.filter(|t| !t.is_empty()),
        prefix: query.owned("prefix")?.unwrap_or_default(),
    })
}

fn list_objects(query: &Query) -> Result<Operation, S3Error> {
    let mut params = ListObjectsParams {
        prefix: query.owned("prefix")?.unwrap_or_default(),
        delimiter: query.owned("delimiter")?.filter(|d| !d.is_empty()),
        max_keys: query.max("max-keys")?,
        encoding_url: query.encoding_url()?,
        ..ListObjectsParams::default()
    };
    match query.get("list-type")? {
        Some("2") => {
            params.continuation_token = query.owned("continuation-token")?;
            params.start_after = query.owned("start-after")?.filter(|s| !s.is_empty());
            params.fetch_owner = query.get("fetch-owner")? == Some("true");
            Ok(Operation::ListObjectsV2(params))
        }
        Some(_) => Err(S3Error::new(
            ErrorCode::InvalidArgument,
            "Invalid List Type specified in Request",
        )),
        None => {
            params.marker = query.owned("marker")?.filter(|s| !s.is_empty());
            Ok(Operation::ListObjectsV1(params))
        }
    }
}

fn method_not_allowed() -> S3Error {
    S3Error::from_code(ErrorCode::MethodNotAllowed)
}

/// Classifies `request`.
pub fn classify(request: &Request<'_>, config: &RouteConfig) -> Result<S3Request, S3Error> {
    let query = Query(percent::query_pairs(request.query)?);
    if let Some(sub) = UNSUPPORTED.iter().find(|s| query.has(s)) {
        return Err(S3Error::new(
            ErrorCode::NotImplemented,
            format!("The ?{sub} subresource is not implemented."),
        ));
    }
    // `?versions` is ListObjectVersions (a bucket's `GET`); anything else with it is not.
    if query.has("versions") && *request.method != Method::GET {
        return Err(S3Error::new(
            ErrorCode::NotImplemented,
            "The ?versions subresource is not implemented.",
        ));
    }
    if let Some(v) = query.get("versionId")?
        && v != "null"
    {
        return Err(S3Error::new(
            ErrorCode::NotImplemented,
            "Object versions are not implemented.",
        ));
    }
    if query.has("acl") && *request.method != Method::GET && *request.method != Method::PUT {
        return Err(S3Error::new(
            ErrorCode::NotImplemented,
            "The ?acl subresource is read with GET and set with PUT.",
        ));
    }
    if !request.path.starts_with('/') {
        return Err(S3Error::from_code(ErrorCode::InvalidURI));
    }
    // A CORS preflight: weir's S3 API has no CORS configuration, so S3's answers for a bucket
    // without one (no `Origin`: 400, else 403), never a signature check.
    if *request.method == Method::OPTIONS {
        let code = if request.headers.contains_key(http::header::ORIGIN) {
            ErrorCode::AccessForbidden
        } else {
            ErrorCode::BadRequest
        };
        return Err(S3Error::from_code(code));
    }
    let path = percent::decode_utf8(request.path, false)?;
    let host = request
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok());
    let (bucket_name, key) = match virtual_host_bucket(host, config) {
        Some(b) => (Some(b.to_owned()), &path[1..]),
        None => match path[1..].split_once('/') {
            Some((b, k)) => (Some(b.to_owned()), k),
            None if path.len() > 1 => (Some(path[1..].to_owned()), ""),
            None => (None, ""),
        },
    };
    let bucket_name = bucket_name.map(|b| bucket(&b)).transpose()?;
    let key = (!key.is_empty()).then(|| key.to_owned());
    // `?attributes` is GetObjectAttributes, an object's `GET`; anything else with it is not.
    if query.has("attributes") && (*request.method != Method::GET || key.is_none()) {
        return Err(S3Error::new(
            ErrorCode::NotImplemented,
            "The ?attributes subresource is GetObjectAttributes, an object's GET.",
        ));
    }
    if let Some(k) = &key {
        check_key(k)?;
    }
    let method = request.method;
    let copy_source = request
        .headers
        .get("x-amz-copy-source")
        .map(|v| {
            v.to_str()
                .map_err(|_| {
                    S3Error::new(
                        ErrorCode::InvalidArgument,
                        "x-amz-copy-source is not ASCII.",
                    )
                })
                .and_then(parse_copy_source)
        })
        .transpose()?;

    let operation = match (&bucket_name, &key) {
        (None, _) => match *method {
            Method::GET => Operation::ListBuckets(list_buckets(&query)?),
            _ => return Err(method_not_allowed()),
        },
        (Some(_), _) if query.has("acl") => match *method {
            Method::GET => Operation::GetAcl,
            _ => Operation::PutAcl,
        },
        (Some(_), None) => match *method {
            Method::PUT => Operation::CreateBucket,
            Method::HEAD => Operation::HeadBucket,
            Method::DELETE => Operation::DeleteBucket,
            Method::GET if query.has("location") => Operation::GetBucketLocation,
            Method::GET if query.has("uploads") => {
                Operation::ListMultipartUploads(ListUploadsParams {
                    prefix: query.owned("prefix")?.unwrap_or_default(),
                    delimiter: query.owned("delimiter")?.filter(|d| !d.is_empty()),
                    key_marker: query.owned("key-marker")?.filter(|s| !s.is_empty()),
                    upload_id_marker: query.owned("upload-id-marker")?.filter(|s| !s.is_empty()),
                    max_uploads: query.max("max-uploads")?,
                    encoding_url: query.encoding_url()?,
                })
            }
            Method::GET if query.has("versions") => {
                Operation::ListObjectVersions(ListObjectsParams {
                    prefix: query.owned("prefix")?.unwrap_or_default(),
                    delimiter: query.owned("delimiter")?.filter(|d| !d.is_empty()),
                    max_keys: query.max("max-keys")?,
                    encoding_url: query.encoding_url()?,
                    marker: query.owned("key-marker")?.filter(|s| !s.is_empty()),
                    ..ListObjectsParams::default()
                })
            }
            Method::GET => list_objects(&query)?,
            Method::POST if query.has("delete") => Operation::DeleteObjects,
            // Browser form uploads (POST Object) are not implemented.
            Method::POST => {
                return Err(S3Error::new(
                    ErrorCode::NotImplemented,
                    "POST Object is not implemented.",
                ));
            }
            _ => return Err(method_not_allowed()),
        },
        (Some(_), Some(_)) => match *method {
            Method::PUT if query.has("uploadId") || query.has("partNumber") => {
                let part_number = part_number(query.get("partNumber")?)?;
                let upload_id = upload_id(query.get("uploadId")?)?;
                match copy_source {
                    Some(mut source) => {
                        if let Some(range) = request.headers.get("x-amz-copy-source-range") {
                            let range = range
                                .to_str()
                                .map_err(|_| S3Error::from_code(ErrorCode::InvalidArgument))?;
                            source.range = Some(parse_copy_range(range)?);
                        }
                        Operation::UploadPartCopy {
                            part_number,
                            upload_id,
                            source,
                        }
                    }
                    None => Operation::UploadPart {
                        part_number,
                        upload_id,
                    },
                }
            }
            Method::PUT => match copy_source {
                Some(source) => Operation::CopyObject(source),
                None => Operation::PutObject,
            },
            Method::GET if query.has("attributes") => {
                Operation::GetObjectAttributes(AttributesParams::parse(request.headers)?)
            }
            Method::GET if query.has("uploadId") => Operation::ListParts {
                upload_id: upload_id(query.get("uploadId")?)?,
                max_parts: query.max("max-parts")?,
                part_number_marker: match query.get("part-number-marker")? {
                    None => 0,
                    Some(v) => parse_u32(v).ok_or_else(|| {
                        S3Error::new(
                            ErrorCode::InvalidArgument,
                            "part-number-marker is not an integer",
                        )
                    })?,
                },
            },
            Method::GET if query.has("versions") => {
                return Err(S3Error::new(
                    ErrorCode::NotImplemented,
                    "The ?versions subresource is not implemented.",
                ));
            }
            Method::GET => Operation::GetObject(get_params(&query)?),
            Method::HEAD => Operation::HeadObject(get_params(&query)?),
            Method::DELETE if query.has("uploadId") => Operation::AbortMultipartUpload {
                upload_id: upload_id(query.get("uploadId")?)?,
            },
            Method::DELETE => Operation::DeleteObject,
            Method::POST if query.has("uploads") => Operation::CreateMultipartUpload,
            Method::POST if query.has("uploadId") => Operation::CompleteMultipartUpload {
                upload_id: upload_id(query.get("uploadId")?)?,
            },
            Method::POST => {
                return Err(S3Error::new(
                    ErrorCode::NotImplemented,
                    "This POST on an object is not implemented.",
                ));
            }
            _ => return Err(method_not_allowed()),
        },
    };
    Ok(S3Request {
        bucket: bucket_name,
        key,
        operation,
    })
}
