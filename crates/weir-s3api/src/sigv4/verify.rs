//! Header authentication, and the steps it shares with presigned URLs: the scope's region and
//! service, the key's lookup, the signature's computation and constant-time comparison.

use std::time::SystemTime;

use http::HeaderValue;

use super::canonical::{self, CanonicalParts};
use super::header::{AuthorizationHeader, CredentialScope};
use super::time::{AmzDate, unix_seconds};
use super::{
    AuthKind, CredentialStore, Payload, Request, SERVICE, StreamingMode, Verified, VerifyConfig,
    refuse_session_token, signatures_equal,
};
use crate::checksum::ChecksumAlgorithm;
use crate::chunked::ChunkChain;
use crate::{ErrorCode, S3Error};

/// Checks the region and service of a credential scope against the configuration.
pub(crate) fn check_scope(
    scope: &CredentialScope<'_>,
    config: &VerifyConfig,
    code: ErrorCode,
) -> Result<(), S3Error> {
    if scope.service != SERVICE {
        return Err(S3Error::new(
            code,
            format!(
                "The authorization header is malformed; incorrect service \"{}\". This endpoint belongs to \"s3\".",
                scope.service
            ),
        ));
    }
    if let Some(region) = &config.region
        && scope.region != region
    {
        return Err(S3Error::new(
            code,
            format!(
                "The authorization header is malformed; the region '{}' is wrong; expecting '{region}'",
                scope.region
            ),
        ));
    }
    Ok(())
}

/// The signature the request should carry, the key and scope string it was made with (the
/// chunk signatures chain from them), and what it signed (for the mismatch error's details).
pub(crate) struct Computed {
    pub(crate) signature: [u8; 32],
    pub(crate) key: super::SigningKey,
    pub(crate) scope: String,
    canonical: Vec<u8>,
    to_sign: Vec<u8>,
}

impl Computed {
    /// Checks the client's signature; on a mismatch, the error carries what the server signed,
    /// as S3's does (no secret is in it: the canonical request and the string to sign are
    /// functions of the request alone).
    pub(crate) fn check(&self, access_key_id: &str, provided: &[u8; 32]) -> Result<(), S3Error> {
        if signatures_equal(&self.signature, provided) {
            return Ok(());
        }
        Err(S3Error::from_code(ErrorCode::SignatureDoesNotMatch)
            .with_detail("AWSAccessKeyId", access_key_id)
            .with_detail("StringToSign", String::from_utf8_lossy(&self.to_sign))
            .with_detail(
                "SignatureProvided",
                String::from_utf8_lossy(&super::hex32(provided)),
            )
            .with_detail("CanonicalRequest", String::from_utf8_lossy(&self.canonical)))
    }
}

/// Looks the key up and computes the request's signature.
pub(crate) fn compute<C: CredentialStore>(
    store: &C,
    scope: &CredentialScope<'_>,
    date: &AmzDate,
    parts: &CanonicalParts<'_>,
) -> Result<(super::Credential<C::Scope>, Computed), S3Error> {
    let credential = store.lookup(scope.access_key_id).ok_or_else(|| {
        S3Error::from_code(ErrorCode::InvalidAccessKeyId)
            .with_detail("AWSAccessKeyId", scope.access_key_id)
    })?;
    let canonical = canonical::canonical_request(parts)?;
    let scope_string = scope.scope_string();
    let to_sign = canonical::string_to_sign(date, &scope_string, &canonical);
    let key = store.signing_key(scope.access_key_id, &credential, scope.date, scope.region);
    let signature = key.sign(&to_sign);
    Ok((
        credential,
        Computed {
            signature,
            key,
            scope: scope_string,
            canonical,
            to_sign,
        },
    ))
}

fn header_str<'h>(request: &'h Request<'_>, name: &str) -> Result<Option<&'h str>, S3Error> {
    request
        .headers
        .get(name)
        .map(|v: &HeaderValue| {
            v.to_str().map_err(|_| {
                S3Error::new(
                    ErrorCode::InvalidArgument,
                    format!("The {name} header is not ASCII."),
                )
            })
        })
        .transpose()
}

