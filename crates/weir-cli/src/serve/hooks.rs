//! Upload hooks: `--hook-command PROGRAM` runs after every committed file and every delete,
//! with the event as JSON on its stdin (`{"event":"stored","path":…,"size":…,"sha256":…,
//! "token":…}`) and in its environment (`WEIR_HOOK_EVENT`, `WEIR_HOOK_PATH`, `WEIR_HOOK_SIZE`,
//! `WEIR_HOOK_SHA256`, `WEIR_HOOK_TOKEN`: the name of the token that made the request, never
//! the token). The program is run directly (no shell), with no arguments.
//!
//! Never on the request's path: the event is queued (bounded: [`QUEUE`]; a full queue drops
//! the event, counted and logged) and run by [`WORKERS`] threads, each hook under
//! `--hook-timeout` (then killed, with all it started: `hook_process.rs`). The request has answered by then, from the committed file:
//! a hook that fails, hangs or is dropped never changes or hides it. Outcomes are counted for
//! `/metrics` and failures logged.

use super::hook_process::{in_own_group, kill_group};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Events waiting for a worker, at most.
pub const QUEUE: usize = 1024;
/// Hooks running at once, at most.
pub const WORKERS: usize = 4;

/// What happened to a file.
#[derive(Clone, Debug)]
pub(super) struct Event {
    /// `stored` or `deleted`.
    pub kind: &'static str,
    /// The store path.
    pub path: String,
    pub size: u64,
    pub sha256: Option<[u8; 32]>,
    /// The name of the token of the request that stored or deleted (`None`: no token).
    pub token: Option<std::sync::Arc<str>>,
}

/// How hooks ended.
#[derive(Debug, Default)]
pub struct HookOutcomes {
    pub ok: AtomicU64,
    /// Exited with a failure status, or could not be started.
    pub failed: AtomicU64,
    /// Killed at the timeout.
    pub timed_out: AtomicU64,
    /// Not run: the queue was full.
    pub dropped: AtomicU64,
}

/// The queue to the hook workers.
#[derive(Debug)]
pub struct Hooks {
    queue: SyncSender<Event>,
    pub(super) outcomes: Arc<HookOutcomes>,
}

impl Hooks {
    /// Starts the workers that run `program`, each run under `timeout`.
    pub fn start(program: PathBuf, timeout: Duration) -> std::io::Result<Self> {
        let (queue, events) = sync_channel(QUEUE);
        let events = Arc::new(Mutex::new(events));
        let outcomes = Arc::new(HookOutcomes::default());
        for i in 0..WORKERS {
            let (events, outcomes, program) = (events.clone(), outcomes.clone(), program.clone());
            std::thread::Builder::new()
                .name(format!("weir-hook-{i}"))
                .spawn(move || work(&events, &program, timeout, &outcomes))?;
        }
        Ok(Self { queue, outcomes })
    }

    /// Queues `event` (never waits).
    pub(super) fn send(&self, event: Event) {
        if let Err(TrySendError::Full(event) | TrySendError::Disconnected(event)) =
            self.queue.try_send(event)
        {
            self.outcomes.dropped.fetch_add(1, Relaxed);
            tracing::warn!(path = %event.path, event = event.kind, "hook queue full: event dropped");
        }
    }
}

fn work(
    events: &Mutex<Receiver<Event>>,
    program: &PathBuf,
    timeout: Duration,
    outcomes: &HookOutcomes,
) {
    loop {
        let event = match events.lock() {
            Ok(events) => match events.recv() {
                Ok(event) => event,
                Err(_) => return, // the service is gone
            },
            Err(_) => return,
        };
        let counter = match run(program, timeout, &event) {
            Ok(()) => &outcomes.ok,
            Err(Failure::TimedOut) => {
                tracing::warn!(path = %event.path, event = event.kind, ?timeout, "hook killed at its timeout");
                &outcomes.timed_out
            }
            Err(Failure::Failed(why)) => {
                tracing::warn!(path = %event.path, event = event.kind, %why, "hook failed");
                &outcomes.failed
            }
        };
        counter.fetch_add(1, Relaxed);
    }
}

enum Failure {
    TimedOut,
    Failed(String),
}

impl Event {
    /// The event as the hooks get it: `{"event","path","size","sha256","token"}` (`sha256`
    /// null when not computed, and for deletes; `token` the token's name, null without one). The same document for `--hook-command` (stdin) and
    /// `--hook-url` (the POST's body).
    pub(super) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "event": self.kind,
            "path": self.path,
            "size": self.size,
            "sha256": self.sha256.map(|d| super::hex(&d)),
            "token": self.token.as_deref(),
        })
    }
}

fn run(program: &PathBuf, timeout: Duration, event: &Event) -> Result<(), Failure> {
    let sha256 = event.sha256.map(|d| super::hex(&d));
    let json = event.json();
    let mut child = in_own_group(&mut Command::new(program))
        .env("WEIR_HOOK_EVENT", event.kind)
        .env("WEIR_HOOK_PATH", &event.path)
        .env("WEIR_HOOK_SIZE", event.size.to_string())
        .env("WEIR_HOOK_SHA256", sha256.as_deref().unwrap_or(""))
        .env("WEIR_HOOK_TOKEN", event.token.as_deref().unwrap_or(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| Failure::Failed(format!("cannot run {}: {e}", program.display())))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that does not read its input is not a failure (EPIPE is ignored).
        let _ = writeln!(stdin, "{json}");
    }
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(Failure::Failed(format!("exited with {status}"))),
            Ok(None) if Instant::now() >= deadline => {
                kill_group(&mut child);
                return Err(Failure::TimedOut);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(Failure::Failed(format!("cannot wait for it: {e}"))),
        }
    }
}
