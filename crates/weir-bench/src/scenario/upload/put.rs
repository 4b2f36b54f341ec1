//! The `weir put` rows: the `weir` binary's own client uploads a file to weir's discard handler
//! (the server of the row "weir, pause 1 MiB → discard"), in the same rounds as the bench's
//! client and the raw baselines. The target for it: ≥ 0.95 × raw TCP and ≥ 0.95 × `curl -T` (issue 18).
//! Two rows: `weir put`'s default (the file read into a 1 MiB buffer, written from it) and
//! `--sendfile` (page cache → socket), so the choice of default stays measured; a third with
//! the digest (hashed as the body is sent, which the first two leave out);
//! and a fourth, `curl -T` of the same file to the same server (issue 18, item 5: `weir put`
//! ≥ 0.95 × curl).
//!
//! What the row measures is the client: `weir put --no-digest FILE URL` as a user runs it
//! (process start, connect, `Expect: 100-continue`, the body read from the page cache into its
//! 1 MiB buffer and written, the answer), timed from spawn to exit. `--no-digest` leaves out
//! the hashing pass over the file, which `weir put` reports apart from the transfer. The file is
//! written once per size, before the rounds, so it is in the page cache like the bench
//! client's buffer is in memory.

use crate::client::upload::Upload;
use crate::clock;
use crate::procfs;
use crate::server::Endpoint;
use crate::server::trace::UploadTrace;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// How `weir put` sends the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Send {
    /// Its default on loopback: read into one 1 MiB buffer, written from it.
    Buffered,
    /// `--sendfile`.
    Sendfile,
    /// Its default with the digest: the file hashed (SHA-256) from the buffers it is sent from,
    /// the digest in a `Content-Digest` trailer for the server to verify (an older binary:
    /// hashed in a pass of its own first, the digest in the head).
    Digest,
    /// Not `weir put` but `curl -T FILE URL` (a `PUT` with `Expect: 100-continue`, as
    /// `weir put` sends), the file and server the same.
    Curl,
}

impl Send {
    pub(super) fn label(self) -> &'static str {
        match self {
            Send::Buffered => "weir put → weir, pause 1 MiB → discard",
            Send::Sendfile => "weir put --sendfile → weir, pause 1 MiB → discard",
            Send::Digest => "weir put with its SHA-256 → weir, pause 1 MiB → discard",
            Send::Curl => "curl -T → weir, pause 1 MiB → discard",
        }
    }

    /// Every way, in the order of the rows.
    pub(super) const ALL: [Send; 4] = [Send::Buffered, Send::Sendfile, Send::Digest, Send::Curl];
}

