"""tuspy (the tus project's Python client, from PyPI) against `weir serve`, run by tus.rs.

usage: tus_client.py ENDPOINT FILE NAME DIR MODE [URL_FILE]
  MODE whole:  upload FILE in 1 MiB chunks.
  MODE start:  upload only the first 2 chunks of FILE, then write the upload's URL to URL_FILE
               (an interrupted upload: the client process ends there).
  MODE resume: a new client resumes the upload at the URL in URL_FILE and finishes it.
Prints the upload's URL last. With TUS_NO_CHECKSUM set, no Upload-Checksum is sent (a server
without the checksum extension: `weir serve --store s3://`).
"""
import hashlib
import os
import sys

from tusclient import client
from tusclient.uploader import Uploader

# tuspy checksums with sha1 unless told otherwise; weir offers sha256 (Tus-Checksum-Algorithm).
Uploader.CHECKSUM_ALGORITHM_PAIR = ("sha256", hashlib.sha256)

endpoint, path, name, directory, mode = sys.argv[1:6]
url_file = sys.argv[6] if len(sys.argv) > 6 else None
tus = client.TusClient(endpoint)
metadata = {"filename": name}
if directory:
    metadata["dir"] = directory
chunk = 1 << 20
checksum = "TUS_NO_CHECKSUM" not in os.environ
if mode == "whole":
    uploader = tus.uploader(path, chunk_size=chunk, metadata=metadata, upload_checksum=checksum)
    uploader.upload()
elif mode == "start":
    uploader = tus.uploader(path, chunk_size=chunk, metadata=metadata, upload_checksum=checksum)
    uploader.upload_chunk()
    uploader.upload_chunk()
    with open(url_file, "w") as f:
        f.write(uploader.url)
elif mode == "resume":
    with open(url_file) as f:
        url = f.read().strip()
    uploader = tus.uploader(path, chunk_size=chunk, url=url, upload_checksum=checksum)
    assert uploader.offset == 2 * chunk, uploader.offset
    uploader.upload()
else:
    raise SystemExit("unknown mode " + mode)
print(uploader.url)
