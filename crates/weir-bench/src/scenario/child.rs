//! Servers outside this binary (dufs, nginx, copyparty, rclone, SeaweedFS, `weir serve` from the
//! `weir` binary), each started as a child process on loopback the way its users start it, and
//! what a row measures of one: its server CPU time and peak RSS around an operation.
//!
//! Shared by the scenarios that compare weir with the programs people run instead (`webdav`,
//! `services`). Invariants:
//! - a [`Server`] owns its process: dropping it stops (SIGTERM, then SIGKILL) and reaps the
//!   child, whose own children (nginx's workers) its SIGTERM stops (a `weed mini` through
//!   weir-testkit's launcher, which kills it), so no server outlives its scenario;
//! - figures are the whole process tree's ([`procfs::tree`]): a server that forks workers
//!   (nginx) is measured with them. CPU is `utime + stime` from `/proc/<pid>/stat` (10 ms ticks:
//!   fine for operations of a second or more, summed over many requests otherwise); peak RSS is
//!   `VmHWM`, reset through `clear_refs` before the operation, summed over the tree (an upper
//!   bound when several processes peak at different moments).

use crate::procfs;
use std::fs::File;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use weir_testkit::seaweed::Seaweed;

/// The process behind a server.
enum Proc {
    Child(Child),
    /// Killed and its directory removed by its own `Drop`.
    Seaweed(Seaweed),
}

/// A server under test: its process and the URL prefix of its tree.
pub struct Server {
    proc: Proc,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The path every request's target starts with (`/files/` for weir, `/` for most).
    pub prefix: &'static str,
}

impl Drop for Server {
    /// SIGTERM first, so that a server with worker processes stops them (nginx's master,
    /// killed with SIGKILL, would leave its workers running, holding the port and the
    /// directory); SIGKILL after 5 s if it has not exited.
    fn drop(&mut self) {
        if let Proc::Child(child) = &mut self.proc {
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    /// The process id, as `/proc` names it.
    pub fn pid(&self) -> String {
        match &self.proc {
            Proc::Child(c) => c.id().to_string(),
            Proc::Seaweed(s) => s.pid().to_string(),
        }
    }

    /// A running `weed mini` whose listener at `addr` is the one measured.
    pub fn seaweed(weed: Seaweed, addr: SocketAddr, prefix: &'static str) -> io::Result<Self> {
        wait_listening(addr, "weed mini")?;
        Ok(Self {
            proc: Proc::Seaweed(weed),
            addr,
            prefix,
        })
    }
}

/// `weir serve` of the `weir` binary at `weir`, storing into `root`, listening on `addr`, open
/// as the peers are started (no token), its own messages at `warn` (its start and stop lines
/// would interleave with the bench's progress): the command each scenario adds its flags to.
pub fn weir_serve(weir: &Path, root: &Path, addr: SocketAddr) -> Command {
    let mut c = Command::new(weir);
    c.arg("serve")
        .arg("--root")
        .arg(root)
        .arg("--listen")
        .arg(addr.to_string())
        .env_remove("WEIR_TOKEN")
        .env("RUST_LOG", "warn");
    c
}

/// A free loopback port: bound, read and released (the server binds it a moment later).
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts `cmd` (which listens on `addr`) and waits until it accepts a connection. Its stdout
/// and stderr go to `log` (a server's request log, where its users would keep it), or stdout
/// nowhere and stderr to this process's.
pub fn spawn(
    mut cmd: Command,
    addr: SocketAddr,
    prefix: &'static str,
    log: Option<&Path>,
) -> io::Result<Server> {
    cmd.stdin(Stdio::null());
    match log {
        Some(path) => {
            let f = File::create(path)?;
            cmd.stdout(f.try_clone()?).stderr(f);
        }
        None => {
            cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
        }
    }
    let child = cmd
        .spawn()
        .map_err(|e| io::Error::other(format!("{:?}: {e}", cmd.get_program())))?;
    let server = Server {
        proc: Proc::Child(child),
        addr,
        prefix,
    };
    wait_listening(addr, &format!("{cmd:?}"))?;
    Ok(server)
}

fn wait_listening(addr: SocketAddr, what: &str) -> io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            return Err(io::Error::other(format!(
                "{what} is not listening on {addr}"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// What a server used over one operation.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// CPU seconds of its process tree.
    pub cpu_s: f64,
    /// Peak RSS of its process tree, MiB.
    pub peak_mib: f64,
}

/// Runs `op` against `server`, measuring its process tree's CPU time and peak RSS around it.
pub fn usage<T>(server: &Server, op: impl FnOnce() -> io::Result<T>) -> io::Result<(T, Usage)> {
    let pids = procfs::tree(&server.pid())?;
    procfs::tree_reset_peak(&pids)?;
    let cpu_before = procfs::tree_cpu_ns(&pids)?;
    let out = op()?;
    let cpu = (procfs::tree_cpu_ns(&pids)? - cpu_before) as f64 / 1e9;
    let peak = procfs::tree_peak_kib(&pids)? as f64 / 1024.0;
    Ok((
        out,
        Usage {
            cpu_s: cpu,
            peak_mib: peak,
        },
    ))
}
