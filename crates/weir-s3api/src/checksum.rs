//! S3's checksums: `x-amz-checksum-{crc32,crc32c,crc64nvme,sha1,sha256}` (the five algorithms
//! S3 supports), their base64 values, the composite form of multipart uploads
//! (`base64(checksum(part checksums…))-N`), the full-object CRC of a multipart upload (CRCs
//! combined without reading the data again), and `Content-MD5`.
//!
//! All streaming: [`Checksum::update`] takes the body as it passes (no copy, no buffer), and
//! values are fixed-size ([`ChecksumValue`], at most 32 bytes, on the stack). CRC values are
//! big-endian bytes before base64, as S3 sends them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use crc_fast::CrcAlgorithm;
use md5::Md5;
use sha1::Sha1;
use sha2::{Digest as _, Sha256};

use crate::{ErrorCode, S3Error};

/// A checksum algorithm S3 supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChecksumAlgorithm {
    /// CRC-32 (ISO-HDLC, zlib's).
    Crc32,
    /// CRC-32C (Castagnoli, iSCSI).
    Crc32c,
    /// CRC-64/NVME, S3's default for new objects since 2025.
    Crc64Nvme,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
}

impl ChecksumAlgorithm {
    /// Every algorithm.
    pub const ALL: [ChecksumAlgorithm; 5] = [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32c,
        ChecksumAlgorithm::Crc64Nvme,
        ChecksumAlgorithm::Sha1,
        ChecksumAlgorithm::Sha256,
    ];

    /// The name in `x-amz-checksum-algorithm`, `x-amz-sdk-checksum-algorithm` and
    /// `<ChecksumAlgorithm>`: `CRC32`, `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`.
    pub fn name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "CRC32",
            ChecksumAlgorithm::Crc32c => "CRC32C",
            ChecksumAlgorithm::Crc64Nvme => "CRC64NVME",
            ChecksumAlgorithm::Sha1 => "SHA1",
            ChecksumAlgorithm::Sha256 => "SHA256",
        }
    }

    /// The header (and trailer) name: `x-amz-checksum-crc32`, ….
    pub fn header_name(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "x-amz-checksum-crc32",
            ChecksumAlgorithm::Crc32c => "x-amz-checksum-crc32c",
            ChecksumAlgorithm::Crc64Nvme => "x-amz-checksum-crc64nvme",
            ChecksumAlgorithm::Sha1 => "x-amz-checksum-sha1",
            ChecksumAlgorithm::Sha256 => "x-amz-checksum-sha256",
        }
    }

    /// The XML element of the value in listings and results: `ChecksumCRC32`, ….
    pub fn xml_element(self) -> &'static str {
        match self {
            ChecksumAlgorithm::Crc32 => "ChecksumCRC32",
            ChecksumAlgorithm::Crc32c => "ChecksumCRC32C",
            ChecksumAlgorithm::Crc64Nvme => "ChecksumCRC64NVME",
            ChecksumAlgorithm::Sha1 => "ChecksumSHA1",
            ChecksumAlgorithm::Sha256 => "ChecksumSHA256",
        }
    }

    /// Parses a [`name`](Self::name), case-insensitively (clients send `crc32` and `CRC32`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Parses a [`header_name`](Self::header_name), case-insensitively.
    pub fn from_header_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.header_name().eq_ignore_ascii_case(name))
    }

    /// The parses an XML element name ([`xml_element`](Self::xml_element)).
    pub fn from_xml_element(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.xml_element() == name)
    }

    /// The value's length in bytes.
    pub fn value_len(self) -> usize {
        match self {
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c => 4,
            ChecksumAlgorithm::Crc64Nvme => 8,
            ChecksumAlgorithm::Sha1 => 20,
            ChecksumAlgorithm::Sha256 => 32,
        }
    }

    /// Whether this is a CRC (CRCs can be combined, so a multipart upload can have a
    /// full-object value).
    pub fn is_crc(self) -> bool {
        matches!(
            self,
            ChecksumAlgorithm::Crc32 | ChecksumAlgorithm::Crc32c | ChecksumAlgorithm::Crc64Nvme
        )
    }

    fn crc(self) -> Option<CrcAlgorithm> {
        match self {
            ChecksumAlgorithm::Crc32 => Some(CrcAlgorithm::Crc32IsoHdlc),
            ChecksumAlgorithm::Crc32c => Some(CrcAlgorithm::Crc32Iscsi),
            ChecksumAlgorithm::Crc64Nvme => Some(CrcAlgorithm::Crc64Nvme),
            _ => None,
        }
    }
}

