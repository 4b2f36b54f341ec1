#!/usr/bin/env python3
"""Generates clients.json: requests signed offline by real S3 clients' own SigV4 signers.

Run from this directory with botocore and the AWS Common Runtime installed
(`pip install boto3 awscrt`); no network is used.
The Rust test `tests/client_vectors.rs` checks that weir-s3api verifies every request and
refuses every mutation of one.

- Header authentication: botocore.auth.S3SigV4Auth (what boto3 uses for S3), with signed
  payloads (http), UNSIGNED-PAYLOAD (payload signing disabled, as boto3 over https), and
  STREAMING-UNSIGNED-PAYLOAD-TRAILER bodies framed by botocore's own AwsChunkedWrapper (what
  boto3 sends by default since 1.36 with checksums in trailers).
- Presigned URLs: botocore.auth.S3SigV4QueryAuth.
- The same kinds of requests signed by the AWS Common Runtime (awscrt.auth.aws_sign_request, the
  signer of aws-cli v2's CRT transfers and the CRT-based SDKs), with S3's settings (no double
  encoding, no path normalization), and botocore's trailer bodies with the CRT's CRC32C and
  CRC64NVME.
- STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER): botocore does not send these (the Java, Go and
  .NET SDKs do), so the seed signature comes from botocore's S3SigV4Auth with the streaming
  payload line, and the chunk and trailer signatures from the chunk signer below, which is
  first checked against AWS's published example (sigv4-streaming.html) and the AWS Common
  Runtime's trailer vector.
"""

import base64
import datetime
import hashlib
import hmac
import io
import json
from urllib.parse import quote

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.httpchecksum import (
    AwsChunkedWrapper,
    Crc32Checksum,
    CrtCrc32cChecksum,
    CrtCrc64NvmeChecksum,
    Sha1Checksum,
    Sha256Checksum,
)
from awscrt import auth as crt_auth
from awscrt import http as crt_http

ACCESS_KEY = "AKIAWEIRTESTVECTORS"
SECRET = "weir/secret+key=with/odd+chars0123456789"
REGION = "us-east-1"
NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)
NOW_UNIX = int(NOW.replace(tzinfo=datetime.timezone.utc).timestamp())

# Sign at a fixed instant.
botocore.auth.get_current_datetime = lambda *args, **kwargs: NOW

