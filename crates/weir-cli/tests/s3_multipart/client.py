"""boto3 against weir's S3 API: the multipart scenarios of tests/s3_multipart/main.rs.

Usage: client.py ENDPOINT ACCESS_KEY SECRET BUCKET SCENARIO [ARGS...]
Exits 0 when every check holds; a failed check raises (traceback on stderr, exit 1).
"""

import base64
import hashlib
import os
import sys
import time
import zlib

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

MIB = 1 << 20


def client(endpoint, key, secret):
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def data(n, seed):
    # Deterministic bytes, different per seed.
    block = hashlib.sha256(bytes([seed])).digest() * 2048  # 64 KiB
    out = (block * (n // len(block) + 1))[:n]
    return out


def error_of(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except ClientError as e:
        return (e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"])
    raise AssertionError(f"{call.__name__} succeeded, expected an error")


def expect(got, want):
    assert got == want, f"got {got!r}, want {want!r}"


def absent(s3, bucket, key):
    expect(error_of(s3.get_object, Bucket=bucket, Key=key), (404, "NoSuchKey"))


def is_crc_tag(etag):
    # A part uploaded without Content-MD5: weir names it "part-" and 32 hex digits (the
    # CRC-64/NVME of its bytes, then their length).
    bare = etag.strip('"')
    return bare.startswith("part-") and len(bare) == 37 and int(bare[5:], 16) >= 0


def upload_parts(s3, bucket, key, upload_id, bodies, md5=False, **extra):
    """Uploads each body as a part; with md5, sends its Content-MD5, which is then its ETag."""
    parts = []
    for number, body in bodies:
        if md5:
            extra["ContentMD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
        r = s3.upload_part(
            Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body, **extra
        )
        if md5:
            expect(r["ETag"].strip('"'), hashlib.md5(body).hexdigest())
        else:
            assert is_crc_tag(r["ETag"]), r["ETag"]
        parts.append({"PartNumber": number, "ETag": r["ETag"]})
    return parts


def completion_error(s3, bucket, key, uid, parts, **extra):
    """The (status, code) of a CompleteMultipartUpload of `parts` that must fail."""
    return error_of(
        s3.complete_multipart_upload,
        Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts}, **extra,
    )


def scenario_round_trip(s3, bucket):
    """Parts out of order and resent, listings, completion byte-exact, ETags consistent."""
    key = "dir/big.bin"
    one, two, three = data(5 * MIB, 1), data(5 * MIB + 3, 2), data(1000, 3)
    up = s3.create_multipart_upload(Bucket=bucket, Key=key, ContentType="application/x-test")
    uid = up["UploadId"]
    [p3, old1] = upload_parts(s3, bucket, key, uid, [(3, three), (1, data(5 * MIB, 9))])
    upload_parts(s3, bucket, key, uid, [(2, two)], md5=True)
    [p1] = upload_parts(s3, bucket, key, uid, [(1, one)])  # resent: replaces
    # The same bytes again: the same ETag, so a completion may name either answer's.
    expect(upload_parts(s3, bucket, key, uid, [(1, one)])[0]["ETag"], p1["ETag"])
    listed = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, MaxParts=2)
    expect([p["PartNumber"] for p in listed["Parts"]], [1, 2])
    expect(listed["IsTruncated"], True)
    expect(listed["Parts"][0]["ETag"], p1["ETag"])
    expect(listed["Parts"][1]["ETag"].strip('"'), hashlib.md5(two).hexdigest())
    rest = s3.list_parts(Bucket=bucket, Key=key, UploadId=uid, PartNumberMarker=2)
    expect([(p["PartNumber"], p["Size"]) for p in rest["Parts"]], [(3, 1000)])
    ups = s3.list_multipart_uploads(Bucket=bucket, Prefix="dir/")
    expect([(u["Key"], u["UploadId"]) for u in ups["Uploads"]], [(key, uid)])
    absent(s3, bucket, key)
    # The replaced bytes of part 1 are named by a tag that names nothing now.
    stale = [old1, {"PartNumber": 2, "ETag": hashlib.md5(two).hexdigest()}, p3]
    expect(
        error_of(s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": stale}),
        (400, "InvalidPart"),
    )
    parts = [p1, {"PartNumber": 2, "ETag": hashlib.md5(two).hexdigest()}, p3]
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts}
    )
    # Sent again: the same answer.
    again = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": parts}
    )
    expect(again["ETag"], done["ETag"])
    got = s3.get_object(Bucket=bucket, Key=key)
    body = got["Body"].read()
    assert body == one + two + three, "the object is not the parts, in order"
    expect(got["ContentType"], "application/x-test")
    expect(s3.head_object(Bucket=bucket, Key=key)["ETag"], done["ETag"])
    expect(s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []), [])
    expect(error_of(s3.list_parts, Bucket=bucket, Key=key, UploadId=uid), (404, "NoSuchUpload"))


