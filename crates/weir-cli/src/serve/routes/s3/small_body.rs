//! The small XML bodies of bucket and multi-object requests (CreateBucket's configuration,
//! DeleteObjects' key list), read whole into memory up to a bound, with the body's protection
//! checked as an object's is: the signed SHA-256, `Content-MD5`, or the `aws-chunked` framing.

use super::access::Caller;
use sha2::{Digest, Sha256};
use weir::Exchange;
use weir_s3api::checksum::ContentMd5;
use weir_s3api::chunked::Event;
use weir_s3api::{ErrorCode, S3Error};

/// The body, at most `max` bytes (longer: `MaxMessageLengthExceeded`, or the error of the
/// framing), after its checks.
pub(super) async fn read(
    caller: &Caller,
    ex: &mut Exchange<'_>,
    max: usize,
) -> Result<Result<Vec<u8>, S3Error>, weir::Error> {
    let too_long = || S3Error::from_code(ErrorCode::MaxMessageLengthExceeded);
    if ex
        .request()
        .content_length()
        .is_some_and(|n| n > 2 * max as u64)
    {
        return Ok(Err(too_long()));
    }
    let md5 = match ex.request().header_str("content-md5") {
        Some(text) => match ContentMd5::parse(text) {
            Ok(m) => Some(m),
            Err(e) => return Ok(Err(e)),
        },
        None => None,
    };
    ex.set_max_body_size(Some(2 * max as u64));
    // ALLOCATION: the body, bounded by `max` (plus its framing).
    let mut wire = Vec::new();
    if let Err(e) = ex.read_body_to_end(&mut wire).await {
        if e.is_disconnect() {
            return Err(e);
        }
        return Ok(Err(if e.is_too_large() {
            too_long()
        } else {
            S3Error::from_code(ErrorCode::IncompleteBody)
        }));
    }
    let body = match caller.chunked_decoder() {
        None => wire,
        Some(mut decoder) => {
            let mut data = Vec::new();
            let mut pos = 0;
            loop {
                match decoder.decode(&wire[pos..]) {
                    Ok((used, Event::Data(range))) => {
                        data.extend_from_slice(&wire[pos..][range]);
                        pos += used;
                    }
                    Ok((_, Event::End(_))) => break,
                    Ok((used, Event::NeedMore)) => {
                        pos += used;
                        if pos >= wire.len() {
                            return Ok(Err(decoder.finish().err().unwrap_or_else(|| {
                                S3Error::from_code(ErrorCode::IncompleteBody)
                            })));
                        }
                    }
                    Err(e) => return Ok(Err(e)),
                }
            }
            data
        }
    };
    if body.len() > max {
        return Ok(Err(too_long()));
    }
    let sha256: [u8; 32] = Sha256::digest(&body).into();
    if let Err(e) = caller.payload().check_sha256(&sha256) {
        return Ok(Err(e));
    }
    if let Some(claimed) = md5 {
        let mut computed = ContentMd5::default();
        computed.update(&body);
        if let Err(e) = computed.check(&claimed) {
            return Ok(Err(e));
        }
    }
    Ok(Ok(body))
}
