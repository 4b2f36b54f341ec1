//! The aws-chunked decoder: the same verdict and bytes whatever the split of the input, every
//! malformation refused, failure sticky, the end of the body exact.

use weir_s3api::checksum::{Checksum, ChecksumAlgorithm};
use weir_s3api::chunked::{ChunkChain, ChunkedDecoder, Event, MAX_LINE, Trailers};
use weir_s3api::sigv4::SigningKey;
use weir_s3api::{ErrorCode, S3Error};

const SEED: &str = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

fn chain() -> ChunkChain {
    let key = SigningKey::derive("secret", "20261130", "us-east-1", "s3");
    ChunkChain::from_parts(
        key,
        "20261130T120000Z",
        "20261130/us-east-1/s3/aws4_request",
        SEED,
    )
    .unwrap()
}

/// A signed body: `sizes` are the chunk sizes (the last 0-chunk is added), data from `data`.
fn signed_body(data: &[u8], sizes: &[usize], trailer: Option<ChecksumAlgorithm>) -> Vec<u8> {
    let mut chain = chain();
    let mut body = Vec::new();
    let mut pos = 0;
    for &size in sizes {
        let piece = &data[pos..pos + size];
        body.extend_from_slice(
            format!("{size:x};chunk-signature={}\r\n", chain.sign_chunk(piece)).as_bytes(),
        );
        body.extend_from_slice(piece);
        body.extend_from_slice(b"\r\n");
        pos += size;
    }
    assert_eq!(pos, data.len());
    body.extend_from_slice(format!("0;chunk-signature={}\r\n", chain.sign_chunk(b"")).as_bytes());
    if let Some(alg) = trailer {
        let value = Checksum::of(alg, data).to_base64();
        body.extend_from_slice(format!("{}:{value}\r\n", alg.header_name()).as_bytes());
        let sig = chain.sign_trailers(&[(alg.header_name(), &value)]);
        body.extend_from_slice(format!("x-amz-trailer-signature:{sig}\r\n").as_bytes());
    }
    body.extend_from_slice(b"\r\n");
    body
}

/// An unsigned body with a checksum trailer, as botocore frames it.
fn unsigned_body(data: &[u8], sizes: &[usize], alg: ChecksumAlgorithm) -> Vec<u8> {
    let mut body = Vec::new();
    let mut pos = 0;
    for &size in sizes {
        body.extend_from_slice(format!("{size:x}\r\n").as_bytes());
        body.extend_from_slice(&data[pos..pos + size]);
        body.extend_from_slice(b"\r\n");
        pos += size;
    }
    let value = Checksum::of(alg, data).to_base64();
    body.extend_from_slice(format!("0\r\n{}:{value}\r\n\r\n", alg.header_name()).as_bytes());
    body
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 131 % 251) as u8).collect()
}

/// Decodes `body` fed as the pieces between `cuts`; the decoded bytes, trailers, and how many
/// bytes of `body` the body took.
fn run(
    mut decoder: ChunkedDecoder,
    body: &[u8],
    cuts: &[usize],
) -> Result<(Vec<u8>, Trailers, usize), S3Error> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in cuts.iter().copied().chain(std::iter::once(body.len())) {
        let piece = &body[start..end];
        let mut pos = 0;
        while pos < piece.len() {
            let (used, event) = decoder.decode(&piece[pos..])?;
            assert!(used <= piece.len() - pos);
            match event {
                Event::Data(r) => {
                    assert!(
                        r.end == used && r.start < r.end,
                        "data is the consumed tail"
                    );
                    out.extend_from_slice(&piece[pos..][r]);
                }
                Event::NeedMore => assert_eq!(used, piece.len() - pos, "NeedMore consumes all"),
                Event::End(t) => return Ok((out, t, start + pos + used)),
            }
            pos += used;
        }
        start = end;
    }
    decoder.finish()?;
    unreachable!("finish succeeds only after End")
}

fn signed(trailer: Option<ChecksumAlgorithm>, len: usize) -> ChunkedDecoder {
    ChunkedDecoder::signed(chain(), trailer, Some(len as u64))
}

/// A tiny deterministic generator (no dependency): xorshift64*.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// A fresh decoder for each run.
type MakeDecoder = Box<dyn Fn() -> ChunkedDecoder>;

