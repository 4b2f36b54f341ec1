//! RFC 9112 / RFC 9110 conformance, one table row per rule.
//!
//! Every request is sent with [`SENTINEL`] pipelined after it, twice: once to `/echo` (which
//! reads the body) and once to `/ignore` (which answers without reading it, so weir itself must
//! drain or close). A rejected request must be answered with the expected status and
//! `Connection: close`, the connection must then close, and neither the sentinel nor a request
//! hidden in the body ([`SMUGGLED`]) may ever be answered. An accepted request must be answered
//! (with its exact payload echoed) and then the sentinel too.

use crate::harness::*;
use std::time::Duration;
use weir::{Config, DataRate};

/// Where the error is detected: in the head (before the handler runs) or in the body (when it
/// is read; a handler that does not read may already have answered 200).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    Head,
    Body,
}

#[derive(Debug)]
enum Expect {
    /// Answered with this status, then closed.
    Reject(u16, At),
    /// Answered 200 with this payload echoed, then the sentinel is answered too.
    Accept(Vec<u8>),
}

struct Case {
    name: &'static str,
    /// The rule, by section.
    rfc: &'static str,
    /// The request, with `/echo` as its target (swapped for `/ignore` in the second run).
    request: Vec<u8>,
    expect: Expect,
}

fn reject(name: &'static str, rfc: &'static str, request: Vec<u8>, status: u16, at: At) -> Case {
    Case {
        name,
        rfc,
        request,
        expect: Expect::Reject(status, at),
    }
}

