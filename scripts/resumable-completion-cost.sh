#!/bin/bash
# What completing a resumable upload costs: the SHA-256 of the whole file, read back at
# completion (docs/RELIABILITY.md, "Resumable uploads (issue 13)").
#
# Uploads 1 GiB with `Upload-Complete: ?0`, then times the empty `PATCH` that completes it,
# with hashing and with --no-hash (no read back), three times each.
# Usage: scripts/resumable-completion-cost.sh [path/to/weir]  (default target/release/weir)
set -euo pipefail
weir=${1:-target/release/weir}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 1073741824 /dev/urandom > "$work/g"
run() {
    local root="$work/root.$RANDOM"
    "$weir" serve --listen 127.0.0.1:0 --root "$root" "$@" > "$root.out" 2>/dev/null &
    local pid=$!
    while ! grep -q 'serving' "$root.out" 2>/dev/null; do sleep 0.1; done
    local u
    u=$(grep -o 'http://[0-9.:]*' "$root.out" | head -1)
    local loc
    loc=$(curl -sS -D - -o /dev/null -T "$work/g" -H 'Upload-Complete: ?0' "$u/files/g" \
        | tr -d '\r' | grep -i '^location:' | tail -1 | cut -d' ' -f2)
    local t
    t=$(curl -sS -o /dev/null -w '%{time_total}' -X PATCH \
        -H 'Content-Type: application/partial-upload' -H 'Upload-Offset: 1073741824' \
        -H 'Upload-Complete: ?1' -H 'Content-Length: 0' "$u$loc")
    echo "${*:-hash} completion_s=$t"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    rm -rf "$root" "$root.out"
}
for _ in 1 2 3; do
    run
    run --no-hash
done