#[test]
fn every_split_gives_the_same_result() {
    let d = data(700);
    let alg = ChecksumAlgorithm::Crc32c;
    let bodies: Vec<(&str, Vec<u8>, MakeDecoder)> = vec![
        (
            "signed",
            signed_body(&d, &[300, 300, 100], None),
            Box::new(|| signed(None, 700)),
        ),
        (
            "signed-trailer",
            signed_body(&d, &[512, 188], Some(alg)),
            Box::new(move || signed(Some(alg), 700)),
        ),
        (
            "unsigned-trailer",
            unsigned_body(&d, &[256, 256, 188], alg),
            Box::new(move || ChunkedDecoder::unsigned(alg, Some(700))),
        ),
    ];
    for (name, body, make) in &bodies {
        let (whole, trailers, used) = run(make(), body, &[]).unwrap();
        assert_eq!(whole, d, "{name}");
        assert_eq!(used, body.len(), "{name}");
        if name.contains("trailer") {
            assert_eq!(trailers.checksum, Some(Checksum::of(alg, &d)), "{name}");
        }
        // Every single split point.
        for cut in 0..=body.len() {
            assert_eq!(
                run(make(), body, &[cut]).unwrap(),
                (whole.clone(), trailers, used),
                "{name} cut at {cut}"
            );
        }
        // One byte at a time.
        let cuts: Vec<usize> = (1..body.len()).collect();
        assert_eq!(
            run(make(), body, &cuts).unwrap(),
            (whole.clone(), trailers, used),
            "{name} bytewise"
        );
        // Random splits, fixed seed.
        let mut rng = Rng(0x5eed_0000 + body.len() as u64);
        for _ in 0..300 {
            let mut cuts: Vec<usize> = (0..rng.next() % 12)
                .map(|_| (rng.next() % (body.len() as u64 + 1)) as usize)
                .collect();
            cuts.sort_unstable();
            assert_eq!(
                run(make(), body, &cuts).unwrap(),
                (whole.clone(), trailers, used),
                "{name} cuts {cuts:?}"
            );
        }
    }
}

#[test]
fn bytes_after_the_body_are_left_alone() {
    let d = data(10);
    let mut body = signed_body(&d, &[10], None);
    let len = body.len();
    body.extend_from_slice(b"GET / HTTP/1.1\r\n");
    let (out, _, used) = run(signed(None, 10), &body, &[]).unwrap();
    assert_eq!((out, used), (d, len));
}

/// Every malformation, fed whole and split at every point: always an error (never a panic,
/// never a success), with the code given.
fn refuse(name: &str, make: &dyn Fn() -> ChunkedDecoder, body: &[u8], code: ErrorCode) {
    let err = run(make(), body, &[]).unwrap_err();
    assert_eq!(err.code, code, "{name}: {err}");
    for cut in 0..=body.len() {
        let err = run(make(), body, &[cut]).unwrap_err();
        assert_eq!(err.code, code, "{name} cut at {cut}: {err}");
    }
}

#[test]
fn malformed_framing_is_refused() {
    let d = data(40);
    let good = signed_body(&d, &[40], None);
    let text = String::from_utf8_lossy(&good).into_owned();
    let sig_line_end = text.find("\r\n").unwrap();
    let make = || signed(None, 40);
    let invalid = ErrorCode::InvalidRequest;
    let replace = |from: &str, to: &str| -> Vec<u8> {
        assert!(text.contains(from), "{from}");
        text.replacen(from, to, 1).into_bytes()
    };
    let cases: Vec<(&str, Vec<u8>, ErrorCode)> = vec![
        ("non-hex size", replace("28;", "2g;"), invalid),
        ("empty size", replace("28;", ";"), invalid),
        ("signed size", replace("28;", "+28;"), invalid),
        ("space in size", replace("28;", "28 ;"), invalid),
        (
            "17 hex digits",
            replace("28;", "00000000000000028;"),
            invalid,
        ),
        ("no signature", replace(&text[2..sig_line_end], ""), invalid),
        (
            "other extension",
            replace("chunk-signature=", "chunk-signatur="),
            invalid,
        ),
        (
            "upper-case signature",
            {
                let sig = &text[19..83];
                replace(sig, &sig.to_uppercase())
            },
            invalid,
        ),
        (
            "short signature",
            replace(&text[19..sig_line_end], &text[19..sig_line_end - 1]),
            invalid,
        ),
        (
            "bare LF after header",
            replace(
                &text[..sig_line_end + 2],
                &format!("{}\n", &text[..sig_line_end]),
            ),
            invalid,
        ),
        (
            "CR without LF",
            replace(
                &text[..sig_line_end + 2],
                &format!("{}\rx", &text[..sig_line_end]),
            ),
            invalid,
        ),
        (
            "no CRLF after data",
            {
                let mut b = good.clone();
                b.drain(sig_line_end + 2 + 40..sig_line_end + 2 + 42);
                b
            },
            invalid,
        ),
        (
            "LF only after data",
            {
                let mut b = good.clone();
                b.remove(sig_line_end + 2 + 40);
                b
            },
            invalid,
        ),
        (
            "oversize line",
            {
                let mut b = b"1;".to_vec();
                b.extend(std::iter::repeat_n(b'x', MAX_LINE));
                b.extend_from_slice(b"\r\n");
                b
            },
            invalid,
        ),
        (
            "text after the last chunk",
            replace("\r\n\r\n", "\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"),
            invalid,
        ),
        (
            "chunk data changed",
            {
                let mut b = good.clone();
                b[sig_line_end + 5] ^= 1;
                b
            },
            ErrorCode::SignatureDoesNotMatch,
        ),
        (
            "last chunk's signature changed",
            {
                let last = text.rfind("chunk-signature=").unwrap() + 16;
                let mut b = good.clone();
                b[last] = if b[last] == b'0' { b'1' } else { b'0' };
                b
            },
            ErrorCode::SignatureDoesNotMatch,
        ),
    ];
    for (name, body, code) in &cases {
        refuse(name, &make, body, *code);
    }
    // Truncation at every length: never a success, and `finish` says the body is incomplete.
    for len in 0..good.len() {
        let err = run(make(), &good[..len], &[]).unwrap_err();
        assert_eq!(err.code, ErrorCode::IncompleteBody, "truncated to {len}");
    }
}