def scenario_refusals(s3, bucket):
    """Each bad completion gets S3's error and stores nothing; the upload stays."""
    key = "refused.bin"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key)
    uid = up["UploadId"]
    small, big, last = data(100, 1), data(5 * MIB, 2), data(10, 3)
    p_small, p_big, p_last = upload_parts(s3, bucket, key, uid, [(1, small), (2, big), (3, last)])

    def complete(parts):
        return completion_error(s3, bucket, key, uid, parts)

    expect(complete([p_big, p_small]), (400, "InvalidPartOrder"))
    expect(complete([p_big, {"PartNumber": 9999, "ETag": p_last["ETag"]}]), (400, "InvalidPart"))
    expect(complete([{"PartNumber": 2, "ETag": p_small["ETag"]}]), (400, "InvalidPart"))
    expect(complete([p_small, p_big]), (400, "EntityTooSmall"))
    absent(s3, bucket, key)
    expect(
        error_of(s3.upload_part, Bucket=bucket, Key=key, UploadId=uid, PartNumber=10001, Body=b"x"),
        (400, "InvalidArgument"),
    )
    expect(
        error_of(s3.upload_part, Bucket=bucket, Key=key, UploadId="0" * 32, PartNumber=1, Body=b"x"),
        (404, "NoSuchUpload"),
    )
    # A wrong Content-MD5: the part is refused, the earlier part 3 stays.
    expect(
        error_of(
            s3.upload_part, Bucket=bucket, Key=key, UploadId=uid, PartNumber=3, Body=b"other",
            ContentMD5="1B2M2Y8AsgTpgAmY7PhCfg==",
        ),
        (400, "BadDigest"),
    )
    # 10,000 is the last part number; parts need not be contiguous.
    [p_max] = upload_parts(s3, bucket, key, uid, [(10000, data(7, 4))])
    # If-None-Match: * where an object is: 412, nothing changed.
    s3.put_object(Bucket=bucket, Key=key, Body=b"old")
    expect(
        completion_error(s3, bucket, key, uid, [p_big, p_last], IfNoneMatch="*"),
        (412, "PreconditionFailed"),
    )
    head = s3.head_object(Bucket=bucket, Key=key)
    expect(s3.get_object(Bucket=bucket, Key=key)["Body"].read(), b"old")
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid,
        MultipartUpload={"Parts": [p_big, p_max]}, IfMatch=head["ETag"],
    )
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == big + data(7, 4), "completed object differs"
    expect(s3.head_object(Bucket=bucket, Key=key)["ETag"], done["ETag"])
    # Abort.
    uid2 = s3.create_multipart_upload(Bucket=bucket, Key="aborted")["UploadId"]
    upload_parts(s3, bucket, "aborted", uid2, [(1, b"abc")])
    s3.abort_multipart_upload(Bucket=bucket, Key="aborted", UploadId=uid2)
    expect(
        error_of(s3.abort_multipart_upload, Bucket=bucket, Key="aborted", UploadId=uid2),
        (404, "NoSuchUpload"),
    )
    absent(s3, bucket, "aborted")
    expect(
        error_of(s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId="abc1234def",
                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "1234"}]}),
        (404, "NoSuchUpload"),
    )


