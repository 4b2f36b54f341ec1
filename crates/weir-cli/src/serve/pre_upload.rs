//! `--pre-upload-hook PROGRAM`: asked before every upload (a `PUT` of a file, a form `POST`,
//! the creation of a resumable or tus upload) whether to take it, before any of the body is
//! read: after the credential and path checks, before the route's own.
//!
//! The program is run directly (no shell, no arguments) with the request as one JSON line on
//! its stdin:
//!
//! ```json
//! {"event":"pre-upload","kind":"put","method":"PUT","path":"photos/a.jpg","length":1048576,
//!  "client":"127.0.0.1:40312","token":{"name":"alice","scopes":["read","write"],"prefix":"photos"}}
//! ```
//!
//! (`kind`: `put`, `form`, `resumable`, `tus`; `path`: the store path, a form's directory (`""`
//! for the root); `length`: the declared length (`Upload-Length` for resumable and tus uploads
//! when given, else `Content-Length`), `null` when not known; `token`: `null` without one; its
//! `name` is the token file's, never the token) and
//! in its environment: `WEIR_HOOK_EVENT=pre-upload`, `WEIR_HOOK_KIND`, `WEIR_HOOK_METHOD`,
//! `WEIR_HOOK_PATH`, `WEIR_HOOK_LENGTH` (empty when not known), `WEIR_HOOK_CLIENT`.
//!
//! Exit status 0 takes the upload. Any other status refuses it: `403` (problem
//! `upload-refused`), the first line of the program's stdout (at most [`DETAIL_MAX`] bytes) as
//! the problem's `detail`. A program still running after `--pre-upload-timeout` is killed (with
//! all it started: `hook_process.rs`) and the upload answered `503` (`hook-unavailable`,
//! `Retry-After: 5`), as is one that cannot be started: a check that did not happen never lets
//! an upload through.
//!
//! Off the runtime: each run is a blocking task (`spawn_blocking`), at most [`CONCURRENT`] at
//! once (the others wait for a permit, their requests unanswered: no body byte is read
//! meanwhile, and TCP flow control holds the clients).

use super::auth::Credential;
use super::hook_process::{in_own_group, kill_group};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Pre-upload hooks running at once, at most.
pub const CONCURRENT: usize = 16;
/// The longest `detail` taken from a refusing hook's output.
pub const DETAIL_MAX: usize = 256;
/// The most stdout read from a hook (the rest is read and discarded).
const OUTPUT_MAX: usize = 4096;

/// The configured hook.
#[derive(Debug)]
pub struct PreUpload {
    program: PathBuf,
    timeout: Duration,
    permits: Arc<Semaphore>,
}

/// What the hook is asked about.
pub(super) struct Ask<'a> {
    pub kind: &'static str,
    pub method: &'a str,
    pub path: &'a str,
    pub length: Option<u64>,
    pub client: String,
    pub credential: Option<&'a Credential>,
}

/// The hook's answer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    Accept,
    /// Refused, with the hook's reason (possibly empty).
    Refuse(String),
    /// No answer: timed out, or the program could not be run.
    Unavailable(String),
}

impl PreUpload {
    pub fn new(program: PathBuf, timeout: Duration) -> Self {
        Self {
            program,
            timeout,
            permits: Arc::new(Semaphore::new(CONCURRENT)),
        }
    }

    /// Runs the hook about `ask` on the blocking pool (within the bound) and waits for it.
    pub(super) async fn ask(&self, ask: &Ask<'_>) -> Answer {
        let token = ask.credential.map(|c| {
            serde_json::json!({
                "name": &**c.name(),
                "scopes": c.scope_names(),
                "prefix": c.prefix(),
            })
        });
        let json = serde_json::json!({
            "event": "pre-upload",
            "kind": ask.kind,
            "method": ask.method,
            "path": ask.path,
            "length": ask.length,
            "client": ask.client,
            "token": token,
        });
        // ALLOCATION: the program's input and environment, once per upload (with a hook only).
        let run = Run {
            program: self.program.clone(),
            timeout: self.timeout,
            input: json.to_string(),
            env: [
                ("WEIR_HOOK_EVENT", "pre-upload".to_owned()),
                ("WEIR_HOOK_KIND", ask.kind.to_owned()),
                ("WEIR_HOOK_METHOD", ask.method.to_owned()),
                ("WEIR_HOOK_PATH", ask.path.to_owned()),
                (
                    "WEIR_HOOK_LENGTH",
                    ask.length.map(|l| l.to_string()).unwrap_or_default(),
                ),
                ("WEIR_HOOK_CLIENT", ask.client.clone()),
            ],
        };
        let Ok(_permit) = self.permits.acquire().await else {
            return Answer::Unavailable("the hook's permits are closed".into());
        };
        let answer = tokio::task::spawn_blocking(move || run.run())
            .await
            .unwrap_or_else(|e| Answer::Unavailable(format!("the hook's task failed: {e}")));
        match &answer {
            Answer::Unavailable(why) => {
                tracing::warn!(path = ask.path, %why, "pre-upload hook: no answer, upload refused (503)");
            }
            Answer::Refuse(why) => {
                tracing::info!(path = ask.path, %why, "pre-upload hook refused an upload");
            }
            Answer::Accept => {}
        }
        answer
    }
}