CREDS = Credentials(ACCESS_KEY, SECRET)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def signing_key(secret, date, region, service="s3"):
    k = hmac.new(("AWS4" + secret).encode(), date.encode(), hashlib.sha256).digest()
    for part in (region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


class ChunkSigner:
    """The chained chunk and trailer signatures of AWS's chunked upload."""

    def __init__(self, key, timestamp, scope, seed):
        self.key, self.timestamp, self.scope, self.previous = key, timestamp, scope, seed

    def _sign(self, lines):
        sig = hmac.new(self.key, "\n".join(lines).encode(), hashlib.sha256).hexdigest()
        self.previous = sig
        return sig

    def chunk(self, data):
        return self._sign([
            "AWS4-HMAC-SHA256-PAYLOAD", self.timestamp, self.scope, self.previous,
            EMPTY_SHA256, hashlib.sha256(data).hexdigest(),
        ])

    def trailer(self, pairs):
        canonical = "".join(f"{n}:{v}\n" for n, v in pairs).encode()
        return self._sign([
            "AWS4-HMAC-SHA256-TRAILER", self.timestamp, self.scope, self.previous,
            hashlib.sha256(canonical).hexdigest(),
        ])


def check_chunk_signer():
    key = signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1")
    s = ChunkSigner(key, "20130524T000000Z", "20130524/us-east-1/s3/aws4_request",
                    "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
    assert s.chunk(b"a" * 65536) == "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
    assert s.chunk(b"a" * 1024) == "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
    assert s.chunk(b"") == "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
    assert s.trailer([("first", "1st"), ("second", "2nd"), ("third", "3rd")]) == \
        "df5735bd9f3295cd9386572292562fefc93ba94e80a0a1ddcbd652c4e0a75e6c"


def split_url(url):
    rest = url.split("://", 1)[1]
    path_and_query = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    path, _, query = path_and_query.partition("?")
    return path, query


def record(name, request, body, decoded=None, mutate_body=True):
    path, query = split_url(request.url)
    headers = [[k, v] for k, v in request.headers.items()]
    case = {
        "name": name,
        # botocore signs the host of the URL without adding it to the request's headers.
        "host": botocore.auth._host_from_url(request.url),
        "method": request.method,
        "path": path,
        "query": query,
        "headers": headers,
        "body_b64": base64.b64encode(body).decode(),
        "mutate_body": mutate_body,
    }
    if decoded is not None:
        case["decoded_b64"] = base64.b64encode(decoded).decode()
    return case


def key_url(host, bucket, key, query="", scheme="http", virtual=False):
    quoted = quote(key, safe="/~")
    if virtual:
        url = f"{scheme}://{bucket}.{host}/{quoted}"
    else:
        url = f"{scheme}://{host}/{bucket}/{quoted}" if key else f"{scheme}://{host}/{bucket}"
    return url + (("?" + query) if query else "")


def header_case(name, method, url, body=b"", headers=None, unsigned=False, context=None):
    req = AWSRequest(method=method, url=url, data=body, headers=headers or {})
    if unsigned:
        req.context["client_config"] = Config(s3={"payload_signing_enabled": False})
    req.context.update(context or {})
    S3SigV4Auth(CREDS, "s3", REGION).add_auth(req)
    return record(name, req, body)


def trailer_case(name, url, data, checksum_cls, checksum_name, chunk_size):
    body = AwsChunkedWrapper(io.BytesIO(data), checksum_cls, checksum_name, chunk_size).read()
    headers = {
        "Content-Encoding": "aws-chunked",
        "X-Amz-Trailer": checksum_name,
        "X-Amz-Decoded-Content-Length": str(len(data)),
        "Content-Length": str(len(body)),
    }
    req = AWSRequest(method="PUT", url=url, data=body, headers=headers)
    req.context["checksum"] = {
        "request_algorithm": {"in": "trailer", "name": checksum_name, "algorithm": "crc32"},
    }
    S3SigV4Auth(CREDS, "s3", REGION).add_auth(req)
    assert req.headers["X-Amz-Content-SHA256"] == "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
    # Botocore's unsigned trailer chunks carry no signature: a flipped data bit is caught by
    # the checksum trailer, which the test compares.
    return record(name, req, body, decoded=data)


class StreamingSeedAuth(S3SigV4Auth):
    """botocore's S3 signer with a streaming payload line (the seed signature)."""

    def __init__(self, payload_line):
        super().__init__(CREDS, "s3", REGION)
        self.payload_line = payload_line

    def payload(self, request):
        return self.payload_line


def signed_streaming_case(name, url, data, chunk_size, trailer=None):
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
    headers = {
        "Content-Encoding": "aws-chunked",
        "X-Amz-Decoded-Content-Length": str(len(data)),
    }
    if trailer:
        headers["X-Amz-Trailer"] = trailer[0]
    req = AWSRequest(method="PUT", url=url, data=b"", headers=headers)
    StreamingSeedAuth(mode).add_auth(req)
    seed = req.headers["Authorization"].rsplit("Signature=", 1)[1]
    timestamp = req.headers["X-Amz-Date"]
    signer = ChunkSigner(signing_key(SECRET, timestamp[:8], REGION), timestamp,
                         f"{timestamp[:8]}/{REGION}/s3/aws4_request", seed)
    body = b""
    for i in range(0, len(data), chunk_size):
        piece = data[i:i + chunk_size]
        body += b"%x;chunk-signature=%s\r\n%s\r\n" % (len(piece), signer.chunk(piece).encode(), piece)
    body += b"0;chunk-signature=%s\r\n" % signer.chunk(b"").encode()
    if trailer:
        name_, value = trailer
        body += f"{name_}:{value}\r\n".encode()
        body += f"x-amz-trailer-signature:{signer.trailer([trailer])}\r\n".encode()
    body += b"\r\n"
    return record(name, req, body, decoded=data)


def presigned_case(name, method, url, expires=3600, headers=None):
    req = AWSRequest(method=method, url=url, headers=headers or {})
    S3SigV4QueryAuth(CREDS, "s3", REGION, expires=expires).add_auth(req)
    case = record(name, req, b"", mutate_body=False)
    case["expires"] = expires
    return case


CRT_CREDS = crt_auth.AwsCredentialsProvider.new_static(ACCESS_KEY, SECRET)


def crt_sign(method, target, headers, body_value, presign_expires=None):
    """Signs with the AWS Common Runtime, S3's settings; returns (target, headers)."""
    request = crt_http.HttpRequest(method, target, crt_http.HttpHeaders(headers))
    config = crt_auth.AwsSigningConfig(
        algorithm=crt_auth.AwsSigningAlgorithm.V4,
        signature_type=(crt_auth.AwsSignatureType.HTTP_REQUEST_QUERY_PARAMS if presign_expires
                        else crt_auth.AwsSignatureType.HTTP_REQUEST_HEADERS),
        credentials_provider=CRT_CREDS,
        region=REGION,
        service="s3",
        date=NOW.replace(tzinfo=datetime.timezone.utc),
        use_double_uri_encode=False,
        should_normalize_uri_path=False,
        signed_body_value=body_value,
        signed_body_header_type=(crt_auth.AwsSignedBodyHeaderType.NONE if presign_expires
                                 else crt_auth.AwsSignedBodyHeaderType.X_AMZ_CONTENT_SHA_256),
        expiration_in_seconds=presign_expires,
    )
    signed = crt_auth.aws_sign_request(request, config).result()
    return signed.path, list(signed.headers)


def crt_record(name, method, host, target, headers, body=b"", decoded=None, mutate_body=True, expires=None):
    path, _, query = target.partition("?")
    case = {
        "name": name,
        "host": host,
        "method": method,
        "path": path,
        "query": query,
        # The host is recorded apart, as for botocore's requests.
        "headers": [[k, v] for k, v in headers if k.lower() != "host"],
        "body_b64": base64.b64encode(body).decode(),
        "mutate_body": mutate_body,
    }
    if decoded is not None:
        case["decoded_b64"] = base64.b64encode(decoded).decode()
    if expires is not None:
        case["expires"] = expires
    return case


def crt_cases(odd_keys, data):
    host = "127.0.0.1:9000"
    cases = []
    for i, key in enumerate(odd_keys):
        target = "/bucket/" + quote(key, safe="/~")
        body = f"crt body of {key}".encode()
        t, h = crt_sign("PUT", target, [("host", host), ("content-type", "text/plain")], hashlib.sha256(body).hexdigest())
        cases.append(crt_record(f"crt-put-odd-key-{i}", "PUT", host, t, h, body))
        t, h = crt_sign("GET", target, [("host", host)], crt_auth.AwsSignedBodyValue.UNSIGNED_PAYLOAD, presign_expires=3600)
        cases.append(crt_record(f"crt-presigned-get-odd-key-{i}", "GET", host, t, h, mutate_body=False, expires=3600))
    t, h = crt_sign("GET", "/bucket?list-type=2&prefix=a%20b%2Bc%3D~&delimiter=%2F&start-after=&z=2&z=1",
                    [("host", host)], crt_auth.AwsSignedBodyValue.EMPTY_SHA256)
    cases.append(crt_record("crt-list-v2-query", "GET", host, t, h))
    # Signed streaming: the CRT signs the seed, the chunk signer (checked above) the chunks.
    for trailer in (None, "x-amz-checksum-crc32c"):
        mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
        headers = [("host", host), ("content-encoding", "aws-chunked"),
                   ("x-amz-decoded-content-length", str(len(data)))]
        if trailer:
            headers.append(("x-amz-trailer", trailer))
        t, h = crt_sign("PUT", "/bucket/crt%20streaming", headers, mode)
        auth_value = dict(h)["Authorization"]
        seed = auth_value.rsplit("Signature=", 1)[1]
        signer = ChunkSigner(signing_key(SECRET, NOW.strftime("%Y%m%d"), REGION), NOW.strftime("%Y%m%dT%H%M%SZ"),
                             f"{NOW.strftime('%Y%m%d')}/{REGION}/s3/aws4_request", seed)
        body = b""
        for j in range(0, len(data), 777):
            piece = data[j:j + 777]
            body += b"%x;chunk-signature=%s\r\n%s\r\n" % (len(piece), signer.chunk(piece).encode(), piece)
        body += b"0;chunk-signature=%s\r\n" % signer.chunk(b"").encode()
        if trailer:
            c = CrtCrc32cChecksum()
            c.update(data)
            value = c.b64digest()
            body += f"{trailer}:{value}\r\n".encode()
            body += f"x-amz-trailer-signature:{signer.trailer([(trailer, value)])}\r\n".encode()
        body += b"\r\n"
        cases.append(crt_record(f"crt-signed-streaming{'-trailer' if trailer else ''}", "PUT", host, t, h, body, decoded=data))
    return cases


def main():
    check_chunk_signer()
    host = "127.0.0.1:9000"
    odd_keys = [
        "key with spaces.txt",
        "ünïcødé/文件 名.bin",
        "plus+equals=tilde~.dat",
        "slashes//run///here/",
        "specials!$&'()*,;:@[]^`{}|\"<>%.txt",
        "dots/./and/../segments",
        "~user/.hidden",
    ]
    cases = []
    for i, key in enumerate(odd_keys):
        cases.append(header_case(f"get-odd-key-{i}", "GET", key_url(host, "bucket", key)))
        cases.append(header_case(
            f"put-odd-key-{i}", "PUT", key_url(host, "bucket", key), body=f"body of {key}".encode(),
            headers={"Content-Type": "text/plain", "x-amz-meta-note": "  spaced    out  value "},
        ))
        cases.append(header_case(
            f"virtual-host-{i}", "GET", key_url("s3.example.com", "vbucket", key, virtual=True),
        ))
        cases.append(presigned_case(f"presigned-get-odd-key-{i}", "GET", key_url(host, "bucket", key)))
    cases.append(header_case(
        "list-v2-query", "GET",
        key_url(host, "bucket", "", "list-type=2&prefix=a%20b%2Bc%3D~&delimiter=%2F&encoding-type=url&start-after="),
    ))
    cases.append(header_case(
        "repeated-and-empty-params", "GET",
        key_url(host, "bucket", "", "z=last&a=2&a=1&b=&c"),
    ))
    cases.append(header_case("list-buckets", "GET", f"http://{host}/"))
    cases.append(header_case("create-multipart", "POST", key_url(host, "bucket", "big file", "uploads")))
    delete_body = b'<Delete><Object><Key>a &amp; b</Key></Object><Quiet>true</Quiet></Delete>'
    cases.append(header_case(
        "delete-objects", "POST", key_url(host, "bucket", "", "delete"), body=delete_body,
        headers={"Content-MD5": base64.b64encode(hashlib.md5(delete_body).digest()).decode()},
    ))
    cases.append(header_case(
        "upload-part-unsigned", "PUT",
        key_url("s3.example.com", "bucket", "big file", "partNumber=3&uploadId=abc%2Bdef", scheme="https"),
        body=b"x" * 5000, unsigned=True,
    ))
    cases[-1]["mutate_body"] = False  # UNSIGNED-PAYLOAD: the body is not protected
    cases.append(header_case(
        "copy-object", "PUT", key_url(host, "bucket", "copy dest"),
        headers={"x-amz-copy-source": quote("bucket/src key+1", safe="/~")},
    ))
    data = bytes((i * 7 + 3) % 256 for i in range(2500))
    for alg_cls, header in ((Crc32Checksum, "x-amz-checksum-crc32"),
                            (Sha1Checksum, "x-amz-checksum-sha1"),
                            (Sha256Checksum, "x-amz-checksum-sha256")):
        cases.append(trailer_case(f"unsigned-trailer-{header[15:]}",
                                  key_url(host, "bucket", "chunked key+1"), data, alg_cls, header, 1000))
    cases.append(trailer_case("unsigned-trailer-empty", key_url(host, "bucket", "empty"), b"",
                              Crc32Checksum, "x-amz-checksum-crc32", 1000))
    for alg_cls, header in ((CrtCrc32cChecksum, "x-amz-checksum-crc32c"),
                            (CrtCrc64NvmeChecksum, "x-amz-checksum-crc64nvme")):
        cases.append(trailer_case(f"unsigned-trailer-{header[15:]}",
                                  key_url(host, "bucket", "chunked key+1"), data, alg_cls, header, 1000))
    cases.append(signed_streaming_case("signed-streaming", key_url(host, "bucket", "signed chunks"), data, 1024))
    c = Crc32Checksum()
    c.update(data)
    cases.append(signed_streaming_case(
        "signed-streaming-trailer", key_url(host, "bucket", "signed trailer"), data, 1000,
        trailer=("x-amz-checksum-crc32", c.b64digest()),
    ))
    cases.append(presigned_case(
        "presigned-get-response-params", "GET",
        key_url(host, "bucket", "report.pdf", "response-content-disposition=attachment%3B%20filename%3D%22r.pdf%22"),
        expires=604800,
    ))
    cases.append(presigned_case("presigned-put", "PUT", key_url(host, "bucket", "upload here.bin"), expires=60))
    # Headers present when presigning are signed: the URL only works with them.
    cases.append(presigned_case(
        "presigned-put-signed-headers", "PUT", key_url("s3.example.com", "vbucket", "a+b c", virtual=True, scheme="https"),
        expires=900, headers={"Content-Type": "image/png", "x-amz-meta-origin": "camera 1"},
    ))
    cases += crt_cases(odd_keys, data)
    import awscrt
    out = {
        "generator": f"botocore {botocore.__version__}, awscrt {awscrt.__version__}",
        "access_key": ACCESS_KEY,
        "secret": SECRET,
        "region": REGION,
        "now": NOW_UNIX,
        "cases": cases,
    }
    with open("clients.json", "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"{len(cases)} cases")


if __name__ == "__main__":
    main()