/// Whether `curl` runs here (the curl row says it is not available otherwise).
pub(super) fn curl_available() -> bool {
    Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The row of the same server uploaded to by the bench's client.
pub(super) const SAME_SERVER: &str = "weir, pause 1 MiB → discard";

/// The files `weir put` sends, one per size, outside the directory the rounds empty.
pub(super) struct PutSources {
    dir: PathBuf,
}

impl PutSources {
    /// Files go to `dir` (created; it must not be one the rounds empty).
    pub(super) fn new(dir: PathBuf) -> io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The file of `size` bytes, written the first time it is asked for.
    fn file(&self, size: u64) -> io::Result<PathBuf> {
        let path = self.dir.join(format!("put-{size}.bin"));
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == size) {
            return Ok(path);
        }
        let mut f = File::create(&path)?;
        let piece = crate::client::upload::body_pattern(1 << 20);
        let mut left = size;
        while left > 0 {
            let n = (piece.len() as u64).min(left) as usize;
            f.write_all(&piece[..n])?;
            left -= n as u64;
        }
        Ok(path)
    }

    /// One `weir put` of `size` bytes to `/upload` on `endpoint`.
    pub(super) fn upload(
        &self,
        weir: &Path,
        send: Send,
        endpoint: &Endpoint,
        size: u64,
    ) -> io::Result<Upload> {
        let file = self.file(size)?;
        let mut cmd;
        if send == Send::Curl {
            cmd = Command::new("curl");
            // `--fail`: a status of 400 or more is an exit status too. The answer goes nowhere.
            cmd.args([
                "--silent",
                "--show-error",
                "--fail",
                "--output",
                "/dev/null",
            ]);
            cmd.arg("--upload-file").arg(&file);
            if let Endpoint::Unix(path) = endpoint {
                cmd.arg("--unix-socket").arg(path);
            }
        } else {
            cmd = Command::new(weir);
            cmd.arg("put");
            if send != Send::Digest {
                cmd.arg("--no-digest");
            }
            if send == Send::Sendfile {
                cmd.arg("--sendfile");
            }
            cmd.arg(&file);
            if let Endpoint::Unix(path) = endpoint {
                cmd.arg("--unix").arg(path);
            }
        }
        match endpoint {
            Endpoint::Tcp(addr) => cmd.arg(format!("http://{addr}/upload")),
            Endpoint::Unix(_) => cmd.arg("http://localhost/upload"),
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // Children's CPU counts only children that were waited for: the servers are not, so
        // the difference is this `weir put`'s (10 ms ticks).
        let cpu_before = procfs::waited_children_cpu_seconds();
        let start_ns = clock::monotonic_ns();
        let out = cmd.spawn()?.wait_with_output()?;
        let end_ns = clock::monotonic_ns();
        let cpu = procfs::waited_children_cpu_seconds() - cpu_before;
        let said = String::from_utf8_lossy(&out.stderr);
        // weir's handler answers 200 only once it has read the whole `Content-Length` body, and
        // `weir put` exits 0 only on a 2xx answer after sending all of it.
        // curl says nothing on success (`--silent`); its exit status says it all.
        let said_ok = send == Send::Curl || said.starts_with("Uploaded");
        if !out.status.success() || !said_ok {
            return Err(io::Error::other(format!(
                "{} failed ({}): {}",
                if send == Send::Curl {
                    "curl"
                } else {
                    "weir put"
                },
                out.status,
                said.trim()
            )));
        }
        Ok(Upload {
            start_ns,
            end_ns,
            client_cpu_ns: (cpu.max(0.0) * 1e9) as u64,
            tls: None,
            trace: UploadTrace {
                bytes: size,
                ..UploadTrace::default()
            },
        })
    }
}

/// The `weir put` row against raw TCP and against the bench's client on the same server, or
/// `None` when the row did not run.
pub(super) fn ratio_note(rows: &[super::Row]) -> Option<String> {
    let find = |label: &str| {
        rows.iter()
            .find(|r| r.peer.label == label && r.peer.server.is_ok())
    };
    let raw = find(super::RAW_DISCARD)?;
    let same = find(SAME_SERVER);
    let mut note = String::from(
        "\n`weir put` (the `weir` binary's client: `weir put --no-digest FILE URL`, the file in \
         the page cache; timed from spawn to exit, so process start and `Expect: 100-continue` \
         are in; client CPU from the waited child's user + system time, 10 ms ticks) to weir's \
         discard handler, and `curl -T FILE URL` of the same file, timed the same way; medians of \
         round-by-round ratios (min–max); target ≥ 0.95 × raw (issue 18):\n",
    );
    let curl = find(Send::Curl.label());
    for send in Send::ALL {
        let Some(put) = find(send.label()) else {
            continue;
        };
        note.push_str(&format!(
            "- {}: {} × raw TCP → discard",
            match send {
                Send::Buffered => "through its 1 MiB buffer (its default on loopback)",
                Send::Sendfile => "with `--sendfile`",
                Send::Digest => "its default, with the file's SHA-256 (`Content-Digest`)",
                Send::Curl => "`curl -T FILE URL` instead of `weir put`",
            },
            put.gib_s.ratio_to(&raw.gib_s).show(2)
        ));
        if let Some(same) = same {
            note.push_str(&format!(
                ", {} × the bench's client (from memory) to a server of the same configuration",
                put.gib_s.ratio_to(&same.gib_s).show(2)
            ));
        }
        if let Some(curl) = curl.filter(|_| send != Send::Curl) {
            note.push_str(&format!(
                ", {} × `curl -T` (target ≥ 0.95)",
                put.gib_s.ratio_to(&curl.gib_s).show(2)
            ));
        }
        note.push_str(";\n");
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::size_label;

    #[test]
    fn the_same_server_row_is_weirs_default_discard_row() {
        let pause = size_label(weir::Config::default().pause_threshold as u64);
        assert_eq!(SAME_SERVER, format!("weir, pause {pause} → discard"));
        for send in Send::ALL {
            assert!(send.label().ends_with(&format!("→ {SAME_SERVER}")));
        }
    }
}
