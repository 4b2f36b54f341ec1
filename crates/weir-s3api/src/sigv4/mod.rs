//! Signature Version 4, the server's side: is this request signed by a key we know, and how is
//! its body protected?
//!
//! [`verify`] takes the request as the wire had it ([`Request`]: method, raw path, raw query,
//! headers), a [`CredentialStore`] (access key id → secret and the caller's own scope object)
//! and the current time, and answers [`Verified`] or an [`S3Error`] with S3's code:
//!
//! - the `Authorization` header ([`verify`] → `header.rs`, `verify.rs`), with the request time
//!   within 15 minutes of `now` (`RequestTimeTooSkewed`);
//! - a presigned URL (`presigned.rs`): `X-Amz-*` query parameters, `X-Amz-Expires` at most
//!   seven days, expiry checked against `now` (`AccessDenied`, "Request has expired", as S3).
//!
//! The body's protection is [`Payload`], from `x-amz-content-sha256`: a SHA-256 the caller
//! checks after the body ([`Payload::check_sha256`]: weir hashes uploads anyway, so this costs
//! nothing), `UNSIGNED-PAYLOAD`, or one of the `aws-chunked` streaming forms, whose decoder
//! [`Verified::chunked_decoder`] returns, seeded with this request's signature so each chunk's
//! signature chains from it.
//!
//! Invariants: no clock is read; signatures are compared in constant time; the host header is
//! always signed; with header authentication every `x-amz-*` header of the request is signed (S3
//! refuses unsigned ones, and they change what a request does: storage class, checksums, copy
//! source). HTTP/2 requests must carry their `:authority` as a `host` entry of the header map.

mod canonical;
mod header;
mod key;
mod presigned;
mod time;
mod verify;

use std::time::SystemTime;

use http::{HeaderMap, Method};

pub use key::SigningKey;

use crate::checksum::ChecksumAlgorithm;
use crate::chunked::{ChunkChain, ChunkedDecoder, Framing};
use crate::{ErrorCode, S3Error};

pub(crate) use key::{EMPTY_SHA256_HEX, hex32, parse_hex32, signatures_equal};
pub(crate) use time::AmzDate;

/// The service name of every S3 credential scope.
pub const SERVICE: &str = "s3";

/// The longest validity of a presigned URL S3 accepts (seven days), in seconds.
pub const MAX_PRESIGNED_EXPIRES: u64 = 7 * 24 * 3600;

/// How far the request time may be from `now` with header authentication (S3's 15 minutes).
pub const DEFAULT_MAX_SKEW_SECS: u32 = 15 * 60;

/// A request as it arrived, before anything is decoded.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// The method.
    pub method: &'a Method,
    /// The path as on the wire (still percent-encoded), without the query.
    pub path: &'a str,
    /// The query as on the wire, without `?`; `""` if none.
    pub query: &'a str,
    /// The request's headers (with `host`).
    pub headers: &'a HeaderMap,
}

/// What a [`CredentialStore`] knows of an access key: its secret and whatever the caller
/// attaches to it (weir: the token's scopes).
#[derive(Clone)]
pub struct Credential<S> {
    /// The secret access key.
    pub secret_access_key: String,
    /// The caller's scope object, handed back in [`Verified::scope`].
    pub scope: S,
}

/// Access keys the server knows. A closure `Fn(&str) -> Option<Credential<S>>` is one.
pub trait CredentialStore {
    /// The caller's scope object.
    type Scope;

    /// The credential of `access_key_id`, or `None` (`InvalidAccessKeyId`).
    fn lookup(&self, access_key_id: &str) -> Option<Credential<Self::Scope>>;

    /// The signing key of `credential` for `date` (`YYYYMMDD`) and `region`. Override to cache:
    /// the key depends on (secret, date, region, service) only, so one per key and day serves
    /// every request of that day.
    fn signing_key(
        &self,
        access_key_id: &str,
        credential: &Credential<Self::Scope>,
        date: &str,
        region: &str,
    ) -> SigningKey {
        let _ = access_key_id;
        SigningKey::derive(&credential.secret_access_key, date, region, SERVICE)
    }
}

impl<S, F> CredentialStore for F
where
    F: Fn(&str) -> Option<Credential<S>>,
{
    type Scope = S;

    fn lookup(&self, access_key_id: &str) -> Option<Credential<S>> {
        self(access_key_id)
    }
}

/// The server's side of the signature: which region it answers for, how much skew it allows.
#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// The region credential scopes must name; `None` accepts any (clients that were never told
    /// a region sign with `us-east-1`, others with what they were configured with).
    pub region: Option<String>,
    /// The largest difference between the request time and `now`, header authentication.
    pub max_skew_secs: u32,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            region: None,
            max_skew_secs: DEFAULT_MAX_SKEW_SECS,
        }
    }
}

/// How the request was authenticated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthKind {
    /// The `Authorization` header.
    Header,
    /// A presigned URL, valid until this Unix time.
    Presigned {
        /// The Unix time at which the URL expires.
        expires_at: i64,
    },
}

/// The `aws-chunked` forms of `x-amz-content-sha256`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamingMode {
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: each chunk signed.
    Signed,
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: each chunk and the trailers signed.
    SignedTrailer,
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: chunks unsigned, a checksum trailer.
    UnsignedTrailer,
}

impl StreamingMode {
    /// The `x-amz-content-sha256` value.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamingMode::Signed => "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
            StreamingMode::SignedTrailer => "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
            StreamingMode::UnsignedTrailer => "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
        }
    }

    /// Whether the body ends with trailers.
    pub fn has_trailer(self) -> bool {
        !matches!(self, StreamingMode::Signed)
    }
}

