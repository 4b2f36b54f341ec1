//! The `Authorization` header of SigV4 and the credential scope it and `X-Amz-Credential` share.
//!
//! `AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,
//! SignedHeaders=host;range;x-amz-date, Signature=<64 hex>`: the three components once each, in
//! any order, separated by commas with optional spaces. Anything else is
//! `AuthorizationHeaderMalformed` (Signature Version 2's `AWS AK:sig` included: weir never
//! spoke it).

use super::key::parse_hex32;
use crate::{ErrorCode, S3Error};

/// `Credential=`'s five parts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CredentialScope<'a> {
    pub(crate) access_key_id: &'a str,
    pub(crate) date: &'a str,
    pub(crate) region: &'a str,
    pub(crate) service: &'a str,
}

impl<'a> CredentialScope<'a> {
    /// Parses `AK/YYYYMMDD/region/service/aws4_request`.
    pub(crate) fn parse(value: &'a str, code: ErrorCode) -> Result<Self, S3Error> {
        let malformed = || {
            S3Error::new(
                code,
                "The credential is malformed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".",
            )
        };
        let mut parts = value.split('/');
        let (Some(access_key_id), Some(date), Some(region), Some(service), Some(terminal), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(malformed());
        };
        if access_key_id.is_empty()
            || date.len() != 8
            || !date.bytes().all(|b| b.is_ascii_digit())
            || region.is_empty()
            || terminal != "aws4_request"
        {
            return Err(malformed());
        }
        Ok(CredentialScope {
            access_key_id,
            date,
            region,
            service,
        })
    }

    /// `date/region/service/aws4_request`, the scope line of every string to sign.
    pub(crate) fn scope_string(&self) -> String {
        format!(
            "{}/{}/{}/aws4_request",
            self.date, self.region, self.service
        )
    }
}

/// A parsed `Authorization` header.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct AuthorizationHeader<'a> {
    pub(crate) credential: CredentialScope<'a>,
    pub(crate) signed_headers: &'a str,
    pub(crate) signature: [u8; 32],
}

impl<'a> AuthorizationHeader<'a> {
    pub(crate) fn parse(value: &'a str) -> Result<Self, S3Error> {
        let code = ErrorCode::AuthorizationHeaderMalformed;
        let malformed = |what: &'static str| S3Error::new(code, what);
        let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256") else {
            if value.starts_with("AWS ") {
                return Err(S3Error::new(
                    ErrorCode::InvalidRequest,
                    "Signature Version 2 is not supported; please use AWS4-HMAC-SHA256.",
                ));
            }
            return Err(malformed(
                "Unsupported authorization type; expecting AWS4-HMAC-SHA256.",
            ));
        };
        if !rest.starts_with(' ') {
            return Err(malformed("The authorization header is malformed."));
        }
        let (mut credential, mut signed_headers, mut signature) = (None, None, None);
        for component in rest.split(',') {
            let component = component.trim_matches(' ');
            let (name, value) = component
                .split_once('=')
                .ok_or_else(|| malformed("The authorization header is malformed."))?;
            let slot = match name {
                "Credential" => &mut credential,
                "SignedHeaders" => &mut signed_headers,
                "Signature" => &mut signature,
                _ => {
                    return Err(malformed(
                        "The authorization header has an unknown component.",
                    ));
                }
            };
            if slot.replace(value).is_some() {
                return Err(malformed("The authorization header repeats a component."));
            }
        }
        let (Some(credential), Some(signed_headers), Some(signature)) =
            (credential, signed_headers, signature)
        else {
            return Err(malformed(
                "The authorization header needs Credential, SignedHeaders and Signature.",
            ));
        };
        let signature = parse_hex32(signature.as_bytes())
            .ok_or_else(|| malformed("The signature must be 64 lower-case hex digits."))?;
        Ok(AuthorizationHeader {
            credential: CredentialScope::parse(credential, code)?,
            signed_headers,
            signature,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIG: &str = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41";

    #[test]
    fn parses_with_and_without_spaces() {
        for value in [
            format!(
                "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range,Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range, Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Signature={SIG},Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range"
            ),
        ] {
            let parsed = AuthorizationHeader::parse(&value).unwrap();
            assert_eq!(parsed.credential.access_key_id, "AK");
            assert_eq!(
                parsed.credential.scope_string(),
                "20130524/us-east-1/s3/aws4_request"
            );
            assert_eq!(parsed.signed_headers, "host;range");
        }
    }

    #[test]
    fn refuses_malformed() {
        let good_cred = "Credential=AK/20130524/us-east-1/s3/aws4_request";
        for value in [
            format!(
                "AWS4-HMAC-SHA256Credential=AK/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature={SIG}"
            ),
            format!("AWS4-HMAC-SHA256 {good_cred},SignedHeaders=host"),
            format!(
                "AWS4-HMAC-SHA256 {good_cred},SignedHeaders=host,Signature={SIG},Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 {good_cred},SignedHeaders=host,Signature={}",
                &SIG[1..]
            ),
            format!(
                "AWS4-HMAC-SHA256 {good_cred},SignedHeaders=host,Signature={}",
                SIG.to_uppercase()
            ),
            format!("AWS4-HMAC-SHA256 {good_cred},SignedHeaders=host,Signature={SIG},Extra=1"),
            format!(
                "AWS4-HMAC-SHA256 Credential=AK/2013052/us-east-1/s3/aws4_request,SignedHeaders=host,Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4,SignedHeaders=host,Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=AK/20130524/us-east-1/s3/aws4_request/x,SignedHeaders=host,Signature={SIG}"
            ),
            format!(
                "AWS4-HMAC-SHA256 Credential=/20130524/us-east-1/s3/aws4_request,SignedHeaders=host,Signature={SIG}"
            ),
            format!("AWS4-HMAC-SHA512 {good_cred},SignedHeaders=host,Signature={SIG}"),
        ] {
            let err = AuthorizationHeader::parse(&value).unwrap_err();
            assert_eq!(err.code, ErrorCode::AuthorizationHeaderMalformed, "{value}");
        }
        assert_eq!(
            AuthorizationHeader::parse("AWS AKIA:c2lnbmF0dXJl")
                .unwrap_err()
                .code,
            ErrorCode::InvalidRequest
        );
    }
}
