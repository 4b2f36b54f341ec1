//! The parent's side: start a server child, query it, stop it.
//!
//! A [`ServerProc`] owns the child. Dropping it asks the child to quit and waits; a child that
//! does not exit within two seconds is killed, so a scenario never leaves a server behind, even
//! when it fails half way.

use super::{Endpoint, ServeArgs, StartError};
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
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    endpoint: Endpoint,
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
                stdin,
                stdout,
                endpoint,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// Where the server listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn command(&mut self, cmd: &str) -> io::Result<String> {
        writeln!(self.stdin, "{cmd}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "server child exited",
            ));
        }
        Ok(line.trim_end().to_string())
    }

    /// Asks the child for its allocation count, CPU time and memory.
    pub fn stats(&mut self) -> io::Result<Stats> {
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
        match self.command("reset-peak")?.as_str() {
            "ok" => Ok(()),
            other => Err(io::Error::other(other.to_string())),
        }
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        let _ = self.stdin.flush();
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
