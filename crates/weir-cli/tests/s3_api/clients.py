"""Real S3 clients against `weir serve --s3-api` (run by `s3_api/main.rs`, one store at a time).

Usage: clients.py ENDPOINT CHECKS ROOT
  ENDPOINT  http(s)://127.0.0.1:PORT of the S3 API (AWS_CA_BUNDLE names the certificate for https)
  CHECKS    comma-separated: boto3, bad_input, aws_cli, chunked_signed, tls_trailer,
            tls_trailer_parts (the S3 store with --s3-part-size 5MiB), virtual_host, rclone, s3cmd
  ROOT      the local store's root, or "-" for a bucket store (then nothing is checked on disk)

Credentials (from the test's token file): WRITER_KEY/WRITER_SECRET may read, write and delete;
READER_KEY/READER_SECRET may only read. Every transfer is compared byte for byte; every refused
request is checked to have stored nothing. Exits non-zero, with the reason, at the first failure.
"""

import base64
import datetime
import hashlib
import hmac
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

ENDPOINT, CHECKS, ROOT = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
WRITER = (os.environ["WRITER_KEY"], os.environ["WRITER_SECRET"])
READER = (os.environ["READER_KEY"], os.environ["READER_SECRET"])
REGION = "us-east-1"


def client(creds=WRITER, **config):
    return boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        aws_access_key_id=creds[0],
        aws_secret_access_key=creds[1],
        region_name=REGION,
        config=Config(
            signature_version="s3v4",  # presigned URLs too (boto3's default for them is SigV2)
            s3={"addressing_style": "path"},
            retries={"max_attempts": 1},
            **config,
        ),
    )


def data(n, seed):
    out = bytearray()
    block = hashlib.sha256(bytes([seed])).digest()
    while len(out) < n:
        out += block
        block = hashlib.sha256(block).digest()
    return bytes(out[:n])


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    raise AssertionError("the request was not refused")


def absent(s3, bucket, key):
    code = error_code(lambda: s3.head_object(Bucket=bucket, Key=key))
    assert code[1] == 404, f"{key} should not exist: {code}"


