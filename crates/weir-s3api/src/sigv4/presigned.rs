//! Presigned URLs: SigV4 in the query (`X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`,
//! `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`).
//!
//! The payload is `UNSIGNED-PAYLOAD` unless the request also has an `x-amz-content-sha256`
//! header (then that value is the payload line, as S3 does); streaming bodies are refused (a URL
//! has no seed signature to chain from). Validity: from `X-Amz-Date` (minus the allowed skew,
//! for clocks slightly ahead) to `X-Amz-Date + X-Amz-Expires`, at most seven days. An expired
//! URL is `AccessDenied` with "Request has expired", as S3 answers it; so is one whose
//! `X-Amz-Expires` is out of AWS's range (1 to 604800), which can never be valid
//! ([`expires_of`] says why 403 rather than the 400 of S3's error table).
//!
//! Unlike header authentication, `x-amz-*` headers the URL did not sign are not refused: the URL
//! is a capability whose signed headers are its constraints, and browsers using presigned PUTs
//! add headers of their own.

use std::time::SystemTime;

use super::canonical::{self, CanonicalParts};
use super::header::CredentialScope;
use super::time::{AmzDate, unix_seconds};
use super::verify::{check_scope, compute, parse_decimal, streaming_headers};
use super::{
    AuthKind, CredentialStore, MAX_PRESIGNED_EXPIRES, Payload, Request, Verified, VerifyConfig,
    parse_hex32, refuse_session_token,
};
use crate::percent;
use crate::{ErrorCode, S3Error};

/// Whether the raw query has `X-Amz-Signature` or `X-Amz-Algorithm` (a presigned request, even
/// if malformed: it must not fall through to anonymous access).
pub(crate) fn query_has_signature(raw_query: &str) -> bool {
    raw_query.split('&').any(|segment| {
        let name = segment.split_once('=').map_or(segment, |(n, _)| n);
        name == "X-Amz-Signature" || name == "X-Amz-Algorithm" || name == "X-Amz-Credential"
    })
}

pub(crate) fn verify_presigned<C: CredentialStore>(
    request: &Request<'_>,
    store: &C,
    config: &VerifyConfig,
    now: SystemTime,
) -> Result<Verified<C::Scope>, S3Error> {
    let code = ErrorCode::AuthorizationQueryParametersError;
    let pairs = percent::query_pairs(request.query)?;
    let param = |name: &str| -> Result<&str, S3Error> {
        let mut found = pairs.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, value)), None) => Ok(value.as_str()),
            (None, _) => Err(S3Error::new(
                code,
                format!("Query-string authentication requires the {name} parameter."),
            )),
            (Some(_), Some(_)) => Err(S3Error::new(
                code,
                format!("The {name} parameter is repeated."),
            )),
        }
    };
    if param("X-Amz-Algorithm")? != "AWS4-HMAC-SHA256" {
        return Err(S3Error::new(
            code,
            "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"",
        ));
    }
    let credential = CredentialScope::parse(param("X-Amz-Credential")?, code)?;
    let date = AmzDate::parse(param("X-Amz-Date")?).ok_or_else(|| {
        S3Error::new(
            code,
            "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"",
        )
    })?;
    let expires = expires_of(param("X-Amz-Expires")?)?;
    let signed_headers = param("X-Amz-SignedHeaders")?;
    let signature = parse_hex32(param("X-Amz-Signature")?.as_bytes())
        .ok_or_else(|| S3Error::new(code, "X-Amz-Signature must be 64 lower-case hex digits."))?;
    refuse_session_token(
        request.headers,
        pairs.iter().any(|(n, _)| n == "X-Amz-Security-Token"),
    )?;
    canonical::check_signed_headers(signed_headers, code)?;
    if credential.date != date.date() {
        return Err(S3Error::new(
            code,
            "Invalid credential date. Date is not the same as X-Amz-Date.",
        ));
    }
    check_scope(&credential, config, code)?;

    let now = unix_seconds(now);
    // `expires` ≤ 604800, so the sum cannot overflow for any parsed date.
    let expires_at = date.unix + expires as i64;
    if now > expires_at {
        return Err(S3Error::new(ErrorCode::AccessDenied, "Request has expired"));
    }
    if date.unix - now > i64::from(config.max_skew_secs) {
        return Err(S3Error::new(
            ErrorCode::AccessDenied,
            "Request is not valid yet",
        ));
    }

    let payload_text = match request.headers.get("x-amz-content-sha256") {
        Some(v) => v.to_str().map_err(|_| {
            S3Error::new(
                ErrorCode::InvalidArgument,
                "x-amz-content-sha256 is not ASCII.",
            )
        })?,
        None => "UNSIGNED-PAYLOAD",
    };
    let payload = Payload::parse(payload_text)?;
    if matches!(payload, Payload::Streaming(_)) {
        return Err(S3Error::new(
            ErrorCode::InvalidRequest,
            "aws-chunked bodies cannot be sent with a presigned URL.",
        ));
    }
    let (decoded_content_length, trailer) = streaming_headers(request, payload)?;

    let parts = CanonicalParts {
        method: request.method,
        raw_path: request.path,
        raw_query: request.query,
        headers: request.headers,
        signed_headers,
        payload_hash: payload_text,
        skip_signature_param: true,
    };
    let (found, computed) = compute(store, &credential, &date, &parts)?;
    computed.check(credential.access_key_id, &signature)?;
    Ok(Verified {
        access_key_id: credential.access_key_id.to_owned(),
        scope: found.scope,
        kind: AuthKind::Presigned { expires_at },
        payload,
        decoded_content_length,
        trailer,
        chain: None,
    })
}

/// The seconds of `X-Amz-Expires`. A value that is not a whole number is a malformed URL
/// (`AuthorizationQueryParametersError`, 400). One outside the 1 to 604800 AWS documents for it
/// (0, negative, over a week) is `AccessDenied` (403), with S3's messages: S3's error table
/// puts `AuthorizationQueryParametersError` at 400, but Ceph's s3-tests, which are run against
/// AWS and do not mark these tests `fails_on_aws`, expect 403 for 0, -7, -1000 and 609901,
/// and a URL that can never be valid is refused as an expired one is.
fn expires_of(text: &str) -> Result<u64, S3Error> {
    let denied = |message| Err(S3Error::new(ErrorCode::AccessDenied, message));
    if let Some(negative) = text.strip_prefix('-')
        && parse_decimal(negative).is_some()
    {
        return denied("X-Amz-Expires must be non-negative");
    }
    let Some(expires) = parse_decimal(text) else {
        return Err(S3Error::new(
            ErrorCode::AuthorizationQueryParametersError,
            "X-Amz-Expires should be a number",
        ));
    };
    match expires {
        // Valid for no second at all.
        0 => denied("Request has expired"),
        n if n > MAX_PRESIGNED_EXPIRES => denied(
            "X-Amz-Expires must be less than a week (in seconds) that is; the given X-Amz-Expires \
             must be less than 604800 seconds",
        ),
        n => Ok(n),
    }
}