/// `x-amz-decoded-content-length` (required for `aws-chunked` bodies) and `x-amz-trailer`
/// (required for the trailer forms): what the chunked decoder checks the body against.
pub(crate) fn streaming_headers(
    request: &Request<'_>,
    payload: Payload,
) -> Result<(Option<u64>, Option<ChecksumAlgorithm>), S3Error> {
    let Payload::Streaming(mode) = payload else {
        return Ok((None, None));
    };
    let length = header_str(request, "x-amz-decoded-content-length")?.ok_or_else(|| {
        S3Error::new(
            ErrorCode::MissingContentLength,
            "An aws-chunked body needs x-amz-decoded-content-length.",
        )
    })?;
    let length = parse_decimal(length).ok_or_else(|| {
        S3Error::new(
            ErrorCode::InvalidArgument,
            "x-amz-decoded-content-length is not a number.",
        )
    })?;
    let trailer = if mode.has_trailer() {
        let name = header_str(request, "x-amz-trailer")?.ok_or_else(|| {
            S3Error::new(
                ErrorCode::InvalidRequest,
                "The trailer forms need the x-amz-trailer header.",
            )
        })?;
        Some(
            ChecksumAlgorithm::from_header_name(name.trim()).ok_or_else(|| {
                S3Error::new(
                    ErrorCode::InvalidRequest,
                    "x-amz-trailer must name one x-amz-checksum-* header.",
                )
            })?,
        )
    } else {
        None
    };
    Ok((Some(length), trailer))
}

/// A non-negative decimal without sign or spaces, as S3's length headers are.
pub(crate) fn parse_decimal(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(crate) fn verify_header<C: CredentialStore>(
    request: &Request<'_>,
    value: &HeaderValue,
    store: &C,
    config: &VerifyConfig,
    now: SystemTime,
) -> Result<Verified<C::Scope>, S3Error> {
    let value = value.to_str().map_err(|_| {
        S3Error::new(
            ErrorCode::AuthorizationHeaderMalformed,
            "The authorization header is not ASCII.",
        )
    })?;
    let auth = AuthorizationHeader::parse(value)?;
    refuse_session_token(request.headers, false)?;
    let code = ErrorCode::AuthorizationHeaderMalformed;
    canonical::check_signed_headers(auth.signed_headers, code)?;

    // `x-amz-date`, else the `Date` header; either in the ISO 8601 basic form or as an HTTP
    // date, as S3 takes them (botocore sends an HTTP date in `x-amz-date` when the caller set
    // one). The string to sign holds the ISO form either way.
    let date = header_str(request, "x-amz-date")?
        .or(header_str(request, "date")?)
        .and_then(|d| AmzDate::parse(d).or_else(|| AmzDate::parse_http_date(d)));
    let date = date.ok_or_else(|| {
        S3Error::new(
            ErrorCode::AccessDenied,
            "AWS authentication requires a valid x-amz-date header.",
        )
    })?;
    if auth.credential.date != date.date() {
        return Err(S3Error::new(
            code,
            "The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date.",
        ));
    }
    check_scope(&auth.credential, config, code)?;

    let skew = (unix_seconds(now) - date.unix).abs();
    if skew > i64::from(config.max_skew_secs) {
        let server_time = crate::xml::write::format_timestamp(now);
        return Err(S3Error::from_code(ErrorCode::RequestTimeTooSkewed)
            .with_detail("RequestTime", date.date_time_text())
            .with_detail("ServerTime", String::from_utf8_lossy(&server_time))
            .with_detail(
                "MaxAllowedSkewMilliseconds",
                (u64::from(config.max_skew_secs) * 1000).to_string(),
            ));
    }

    let payload_text = header_str(request, "x-amz-content-sha256")?.ok_or_else(|| {
        S3Error::new(
            ErrorCode::InvalidRequest,
            "Missing required header for this request: x-amz-content-sha256",
        )
    })?;
    let payload = Payload::parse(payload_text)?;
    let (decoded_content_length, trailer) = streaming_headers(request, payload)?;

    // Every x-amz-* header must be signed: they change what the request does.
    for name in request.headers.keys() {
        let name = name.as_str();
        if name.starts_with("x-amz-") && !auth.signed_headers.split(';').any(|s| s == name) {
            return Err(S3Error::new(
                ErrorCode::AccessDenied,
                "There were headers present in the request which were not signed",
            ));
        }
    }

    let parts = CanonicalParts {
        method: request.method,
        raw_path: request.path,
        raw_query: request.query,
        headers: request.headers,
        signed_headers: auth.signed_headers,
        payload_hash: payload_text,
        skip_signature_param: false,
    };
    let (credential, computed) = compute(store, &auth.credential, &date, &parts)?;
    computed.check(auth.credential.access_key_id, &auth.signature)?;
    let chain = match payload {
        Payload::Streaming(StreamingMode::Signed | StreamingMode::SignedTrailer) => Some(
            ChunkChain::new(computed.key, date, computed.scope, computed.signature),
        ),
        _ => None,
    };
    Ok(Verified {
        access_key_id: auth.credential.access_key_id.to_owned(),
        scope: credential.scope,
        kind: AuthKind::Header,
        payload,
        decoded_content_length,
        trailer,
        chain,
    })
}