fn accept(name: &'static str, rfc: &'static str, request: Vec<u8>, payload: &[u8]) -> Case {
    Case {
        name,
        rfc,
        request,
        expect: Expect::Accept(payload.to_vec()),
    }
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// `POST /echo HTTP/1.1` with `Host: a`, the given header lines (each ending in CRLF), and body.
fn post(headers: &[u8], body: &[u8]) -> Vec<u8> {
    cat(&[
        b"POST /echo HTTP/1.1\r\nHost: a\r\n",
        headers,
        b"\r\n",
        body,
    ])
}

/// A chunked `POST /echo` with `body` as the raw chunked framing.
fn chunked(body: &[u8]) -> Vec<u8> {
    post(b"Transfer-Encoding: chunked\r\n", body)
}

/// `GET /echo HTTP/1.1` with the given raw header section (without the final CRLF).
fn get(headers: &[u8]) -> Vec<u8> {
    cat(&[b"GET /echo HTTP/1.1\r\n", headers, b"\r\n"])
}

fn cases() -> Vec<Case> {
    use At::*;
    let smuggle_after_last_chunk = cat(&[b"0\r\n\r\n", SMUGGLED]);
    let huge_ext = cat(&[b"1;", &vec![b'a'; 300 * 1024], b"\r\nx\r\n0\r\n\r\n"]);
    let many_ext = cat(&[&b"1;name=value\r\nx\r\n".repeat(2000), b"0\r\n\r\n"]);
    let big_trailer = cat(&[b"0\r\nX-Big: ", &vec![b'v'; 20 * 1024], b"\r\n\r\n"]);
    let long_target = cat(&[
        b"GET /echo?",
        &vec![b'q'; 10 * 1024],
        b" HTTP/1.1\r\nHost: a\r\n\r\n",
    ]);
    let big_head = cat(&[
        b"GET /echo HTTP/1.1\r\nHost: a\r\nX-Big: ",
        &vec![b'v'; 40 * 1024],
        b"\r\n\r\n",
    ]);
    let many_headers = cat(&[
        b"GET /echo HTTP/1.1\r\nHost: a\r\n",
        &b"X-N: 1\r\n".repeat(100),
        b"\r\n",
    ]);
    let too_big_chunked = cat(&[b"10000\r\n", &vec![b'x'; 0x10000], b"\r\n", b"10\r\n"]);
    let get_with_body = cat(&[
        format!(
            "GET /echo HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\n\r\n",
            SMUGGLED.len()
        )
        .as_bytes(),
        SMUGGLED,
    ]);

    vec![
        // ---- Content-Length (RFC 9112 §6.3, RFC 9110 §8.6) ----
        reject("CL and TE together", "RFC 9112 §6.3 ¶3 (+§11.2: smuggling)",
            post(format!("Content-Length: {}\r\nTransfer-Encoding: chunked\r\n", smuggle_after_last_chunk.len()).as_bytes(), &smuggle_after_last_chunk), 400, Head),
        reject("TE and CL together (TE first)", "RFC 9112 §6.3 ¶3",
            post(format!("Transfer-Encoding: chunked\r\nContent-Length: {}\r\n", smuggle_after_last_chunk.len()).as_bytes(), &smuggle_after_last_chunk), 400, Head),
        reject("two differing Content-Length fields", "RFC 9112 §6.3 ¶5",
            post(b"Content-Length: 3\r\nContent-Length: 4\r\n", b"abcd"), 400, Head),
        reject("two identical Content-Length fields", "RFC 9110 §8.6 (MAY reject; weir does)",
            post(b"Content-Length: 3\r\nContent-Length: 3\r\n", b"abc"), 400, Head),
        reject("Content-Length list of equal values", "RFC 9110 §8.6 (MAY reject; weir does)",
            post(b"Content-Length: 3, 3\r\n", b"abc"), 400, Head),
        reject("Content-Length list of differing values", "RFC 9112 §6.3 ¶5",
            post(b"Content-Length: 3, 40\r\n", b"abc"), 400, Head),
        reject("signed Content-Length (+)", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: +3\r\n", b"abc"), 400, Head),
        reject("signed Content-Length (-)", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: -3\r\n", b"abc"), 400, Head),
        reject("hex Content-Length", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: 0x3\r\n", b"abc"), 400, Head),
        reject("empty Content-Length", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: \r\n", b"abc"), 400, Head),
        reject("Content-Length with inner space", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: 1 0\r\n", b"abcdefghij"), 400, Head),
        reject("Content-Length with trailing junk", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: 3a\r\n", b"abc"), 400, Head),
        reject("decimal-point Content-Length", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: 3.0\r\n", b"abc"), 400, Head),
        reject("Content-Length over u64", "RFC 9110 §8.6 (overflow: invalid)",
            post(b"Content-Length: 18446744073709551616\r\n", b"abc"), 400, Head),
        reject("Content-Length of 20 nines", "RFC 9110 §8.6 (overflow: invalid)",
            post(b"Content-Length: 99999999999999999999\r\n", b"abc"), 400, Head),
        reject("Content-Length with a non-ASCII digit", "RFC 9110 §8.6 (DIGIT is ASCII)",
            post("Content-Length: \u{663}\r\n".as_bytes(), b"abc"), 400, Head),
        reject("Content-Length above the body limit", "RFC 9110 §15.5.14 (413)",
            post(b"Content-Length: 100000\r\n", b"0123456789"), 413, Body),
        reject("100-continue with a Content-Length above the limit", "RFC 9110 §10.1.1 (a final status instead of 100)",
            post(b"Expect: 100-continue\r\nContent-Length: 100000\r\n", b""), 413, Body),

        // ---- Transfer-Encoding (RFC 9112 §6.1, §6.3 ¶4, §7) ----
        reject("chunked not the final coding", "RFC 9112 §6.3 ¶4 (MUST 400, close)",
            post(b"Transfer-Encoding: chunked, gzip\r\n", b"0\r\n\r\n"), 400, Head),
        reject("identity after chunked", "RFC 9112 §6.3 ¶4",
            post(b"Transfer-Encoding: chunked, identity\r\n", b"0\r\n\r\n"), 400, Head),
        reject("chunked twice in one field", "RFC 9112 §6.1 (MUST NOT apply chunked twice)",
            post(b"Transfer-Encoding: chunked, chunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("chunked twice in two fields", "RFC 9112 §6.1",
            post(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("unknown coding alone", "RFC 9112 §6.3 ¶4 (chunked not final: MUST 400)",
            post(b"Transfer-Encoding: gzip\r\n", &cat(&[b"0\r\n\r\n", SMUGGLED])), 400, Head),
        reject("unknown coding before chunked", "RFC 9112 §6.1 (SHOULD 501)",
            post(b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n"), 501, Head),
        reject("look-alike coding xchunked", "RFC 9112 §6.3 ¶4",
            post(b"Transfer-Encoding: xchunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("quoted chunked", "RFC 9112 §6.3 ¶4 (a quoted string is not the token)",
            post(b"Transfer-Encoding: \"chunked\"\r\n", b"0\r\n\r\n"), 400, Head),
        reject("chunked with a parameter", "RFC 9112 §7 (chunked has no parameters)",
            post(b"Transfer-Encoding: chunked;q=1\r\n", b"0\r\n\r\n"), 400, Head),
        reject("empty Transfer-Encoding", "RFC 9112 §6.3 ¶4",
            post(b"Transfer-Encoding: \r\n", b"0\r\n\r\n"), 400, Head),
        reject("vertical tab before chunked", "RFC 9110 §5.5 (CTL in a field value)",
            post(b"Transfer-Encoding: \x0bchunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("form feed after chunked", "RFC 9110 §5.5",
            post(b"Transfer-Encoding: chunked\x0c\r\n", b"0\r\n\r\n"), 400, Head),
        reject("NUL after chunked", "RFC 9110 §5.5 (NUL: MUST reject or replace)",
            post(b"Transfer-Encoding: chunked\x00\r\n", b"0\r\n\r\n"), 400, Head),
        reject("obs-fold before chunked", "RFC 9112 §5.2 (obs-fold: 400 or replace)",
            post(b"Transfer-Encoding:\r\n chunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("whitespace before the colon of TE", "RFC 9112 §5.1 (MUST 400)",
            post(b"Transfer-Encoding : chunked\r\n", b"0\r\n\r\n"), 400, Head),
        reject("Transfer-Encoding in HTTP/1.0", "RFC 9112 §6.1 (faulty framing)",
            b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(), 400, Head),
        reject("TE and CL in HTTP/1.0", "RFC 9112 §6.1",
            b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n".to_vec(), 400, Head),

        // ---- chunk sizes and data (RFC 9112 §7.1) ----
        reject("chunk size with 0x", "RFC 9112 §7.1 (chunk-size = 1*HEXDIG)",
            chunked(b"0x3\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("chunk size with +", "RFC 9112 §7.1", chunked(b"+3\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("chunk size with -", "RFC 9112 §7.1", chunked(b"-3\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("space before chunk size", "RFC 9112 §7.1", chunked(b" 3\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("space after chunk size", "RFC 9112 §7.1.1 (BWS only before ';')",
            chunked(b"3 \r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("empty chunk size", "RFC 9112 §7.1", chunked(b"\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("chunk size over 64 bits", "RFC 9112 §7.1 (MUST anticipate overflow)",
            chunked(b"10000000000000000\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("chunk size of 2^64-1", "RFC 9110 §15.5.14 (chunk larger than the limit: 413)",
            chunked(b"ffffffffffffffff\r\nabc"), 413, Body),
        reject("chunks beyond the body limit", "RFC 9110 §15.5.14", chunked(&too_big_chunked), 413, Body),
        reject("chunk data longer than its size", "RFC 9112 §7.1 (CRLF after chunk-data)",
            chunked(b"3\r\nabcdef\r\n0\r\n\r\n"), 400, Body),
        reject("chunk data shorter than its size", "RFC 9112 §7.1",
            chunked(b"5\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("missing last chunk", "RFC 9112 §7.1 (last-chunk required)",
            chunked(b"3\r\nabc\r\n"), 400, Body),
        reject("bare LF after chunk size", "RFC 9112 §7.1, §2.2", chunked(b"3\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("bare CR after chunk size", "RFC 9112 §2.2 (bare CR invalid)", chunked(b"3\rabc\r\n0\r\n\r\n"), 400, Body),
        reject("bare LF after chunk data", "RFC 9112 §7.1", chunked(b"3\r\nabc\n0\r\n\r\n"), 400, Body),
        reject("bare CR after chunk data", "RFC 9112 §2.2", chunked(b"3\r\nabc\r0\r\n\r\n"), 400, Body),
        reject("bare LF after last chunk", "RFC 9112 §7.1", chunked(b"0\n\r\n"), 400, Body),
        reject("bare LF ending the body", "RFC 9112 §7.1", chunked(b"0\r\n\n"), 400, Body),

        // ---- chunk extensions (RFC 9112 §7.1.1) ----
        reject("300 KiB chunk extension", "RFC 9112 §7.1.1 (server ought to limit; 4xx)",
            chunked(&huge_ext), 400, Body),
        reject("2,000 small chunk extensions", "RFC 9112 §7.1.1 (limit is per body)",
            chunked(&many_ext), 400, Body),
        reject("empty extension name", "RFC 9112 §7.1.1 (ext-name = token)", chunked(b"3;\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("extension without a name", "RFC 9112 §7.1.1", chunked(b"3;=v\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("unterminated quoted extension", "RFC 9112 §7.1.1", chunked(b"3;a=\"v\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("space inside an extension value", "RFC 9112 §7.1.1", chunked(b"3;a=b c\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("NUL in an extension", "RFC 9112 §7.1.1", chunked(b"3;a=\x00\r\nabc\r\n0\r\n\r\n"), 400, Body),
        reject("bare LF after an extension", "RFC 9112 §2.2", chunked(b"3;a=b\nabc\r\n0\r\n\r\n"), 400, Body),

        // ---- trailers (RFC 9112 §7.1.2, RFC 9110 §6.5) ----
        reject("Content-Length in trailers", "RFC 9110 §6.5.1 (framing fields not allowed)",
            chunked(b"0\r\nContent-Length: 5\r\n\r\n"), 400, Body),
        reject("Transfer-Encoding in trailers", "RFC 9110 §6.5.1",
            chunked(b"0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400, Body),
        reject("Host in trailers", "RFC 9110 §6.5.1 (routing fields not allowed)",
            chunked(b"0\r\nHost: evil\r\n\r\n"), 400, Body),
        reject("whitespace before a trailer colon", "RFC 9112 §5.1", chunked(b"0\r\nX : 1\r\n\r\n"), 400, Body),
        reject("obs-fold in trailers", "RFC 9112 §5.2", chunked(b"0\r\nX: 1\r\n folded\r\n\r\n"), 400, Body),
        reject("NUL in a trailer value", "RFC 9110 §5.5", chunked(b"0\r\nX: a\x00b\r\n\r\n"), 400, Body),
        reject("20 KiB trailer section", "RFC 6585 §5 (431)", chunked(&big_trailer), 431, Body),

        // ---- line endings and whitespace in the head (RFC 9112 §2.2, §5) ----
        reject("bare LF ending the request line", "RFC 9112 §2.2 (MAY accept LF; weir does not)",
            b"GET /echo HTTP/1.1\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("bare LF ending a header", "RFC 9112 §2.2", get(b"Host: a\nX: 1\r\n"), 400, Head),
        reject("bare LF ending the head", "RFC 9112 §2.2", b"GET /echo HTTP/1.1\r\nHost: a\r\n\n".to_vec(), 400, Head),
        reject("bare CR in a header value", "RFC 9112 §2.2 (bare CR: MUST reject or replace)",
            get(b"Host: a\r\nX: a\rb\r\n"), 400, Head),
        reject("bare CR in the request line", "RFC 9112 §2.2",
            b"GET /echo\r HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("whitespace before a header colon", "RFC 9112 §5.1 (MUST 400)", get(b"Host : a\r\n"), 400, Head),
        reject("tab before a header colon", "RFC 9112 §5.1", get(b"Host: a\r\nX\t: 1\r\n"), 400, Head),
        reject("whitespace before the first header", "RFC 9112 §2.2 (reject or ignore the line)",
            get(b" Host: a\r\nX: 1\r\n"), 400, Head),
        reject("obs-fold in a header", "RFC 9112 §5.2", get(b"Host: a\r\nX: 1\r\n 2\r\n"), 400, Head),

        // ---- field names and values (RFC 9110 §5.1, §5.5) ----
        reject("header name X[y]", "RFC 9110 §5.1 (field-name = token)", get(b"Host: a\r\nX[y]: 1\r\n"), 400, Head),
        reject("header name with a space", "RFC 9110 §5.1", get(b"Host: a\r\nBad Name: 1\r\n"), 400, Head),
        reject("NUL in a header name", "RFC 9110 §5.1", get(b"Host: a\r\nX\x00y: 1\r\n"), 400, Head),
        reject("byte 0xFF in a header name", "RFC 9110 §5.1", get(b"Host: a\r\nX\xffy: 1\r\n"), 400, Head),
        reject("UTF-8 in a header name", "RFC 9110 §5.1", get(b"Host: a\r\n\xc3\xa9t\xc3\xa9: 1\r\n"), 400, Head),
        reject("empty header name", "RFC 9110 §5.1", get(b"Host: a\r\n: 1\r\n"), 400, Head),
        reject("header line without a colon", "RFC 9112 §5", get(b"Host: a\r\nNoColon\r\n"), 400, Head),
        reject("NUL in a header value", "RFC 9110 §5.5 (MUST reject or replace)", get(b"Host: a\r\nX: a\x00b\r\n"), 400, Head),
        reject("control byte in a header value", "RFC 9110 §5.5", get(b"Host: a\r\nX: a\x01b\r\n"), 400, Head),
        reject("DEL in a header value", "RFC 9110 §5.5 (not field-vchar)", get(b"Host: a\r\nX: a\x7fb\r\n"), 400, Head),

        // ---- Host (RFC 9112 §3.2) ----
        reject("HTTP/1.1 without Host", "RFC 9112 §3.2 (MUST 400)", get(b"X: 1\r\n"), 400, Head),
        reject("two Host fields", "RFC 9112 §3.2 (MUST 400)", get(b"Host: a\r\nHost: a\r\n"), 400, Head),
        reject("Host with a space", "RFC 9112 §3.2 (invalid value: MUST 400)", get(b"Host: a b\r\n"), 400, Head),
        reject("Host with a slash", "RFC 9112 §3.2", get(b"Host: a/b\r\n"), 400, Head),
        reject("Host with userinfo", "RFC 9110 §7.2 (uri-host [\":\" port])", get(b"Host: user@a\r\n"), 400, Head),
        reject("Host with a non-numeric port", "RFC 9110 §7.2 (port = *DIGIT)", get(b"Host: a:b\r\n"), 400, Head),
        reject("Host with two ports", "RFC 9110 §7.2", get(b"Host: a:1:2\r\n"), 400, Head),
        reject("Host with an unclosed IPv6 literal", "RFC 3986 §3.2.2", get(b"Host: [::1\r\n"), 400, Head),

        // ---- size limits (RFC 9112 §3, RFC 6585 §5) ----
        reject("10 KiB request line", "RFC 9112 §3 (414 for a long target)", long_target, 414, Head),
        reject("40 KiB head", "RFC 6585 §5 (431)", big_head, 431, Head),
        reject("101 header fields", "RFC 6585 §5 (431)", many_headers, 431, Head),

        // ---- request line and version (RFC 9112 §2.3, §3; RFC 9110 §6.2, §15.6.6) ----
        reject("HTTP/2.0 in an HTTP/1 request line", "RFC 9110 §15.6.6 (505)",
            b"GET /echo HTTP/2.0\r\nHost: a\r\n\r\n".to_vec(), 505, Head),
        reject("HTTP/3.0", "RFC 9110 §15.6.6 (505)", b"GET /echo HTTP/3.0\r\nHost: a\r\n\r\n".to_vec(), 505, Head),
        reject("HTTP/1.2", "RFC 9110 §6.2 (SHOULD treat as 1.1; weir answers 505)",
            b"GET /echo HTTP/1.2\r\nHost: a\r\n\r\n".to_vec(), 505, Head),
        reject("lowercase http/1.1", "RFC 9112 §2.3 (HTTP-name is case-sensitive)",
            b"GET /echo http/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("HTTP/1 without minor", "RFC 9112 §2.3", b"GET /echo HTTP/1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("HTTP/1.10", "RFC 9112 §2.3 (one digit each)", b"GET /echo HTTP/1.10\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("HTTP/0.9 request (no version)", "RFC 9112 §3", b"GET /echo\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("space after the version", "RFC 9112 §3", b"GET /echo HTTP/1.1 \r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("two spaces after the method", "RFC 9112 §3 (single SP)", b"GET  /echo HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("tab as separator", "RFC 9112 §3", b"GET\t/echo HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("space inside the target", "RFC 9112 §3.2 (400, never 505)",
            b"GET /echo x HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("method that is not a token", "RFC 9110 §9.1", b"G(T /echo HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("leading space", "RFC 9112 §3", b" GET /echo HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("fragment in the target", "RFC 9112 §3.2 (origin-form has no fragment)",
            b"GET /echo#frag HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("UTF-8 in the target", "RFC 9112 §3.2 (RFC 3986 characters only)",
            b"GET /echo\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("asterisk-form for GET", "RFC 9112 §3.2.4 (OPTIONS only)", b"GET * HTTP/1.1\r\nHost: a\r\n\r\n".to_vec(), 400, Head),
        reject("unknown expectation", "RFC 9110 §10.1.1 (417)", get(b"Host: a\r\nExpect: teapot\r\n"), 417, Head),

        // ---- accepted: strict does not mean wrong ----
        accept("GET with a Content-Length body holding a request", "RFC 9112 §6.3 ¶6 (the body is the body)",
            get_with_body, SMUGGLED),
        accept("chunked with extensions and trailers", "RFC 9112 §7.1.1, §7.1.2",
            chunked(b"3;a=b;c=\"x y\"\r\nabc\r\n3 ; d\r\ndef\r\n0\r\nX-Sum: 1\r\n\r\n"), b"abcdef"),
        accept("chunk sizes with leading zeros and upper case", "RFC 9112 §7.1",
            chunked(b"0003\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n"), b"abc0123456789"),
        accept("CHUNKED in capitals", "RFC 9112 §7 (coding names are case-insensitive)",
            post(b"Transfer-Encoding: CHUNKED\r\n", b"3\r\nabc\r\n0\r\n\r\n"), b"abc"),
        accept("empty list elements around chunked", "RFC 9110 §5.6.1",
            post(b"Transfer-Encoding: , chunked\r\n", b"3\r\nabc\r\n0\r\n\r\n"), b"abc"),
        accept("Content-Length with leading zeros", "RFC 9110 §8.6 (1*DIGIT)",
            post(b"Content-Length: 003\r\n", b"abc"), b"abc"),
        accept("empty lines before the request line", "RFC 9112 §2.2 (SHOULD ignore)",
            cat(&[b"\r\n\r\n", &post(b"Content-Length: 3\r\n", b"abc")]), b"abc"),
        accept("HTTP/1.0 without Host", "RFC 9112 §3.2 (Host required in 1.1 only)",
            b"POST /echo HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc".to_vec(), b"abc"),
        accept("absolute-form target with another Host", "RFC 9112 §3.2.2 (Host is ignored)",
            b"POST http://b.example/echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc".to_vec(), b"abc"),
        accept("IPv6 literal Host with a port", "RFC 9110 §7.2",
            b"POST /echo HTTP/1.1\r\nHost: [::1]:8080\r\nContent-Length: 3\r\n\r\nabc".to_vec(), b"abc"),
        accept("empty Host", "RFC 9112 §3.2 (empty value allowed)",
            b"POST /echo HTTP/1.1\r\nHost:\r\nContent-Length: 3\r\n\r\nabc".to_vec(), b"abc"),
        accept("obs-text in a header value", "RFC 9110 §5.5 (obs-text allowed in values)",
            post(b"X-Name: caf\xc3\xa9\r\nContent-Length: 3\r\n", b"abc"), b"abc"),
        accept("no space after a colon", "RFC 9112 §5 (OWS is optional)",
            post(b"Content-Length:3\r\n", b"abc"), b"abc"),
    ]
}

/// The server every case runs against: default limits, a small body limit (for 413), and a
/// short body-rate grace so that `/ignore` draining a body that never ends is cut quickly.
fn server(via: Via) -> TestServer {
    let config = Config::default()
        .with_max_body_size(Some(64 * 1024))
        .with_min_body_rate(Some(DataRate::new(240, Duration::from_millis(500))));
    match via {
        Via::Handler => TestServer::start(config),
        #[cfg(feature = "tower")]
        Via::Tower => TestServer::start_with(config, weir::ServiceHandler::new(TowerProbe)),
    }
}

/// Which application the rows run against: the native [`Probe`] or the same routes as a tower
/// service ([`TowerProbe`]).
#[derive(Clone, Copy)]
enum Via {
    Handler,
    #[cfg(feature = "tower")]
    Tower,
}

fn with_target(request: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    match request.windows(from.len()).position(|w| w == from) {
        Some(i) => cat(&[&request[..i], to, &request[i + from.len()..]]),
        None => request.to_vec(),
    }
}

/// Checks one case against one route; returns a description of every failure.
fn check(server: &TestServer, case: &Case, route: &str) -> Vec<String> {
    let request = with_target(&case.request, b"/echo", route.as_bytes());
    let t = exchange(server, cat(&[&request, SENTINEL]));
    let mut failures = Vec::new();
    let mut fail =
        |what: String| failures.push(format!("{} [{}] via {route}: {what}", case.name, case.rfc));
    if !t.closed {
        fail("the connection was not closed".into());
    }
    if t.answered(SMUGGLED_BODY) && !matches!(case.expect, Expect::Accept(ref p) if p == SMUGGLED) {
        fail("a request hidden in the body was answered".into());
    }
    if !t.garbage.is_empty() {
        fail(format!(
            "unparsable bytes: {:?}",
            String::from_utf8_lossy(&t.garbage)
        ));
    }
    match &case.expect {
        Expect::Reject(status, at) => {
            if t.answered(SENTINEL_BODY) {
                fail("the pipelined request after the bad one was answered".into());
            }
            match (t.responses.as_slice(), at) {
                ([r], _) if r.status == *status => {
                    if r.header("connection") != Some("close") {
                        fail("no `Connection: close` on the error response".into());
                    }
                }
                // A handler that does not read the body answers before the body is seen.
                ([r], At::Body) if route == "/ignore" && r.status == 200 => {}
                // Or the drain found the error first and closed without an answer.
                ([], At::Body) if route == "/ignore" => {}
                (rs, _) => fail(format!(
                    "expected one {status}, got {:?}",
                    rs.iter().map(|r| (r.status, r.text())).collect::<Vec<_>>()
                )),
            }
        }
        Expect::Accept(payload) => {
            let expected_first: &[u8] = if route == "/echo" {
                payload
            } else {
                b"ignored"
            };
            match t.responses.as_slice() {
                [first, second] => {
                    if first.status != 200 || first.body != expected_first {
                        fail(format!(
                            "first response {} {:?}",
                            first.status,
                            first.text()
                        ));
                    }
                    if second.text() != SENTINEL_BODY {
                        fail(format!(
                            "second response {} {:?}",
                            second.status,
                            second.text()
                        ));
                    }
                }
                rs => fail(format!(
                    "expected two responses, got {:?}",
                    rs.iter().map(|r| (r.status, r.text())).collect::<Vec<_>>()
                )),
            }
        }
    }
    failures
}

/// Sends every case to the handler at `path` and asserts each one held.
fn every_rule_holds_for(path: &str, via: Via) {
    let server = server(via);
    let failures: Vec<String> = cases()
        .iter()
        .flat_map(|c| check(&server, c, path))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(server.wait_idle(), "connections left open");
}

#[test]
fn every_rule_holds_for_a_reading_handler() {
    every_rule_holds_for("/echo", Via::Handler);
}

#[test]
fn every_rule_holds_for_a_handler_that_ignores_the_body() {
    every_rule_holds_for("/ignore", Via::Handler);
}

#[cfg(feature = "tower")]
#[test]
fn every_rule_holds_for_a_reading_tower_service() {
    every_rule_holds_for("/echo", Via::Tower);
}

#[cfg(feature = "tower")]
#[test]
fn every_rule_holds_for_a_tower_service_that_ignores_the_body() {
    every_rule_holds_for("/ignore", Via::Tower);
}

#[test]
fn the_table_is_not_trivial() {
    // Guards the guard: a table that lost its rows would pass vacuously.
    let cases = cases();
    let rejects = cases
        .iter()
        .filter(|c| matches!(c.expect, Expect::Reject(..)))
        .count();
    assert!(rejects >= 100, "{rejects} reject cases");
    assert!(cases.len() - rejects >= 10);
    assert!(cases.iter().all(|c| c.rfc.starts_with("RFC ")));
}
