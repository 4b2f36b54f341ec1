//! Who sent an S3 request and whether they may do it: the request classified (weir-s3api's
//! router), its Signature V4 checked against the token file's S3 credentials
//! (`Auth::s3_credential`: access key id = the line's `name=`, secret = its token), then the
//! credential's scopes and prefix applied to the operation's `BUCKET/KEY`.
//!
//! Scopes, by operation: reads (GetObject, HeadObject, GetObjectAttributes, the listings, HeadBucket,
//! GetBucketLocation) need `read`; PutObject, CopyObject (its target), CreateBucket and the
//! multipart operations need `write`, or `create` for a PutObject or CopyObject conditional on
//! the key's absence (`If-None-Match: *`, judged by the store atomically with the commit, as on
//! `/files/`); deletes need `delete`. A prefix confines a credential to `BUCKET/KEY` paths
//! below it (a listing to prefixes below it). ListBuckets lists the buckets the credential may
//! read in (`bucket.rs`); a copy's source and each key of a DeleteObjects are judged by their
//! routes.
//!
//! Unsigned requests (no `Authorization`, no presigned query) are served only where `/files/`
//! would serve them without a token: when no credential is configured, and reads under
//! `--public-read`. A signature with an unknown key is `InvalidAccessKeyId`, a wrong one
//! `SignatureDoesNotMatch`, an expired presigned URL `AccessDenied`, all before the body. An
//! unsigned request refused in a bucket that does not exist is `NoSuchBucket`, as S3 answers
//! (the caller looks the bucket up: `Refused::unsigned_bucket`).

use crate::serve::auth::{Access, Auth, Credential};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::time::SystemTime;
use weir::{Exchange, http};
use weir_s3api::chunked::ChunkedDecoder;
use weir_s3api::route::{Operation, RouteConfig, S3Request};
use weir_s3api::sigv4::{self, Payload, Verified, VerifyConfig};
use weir_s3api::{ErrorCode, S3Error};

/// The sender of an authorized request.
pub(in crate::serve) struct Caller {
    /// The signature's verdict (`None`: an unsigned request that the policy lets through).
    verified: Option<Verified<Credential>>,
    /// Whether credentials are configured at all (then unsigned requests need `public_reads`).
    auth_required_write: bool,
    auth_required_read: bool,
}

impl Caller {
    /// Whether the caller may do `access` on the store path `path` (`BUCKET` or `BUCKET/KEY`).
    pub(in crate::serve) fn allows(&self, access: Access, path: &str) -> bool {
        match &self.verified {
            Some(v) => v.scope.allows(access, Some(path)),
            None => match access {
                Access::Read => !self.auth_required_read,
                _ => !self.auth_required_write,
            },
        }
    }

    /// Whether the caller may read anything in `bucket` (ListBuckets shows only those): the
    /// whole bucket, or a prefix inside it.
    pub(in crate::serve) fn reads_in(&self, bucket: &str) -> bool {
        match &self.verified {
            Some(v) => {
                let inside = v
                    .scope
                    .prefix()
                    .is_some_and(|p| p.split('/').next() == Some(bucket));
                v.scope.allows(Access::Read, Some(bucket))
                    || (inside && v.scope.allows(Access::Read, v.scope.prefix()))
            }
            None => !self.auth_required_read,
        }
    }

    /// Whether the caller's uploads may replace an object (`write`, not only `create`).
    pub(in crate::serve) fn may_replace(&self) -> bool {
        self.verified.as_ref().is_none_or(|v| v.scope.may_replace())
    }

    /// How the body is protected (`UNSIGNED-PAYLOAD` for an unsigned request).
    pub(in crate::serve) fn payload(&self) -> Payload {
        self.verified
            .as_ref()
            .map_or(Payload::Unsigned, |v| v.payload)
    }

    /// The `aws-chunked` decoder of the body, if it is one.
    pub(in crate::serve) fn chunked_decoder(&self) -> Option<ChunkedDecoder> {
        self.verified.as_ref().and_then(Verified::chunked_decoder)
    }

    /// `x-amz-decoded-content-length` of an `aws-chunked` body.
    pub(in crate::serve) fn decoded_length(&self) -> Option<u64> {
        self.verified
            .as_ref()
            .and_then(|v| v.decoded_content_length)
    }

    /// The checksum trailer announced by `x-amz-trailer`.
    pub(in crate::serve) fn trailer(&self) -> Option<weir_s3api::checksum::ChecksumAlgorithm> {
        self.verified.as_ref().and_then(|v| v.trailer)
    }

    /// The access key id, or `anonymous`.
    pub(in crate::serve) fn name(&self) -> &str {
        self.verified
            .as_ref()
            .map_or("anonymous", |v| v.access_key_id.as_str())
    }
}

/// The request's headers as weir-s3api reads them.
///
/// ALLOCATION: a `HeaderMap` per S3 request (names and values copied): weir-s3api takes the
/// `http` crate's type, which weir's request head does not store.
pub(super) fn header_map(request: &weir::Request) -> Result<HeaderMap, S3Error> {
    let mut map = HeaderMap::with_capacity(request.header_count());
    for (name, value) in request.headers() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) else {
            return Err(S3Error::new(
                ErrorCode::InvalidArgument,
                "A header field is not valid.",
            ));
        };
        map.append(name, value);
    }
    Ok(map)
}