/// A checksum's value: the algorithm and its bytes (fixed-size, no allocation).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChecksumValue {
    algorithm: ChecksumAlgorithm,
    bytes: [u8; 32],
}

impl std::fmt::Debug for ChecksumValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.algorithm.name(), self.to_base64())
    }
}

/// The longest base64 of a value (SHA-256: 32 bytes → 44 characters).
pub const MAX_BASE64_LEN: usize = 44;

impl ChecksumValue {
    /// A value from its bytes; `None` if the length is not the algorithm's.
    pub fn from_bytes(algorithm: ChecksumAlgorithm, bytes: &[u8]) -> Option<Self> {
        if bytes.len() != algorithm.value_len() {
            return None;
        }
        let mut value = ChecksumValue {
            algorithm,
            bytes: [0; 32],
        };
        value.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(value)
    }

    /// Parses a header, trailer or XML value (standard base64 with padding).
    /// `BadDigest` if it is not base64 or not of the algorithm's length: a claimed value that
    /// is no checksum of the algorithm matches no body, and a completion already answers a
    /// claim it does not form `BadDigest` whatever its form, so a PutObject or UploadPart
    /// answers the same (as Ceph RGW does and s3-tests' `test_object_checksum_*` check).
    /// A malformed `Content-MD5` stays `InvalidDigest` ([`ContentMd5::parse`]).
    pub fn parse_base64(algorithm: ChecksumAlgorithm, text: &str) -> Result<Self, S3Error> {
        let invalid = || {
            S3Error::new(
                ErrorCode::BadDigest,
                format!("Value for {} header is invalid.", algorithm.header_name()),
            )
        };
        let mut buf = [0u8; 33];
        if text.len() > MAX_BASE64_LEN {
            return Err(invalid());
        }
        let n = BASE64
            .decode_slice(text.trim(), &mut buf)
            .map_err(|_| invalid())?;
        Self::from_bytes(algorithm, &buf[..n]).ok_or_else(invalid)
    }

    /// The algorithm.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// The raw value.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.algorithm.value_len()]
    }

    /// The value as a CRC integer (CRC algorithms only).
    fn as_crc(&self) -> Option<u64> {
        self.algorithm.crc()?;
        Some(
            self.as_bytes()
                .iter()
                .fold(0u64, |acc, &b| acc << 8 | u64::from(b)),
        )
    }

    fn from_crc(algorithm: ChecksumAlgorithm, crc: u64) -> Self {
        let bytes = crc.to_be_bytes();
        let len = algorithm.value_len();
        Self::from_bytes(algorithm, &bytes[8 - len..]).expect("CRC lengths are 4 or 8")
    }

    /// Base64 into `buf`, without allocating; returns the text.
    pub fn encode_base64<'b>(&self, buf: &'b mut [u8; MAX_BASE64_LEN]) -> &'b str {
        let n = BASE64
            .encode_slice(self.as_bytes(), buf)
            .expect("44 bytes hold any value");
        std::str::from_utf8(&buf[..n]).expect("base64 is ASCII")
    }

    /// Base64, as S3 sends it in headers and XML.
    pub fn to_base64(&self) -> String {
        BASE64.encode(self.as_bytes())
    }

    /// `BadDigest` unless `self` (what was received) equals `claimed` (what the client sent).
    pub fn check(&self, claimed: &ChecksumValue) -> Result<(), S3Error> {
        if self == claimed {
            Ok(())
        } else {
            Err(S3Error::new(
                ErrorCode::BadDigest,
                format!(
                    "The {} you specified did not match the calculated checksum.",
                    claimed.algorithm.header_name()
                ),
            ))
        }
    }
}