def scenario_copy_and_checksums(s3, bucket):
    """UploadPartCopy with a range; boto3's checksums on parts, and the composite."""
    src = data(3 * MIB, 7)
    s3.put_object(Bucket=bucket, Key="src", Body=src)
    key = "copied"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
    first = data(5 * MIB, 8)
    r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=1, Body=first,
                       ChecksumAlgorithm="CRC32")
    assert r.get("ChecksumCRC32"), f"no CRC32 echoed: {r}"
    p1 = {"PartNumber": 1, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]}
    c = s3.upload_part_copy(Bucket=bucket, Key=key, UploadId=uid, PartNumber=2,
                            CopySource={"Bucket": bucket, "Key": "src"},
                            CopySourceRange="bytes=1000-1999999")
    etag2 = c["CopyPartResult"]["ETag"]
    assert is_crc_tag(etag2), etag2
    expect(
        error_of(s3.upload_part_copy, Bucket=bucket, Key=key, UploadId=uid, PartNumber=3,
                 CopySource={"Bucket": bucket, "Key": "src"},
                 CopySourceRange="bytes=0-%d" % (3 * MIB)),
        (416, "InvalidRange"),
    )
    s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid,
        MultipartUpload={"Parts": [p1, {"PartNumber": 2, "ETag": etag2}]},
    )
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == first + src[1000:2000000], "copied object differs"

    # Every part with its CRC32: a list without one is refused (BadDigest, nothing stored);
    # with them, the answer carries the composite checksum of the two.
    key = "crc"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
    listed = []
    for number, body in [(1, data(5 * MIB, 11)), (2, data(100, 12))]:
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=number, Body=body,
                           ChecksumAlgorithm="CRC32")
        listed.append({"PartNumber": number, "ETag": r["ETag"], "ChecksumCRC32": r["ChecksumCRC32"]})
    bare = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in listed]
    expect(
        error_of(s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=uid,
                 MultipartUpload={"Parts": bare}),
        (400, "BadDigest"),
    )
    absent(s3, bucket, key)
    done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                        MultipartUpload={"Parts": listed})
    assert done.get("ChecksumCRC32", "").endswith("-2"), f"no composite CRC32: {done}"


def b64(raw):
    return base64.b64encode(raw).decode()


def crc32_raw(b):
    return zlib.crc32(b).to_bytes(4, "big")


def sha256_raw(b):
    return hashlib.sha256(b).digest()