/// How the body is protected, from `x-amz-content-sha256`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// The body's SHA-256, signed: the caller hashes the body and calls [`Payload::check_sha256`]
    /// before it commits anything.
    Sha256([u8; 32]),
    /// `UNSIGNED-PAYLOAD` (always, for presigned URLs without the header).
    Unsigned,
    /// An `aws-chunked` body: decode it with [`Verified::chunked_decoder`].
    Streaming(StreamingMode),
}

impl Payload {
    /// Parses `x-amz-content-sha256`.
    pub fn parse(value: &str) -> Result<Payload, S3Error> {
        Ok(match value {
            "UNSIGNED-PAYLOAD" => Payload::Unsigned,
            "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" => Payload::Streaming(StreamingMode::Signed),
            "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" => {
                Payload::Streaming(StreamingMode::SignedTrailer)
            }
            "STREAMING-UNSIGNED-PAYLOAD-TRAILER" => {
                Payload::Streaming(StreamingMode::UnsignedTrailer)
            }
            v if v.starts_with("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD") => {
                return Err(S3Error::new(
                    ErrorCode::NotImplemented,
                    "Signature Version 4A (ECDSA) is not supported.",
                ));
            }
            v => match parse_hex32(v.as_bytes()) {
                Some(digest) => Payload::Sha256(digest),
                None => {
                    return Err(S3Error::new(
                        ErrorCode::InvalidArgument,
                        "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING- value, or \
                         a valid SHA-256 in lower-case hex.",
                    ));
                }
            },
        })
    }

    /// Compares the body's SHA-256 (computed by the caller) with the signed one; an unsigned or
    /// streaming payload passes (its own checks are elsewhere).
    pub fn check_sha256(&self, actual: &[u8; 32]) -> Result<(), S3Error> {
        match self {
            Payload::Sha256(expected) if !signatures_equal(expected, actual) => {
                Err(S3Error::from_code(ErrorCode::XAmzContentSHA256Mismatch))
            }
            _ => Ok(()),
        }
    }

    /// The SHA-256 the body must have, if it is signed that way.
    pub fn expected_sha256(&self) -> Option<&[u8; 32]> {
        match self {
            Payload::Sha256(digest) => Some(digest),
            _ => None,
        }
    }
}

/// An authenticated request.
#[derive(Clone, Debug)]
pub struct Verified<S> {
    /// The access key that signed it.
    pub access_key_id: String,
    /// The caller's scope object of that key.
    pub scope: S,
    /// Header or presigned URL.
    pub kind: AuthKind,
    /// How the body is protected.
    pub payload: Payload,
    /// `x-amz-decoded-content-length`, the object's size, for `aws-chunked` bodies.
    pub decoded_content_length: Option<u64>,
    /// The checksum trailer announced by `x-amz-trailer`, for the trailer forms.
    pub trailer: Option<ChecksumAlgorithm>,
    /// What the chunk signatures chain from (signed streaming forms).
    chain: Option<ChunkChain>,
}

impl<S> Verified<S> {
    /// The decoder of this request's `aws-chunked` body, or `None` if the body is not
    /// `aws-chunked` (then it is the plain body, checked with [`Payload::check_sha256`]).
    pub fn chunked_decoder(&self) -> Option<ChunkedDecoder> {
        let Payload::Streaming(mode) = self.payload else {
            return None;
        };
        let framing = match (mode, &self.chain) {
            (StreamingMode::UnsignedTrailer, _) => Framing::Unsigned,
            (_, Some(chain)) => Framing::Signed(chain.clone()),
            // `verify` sets the chain for every signed mode.
            (_, None) => return None,
        };
        Some(ChunkedDecoder::new(
            framing,
            mode.has_trailer(),
            self.trailer,
            self.decoded_content_length,
        ))
    }
}

/// Whether the request carries any SigV4 credentials (header or query); a request without is
/// anonymous, which [`verify`] refuses (`AccessDenied`) and the front end may serve instead if
/// its policy allows.
pub fn has_credentials(request: &Request<'_>) -> bool {
    request.headers.contains_key(http::header::AUTHORIZATION)
        || presigned::query_has_signature(request.query)
}

/// Authenticates `request` at `now`.
pub fn verify<C: CredentialStore>(
    request: &Request<'_>,
    store: &C,
    config: &VerifyConfig,
    now: SystemTime,
) -> Result<Verified<C::Scope>, S3Error> {
    let header = request.headers.get(http::header::AUTHORIZATION);
    let query = presigned::query_has_signature(request.query);
    match (header, query) {
        (Some(_), true) => Err(S3Error::new(
            ErrorCode::InvalidArgument,
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter or the \
             Authorization header should be specified.",
        )),
        (Some(value), false) => verify::verify_header(request, value, store, config, now),
        (None, true) => presigned::verify_presigned(request, store, config, now),
        (None, false) => Err(S3Error::new(
            ErrorCode::AccessDenied,
            "Anonymous access is not allowed.",
        )),
    }
}

/// The headers SigV4 adds that this server does not support (session tokens come from STS,
/// which weir has not).
pub(crate) fn refuse_session_token(headers: &HeaderMap, query_token: bool) -> Result<(), S3Error> {
    if query_token || headers.contains_key("x-amz-security-token") {
        return Err(S3Error::new(
            ErrorCode::InvalidArgument,
            "Session tokens (x-amz-security-token) are not supported.",
        ));
    }
    Ok(())
}