/// How a multipart upload's checksum is formed (`x-amz-checksum-type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumType {
    /// The checksum of the parts' checksums, `base64-N` ([`CompositeChecksum`]).
    Composite,
    /// The checksum of the whole object (CRCs only: [`combine_crc`]).
    FullObject,
}

impl ChecksumType {
    /// Parses `COMPOSITE` or `FULL_OBJECT`.
    pub fn parse(value: &str) -> Result<Self, S3Error> {
        match value {
            "COMPOSITE" => Ok(ChecksumType::Composite),
            "FULL_OBJECT" => Ok(ChecksumType::FullObject),
            _ => Err(S3Error::new(
                ErrorCode::InvalidRequest,
                "Value for x-amz-checksum-type header is invalid.",
            )),
        }
    }

    /// The header's value.
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksumType::Composite => "COMPOSITE",
            ChecksumType::FullObject => "FULL_OBJECT",
        }
    }
}

/// The `x-amz-checksum-*` header of a request, parsed: `None` if there is none, `InvalidRequest`
/// if there are several (S3 accepts one), `BadDigest` if its value is not the algorithm's.
/// A header value of the form `base64-N` is not accepted here (that is a multipart object's
/// answer, not a request's). `x-amz-checksum-type` and `x-amz-checksum-algorithm` are not
/// values and are skipped.
pub fn from_headers(headers: &http::HeaderMap) -> Result<Option<ChecksumValue>, S3Error> {
    let mut found = None;
    for (name, value) in headers {
        let Some(alg) = ChecksumAlgorithm::from_header_name(name.as_str()) else {
            continue;
        };
        let text = value.to_str().map_err(|_| {
            S3Error::new(
                ErrorCode::BadDigest,
                format!("Value for {} header is invalid.", alg.header_name()),
            )
        })?;
        if found
            .replace(ChecksumValue::parse_base64(alg, text)?)
            .is_some()
        {
            return Err(S3Error::new(
                ErrorCode::InvalidRequest,
                "Expecting a single x-amz-checksum- header.",
            ));
        }
    }
    Ok(found)
}

