//! S3's errors: one [`ErrorCode`] per S3 error code weir answers with, each with its HTTP
//! status (the table of S3's "Error responses" page), and [`S3Error`], a code with a message.
//!
//! Every module of the crate fails with an [`S3Error`], so the front end writes
//! [`crate::xml::errors::write_error`] with what it got, and the client sees the code its SDK
//! knows (boto3 retries `RequestTimeTooSkewed` after fixing its clock offset, for example).

use std::borrow::Cow;
use std::fmt;

use http::StatusCode;

macro_rules! codes {
    ($($variant:ident => $status:expr, $message:literal;)*) => {
        /// An S3 error code. [`ErrorCode::as_str`] is the `<Code>` of the XML body.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                #[doc = $message]
                $variant,
            )*
        }

        impl ErrorCode {
            /// Every code, for tests and documentation tables.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant),*];

            /// The code as S3 spells it in `<Code>`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => stringify!($variant),)*
                }
            }

            /// The HTTP status S3 answers this code with.
            pub fn status(self) -> StatusCode {
                match self {
                    $(ErrorCode::$variant => $status,)*
                }
            }

            /// S3's generic message for the code, used when there is nothing more precise.
            pub fn default_message(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $message,)*
                }
            }
        }
    };
}

codes! {
    AccessDenied => StatusCode::FORBIDDEN, "Access Denied";
    AccessForbidden => StatusCode::FORBIDDEN, "CORSResponse: CORS is not enabled for this bucket.";
    AuthorizationHeaderMalformed => StatusCode::BAD_REQUEST, "The authorization header is malformed.";
    AuthorizationQueryParametersError => StatusCode::BAD_REQUEST, "Error parsing the X-Amz-Credential parameter.";
    BadRequest => StatusCode::BAD_REQUEST, "Insufficient information. Origin request header needed.";
    BadDigest => StatusCode::BAD_REQUEST, "The Content-MD5 or checksum value that you specified did not match what the server received.";
    BucketAlreadyExists => StatusCode::CONFLICT, "The requested bucket name is not available.";
    BucketAlreadyOwnedByYou => StatusCode::CONFLICT, "The bucket that you tried to create already exists, and you own it.";
    BucketNotEmpty => StatusCode::CONFLICT, "The bucket that you tried to delete is not empty.";
    EntityTooLarge => StatusCode::BAD_REQUEST, "Your proposed upload exceeds the maximum allowed object size.";
    EntityTooSmall => StatusCode::BAD_REQUEST, "Your proposed upload is smaller than the minimum allowed object size.";
    MetadataTooLarge => StatusCode::BAD_REQUEST, "Your metadata headers exceed the maximum allowed metadata size.";
    ExpiredToken => StatusCode::BAD_REQUEST, "The provided token has expired.";
    IncompleteBody => StatusCode::BAD_REQUEST, "You did not provide the number of bytes specified by the Content-Length HTTP header.";
    InternalError => StatusCode::INTERNAL_SERVER_ERROR, "We encountered an internal error. Please try again.";
    InvalidAccessKeyId => StatusCode::FORBIDDEN, "The AWS access key ID that you provided does not exist in our records.";
    InvalidArgument => StatusCode::BAD_REQUEST, "Invalid Argument";
    InvalidBucketName => StatusCode::BAD_REQUEST, "The specified bucket is not valid.";
    InvalidDigest => StatusCode::BAD_REQUEST, "The Content-MD5 or checksum value that you specified is not valid.";
    InvalidPart => StatusCode::BAD_REQUEST, "One or more of the specified parts could not be found.";
    InvalidPartOrder => StatusCode::BAD_REQUEST, "The list of parts was not in ascending order.";
    InvalidRange => StatusCode::RANGE_NOT_SATISFIABLE, "The requested range cannot be satisfied.";
    InvalidRequest => StatusCode::BAD_REQUEST, "Invalid Request";
    InvalidURI => StatusCode::BAD_REQUEST, "Couldn't parse the specified URI.";
    KeyTooLongError => StatusCode::BAD_REQUEST, "Your key is too long.";
    MalformedXML => StatusCode::BAD_REQUEST, "The XML that you provided was not well formed or did not validate against our published schema.";
    MaxMessageLengthExceeded => StatusCode::BAD_REQUEST, "Your request was too big.";
    MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED, "The specified method is not allowed against this resource.";
    MissingContentLength => StatusCode::LENGTH_REQUIRED, "You must provide the Content-Length HTTP header.";
    MissingSecurityHeader => StatusCode::BAD_REQUEST, "Your request is missing a required header.";
    NoSuchBucket => StatusCode::NOT_FOUND, "The specified bucket does not exist.";
    NoSuchKey => StatusCode::NOT_FOUND, "The specified key does not exist.";
    NoSuchUpload => StatusCode::NOT_FOUND, "The specified multipart upload does not exist.";
    NotImplemented => StatusCode::NOT_IMPLEMENTED, "A header or query you provided implies functionality that is not implemented.";
    PreconditionFailed => StatusCode::PRECONDITION_FAILED, "At least one of the preconditions that you specified did not hold.";
    RequestTimeTooSkewed => StatusCode::FORBIDDEN, "The difference between the request time and the server's time is too large.";
    SignatureDoesNotMatch => StatusCode::FORBIDDEN, "The request signature that we calculated does not match the signature you provided. Check your key and signing method.";
    SlowDown => StatusCode::SERVICE_UNAVAILABLE, "Please reduce your request rate.";
    XAmzContentSHA256Mismatch => StatusCode::BAD_REQUEST, "The provided 'x-amz-content-sha256' header does not match what was computed.";
}

/// An S3 error: a code (which decides the HTTP status), a message for the `<Message>` element,
/// and the extra elements S3 adds to some errors' bodies (`SignatureDoesNotMatch` carries the
/// `CanonicalRequest` and `StringToSign` the server computed, which is how a client's author
/// finds what the two sides disagree on; `RequestTimeTooSkewed` the two times). Messages are
/// static where they can be, and an error without details holds an empty `Vec`, so that refusing
/// a request does not allocate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct S3Error {
    /// The S3 error code.
    pub code: ErrorCode,
    /// The human-readable message.
    pub message: Cow<'static, str>,
    /// Extra elements of the error body, `(element, text)`, in order.
    pub details: Vec<(&'static str, String)>,
}

impl S3Error {
    /// An error with `message`.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        S3Error {
            code,
            message: message.into(),
            details: Vec::new(),
        }
    }

    /// An error with the code's generic message.
    pub fn from_code(code: ErrorCode) -> Self {
        S3Error {
            code,
            message: Cow::Borrowed(code.default_message()),
            details: Vec::new(),
        }
    }

    /// Adds an element to the error body (`<element>text</element>`, after `RequestId`).
    pub fn with_detail(mut self, element: &'static str, text: impl Into<String>) -> Self {
        self.details.push((element, text.into()));
        self
    }

    /// The text of a detail element, if present.
    pub fn detail(&self, element: &str) -> Option<&str> {
        self.details
            .iter()
            .find(|(e, _)| *e == element)
            .map(|(_, t)| t.as_str())
    }

    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }
}

impl From<ErrorCode> for S3Error {
    fn from(code: ErrorCode) -> Self {
        S3Error::from_code(code)
    }
}

impl fmt::Display for S3Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for S3Error {}