def scenario_kept_checksums(s3, bucket):
    """The checksum a completion forms from its parts' (CRC32 FULL_OBJECT, CRC32 and SHA256
    COMPOSITE: computed here with zlib and hashlib, not by boto3) is answered and kept with the
    object: HeadObject and GetObject with ChecksumMode, each part's own with PartNumber,
    GetObjectAttributes with its parts paged. A wrong checksum, and the pairs S3 refuses, store
    nothing."""
    bodies = [data(5 * MIB, 21), data(5 * MIB, 22), data(1000, 23)]
    whole = b"".join(bodies)
    cases = [
        ("CRC32", "FULL_OBJECT", crc32_raw, lambda raws: b64(crc32_raw(whole))),
        ("CRC32", "COMPOSITE", crc32_raw, lambda raws: b64(crc32_raw(b"".join(raws))) + "-3"),
        ("SHA256", "COMPOSITE", sha256_raw, lambda raws: b64(sha256_raw(b"".join(raws))) + "-3"),
    ]
    for algorithm, kind, raw_of, object_value in cases:
        key = "sums-%s-%s" % (algorithm, kind)
        field = "Checksum" + algorithm
        r = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm,
                                       ChecksumType=kind)
        expect((r.get("ChecksumAlgorithm"), r.get("ChecksumType")), (algorithm, kind))
        uid = r["UploadId"]
        raws = [raw_of(b) for b in bodies]
        listed = []
        for number, body in enumerate(bodies, 1):
            r = s3.upload_part(Bucket=bucket, Key=key, UploadId=uid, PartNumber=number,
                               Body=body, ChecksumAlgorithm=algorithm)
            expect(r.get(field), b64(raws[number - 1]))
            listed.append({"PartNumber": number, "ETag": r["ETag"], field: r[field]})
        want = object_value(raws)
        # Another object's checksum: refused, nothing stored, the upload kept.
        wrong = b64(raw_of(b"not this object")) + ("-3" if kind == "COMPOSITE" else "")
        expect(
            error_of(s3.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=uid,
                     MultipartUpload={"Parts": listed}, **{field: wrong}),
            (400, "BadDigest"),
        )
        absent(s3, bucket, key)
        done = s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                            MultipartUpload={"Parts": listed}, **{field: want})
        expect((done.get(field), done.get("ChecksumType")), (want, kind))

        head = s3.head_object(Bucket=bucket, Key=key)
        assert field not in head, f"a checksum without ChecksumMode: {head}"
        head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        expect((head.get(field), head.get("ChecksumType")), (want, kind))
        # boto3 checks a full-object CRC32 against the body it reads (not a composite).
        got = s3.get_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        expect((got.get(field), got.get("ChecksumType")), (want, kind))
        assert got["Body"].read() == whole, "object differs"
        for number, body in enumerate(bodies, 1):
            part = s3.get_object(Bucket=bucket, Key=key, PartNumber=number,
                                 ChecksumMode="ENABLED")
            expect((part.get(field), part.get("ChecksumType")), (b64(raws[number - 1]), kind))
            assert part["Body"].read() == body, f"part {number} differs"

        everything = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
        attrs = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=everything,
                                         MaxParts=2)
        expect(attrs["ETag"], head["ETag"].strip('"'))
        expect((attrs["Checksum"].get(field), attrs["Checksum"]["ChecksumType"]), (want, kind))
        expect((attrs["ObjectSize"], attrs["StorageClass"]), (len(whole), "STANDARD"))
        parts = attrs["ObjectParts"]
        expect((parts["TotalPartsCount"], parts["IsTruncated"], parts["NextPartNumberMarker"]),
               (3, True, 2))
        expect([(p["PartNumber"], p["Size"], p[field]) for p in parts["Parts"]],
               [(n, len(bodies[n - 1]), b64(raws[n - 1])) for n in (1, 2)])
        rest = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["ObjectParts"],
                                        PartNumberMarker=2)["ObjectParts"]
        expect((rest["IsTruncated"], [p["PartNumber"] for p in rest["Parts"]]), (False, [3]))
        size_only = s3.get_object_attributes(Bucket=bucket, Key=key, ObjectAttributes=["ObjectSize"])
        assert "ETag" not in size_only and "ObjectParts" not in size_only, size_only

    # A single PUT: attributes without parts, its checksum the one it was sent with (given
    # here, so that boto3 sends it in the head over HTTPS too, not in a trailer).
    s3.put_object(Bucket=bucket, Key="single", Body=b"one body",
                  ChecksumCRC32=b64(crc32_raw(b"one body")))
    attrs = s3.get_object_attributes(Bucket=bucket, Key="single",
                                     ObjectAttributes=["Checksum", "ObjectParts", "ObjectSize"])
    expect(attrs["Checksum"].get("ChecksumCRC32"), b64(crc32_raw(b"one body")))
    assert "ObjectParts" not in attrs, attrs
    expect(error_of(s3.get_object_attributes, Bucket=bucket, Key="nothing-here",
                    ObjectAttributes=["ETag"]), (404, "NoSuchKey"))
    # The pairs S3 refuses: a hash cannot be combined into the whole's, CRC64NVME is only whole.
    for algorithm, kind in [("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT"),
                            ("CRC64NVME", "COMPOSITE")]:
        expect(error_of(s3.create_multipart_upload, Bucket=bucket, Key="refused",
                        ChecksumAlgorithm=algorithm, ChecksumType=kind),
               (400, "InvalidRequest"))
    expect(s3.list_multipart_uploads(Bucket=bucket, Prefix="refused").get("Uploads"), None)


def scenario_streamed(s3, bucket):
    """A server that answers every completion at once (`--s3-api-keep-alive 0`): `200 OK`, its
    XML declaration, spaces while the completion runs, then the result, or S3's `<Error>`
    document in the `200`, which botocore finds (and, taking it for a 500, retries)."""
    key = "streamed.bin"
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    one, two = data(5 * MIB, 11), data(3 * MIB, 12)
    p2, p1 = upload_parts(s3, bucket, key, uid, [(2, two), (1, one)])
    # Refused: the error's code comes from the document in the 200, which botocore counts as
    # a 500 (answered at once, a refusal would be a 400 or a 412); nothing is stored and the
    # upload stays, so its retries are refused alike.
    wrong = {"PartNumber": 2, "ETag": p1["ETag"]}
    expect(completion_error(s3, bucket, key, uid, [p1, wrong]), (500, "InvalidPart"))
    s3.put_object(Bucket=bucket, Key=key, Body=b"old")
    expect(
        completion_error(s3, bucket, key, uid, [p1, p2], IfNoneMatch="*"),
        (500, "PreconditionFailed"),
    )
    expect(s3.get_object(Bucket=bucket, Key=key)["Body"].read(), b"old")
    done = s3.complete_multipart_upload(
        Bucket=bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": [p1, p2]},
    )
    expect(done["Key"], key)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body == one + two, "completed object differs"
    expect(s3.head_object(Bucket=bucket, Key=key)["ETag"], done["ETag"])