struct Run {
    program: PathBuf,
    timeout: Duration,
    input: String,
    env: [(&'static str, String); 6],
}

impl Run {
    fn run(self) -> Answer {
        let mut child = match in_own_group(&mut Command::new(&self.program))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                return Answer::Unavailable(format!("cannot run {}: {e}", self.program.display()));
            }
        };
        // The output is read beside the wait, so that a talkative hook never blocks on a full
        // pipe; kept up to OUTPUT_MAX, the rest discarded.
        // The output comes back through a channel, so that a program whose child keeps the pipe
        // open after it exits delays the answer by what is left of the timeout (or a second).
        let (output_to, output) = std::sync::mpsc::sync_channel(1);
        if let Some(mut out) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut kept = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = out.read(&mut buf) {
                    let room = OUTPUT_MAX.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                let _ = output_to.send(kept);
            });
        }
        if let Some(mut stdin) = child.stdin.take() {
            // A hook that does not read its input is not a failure (EPIPE is ignored).
            let _ = writeln!(stdin, "{}", self.input);
        }
        let deadline = Instant::now() + self.timeout;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() >= deadline => {
                    // With its group: a child of it holding the pipe would keep the reader
                    // thread (and itself) alive past the answer.
                    kill_group(&mut child);
                    return Answer::Unavailable(format!(
                        "killed after its timeout of {:?}",
                        self.timeout
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Answer::Unavailable(format!("cannot wait for it: {e}")),
            }
        };
        if status.success() {
            return Answer::Accept;
        }
        // What is left of the timeout, and at least a second: the pipe of a program that has
        // exited closes at once, unless a child of it holds it.
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(1));
        let output = output.recv_timeout(left).unwrap_or_default();
        Answer::Refuse(first_line(&output))
    }
}

/// The first line of `output`, at most [`DETAIL_MAX`] bytes (cut at a character boundary),
/// invalid UTF-8 replaced.
fn first_line(output: &[u8]) -> String {
    let line = output.split(|&b| b == b'\n').next().unwrap_or_default();
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    let mut end = text.len().min(DETAIL_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// The client's address as the hook gets it: `IP:PORT`, or `unix`.
pub(super) fn client(peer: weir::transport::PeerAddr) -> String {
    match peer {
        weir::transport::PeerAddr::Tcp(addr) => addr.to_string(),
        _ => "unix".to_owned(),
    }
}

/// Answers a refusal (`403`, or `503` when the hook gave no answer) with `extra` fields:
/// `Some` with the answer's outcome, `None` when the upload was accepted.
pub(super) async fn refusal(
    ex: &mut weir::Exchange<'_>,
    answer: Answer,
    extra: &[(&str, &str)],
) -> Option<Result<(), weir::Error>> {
    use super::reply::{self, Problem};
    match answer {
        Answer::Accept => None,
        Answer::Refuse(why) => {
            let detail = if why.is_empty() {
                "the upload was refused by the server's pre-upload check"
            } else {
                why.as_str()
            };
            Some(reply::error(ex, Problem::UploadRefused, detail, extra).await)
        }
        Answer::Unavailable(_) => {
            let mut headers = vec![("retry-after", "5")];
            headers.extend_from_slice(extra);
            let detail = "the server's pre-upload check did not answer; try again later";
            Some(reply::error(ex, Problem::HookUnavailable, detail, &headers).await)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::first_line;

    #[test]
    fn the_detail_is_the_first_line_bounded() {
        assert_eq!(first_line(b"too big\nmore"), "too big");
        assert_eq!(first_line(b"crlf\r\n"), "crlf");
        assert_eq!(first_line(b""), "");
        let long = "é".repeat(200);
        let got = first_line(long.as_bytes());
        assert!(got.len() <= super::DETAIL_MAX && got.chars().all(|c| c == 'é'));
    }
}
