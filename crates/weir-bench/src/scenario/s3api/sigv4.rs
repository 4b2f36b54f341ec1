//! Signature V4 for the `s3api` scenario's client: the `Authorization` header of a request
//! whose payload is `UNSIGNED-PAYLOAD`, the only form the benchmark sends (the body is not
//! hashed by the client, so signing costs the same for every server and nothing per byte).
//!
//! Written by hand with `hmac` and `sha2` (both already in the lock file through weir-s3api):
//! `aws-sigv4` is not in the lock file, and would bring the AWS smithy runtime for four HMACs.
//! The canonical request follows AWS's rules for S3: the path as given (the bench's keys are
//! unreserved characters and `/` only, so no encoding is needed, which [`sign`] asserts), the
//! query sorted by name with `=` after every name, the signed headers lowercase and sorted.
//! The test pins the result against AWS's published example.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The payload hash of every request the bench sends.
pub const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

/// One access key and its secret, and the region signed for (any: weir accepts any region;
/// SeaweedFS's default is `us-east-1`).
pub struct Credentials<'a> {
    pub access_key: &'a str,
    pub secret: &'a str,
    pub region: &'a str,
}

/// `YYYYMMDD'T'HHMMSS'Z'` of a Unix time (UTC).
pub fn amz_date(unix: u64) -> String {
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(data);
    m.finalize().into_bytes().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// S3's URI encoding of a query name or value: every byte but the unreserved ones as `%XX`.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The canonical query string of `query` (raw names and values): encoded, sorted, `&`-joined,
/// `=` after every name. Sent as is in the request line, so that what is signed is what is sent.
pub fn query_string(query: &[(&str, &str)]) -> String {
    let mut q: Vec<(String, String)> = query.iter().map(|(k, v)| (encode(k), encode(v))).collect();
    q.sort();
    let q: Vec<String> = q.iter().map(|(k, v)| format!("{k}={v}")).collect();
    q.join("&")
}

/// The `Authorization` header value for `method path?query` with `headers` (each `(lowercase
/// name, value)`, `host`, `x-amz-content-sha256` and `x-amz-date` among them, all signed),
/// at `date` (`amz_date`), with payload hash `payload`. `query` is raw `(name, value)` pairs
/// (the request line must carry [`query_string`] of the same pairs).
pub fn sign(
    c: &Credentials<'_>,
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    headers: &[(&str, &str)],
    date: &str,
    payload: &str,
) -> String {
    debug_assert!(
        path.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~/".contains(&b)),
        "path {path:?} would need URI encoding"
    );
    let mut h: Vec<_> = headers.to_vec();
    h.sort();
    let canonical_headers: String = h
        .iter()
        .map(|(k, v)| format!("{k}:{}\n", v.trim()))
        .collect();
    let signed: Vec<&str> = h.iter().map(|(k, _)| *k).collect();
    let signed = signed.join(";");
    let canonical = format!(
        "{method}\n{path}\n{}\n{canonical_headers}\n{signed}\n{payload}",
        query_string(query)
    );
    let day = &date[..8];
    let scope = format!("{day}/{}/s3/aws4_request", c.region);
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let key = hmac(format!("AWS4{}", c.secret).as_bytes(), day.as_bytes());
    let key = hmac(&key, c.region.as_bytes());
    let key = hmac(&key, b"s3");
    let key = hmac(&key, b"aws4_request");
    let signature = hex(&hmac(&key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={signature}",
        c.access_key
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's "Example: GET Object" (Signature V4, header authentication, S3 API reference).
    #[test]
    fn signs_aws_published_example() {
        let c = Credentials {
            access_key: "AKIAIOSFODNN7EXAMPLE",
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
        };
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let auth = sign(
            &c,
            "GET",
            "/test.txt",
            &[],
            &[
                ("host", "examplebucket.s3.amazonaws.com"),
                ("range", "bytes=0-9"),
                ("x-amz-content-sha256", empty),
                ("x-amz-date", "20130524T000000Z"),
            ],
            "20130524T000000Z",
            empty,
        );
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn encodes_and_sorts_the_query() {
        assert_eq!(
            query_string(&[("uploadId", "a/b+c="), ("partNumber", "2"), ("uploads", "")]),
            "partNumber=2&uploadId=a%2Fb%2Bc%3D&uploads="
        );
    }

    #[test]
    fn formats_dates_in_utc() {
        assert_eq!(amz_date(0), "19700101T000000Z");
        // 2013-05-24 00:00:00 UTC, the example's date.
        assert_eq!(amz_date(1_369_353_600), "20130524T000000Z");
        // A leap day, late in the day.
        assert_eq!(amz_date(1_709_251_199), "20240229T235959Z");
    }
}