def check_boto3():
    s3 = client()
    s3.create_bucket(Bucket="boto3-bucket")
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert "boto3-bucket" in names, names
    s3.head_bucket(Bucket="boto3-bucket")
    for size in [0, 1, 65536, 3 << 20]:
        body = data(size, size % 251)
        key = f"dir/sub/obj-{size}"
        put = s3.put_object(Bucket="boto3-bucket", Key=key, Body=body, ContentType="text/x-weir")
        got = s3.get_object(Bucket="boto3-bucket", Key=key)
        assert got["Body"].read() == body, f"GET of {key} is not what was PUT"
        assert got["ETag"] == put["ETag"], (got["ETag"], put["ETag"])
        assert got["ContentType"] == "text/x-weir", got["ContentType"]
        if ROOT != "-":
            with open(os.path.join(ROOT, "boto3-bucket", key), "rb") as f:
                assert f.read() == body, "the file on disk differs"
        if size > 1:
            part = s3.get_object(Bucket="boto3-bucket", Key=key, Range=f"bytes=1-{size // 2}")
            assert part["Body"].read() == body[1 : size // 2 + 1]
            assert part["ResponseMetadata"]["HTTPStatusCode"] == 206
    # The ETag is the one `/files/` sends: the SHA-256, in base64.
    head = s3.head_object(Bucket="boto3-bucket", Key="dir/sub/obj-1")
    sha256 = base64.b64encode(hashlib.sha256(data(1, 1)).digest()).decode()
    assert head["ETag"] == '"sha256-%s"' % sha256, head["ETag"]
    # Conditional writes.
    s3.put_object(Bucket="boto3-bucket", Key="once", Body=b"first", IfNoneMatch="*")
    code = error_code(lambda: s3.put_object(Bucket="boto3-bucket", Key="once", Body=b"second", IfNoneMatch="*"))
    assert code == ("PreconditionFailed", 412), code
    etag = s3.head_object(Bucket="boto3-bucket", Key="once")["ETag"]
    s3.put_object(Bucket="boto3-bucket", Key="once", Body=b"third", IfMatch=etag)
    assert s3.get_object(Bucket="boto3-bucket", Key="once")["Body"].read() == b"third"
    # Listings: V2 paged, V1, delimiter.
    keys = [f"many/k{i:03}" for i in range(25)]
    for k in keys:
        s3.put_object(Bucket="boto3-bucket", Key=k, Body=k.encode())
    seen, token = [], None
    while True:
        args = {"Bucket": "boto3-bucket", "Prefix": "many/", "MaxKeys": 7}
        if token:
            args["ContinuationToken"] = token
        page = s3.list_objects_v2(**args)
        seen += [o["Key"] for o in page.get("Contents", [])]
        if not page["IsTruncated"]:
            break
        token = page["NextContinuationToken"]
    assert seen == keys, seen
    top = s3.list_objects_v2(Bucket="boto3-bucket", Delimiter="/")
    prefixes = [p["Prefix"] for p in top.get("CommonPrefixes", [])]
    assert prefixes == ["dir/", "many/"], prefixes
    v1 = s3.list_objects(Bucket="boto3-bucket", Prefix="many/k01", Marker="many/k012")
    assert [o["Key"] for o in v1["Contents"]] == [f"many/k01{i}" for i in range(3, 10)]
    # Server-side copy.
    s3.copy_object(Bucket="boto3-bucket", Key="copy", CopySource={"Bucket": "boto3-bucket", "Key": "dir/sub/obj-65536"})
    assert s3.get_object(Bucket="boto3-bucket", Key="copy")["Body"].read() == data(65536, 65536 % 251)
    # Deletes: one, many; the emptied folders go with their last key.
    s3.delete_object(Bucket="boto3-bucket", Key="copy")
    absent(s3, "boto3-bucket", "copy")
    result = s3.delete_objects(Bucket="boto3-bucket", Delete={"Objects": [{"Key": k} for k in keys]})
    assert len(result["Deleted"]) == len(keys), result
    assert "Contents" not in s3.list_objects_v2(Bucket="boto3-bucket", Prefix="many/")
    # Presigned GET.
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "boto3-bucket", "Key": "once"}, ExpiresIn=300)
    assert urlopen(url).read() == b"third"
    # A bucket with objects is not deleted; an empty one is.
    assert error_code(lambda: s3.delete_bucket(Bucket="boto3-bucket"))[0] == "BucketNotEmpty"
    s3.create_bucket(Bucket="empty-one")
    s3.delete_bucket(Bucket="empty-one")
    assert error_code(lambda: s3.head_bucket(Bucket="empty-one"))[1] == 404
    check_metadata(s3)


def check_metadata(s3):
    """User metadata and the kept header fields round-trip, single-part and multipart, and
    survive a CopyObject (COPY) or are replaced (REPLACE); too much is refused, storing nothing."""
    b = "meta-bucket"
    s3.create_bucket(Bucket=b)
    given = {"color": "blue", "empty": "", "x-y": "a=b; c"}
    fields = {
        "CacheControl": "no-cache",
        "ContentDisposition": 'attachment; filename="a b.txt"',
        "ContentEncoding": "gzip",
        "ContentLanguage": "de",
    }
    expires = datetime.datetime(2099, 1, 1, tzinfo=datetime.timezone.utc)

    def same(key, metadata):
        for got in [s3.head_object(Bucket=b, Key=key), s3.get_object(Bucket=b, Key=key)]:
            assert got["Metadata"] == metadata, (key, got["Metadata"])
            for name, value in fields.items():
                assert got[name] == value, (key, name, got.get(name))
            assert got["Expires"] == expires, (key, got.get("Expires"))

    s3.put_object(Bucket=b, Key="one", Body=b"x", Metadata=given, Expires=expires, **fields)
    same("one", given)
    mp = s3.create_multipart_upload(Bucket=b, Key="mp", Metadata=given, Expires=expires, **fields)
    part = s3.upload_part(Bucket=b, Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"y")
    s3.complete_multipart_upload(
        Bucket=b, Key="mp", UploadId=mp["UploadId"],
        MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]},
    )
    same("mp", given)
    # COPY (the default) keeps the source's; REPLACE the request's, onto the object itself too.
    s3.copy_object(Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "one"})
    same("copy", given)
    s3.copy_object(
        Bucket=b, Key="copy", CopySource={"Bucket": b, "Key": "copy"},
        Metadata={"new": "1"}, MetadataDirective="REPLACE",
    )
    got = s3.head_object(Bucket=b, Key="copy")
    assert got["Metadata"] == {"new": "1"}, got["Metadata"]
    assert "CacheControl" not in got, got
    # A new version without metadata has none; more than 2 KiB is refused and stores nothing.
    s3.put_object(Bucket=b, Key="one", Body=b"z")
    assert s3.head_object(Bucket=b, Key="one")["Metadata"] == {}
    big = {"big": "x" * 2048}
    code = error_code(lambda: s3.put_object(Bucket=b, Key="big", Body=b"x", Metadata=big))
    assert code == ("MetadataTooLarge", 400), code
    absent(s3, b, "big")
    for key in ["one", "mp", "copy"]:
        s3.delete_object(Bucket=b, Key=key)
    s3.delete_bucket(Bucket=b)


