//! The parent's side: start a server child, query it, stop it.
//!
//! A [`ServerProc`] owns the child: a `weir-bench __serve` child, queried over its control pipe,
//! or a `weir serve` process (the real service, [`ServerProc::start_weir_serve`]), whose memory
//! and CPU time are read from `/proc/<pid>` instead. Dropping it asks the child to quit (the
//! control pipe's `quit`, or `SIGTERM`) and waits; a child that does not exit within two
//! seconds is killed, so a scenario never leaves a server behind, even when it fails half way.

use super::{Endpoint, ServeArgs, StartError};
use crate::procfs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// What a server child reports about itself at one instant.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stats {
    /// Heap allocations since the child started.
    pub allocations: u64,
    /// CPU time of the whole child process (every thread, user + system), in ns.
    pub cpu_ns: u64,
    /// Current RSS in KiB.
    pub rss_kib: u64,
    /// Peak RSS since start or the last [`ServerProc::reset_peak`], in KiB.
    pub peak_kib: u64,
}

/// A running server child.
pub struct ServerProc {
    child: Child,
    /// The control pipe of a `__serve` child; `None` for `weir serve`.
    control: Option<Control>,
    endpoint: Endpoint,
}

struct Control {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl ServerProc {
    /// Starts `weir-bench __serve <args>` and waits until it is listening; with `dirs`, with the child's working directory and `TMPDIR` set to
    /// `(cwd, tmpdir)`, so that files it creates there can be watched.
    pub fn start_in(args: &ServeArgs, dirs: Option<(&Path, &Path)>) -> Result<Self, StartError> {
        let exe = std::env::current_exe()?;
        let mut cmd = Command::new(exe);
        cmd.arg("__serve")
            .args(args.to_args())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some((cwd, tmpdir)) = dirs {
            cmd.current_dir(cwd).env("TMPDIR", tmpdir);
        }
        let mut child = cmd.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(StartError::Failed("child has no pipes".into()));
        };
        let mut stdout = BufReader::new(stdout);
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        let line = line.trim_end();
        let started = if let Some(ep) = line.strip_prefix("ready ") {
            Endpoint::parse(ep).ok_or_else(|| StartError::Failed(format!("bad address {ep:?}")))
        } else if let Some(why) = line.strip_prefix("unavailable ") {
            Err(StartError::Unavailable(why.to_string()))
        } else {
            Err(StartError::Failed(format!("{:?}: {line}", args.system)))
        };
        match started {
            Ok(endpoint) => Ok(Self {
                child,
                control: Some(Control { stdin, stdout }),
                endpoint,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// Starts `weir serve --root <root> --listen 127.0.0.1:0 <args>` from the `weir` binary at
    /// `weir`, and waits for its "serving … on http://ADDR" line. Its stderr goes to ours.
    pub fn start_weir_serve(weir: &Path, root: &Path, args: &[&str]) -> io::Result<Self> {
        let mut child = Command::new(weir)
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("WEIR_TOKEN")
            // Its start and stop lines would interleave with the bench's progress.
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| io::Error::other(format!("{}: {e}", weir.display())))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out).read_line(&mut line)?;
        }
        let addr = line
            .trim()
            .rsplit_once(" on http://")
            .and_then(|(_, a)| a.parse().ok());
        match addr {
            Some(addr) => Ok(Self {
                child,
                control: None,
                endpoint: Endpoint::Tcp(addr),
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other(format!(
                    "weir serve did not start (it said {:?})",
                    line.trim()
                )))
            }
        }
    }

    /// The child's process id (to read its `/proc` figures).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where the server listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn command(&mut self, cmd: &str) -> io::Result<String> {
        let Some(c) = &mut self.control else {
            return Err(io::Error::other("no control pipe"));
        };
        writeln!(c.stdin, "{cmd}")?;
        c.stdin.flush()?;
        let mut line = String::new();
        if c.stdout.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server child exited",
            ));
        }
        Ok(line.trim_end().to_string())
    }

    /// Asks the child for its allocation count, CPU time and memory. For `weir serve`, read
    /// from `/proc`: no allocation count (0), CPU time in clock ticks (10 ms).
    pub fn stats(&mut self) -> io::Result<Stats> {
        if self.control.is_none() {
            let pid = self.child.id().to_string();
            let mem = procfs::memory(&pid)?;
            return Ok(Stats {
                allocations: 0,
                cpu_ns: procfs::process_cpu_ns(&pid)?,
                rss_kib: mem.rss_kib,
                peak_kib: mem.peak_kib,
            });
        }
        let line = self.command("stats")?;
        let n: Vec<u64> = line
            .strip_prefix("stats ")
            .unwrap_or("")
            .split(' ')
            .filter_map(|s| s.parse().ok())
            .collect();
        match n[..] {
            [allocations, cpu_ns, rss_kib, peak_kib] => Ok(Stats {
                allocations,
                cpu_ns,
                rss_kib,
                peak_kib,
            }),
            _ => Err(io::Error::other(format!("bad stats line {line:?}"))),
        }
    }

    /// Restarts the child's peak RSS from its current RSS, so the next peak is this round's.
    pub fn reset_peak(&mut self) -> io::Result<()> {
        if self.control.is_none() {
            return procfs::reset_peak(&self.child.id().to_string());
        }
        match self.command("reset-peak")?.as_str() {
            "ok" => Ok(()),
            other => Err(io::Error::other(other.to_string())),
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        match &mut self.control {
            Some(c) => {
                let _ = writeln!(c.stdin, "quit");
                let _ = c.stdin.flush();
            }
            None => {
                // weir serve stops gracefully on SIGTERM.
                if let Some(pid) = rustix::process::Pid::from_raw(self.child.id() as i32) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