/// The algorithm a client announces for a checksum it sends in a trailer or wants computed
/// (`x-amz-sdk-checksum-algorithm`, or `x-amz-checksum-algorithm` on CreateMultipartUpload).
pub fn announced_algorithm(
    headers: &http::HeaderMap,
) -> Result<Option<ChecksumAlgorithm>, S3Error> {
    for name in ["x-amz-sdk-checksum-algorithm", "x-amz-checksum-algorithm"] {
        if let Some(value) = headers.get(name) {
            let alg = value.to_str().ok().and_then(ChecksumAlgorithm::from_name).ok_or_else(|| {
                S3Error::new(ErrorCode::InvalidRequest, "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
            })?;
            return Ok(Some(alg));
        }
    }
    Ok(None)
}

enum State {
    Crc(crc_fast::Digest),
    Sha1(Sha1),
    Sha256(Sha256),
}

/// A running checksum of one of S3's algorithms.
pub struct Checksum {
    algorithm: ChecksumAlgorithm,
    state: State,
}

impl Checksum {
    /// A checksum of nothing yet.
    pub fn new(algorithm: ChecksumAlgorithm) -> Self {
        let state = match (algorithm, algorithm.crc()) {
            (_, Some(crc)) => State::Crc(crc_fast::Digest::new(crc)),
            (ChecksumAlgorithm::Sha1, _) => State::Sha1(Sha1::new()),
            _ => State::Sha256(Sha256::new()),
        };
        Checksum { algorithm, state }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> ChecksumAlgorithm {
        self.algorithm
    }

    /// Adds `data` (no copy).
    pub fn update(&mut self, data: &[u8]) {
        match &mut self.state {
            State::Crc(d) => d.update(data),
            State::Sha1(d) => d.update(data),
            State::Sha256(d) => d.update(data),
        }
    }

    /// The value of everything added.
    pub fn finalize(self) -> ChecksumValue {
        match self.state {
            State::Crc(d) => ChecksumValue::from_crc(self.algorithm, d.finalize()),
            State::Sha1(d) => {
                ChecksumValue::from_bytes(self.algorithm, &d.finalize()).expect("SHA-1 is 20 bytes")
            }
            State::Sha256(d) => ChecksumValue::from_bytes(self.algorithm, &d.finalize())
                .expect("SHA-256 is 32 bytes"),
        }
    }

    /// The checksum of `data` at once.
    pub fn of(algorithm: ChecksumAlgorithm, data: &[u8]) -> ChecksumValue {
        let mut c = Checksum::new(algorithm);
        c.update(data);
        c.finalize()
    }
}

/// The composite checksum of a multipart upload (S3's `COMPOSITE` type): the checksum of the
/// parts' raw checksums concatenated in part order, written `base64-N` with N the number of
/// parts.
pub struct CompositeChecksum {
    inner: Checksum,
    parts: u32,
}

impl CompositeChecksum {
    /// A composite of no parts yet.
    pub fn new(algorithm: ChecksumAlgorithm) -> Self {
        CompositeChecksum {
            inner: Checksum::new(algorithm),
            parts: 0,
        }
    }

    /// Adds the next part's checksum; `InvalidRequest` if its algorithm is another.
    pub fn add_part(&mut self, part: &ChecksumValue) -> Result<(), S3Error> {
        if part.algorithm != self.inner.algorithm {
            return Err(S3Error::new(
                ErrorCode::InvalidRequest,
                "The parts' checksums use another algorithm than the upload's.",
            ));
        }
        self.inner.update(part.as_bytes());
        self.parts += 1;
        Ok(())
    }

    /// The composite value and the number of parts.
    pub fn finalize(self) -> (ChecksumValue, u32) {
        (self.inner.finalize(), self.parts)
    }

    /// `base64-N`, as in `x-amz-checksum-*` of a completed multipart object.
    pub fn finalize_text(self) -> String {
        let (value, parts) = self.finalize();
        format!("{}-{parts}", value.to_base64())
    }
}

/// Parses `base64-N` (a composite value): the value and N.
pub fn parse_composite(
    algorithm: ChecksumAlgorithm,
    text: &str,
) -> Result<(ChecksumValue, u32), S3Error> {
    let (value, parts) = text
        .rsplit_once('-')
        .ok_or_else(|| S3Error::new(ErrorCode::BadDigest, "A composite checksum ends with -N."))?;
    let parts = parts
        .parse::<u32>()
        .ok()
        .filter(|&n| n >= 1 && parts.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| S3Error::new(ErrorCode::BadDigest, "A composite checksum ends with -N."))?;
    Ok((ChecksumValue::parse_base64(algorithm, value)?, parts))
}

/// The CRC of `A ‖ B` from the CRC of `A`, the CRC of `B` and `B`'s length: a multipart
/// upload's full-object CRC (S3's `FULL_OBJECT` type) from its parts' CRCs, without reading the
/// parts again. `None` for SHA algorithms (they cannot be combined) or mixed algorithms.
pub fn combine_crc(a: &ChecksumValue, b: &ChecksumValue, b_len: u64) -> Option<ChecksumValue> {
    if a.algorithm != b.algorithm {
        return None;
    }
    let crc = a.algorithm.crc()?;
    let combined = crc_fast::checksum_combine(crc, a.as_crc()?, b.as_crc()?, b_len);
    Some(ChecksumValue::from_crc(a.algorithm, combined))
}

/// `Content-MD5`: the body's MD5, base64 (RFC 1864).
pub struct ContentMd5(Md5);

impl Default for ContentMd5 {
    fn default() -> Self {
        ContentMd5(Md5::new())
    }
}

impl ContentMd5 {
    /// Parses the header's value; `InvalidDigest` if it is not 16 bytes of base64.
    pub fn parse(text: &str) -> Result<[u8; 16], S3Error> {
        let invalid = || {
            S3Error::new(
                ErrorCode::InvalidDigest,
                "The Content-MD5 you specified is not valid.",
            )
        };
        let mut buf = [0u8; 18];
        if text.len() > 24 {
            return Err(invalid());
        }
        let n = BASE64
            .decode_slice(text.trim(), &mut buf)
            .map_err(|_| invalid())?;
        buf[..n].try_into().map_err(|_| invalid())
    }

    /// Adds `data`.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The MD5 of everything added (also a single-part object's ETag, in hex).
    pub fn finalize(self) -> [u8; 16] {
        self.0.finalize().into()
    }

    /// `BadDigest` unless the body's MD5 is `claimed`.
    pub fn check(self, claimed: &[u8; 16]) -> Result<(), S3Error> {
        if &self.finalize() == claimed {
            Ok(())
        } else {
            Err(S3Error::new(
                ErrorCode::BadDigest,
                "The Content-MD5 you specified did not match what we received.",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of "123456789" (the CRC catalogue's check input) and of "Hello world" (S3 docs).
    #[test]
    fn known_values() {
        let check = |alg, data: &[u8]| Checksum::of(alg, data).to_base64();
        // CRC-32 check 0xCBF43926, CRC-32C 0xE3069283, CRC-64/NVME 0xAE8B14860A799888.
        assert_eq!(
            check(ChecksumAlgorithm::Crc32, b"123456789"),
            BASE64.encode(0xCBF4_3926u32.to_be_bytes())
        );
        assert_eq!(
            check(ChecksumAlgorithm::Crc32c, b"123456789"),
            BASE64.encode(0xE306_9283u32.to_be_bytes())
        );
        assert_eq!(
            check(ChecksumAlgorithm::Crc64Nvme, b"123456789"),
            BASE64.encode(0xAE8B_1486_0A79_9888u64.to_be_bytes())
        );
        assert_eq!(
            check(ChecksumAlgorithm::Sha1, b"abc"),
            "qZk+NkcGgWq6PiVxeFDCbJzQ2J0="
        );
        assert_eq!(
            check(ChecksumAlgorithm::Sha256, b""),
            "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
        );
        // What botocore sends for an empty body with CRC32 (its trailer in our vectors).
        assert_eq!(check(ChecksumAlgorithm::Crc32, b""), "AAAAAA==");
    }

    #[test]
    fn streaming_equals_one_shot() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for alg in ChecksumAlgorithm::ALL {
            let mut c = Checksum::new(alg);
            for piece in data.chunks(777) {
                c.update(piece);
            }
            assert_eq!(c.finalize(), Checksum::of(alg, &data), "{alg:?}");
        }
    }

    #[test]
    fn base64_parse_is_strict() {
        let v = Checksum::of(ChecksumAlgorithm::Crc32, b"x");
        assert_eq!(
            ChecksumValue::parse_base64(ChecksumAlgorithm::Crc32, &v.to_base64()).unwrap(),
            v
        );
        let mut buf = [0; MAX_BASE64_LEN];
        assert_eq!(v.encode_base64(&mut buf), v.to_base64());
        for bad in ["", "AAAA", "AAAAAAAA", "!!!!!!==", "AAAAAA=="] {
            let parsed = ChecksumValue::parse_base64(ChecksumAlgorithm::Crc64Nvme, bad);
            assert_eq!(parsed.unwrap_err().code, ErrorCode::BadDigest, "{bad}");
        }
        assert!(v.check(&v).is_ok());
        let other = Checksum::of(ChecksumAlgorithm::Crc32, b"y");
        assert_eq!(other.check(&v).unwrap_err().code, ErrorCode::BadDigest);
    }

    #[test]
    fn composite_is_checksum_of_checksums() {
        let parts: [&[u8]; 3] = [b"part one", b"part two", b"3"];
        for alg in ChecksumAlgorithm::ALL {
            let mut composite = CompositeChecksum::new(alg);
            let mut concatenated = Vec::new();
            for p in parts {
                let v = Checksum::of(alg, p);
                concatenated.extend_from_slice(v.as_bytes());
                composite.add_part(&v).unwrap();
            }
            let text = composite.finalize_text();
            assert_eq!(
                text,
                format!("{}-3", Checksum::of(alg, &concatenated).to_base64())
            );
            let (value, n) = parse_composite(alg, &text).unwrap();
            assert_eq!((value, n), (Checksum::of(alg, &concatenated), 3));
        }
        let mut composite = CompositeChecksum::new(ChecksumAlgorithm::Crc32);
        assert!(
            composite
                .add_part(&Checksum::of(ChecksumAlgorithm::Sha1, b""))
                .is_err()
        );
        assert!(parse_composite(ChecksumAlgorithm::Crc32, "AAAAAA==-0").is_err());
        assert!(parse_composite(ChecksumAlgorithm::Crc32, "AAAAAA==").is_err());
        assert!(parse_composite(ChecksumAlgorithm::Crc32, "AAAAAA==-+1").is_err());
    }

    #[test]
    fn crc_combination_is_the_whole_object_crc() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        let (a, b) = data.split_at(37_123);
        for alg in [
            ChecksumAlgorithm::Crc32,
            ChecksumAlgorithm::Crc32c,
            ChecksumAlgorithm::Crc64Nvme,
        ] {
            let combined =
                combine_crc(&Checksum::of(alg, a), &Checksum::of(alg, b), b.len() as u64);
            assert_eq!(combined, Some(Checksum::of(alg, &data)), "{alg:?}");
        }
        let sha = Checksum::of(ChecksumAlgorithm::Sha256, a);
        assert_eq!(combine_crc(&sha, &sha, 1), None);
    }

    #[test]
    fn content_md5() {
        // RFC 1321's MD5("abc") = 900150983cd24fb0d6963f7d28e17f72.
        let claimed = ContentMd5::parse("kAFQmDzST7DWlj99KOF/cg==").unwrap();
        let mut md5 = ContentMd5::default();
        md5.update(b"ab");
        md5.update(b"c");
        assert!(md5.check(&claimed).is_ok());
        let mut md5 = ContentMd5::default();
        md5.update(b"abd");
        assert_eq!(md5.check(&claimed).unwrap_err().code, ErrorCode::BadDigest);
        assert_eq!(
            ContentMd5::parse("kAFQmDzST7DWlj99KOF/").unwrap_err().code,
            ErrorCode::InvalidDigest
        );
    }

    #[test]
    fn checksum_headers() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(from_headers(&headers).unwrap(), None);
        headers.insert("x-amz-checksum-type", "COMPOSITE".parse().unwrap());
        headers.insert("x-amz-checksum-algorithm", "crc32c".parse().unwrap());
        assert_eq!(from_headers(&headers).unwrap(), None);
        assert_eq!(
            announced_algorithm(&headers).unwrap(),
            Some(ChecksumAlgorithm::Crc32c)
        );
        let v = Checksum::of(ChecksumAlgorithm::Crc32c, b"x");
        headers.insert("x-amz-checksum-crc32c", v.to_base64().parse().unwrap());
        assert_eq!(from_headers(&headers).unwrap(), Some(v));
        headers.insert(
            "x-amz-checksum-sha1",
            Checksum::of(ChecksumAlgorithm::Sha1, b"x")
                .to_base64()
                .parse()
                .unwrap(),
        );
        assert_eq!(
            from_headers(&headers).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        headers.remove("x-amz-checksum-sha1");
        headers.insert("x-amz-checksum-crc32c", "AAAA".parse().unwrap());
        assert_eq!(
            from_headers(&headers).unwrap_err().code,
            ErrorCode::BadDigest
        );
        headers.insert("x-amz-sdk-checksum-algorithm", "MD5".parse().unwrap());
        assert_eq!(
            announced_algorithm(&headers).unwrap_err().code,
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            ChecksumType::parse("FULL_OBJECT").unwrap().as_str(),
            "FULL_OBJECT"
        );
        assert!(ChecksumType::parse("full_object").is_err());
    }

    #[test]
    fn names_round_trip() {
        for alg in ChecksumAlgorithm::ALL {
            assert_eq!(
                ChecksumAlgorithm::from_name(&alg.name().to_lowercase()),
                Some(alg)
            );
            assert_eq!(
                ChecksumAlgorithm::from_header_name(&alg.header_name().to_uppercase()),
                Some(alg)
            );
            assert_eq!(
                ChecksumAlgorithm::from_xml_element(alg.xml_element()),
                Some(alg)
            );
        }
        assert_eq!(ChecksumAlgorithm::from_name("MD5"), None);
    }
}