def urlopen(url):
    ctx = None
    if url.startswith("https:"):
        import ssl

        ctx = ssl.create_default_context(cafile=os.environ["AWS_CA_BUNDLE"])
    return urllib.request.urlopen(url, context=ctx)


def check_bad_input():
    s3 = client()
    s3.create_bucket(Bucket="bad")
    # A wrong secret: SignatureDoesNotMatch, nothing stored.
    wrong = client((WRITER[0], "not-the-secret"))
    assert error_code(lambda: wrong.put_object(Bucket="bad", Key="k", Body=b"x")) == ("SignatureDoesNotMatch", 403)
    absent(s3, "bad", "k")
    # An unknown access key.
    unknown = client(("nobody", "x"))
    assert error_code(lambda: unknown.list_buckets())[0] == "InvalidAccessKeyId"
    # An expired presigned URL: 403.
    s3.put_object(Bucket="bad", Key="there", Body=b"x")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "bad", "Key": "there"}, ExpiresIn=1)
    # Valid for one second from its signing second: certainly expired three seconds later.
    time.sleep(3)
    try:
        urlopen(url)
        raise AssertionError("an expired presigned URL was served")
    except urllib.error.HTTPError as e:
        assert e.code == 403, e.code
        assert b"<Code>AccessDenied</Code>" in e.read()
    # A wrong Content-MD5: BadDigest, nothing stored.
    code = error_code(lambda: s3.put_object(Bucket="bad", Key="md5", Body=b"hello", ContentMD5="XrY7u+Ae7tCTyyK7j1rNww=="))
    assert code == ("BadDigest", 400), code
    absent(s3, "bad", "md5")
    # A wrong x-amz-checksum-crc32: BadDigest, nothing stored.
    code = error_code(lambda: s3.put_object(Bucket="bad", Key="crc", Body=b"hello", ChecksumCRC32="AAAAAA=="))
    assert code == ("BadDigest", 400), code
    absent(s3, "bad", "crc")
    # A wrong x-amz-checksum-sha256: refused, nothing stored.
    code = error_code(lambda: s3.put_object(Bucket="bad", Key="sha", Body=b"hello", ChecksumSHA256="A" * 43 + "="))
    assert code[1] == 400, code
    absent(s3, "bad", "sha")
    # A signed payload whose body is not the one signed: XAmzContentSHA256Mismatch.
    request = AWSRequest(method="PUT", url=f"{ENDPOINT}/bad/signed", data=b"the body sent")
    request.headers["x-amz-content-sha256"] = hashlib.sha256(b"another body").hexdigest()
    SigV4Auth(Credentials(*WRITER), "s3", REGION).add_auth(request)
    status, body = send(request)
    assert status == 400 and b"XAmzContentSHA256Mismatch" in body, (status, body)
    absent(s3, "bad", "signed")
    # Keys with `..` segments: a clear error, and nothing outside the bucket.
    for key in ["../escape", "a/../../escape", "a/./b", "a//b", "dot/.."]:
        code = error_code(lambda: s3.put_object(Bucket="bad", Key=key, Body=b"x"))
        assert code == ("InvalidArgument", 400), (key, code)
    if ROOT != "-":
        assert not os.path.exists(os.path.join(ROOT, "escape")), "a key climbed out of its bucket"
        assert sorted(os.listdir(os.path.join(ROOT, "bad"))) == ["there"], os.listdir(os.path.join(ROOT, "bad"))
    # A read-only credential: reads, and AccessDenied for writes and deletes.
    reader = client(READER)
    assert reader.get_object(Bucket="bad", Key="there")["Body"].read() == b"x"
    assert error_code(lambda: reader.put_object(Bucket="bad", Key="ro", Body=b"x")) == ("AccessDenied", 403)
    assert error_code(lambda: reader.delete_object(Bucket="bad", Key="there")) == ("AccessDenied", 403)
    absent(s3, "bad", "ro")
    # Anonymous requests on a server with credentials: AccessDenied.
    anonymous = boto3.client("s3", endpoint_url=ENDPOINT, region_name=REGION,
                             config=Config(signature_version=botocore.UNSIGNED, s3={"addressing_style": "path"}))
    assert error_code(lambda: anonymous.get_object(Bucket="bad", Key="there"))[0] == "AccessDenied"
    # ... but a bucket that is not there is NoSuchBucket first, as in S3.
    assert error_code(lambda: anonymous.delete_object(Bucket="no-such-bucket", Key="k")) == ("NoSuchBucket", 404)
    # ListBuckets in pages of one ("bad" and "boto3-bucket" are there): the same names in order.
    names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert len(names) >= 2, names
    paged, token = [], None
    while True:
        page = s3.list_buckets(MaxBuckets=1, **({"ContinuationToken": token} if token else {}))
        paged += [b["Name"] for b in page["Buckets"]]
        token = page.get("ContinuationToken")
        if token is None:
            break
    assert paged == names, (paged, names)
    # Missing things.
    assert error_code(lambda: s3.get_object(Bucket="bad", Key="nothing")) == ("NoSuchKey", 404)
    assert error_code(lambda: s3.get_object(Bucket="no-such-bucket", Key="k")) == ("NoSuchBucket", 404)
    assert error_code(lambda: s3.get_object(Bucket="bad", Key="there", Range="bytes=5-9"))[1] == 416