/// A refused request: the error, and for an unsigned request refused by the policy, the
/// bucket it names, which the caller looks up first (S3 answers `NoSuchBucket` for a missing
/// bucket before it judges an anonymous request's access).
pub(super) struct Refused {
    pub error: S3Error,
    pub unsigned_bucket: Option<String>,
}

impl From<S3Error> for Refused {
    fn from(error: S3Error) -> Self {
        Refused {
            error,
            unsigned_bucket: None,
        }
    }
}

/// Classifies and authenticates the request, and checks the credential's scope for it (see
/// the module doc).
pub(super) fn check(
    ex: &Exchange<'_>,
    route: &RouteConfig,
    auth: &Auth,
) -> Result<(S3Request, Caller), Refused> {
    let head = ex.request();
    let headers = header_map(head)?;
    let request = sigv4::Request {
        method: head.method(),
        path: head.path(),
        query: head.query().unwrap_or(""),
        headers: &headers,
    };
    let routed = super::classify(&request, route)?;
    let access = access_of(&routed.operation);
    let verified = if sigv4::has_credentials(&request) {
        let lookup = |id: &str| {
            let credential = auth.s3_credential(id)?;
            Some(sigv4::Credential {
                secret_access_key: credential.s3_secret()?.to_owned(),
                scope: credential.clone(),
            })
        };
        let config = VerifyConfig::default();
        let verified = sigv4::verify(&request, &lookup, &config, SystemTime::now())?;
        // The access log, the hooks and the webhooks name the verified caller.
        crate::serve::stored::set_who(verified.scope.name().clone());
        Some(verified)
    } else {
        None
    };
    let caller = Caller {
        verified,
        auth_required_write: auth.required(Access::Write),
        auth_required_read: auth.required(Access::Read),
    };
    if let Some(path) = scope_path(&routed)
        && !caller.allows(access, &path)
    {
        return Err(Refused {
            error: S3Error::from_code(ErrorCode::AccessDenied),
            unsigned_bucket: routed.bucket.clone().filter(|_| caller.verified.is_none()),
        });
    }
    if matches!(
        routed.operation,
        Operation::PutObject | Operation::CopyObject(_)
    ) && !caller.may_replace()
        && !creates_only(head)
    {
        return Err(S3Error::new(
            ErrorCode::AccessDenied,
            "This credential may create objects but not replace them: send If-None-Match: *.",
        )
        .into());
    }
    Ok((routed, caller))
}

/// What an operation does, for the scopes.
fn access_of(op: &Operation) -> Access {
    match op {
        Operation::ListBuckets(_)
        | Operation::HeadBucket
        | Operation::GetBucketLocation
        | Operation::ListObjectsV2(_)
        | Operation::ListObjectsV1(_)
        | Operation::ListObjectVersions(_)
        | Operation::GetObject(_)
        | Operation::HeadObject(_)
        | Operation::GetObjectAttributes(_)
        | Operation::GetAcl
        | Operation::ListParts { .. }
        | Operation::ListMultipartUploads(_) => Access::Read,
        Operation::DeleteBucket
        | Operation::DeleteObject
        | Operation::DeleteObjects
        | Operation::AbortMultipartUpload { .. } => Access::Delete,
        _ => Access::Write,
    }
}

/// The store path the scope is judged on: `BUCKET/KEY`, `BUCKET`, a listing's
/// `BUCKET/PREFIX` (up to its last `/`); `None` for ListBuckets (judged per bucket).
fn scope_path(routed: &S3Request) -> Option<String> {
    let bucket = routed.bucket.as_deref()?;
    let below = match &routed.operation {
        Operation::ListObjectsV2(p)
        | Operation::ListObjectsV1(p)
        | Operation::ListObjectVersions(p) => Some(p.prefix.trim_end_matches('/')),
        Operation::ListMultipartUploads(p) => Some(p.prefix.trim_end_matches('/')),
        Operation::DeleteObjects => None,
        _ => routed.key.as_deref().map(|k| k.trim_end_matches('/')),
    };
    // ALLOCATION: the path, once per request.
    Some(match below {
        Some(rest) if !rest.is_empty() => format!("{bucket}/{rest}"),
        _ => bucket.to_owned(),
    })
}

/// Whether the request is an upload that cannot replace: `If-None-Match: *`, the one value.
fn creates_only(request: &weir::Request) -> bool {
    let mut values = request.header_all("if-none-match");
    values.next().is_some_and(|v| v.trim_ascii() == b"*") && values.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_reads() {
        assert_eq!(access_of(&Operation::HeadBucket), Access::Read);
        assert_eq!(access_of(&Operation::PutObject), Access::Write);
        assert_eq!(access_of(&Operation::DeleteObjects), Access::Delete);
    }

    #[test]
    fn scope_paths() {
        let routed = |key: Option<&str>, operation| S3Request {
            bucket: Some("photos".into()),
            key: key.map(str::to_owned),
            operation,
        };
        assert_eq!(
            scope_path(&routed(Some("2024/cat.jpg"), Operation::PutObject)).as_deref(),
            Some("photos/2024/cat.jpg")
        );
        assert_eq!(
            scope_path(&routed(None, Operation::HeadBucket)).as_deref(),
            Some("photos")
        );
        let list = Operation::ListObjectsV2(weir_s3api::route::ListObjectsParams {
            prefix: "2024/".into(),
            ..Default::default()
        });
        assert_eq!(
            scope_path(&routed(None, list)).as_deref(),
            Some("photos/2024")
        );
    }
}