#[test]
fn chunk_order_and_lengths_are_checked() {
    let d = data(300);
    let body = signed_body(&d, &[100, 100, 100], None);
    // Swapping two validly signed chunks breaks the chain.
    // `64;chunk-signature=<64 hex>\r\n`, the data, CRLF.
    let chunk_len = 85 + 100 + 2;
    let mut swapped = body.clone();
    let (a, b) = swapped.split_at_mut(chunk_len);
    a.swap_with_slice(&mut b[..chunk_len]);
    refuse(
        "swapped chunks",
        &|| signed(None, 300),
        &swapped,
        ErrorCode::SignatureDoesNotMatch,
    );
    // More data than x-amz-decoded-content-length, found at the chunk header.
    refuse(
        "longer than declared",
        &|| signed(None, 299),
        &body,
        ErrorCode::IncompleteBody,
    );
    // Fewer.
    refuse(
        "shorter than declared",
        &|| signed(None, 301),
        &body,
        ErrorCode::IncompleteBody,
    );
    // A chunk header claiming more than u64 when added up.
    let huge = b"ffffffffffffffff;chunk-signature=0000000000000000000000000000000000000000000000000000000000000000\r\n".to_vec();
    refuse(
        "size overflow",
        &|| signed(None, 300),
        &huge,
        ErrorCode::IncompleteBody,
    );
}