def send(request, raw_path=None, body=None):
    """Sends a prepared botocore request as is (raw_path: the path exactly as given)."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(request.url)
    if u.scheme == "https":
        import ssl

        ctx = ssl.create_default_context(cafile=os.environ["AWS_CA_BUNDLE"])
        conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx)
    else:
        conn = http.client.HTTPConnection(u.hostname, u.port)
    path = raw_path or (u.path + ("?" + u.query if u.query else ""))
    body = request.body if body is None else body
    conn.request(request.method, path, body=body, headers=dict(request.headers.items()))
    r = conn.getresponse()
    return r.status, r.read()


def check_chunked_signed():
    """STREAMING-AWS4-HMAC-SHA256-PAYLOAD, each chunk signed (as the Java and Go SDKs send)."""
    s3 = client()
    s3.create_bucket(Bucket="chunks")
    body = data(200_000, 7)
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)] + [b""]

    def upload(key, tamper):
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        scope = f"{day}/{REGION}/s3/aws4_request"
        framed_len = sum(len(f"{len(c):x};chunk-signature=") + 64 + 4 + len(c) for c in chunks)
        request = AWSRequest(method="PUT", url=f"{ENDPOINT}/chunks/{key}")
        request.headers["x-amz-content-sha256"] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
        request.headers["x-amz-decoded-content-length"] = str(len(body))
        request.headers["content-encoding"] = "aws-chunked"
        request.headers["content-length"] = str(framed_len)
        request.context["timestamp"] = amz_date
        SigV4Auth(Credentials(*WRITER), "s3", REGION).add_auth(request)
        seed = request.headers["Authorization"].rsplit("Signature=", 1)[1]
        key_bytes = ("AWS4" + WRITER[1]).encode()
        for part in [day, REGION, "s3", "aws4_request"]:
            key_bytes = hmac.new(key_bytes, part.encode(), hashlib.sha256).digest()
        previous, framed = seed, b""
        for i, c in enumerate(chunks):
            to_sign = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz_date, scope, previous,
                                 hashlib.sha256(b"").hexdigest(), hashlib.sha256(c).hexdigest()])
            sig = hmac.new(key_bytes, to_sign.encode(), hashlib.sha256).hexdigest()
            previous = sig
            if tamper and i == 1:
                c = bytes([c[0] ^ 1]) + c[1:]
            framed += f"{len(c):x};chunk-signature={sig}\r\n".encode() + c + b"\r\n"
        assert len(framed) == framed_len
        return send(request, body=framed)

    status, answer = upload("good", False)
    assert status == 200, (status, answer)
    assert s3.get_object(Bucket="chunks", Key="good")["Body"].read() == body
    status, answer = upload("tampered", True)
    assert status == 403 and b"SignatureDoesNotMatch" in answer, (status, answer)
    absent(s3, "chunks", "tampered")


def check_tls_trailer():
    """Over HTTPS boto3 sends aws-chunked bodies with a CRC32 trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER)."""
    assert ENDPOINT.startswith("https:"), ENDPOINT
    s3 = client()
    s3.create_bucket(Bucket="trailer")
    seen = []
    s3.meta.events.register("before-send.s3.PutObject", lambda request, **_: seen.append(dict(request.headers)))
    body = data(1 << 20, 3)
    s3.put_object(Bucket="trailer", Key="k", Body=body, ChecksumAlgorithm="CRC32")
    headers = {k.lower(): v for k, v in seen[0].items()}
    sha = headers.get("x-amz-content-sha256", b"")
    sha = sha.decode() if isinstance(sha, bytes) else sha
    assert sha == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", seen[0]
    assert s3.get_object(Bucket="trailer", Key="k")["Body"].read() == body
    # The trailer's CRC32 is kept with the object (1 MiB: within one part on the S3 store) and
    # answered when asked for, as the head's would be; boto3 checks the body against it.
    crc32 = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    head = s3.head_object(Bucket="trailer", Key="k", ChecksumMode="ENABLED")
    assert head.get("ChecksumCRC32") == crc32, head
    got = s3.get_object(Bucket="trailer", Key="k", ChecksumMode="ENABLED")
    assert got.get("ChecksumCRC32") == crc32, got
    assert got["Body"].read() == body
    # A CRC32 that is not the body's: BadDigest, nothing stored.
    code = error_code(lambda: s3.put_object(Bucket="trailer", Key="bad", Body=body, ChecksumCRC32="AAAAAA=="))
    assert code[0] == "BadDigest", code
    absent(s3, "trailer", "bad")


def check_tls_trailer_parts():
    """boto3's default PutObject over HTTPS (a CRC32 trailer, no checksum asked for) of an object
    several parts long on the S3 store (the server runs with --s3-part-size 5MiB): its backend
    multipart upload was created before the trailer came, and the CRC32 is still kept (the
    version's sidecar); the versions after it answer their own SHA-256, never that CRC32."""
    assert ENDPOINT.startswith("https:"), ENDPOINT
    s3 = client()
    s3.create_bucket(Bucket="parts")
    seen = []
    s3.meta.events.register("before-send.s3.PutObject", lambda request, **_: seen.append(dict(request.headers)))
    part = 5 << 20
    body = data(3 * part + 12345, 5)
    s3.put_object(Bucket="parts", Key="big", Body=body)
    headers = {k.lower(): (v.decode() if isinstance(v, bytes) else v) for k, v in seen[0].items()}
    assert headers.get("x-amz-trailer") == "x-amz-checksum-crc32", seen[0]
    assert headers.get("x-amz-content-sha256") == "STREAMING-UNSIGNED-PAYLOAD-TRAILER", seen[0]
    crc32 = base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode()
    head = s3.head_object(Bucket="parts", Key="big", ChecksumMode="ENABLED")
    assert head["ContentLength"] == len(body), head
    assert head.get("ChecksumCRC32") == crc32, head
    assert head.get("ChecksumType") == "FULL_OBJECT", head
    got = s3.get_object(Bucket="parts", Key="big", ChecksumMode="ENABLED")
    assert got.get("ChecksumCRC32") == crc32, got
    assert got["Body"].read() == body
    # A copy holds it as its own.
    s3.copy_object(Bucket="parts", Key="copy", CopySource={"Bucket": "parts", "Key": "big"})
    head = s3.head_object(Bucket="parts", Key="copy", ChecksumMode="ENABLED")
    assert head.get("ChecksumCRC32") == crc32, head

    # Later versions without a checksum (boto3 sends one only when the operation requires it):
    # one part, then several parts of other bytes. Each answers its own SHA-256.
    plain = client(request_checksum_calculation="when_required")
    for later in [data(1000, 6), data(2 * part + 7, 7)]:
        seen.clear()
        plain.put_object(Bucket="parts", Key="big", Body=later)
        assert all("x-amz-trailer" not in {k.lower() for k in h} for h in seen), seen
        head = s3.head_object(Bucket="parts", Key="big", ChecksumMode="ENABLED")
        assert "ChecksumCRC32" not in head, head
        sha256 = base64.b64encode(hashlib.sha256(later).digest()).decode()
        assert head.get("ChecksumSHA256") == sha256, head
        got = s3.get_object(Bucket="parts", Key="big")
        assert got["Body"].read() == later


def aws(*args, input_file=None):
    cmd = ["aws", "--endpoint-url", ENDPOINT, *args]
    env = dict(os.environ, AWS_ACCESS_KEY_ID=WRITER[0], AWS_SECRET_ACCESS_KEY=WRITER[1],
               AWS_DEFAULT_REGION=REGION, AWS_EC2_METADATA_DISABLED="true")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def check_aws_cli():
    with tempfile.TemporaryDirectory() as tmp:
        def ok(*args):
            code, out = aws(*args)
            assert code == 0, f"aws {' '.join(args)}: {out}"
            return out

        ok("s3", "mb", "s3://cli")
        src = os.path.join(tmp, "src.bin")
        body = data(5 << 20, 9)  # below aws-cli's 8 MiB multipart threshold
        with open(src, "wb") as f:
            f.write(body)
        ok("s3", "cp", src, "s3://cli/in/src.bin")
        listing = ok("s3", "ls", "s3://cli/in/")
        assert "src.bin" in listing and str(len(body)) in listing, listing
        back = os.path.join(tmp, "back.bin")
        ok("s3", "cp", "s3://cli/in/src.bin", back)
        with open(back, "rb") as f:
            assert f.read() == body, "aws s3 cp down differs"
        recursive = ok("s3", "ls", "--recursive", "s3://cli")
        assert "in/src.bin" in recursive, recursive
        # Conditional put.
        ok("s3api", "put-object", "--bucket", "cli", "--key", "cond", "--body", src, "--if-none-match", "*")
        code, out = aws("s3api", "put-object", "--bucket", "cli", "--key", "cond", "--body", src, "--if-none-match", "*")
        assert code != 0 and "PreconditionFailed" in out, out
        # A range.
        part = os.path.join(tmp, "part.bin")
        ok("s3api", "get-object", "--bucket", "cli", "--key", "in/src.bin", "--range", "bytes=100-4195", part)
        with open(part, "rb") as f:
            assert f.read() == body[100:4196], "the range differs"
        # `aws s3 sync` up, then down into an empty folder: the same tree, byte for byte.
        up = os.path.join(tmp, "up")
        tree = {f"a/{i}.bin": data(1000 * i + 1, i) for i in range(12)}
        tree.update({"b/c/deep.bin": data(70000, 40), "top.bin": b"", "a-1.bin": b"a-1"})
        for rel, body_ in tree.items():
            os.makedirs(os.path.dirname(os.path.join(up, rel)), exist_ok=True)
            with open(os.path.join(up, rel), "wb") as f:
                f.write(body_)
            # An hour old: `aws s3 sync` sends a file again when its time is after the object's
            # LastModified, which S3 gives to the second; a file written in the second of its
            # upload would be sent again by the second sync below, by the clock alone.
            hour_ago = time.time() - 3600
            os.utime(os.path.join(up, rel), (hour_ago, hour_ago))
        ok("s3", "sync", up, "s3://cli/tree")
        down = os.path.join(tmp, "down")
        ok("s3", "sync", "s3://cli/tree", down)
        for rel, body_ in tree.items():
            with open(os.path.join(down, rel), "rb") as f:
                assert f.read() == body_, f"aws s3 sync down: {rel} differs"
        got = sorted(os.path.relpath(os.path.join(d, n), down) for d, _, ns in os.walk(down) for n in ns)
        assert got == sorted(tree), got
        # A second sync up has nothing to send.
        again = ok("s3", "sync", up, "s3://cli/tree")
        assert "upload:" not in again, again
        ok("s3", "rm", "s3://cli/in/src.bin")
        code, out = aws("s3api", "head-object", "--bucket", "cli", "--key", "in/src.bin")
        assert code != 0 and "404" in out, out


def check_virtual_host():
    """Virtual-hosted style: `BUCKET.DOMAIN` in Host (the server runs with --s3-api-domain
    s3.weir.test); the requests go to 127.0.0.1 with that Host, signed for it."""
    s3 = client()
    s3.create_bucket(Bucket="vhost")
    port = ENDPOINT.rsplit(":", 1)[1]
    scheme = ENDPOINT.split(":", 1)[0]
    host = f"vhost.s3.weir.test:{port}"
    request = AWSRequest(method="PUT", url=f"{scheme}://{host}/dir/key", data=b"by virtual host")
    request.headers["Host"] = host
    request.headers["x-amz-content-sha256"] = hashlib.sha256(b"by virtual host").hexdigest()
    SigV4Auth(Credentials(*WRITER), "s3", REGION).add_auth(request)
    request.url = f"{ENDPOINT}/dir/key"
    status, body = send(request)
    assert status == 200, (status, body)
    assert s3.get_object(Bucket="vhost", Key="dir/key")["Body"].read() == b"by virtual host"
    # The same path on the plain endpoint is path-style: bucket `dir`, which does not exist.
    request = AWSRequest(method="GET", url=f"{ENDPOINT}/dir/key")
    request.headers["x-amz-content-sha256"] = hashlib.sha256(b"").hexdigest()
    SigV4Auth(Credentials(*WRITER), "s3", REGION).add_auth(request)
    status, body = send(request)
    assert status == 404 and b"NoSuchBucket" in body, (status, body)


def check_rclone():
    """rclone's s3 backend: copy, sync up (a second sync sends nothing with --update
    --use-server-modtime, since weir keeps no x-amz-meta-mtime), check --download, sync down."""
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "rclone.conf")
        with open(conf, "w") as f:
            f.write("[weir]\ntype = s3\nprovider = Other\n"
                    f"endpoint = {ENDPOINT}\naccess_key_id = {WRITER[0]}\n"
                    f"secret_access_key = {WRITER[1]}\nforce_path_style = true\n")
        src = os.path.join(tmp, "src")
        tree = {"a/big.bin": data(3 << 20, 1), "a/b/small.txt": b"x\n", "a-1.txt": b"y", "a.txt": b""}
        for rel, body in tree.items():
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "wb") as f:
                f.write(body)
        env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
        if ENDPOINT.startswith("https:"):
            env["AWS_CA_BUNDLE"] = os.environ["AWS_CA_BUNDLE"]

        def rclone(*args):
            r = subprocess.run(["rclone", "--config", conf, "-v", *args], env=env,
                               capture_output=True, text=True)
            assert r.returncode == 0, f"rclone {' '.join(args)}: {r.stdout}{r.stderr}"
            return r.stdout + r.stderr

        rclone("mkdir", "weir:rclone-bucket")
        rclone("copy", src, "weir:rclone-bucket/copy")
        rclone("sync", src, "weir:rclone-bucket/sync")
        again = rclone("sync", "--update", "--use-server-modtime", src, "weir:rclone-bucket/sync")
        assert "Copied" not in again, again
        rclone("check", "--download", src, "weir:rclone-bucket/sync")
        down = os.path.join(tmp, "down")
        rclone("sync", "weir:rclone-bucket/copy", down)
        for rel, body in tree.items():
            with open(os.path.join(down, rel), "rb") as f:
                assert f.read() == body, f"rclone sync down: {rel} differs"