def scenario_spaces(s3, bucket):
    """The spaces of a kept-alive completion, on the wire: the test holds the store's backend
    (its proxy) between the lines this script and it exchange, so the completion cannot end
    before this script has read a space. READY (the parts are in) → the test holds the
    backend and answers GO → the completion is sent (presigned, read raw): `200`, the XML
    declaration, then a space → SPACE → the test lets the backend answer → the result's
    document after the spaces, and the object byte-exact."""
    import http.client
    import urllib.parse

    key = "spaces.bin"
    body = data(3 * MIB, 21)
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    parts = upload_parts(s3, bucket, key, uid, [(1, body)])
    # Signature V4 in the query (botocore presigns with V2 unless told).
    signer = boto3.client(
        "s3",
        endpoint_url=s3.meta.endpoint_url,
        aws_access_key_id=sys.argv[2],
        aws_secret_access_key=sys.argv[3],
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    url = signer.generate_presigned_url(
        "complete_multipart_upload",
        Params={"Bucket": bucket, "Key": key, "UploadId": uid},
        HttpMethod="POST",
    )
    xml = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>" \
        "</CompleteMultipartUpload>" % parts[0]["ETag"]
    print("READY", flush=True)
    expect(sys.stdin.readline().strip(), "GO")
    target = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
    conn.request("POST", target.path + "?" + target.query, body=xml.encode())
    resp = conn.getresponse()
    assert resp.status == 200, (resp.status, resp.read())
    declaration = b'<?xml version="1.0" encoding="UTF-8"?>\n'
    expect(resp.read(len(declaration)), declaration)
    # Held: nothing but spaces can come until the test lets the backend answer.
    expect(resp.read(1), b" ")
    print("SPACE", flush=True)
    rest = resp.read()
    document = rest.lstrip(b" ")
    assert document.startswith(b"<CompleteMultipartUploadResult"), rest[:200]
    assert b"<Error>" not in rest, rest
    got = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert got == body, "completed object differs"


def scenario_start(s3, bucket, key, uid_file):
    """An upload left behind: created, one part, never completed (for the sweep)."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    upload_parts(s3, bucket, key, uid, [(1, b"left behind")])
    with open(uid_file, "w") as f:
        f.write(uid)


def scenario_wait_swept(s3, bucket):
    """Polls ListMultipartUploads until the sweep removed every upload (bounded)."""
    deadline = time.monotonic() + 60
    while s3.list_multipart_uploads(Bucket=bucket).get("Uploads"):
        assert time.monotonic() < deadline, "the abandoned upload was never swept"
        time.sleep(0.2)


def scenario_parts_for_kill(s3, bucket, key, size_mib, uid_file):
    """Uploads SIZE_MIB MiB in 5 MiB parts, writes `UPLOAD_ID` and the part list, completes
    nothing: the test completes it and kills weir meanwhile."""
    uid = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    bodies = []
    for i in range(int(size_mib) // 5):
        bodies.append((i + 1, data(5 * MIB, 40 + i)))
    parts = upload_parts(s3, bucket, key, uid, bodies)
    with open(uid_file, "w") as f:
        f.write(uid + "\n")
        for p in parts:
            f.write("%d %s\n" % (p["PartNumber"], p["ETag"].strip('"')))


def scenario_complete(s3, bucket, key, uid_file):
    with open(uid_file) as f:
        lines = f.read().split("\n")
    uid = lines[0]
    parts = [{"PartNumber": int(n), "ETag": e} for n, e in (l.split() for l in lines[1:] if l)]
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=uid,
                                 MultipartUpload={"Parts": parts})


def main():
    endpoint, key, secret, bucket, scenario, *args = sys.argv[1:]
    s3 = client(endpoint, key, secret)
    if scenario == "bucket":
        s3.create_bucket(Bucket=bucket)
        return
    globals()["scenario_" + scenario](s3, bucket, *args)


if __name__ == "__main__":
    main()