#[test]
fn trailers_are_checked() {
    // Text data, so the body can be edited as a string.
    let d: Vec<u8> = (0..50u8).map(|i| b'a' + i % 26).collect();
    let alg = ChecksumAlgorithm::Crc32;
    let good = String::from_utf8(signed_body(&d, &[50], Some(alg))).unwrap();
    let make = || signed(Some(alg), 50);
    assert!(run(make(), good.as_bytes(), &[]).is_ok());
    let value = Checksum::of(alg, &d).to_base64();
    let trailer_line = format!("x-amz-checksum-crc32:{value}\r\n");
    let sig_at = good.find("x-amz-trailer-signature:").unwrap();
    let sig_line = &good[sig_at..good.len() - 4];
    let invalid = ErrorCode::InvalidRequest;
    let cases: Vec<(&str, String, ErrorCode)> = vec![
        (
            "trailer missing",
            good.replacen(&trailer_line, "", 1),
            invalid,
        ),
        (
            "trailer repeated",
            good.replacen(&trailer_line, &format!("{trailer_line}{trailer_line}"), 1),
            invalid,
        ),
        (
            "trailer not announced",
            good.replacen("x-amz-checksum-crc32:", "x-amz-checksum-crc32c:", 1),
            invalid,
        ),
        (
            "unknown trailer",
            good.replacen(&trailer_line, &format!("{trailer_line}x-other:1\r\n"), 1),
            invalid,
        ),
        (
            "trailer without colon",
            good.replacen("x-amz-checksum-crc32:", "x-amz-checksum-crc32 ", 1),
            invalid,
        ),
        (
            "signature missing",
            good.replacen(&format!("{sig_line}\r\n"), "", 1),
            invalid,
        ),
        (
            "signature first",
            good.replacen(
                &format!("{trailer_line}{sig_line}\r\n"),
                &format!("{sig_line}\r\n{trailer_line}"),
                1,
            ),
            invalid,
        ),
        (
            "signature wrong",
            good.replacen(&sig_line[24..30], "000000", 1),
            ErrorCode::SignatureDoesNotMatch,
        ),
        (
            "trailer value changed",
            good.replacen(&value, &Checksum::of(alg, b"other").to_base64(), 1),
            ErrorCode::SignatureDoesNotMatch,
        ),
        (
            "trailer value not base64",
            good.replacen(&value, "!!!!!!==", 1),
            ErrorCode::BadDigest,
        ),
        (
            "no final CRLF",
            good[..good.len() - 2].to_owned(),
            ErrorCode::IncompleteBody,
        ),
    ];
    for (name, body, code) in &cases {
        refuse(name, &make, body.as_bytes(), *code);
    }
    // Unsigned bodies: no signatures anywhere.
    let unsigned = String::from_utf8(unsigned_body(&d, &[50], alg)).unwrap();
    let make = || ChunkedDecoder::unsigned(alg, Some(50));
    assert!(run(make(), unsigned.as_bytes(), &[]).is_ok());
    refuse(
        "extension in unsigned",
        &make,
        unsigned
            .replacen("32\r\n", "32;chunk-signature=00\r\n", 1)
            .as_bytes(),
        invalid,
    );
    refuse(
        "signature trailer in unsigned",
        &make,
        unsigned
            .replacen(
                "\r\n\r\n",
                &format!("\r\nx-amz-trailer-signature:{SEED}\r\n\r\n"),
                1,
            )
            .as_bytes(),
        invalid,
    );
    // The trailer's checksum is reported, not judged: the caller compares it with the data's.
    let wrong = unsigned.replacen(&value, &Checksum::of(alg, b"other").to_base64(), 1);
    let (out, trailers, _) = run(make(), wrong.as_bytes(), &[]).unwrap();
    assert_eq!(
        Checksum::of(alg, &out)
            .check(&trailers.checksum.unwrap())
            .unwrap_err()
            .code,
        ErrorCode::BadDigest
    );
}

#[test]
fn failure_is_sticky() {
    let d = data(20);
    let mut body = signed_body(&d, &[20], None);
    body[0] = b'z';
    let mut decoder = signed(None, 20);
    assert!(decoder.decode(&body).is_err());
    let good = signed_body(&d, &[20], None);
    assert!(
        decoder.decode(&good).is_err(),
        "a refused body stays refused"
    );
    assert!(decoder.finish().is_err());
}

/// Random corruption (bytes changed, inserted, removed; fixed seed) of signed bodies: the
/// decoder never panics, and never ends well with other data than was signed. Unsigned bodies
/// likewise, once the caller compares the checksum trailer with the data.
#[test]
fn random_corruption_never_passes() {
    let d = data(600);
    let alg = ChecksumAlgorithm::Crc32;
    let signed_good = signed_body(&d, &[256, 256, 88], Some(alg));
    let unsigned_good = unsigned_body(&d, &[300, 300], alg);
    let mut rng = Rng(0xc0ff_ee00);
    let mut refused = 0;
    for round in 0..4000 {
        let signed_round = round % 2 == 0;
        let mut body = if signed_round {
            signed_good.clone()
        } else {
            unsigned_good.clone()
        };
        for _ in 0..1 + rng.next() % 3 {
            let at = (rng.next() % body.len() as u64) as usize;
            match rng.next() % 3 {
                0 => body[at] = rng.next() as u8,
                1 => body.insert(at, rng.next() as u8),
                _ => {
                    body.remove(at);
                }
            }
        }
        let make = || {
            if signed_round {
                signed(Some(alg), 600)
            } else {
                ChunkedDecoder::unsigned(alg, Some(600))
            }
        };
        let cut = (rng.next() % (body.len() as u64 + 1)) as usize;
        match run(make(), &body, &[cut]) {
            Ok((out, trailers, _)) => {
                let claimed = trailers.checksum.expect("the trailer is required");
                let accepted = Checksum::of(alg, &out).check(&claimed).is_ok();
                if accepted {
                    assert_eq!(out, d, "round {round}: accepted other data");
                } else {
                    refused += 1;
                }
            }
            Err(_) => refused += 1,
        }
    }
    assert!(refused > 3500, "{refused} of 4000 corruptions refused");
}