def check_s3cmd():
    """s3cmd (the Debian package): mb, put (single and, over its 5 MiB chunk size, multipart),
    ls, get, sync up and down, del; every file byte for byte."""
    with tempfile.TemporaryDirectory() as tmp:
        host = ENDPOINT.split("://", 1)[1]
        conf = os.path.join(tmp, "s3cmd.conf")
        with open(conf, "w") as f:
            # Path style: host_bucket without %(bucket)s. No ~/.s3cfg is read (-c).
            f.write("[default]\n"
                    f"access_key = {WRITER[0]}\nsecret_key = {WRITER[1]}\n"
                    f"host_base = {host}\nhost_bucket = {host}\n"
                    f"use_https = {ENDPOINT.startswith('https:')}\n"
                    "check_ssl_certificate = False\nsignature_v2 = False\n"
                    "bucket_location = us-east-1\n")

        def s3cmd(*args):
            r = subprocess.run(["s3cmd", "-c", conf, "--no-progress", *args],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"s3cmd {' '.join(args)}: {r.stdout}{r.stderr}"
            assert "WARNING: MD5" not in r.stderr, f"s3cmd {' '.join(args)}: {r.stderr}"
            return r.stdout

        def same(path, body, what):
            with open(path, "rb") as f:
                assert f.read() == body, f"s3cmd {what}: {path} differs"

        s3cmd("mb", "s3://s3cmd-bucket")
        big, small = data(12 << 20, 7), b"small\n"
        for name, body in (("big.bin", big), ("small.txt", small)):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(body)
        # 12 MiB in 5 MiB chunks: three parts.
        s3cmd("put", "--multipart-chunk-size-mb=5", os.path.join(tmp, "big.bin"),
              "s3://s3cmd-bucket/put/big.bin")
        s3cmd("put", os.path.join(tmp, "small.txt"), "s3://s3cmd-bucket/put/small.txt")
        listed = s3cmd("ls", "s3://s3cmd-bucket/put/")
        assert "s3://s3cmd-bucket/put/big.bin" in listed and str(12 << 20) in listed, listed
        assert "s3://s3cmd-bucket/put/small.txt" in listed, listed
        for name, body in (("big.bin", big), ("small.txt", small)):
            got = os.path.join(tmp, "got-" + name)
            s3cmd("get", f"s3://s3cmd-bucket/put/{name}", got)
            same(got, body, "get")
        src = os.path.join(tmp, "src")
        tree = {"a/big.bin": data(6 << 20, 8), "a/b/small.txt": b"x\n", "c.txt": b"y"}
        for rel, body in tree.items():
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            with open(os.path.join(src, rel), "wb") as f:
                f.write(body)
        s3cmd("sync", "--multipart-chunk-size-mb=5", src + "/", "s3://s3cmd-bucket/sync/")
        down = os.path.join(tmp, "down")
        os.makedirs(down)
        s3cmd("sync", "s3://s3cmd-bucket/sync/", down + "/")
        for rel, body in tree.items():
            same(os.path.join(down, rel), body, "sync down")
        s3cmd("del", "s3://s3cmd-bucket/put/small.txt")
        s3cmd("del", "--recursive", "--force", "s3://s3cmd-bucket/sync/")
        listed = s3cmd("ls", "--recursive", "s3://s3cmd-bucket/")
        # Objects only: a folder left empty may still be listed as `dir/` on the S3 store.
        objects = [l for l in listed.splitlines() if not l.endswith("/")]
        assert not any("small.txt" in l or "sync/" in l for l in objects), listed
        assert any("put/big.bin" in l for l in objects), listed


CHECK = {
    "boto3": check_boto3,
    "bad_input": check_bad_input,
    "aws_cli": check_aws_cli,
    "chunked_signed": check_chunked_signed,
    "tls_trailer": check_tls_trailer,
    "tls_trailer_parts": check_tls_trailer_parts,
    "virtual_host": check_virtual_host,
    "rclone": check_rclone,
    "s3cmd": check_s3cmd,
}

for name in CHECKS:
    CHECK[name]()
    print(f"ok: {name}")
