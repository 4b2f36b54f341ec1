//! Counting what a server process does from outside it, the same way for any binary: heap
//! allocations (uprobes on the C library's `malloc`, `calloc` and `realloc`) and system calls
//! (the `raw_syscalls:sys_enter` tracepoint, and `syscalls:sys_enter_<name>` for the calls
//! named), with `perf stat -p PID` over a stretch of requests.
//!
//! `weir serve` has no counting allocator (the bench's own servers count through
//! weir-testkit's); a uprobe on libc counts every call into the system allocator, which is the
//! allocator both binaries of a comparison use. What it does not see: memory the process gets
//! without `malloc` (its own `mmap`, which the system-call counts show).
//!
//! Invariants:
//! - counting starts and stops exactly around the operation: `perf stat` starts with its
//!   counters disabled (`-D -1`) and is enabled and disabled through its control FIFO, each
//!   command waited for until perf acknowledges it, so perf's own start-up and the warm-up are
//!   never counted;
//! - the uprobes this run adds are removed when the [`Probes`] is dropped; ones that were
//!   already defined (by someone else) are used and left alone;
//! - anything missing (perf, root, tracefs, the probes) makes [`Probes::prepare`] say why, so
//!   the rows are left empty with the reason instead of failing the run.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The allocator's entry points counted, as uprobes on libc.
const ALLOC_FUNCTIONS: [&str; 3] = ["malloc", "calloc", "realloc"];
/// Every system call, one event per call entered.
const ALL_SYSCALLS: &str = "raw_syscalls:sys_enter";
/// The calls named in the breakdown (those a server's request path makes); the rest are
/// counted together as the total minus these.
const NAMED_SYSCALLS: [&str; 35] = [
    "read",
    "pread64",
    "lseek",
    "recvfrom",
    "recvmsg",
    "write",
    "writev",
    "sendto",
    "sendmsg",
    "sendfile64",
    "splice",
    "openat",
    "openat2",
    "statx",
    "newfstatat",
    "newfstat",
    "close",
    "fgetxattr",
    "fsetxattr",
    "fcntl",
    "ioctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_ctl",
    "futex",
    "accept4",
    "getpeername",
    "setsockopt",
    "shutdown",
    "mmap",
    "munmap",
    "mprotect",
    "madvise",
    "getrandom",
    "sched_yield",
];
/// Where tracefs is mounted (the uprobe and tracepoint definitions live there).
const TRACEFS: &str = "/sys/kernel/tracing";
/// Longest perf may take to acknowledge a command, and how often to look whether it died.
const ACK_TIMEOUT: Duration = Duration::from_secs(30);
const ACK_POLL: Duration = Duration::from_millis(200);

/// The probes and events of a run, ready to count.
pub struct Probes {
    /// The `-e` list: the allocation probes, all system calls, then the named ones.
    events: Vec<String>,
    /// The named system calls whose tracepoints exist on this kernel, in `events` order.
    named: Vec<&'static str>,
    /// Probes this run defined, removed on drop.
    added: Vec<String>,
    /// The C library the probes are on.
    libc: PathBuf,
}

/// What `perf stat` counted over one operation.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Calls into `malloc`, `calloc` and `realloc`.
    pub allocations: u64,
    /// System calls entered.
    pub syscalls: u64,
    /// The named system calls, by name (those counted at least once).
    pub by_call: BTreeMap<&'static str, u64>,
}

impl Probes {
    /// Checks that counting can work here and defines the allocation probes on the libc that
    /// process `pid` maps; the reason when it cannot.
    pub fn prepare(pid: &str) -> Result<Self, String> {
        if !rustix::process::geteuid().is_root() {
            return Err("needs root (uprobes and tracepoints)".into());
        }
        let perf = Command::new("perf").arg("--version").output();
        if !perf.is_ok_and(|o| o.status.success()) {
            return Err("no `perf` (apt-get install linux-perf)".into());
        }
        mount_tracefs()?;
        let libc = libc_of(pid)?;
        let listed = run_perf(&["probe", "-l"])?;
        let mut added = Vec::new();
        for f in ALLOC_FUNCTIONS {
            let event = format!("probe_libc:{f}");
            if listed.contains(&format!("{event} ")) {
                continue;
            }
            run_perf(&["probe", "-x", &libc.to_string_lossy(), "-a", f])?;
            added.push(event);
        }
        let mut events: Vec<String> = ALLOC_FUNCTIONS
            .iter()
            .map(|f| format!("probe_libc:{f}"))
            .collect();
        events.push(ALL_SYSCALLS.into());
        let named: Vec<&'static str> = NAMED_SYSCALLS
            .into_iter()
            .filter(|c| {
                Path::new(TRACEFS)
                    .join(format!("events/syscalls/sys_enter_{c}"))
                    .is_dir()
            })
            .collect();
        events.extend(named.iter().map(|c| format!("syscalls:sys_enter_{c}")));
        Ok(Self {
            events,
            named,
            added,
            libc,
        })
    }

    /// Counts process `pid`'s allocations and system calls over `op`, and only over it.
    pub fn count(&self, pid: &str, op: impl FnOnce() -> io::Result<()>) -> io::Result<Counts> {
        // A process on another libc would count no allocations at all, silently.
        let libc = libc_of(pid).map_err(io::Error::other)?;
        if libc != self.libc {
            return Err(io::Error::other(format!(
                "process {pid} uses {}, the probes are on {}",
                libc.display(),
                self.libc.display()
            )));
        }
        let dir = tempfile::Builder::new()
            .prefix("weir-bench-perf")
            .tempdir()?;
        let (ctl_path, ack_path, out) = (
            dir.path().join("ctl"),
            dir.path().join("ack"),
            dir.path().join("stat.csv"),
        );
        for p in [&ctl_path, &ack_path] {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                p,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )?;
        }
        // Our ends opened read-write: opening a FIFO so never blocks, whether perf has opened
        // its ends yet or not (and perf's own blocking open of the ack FIFO then succeeds).
        let rw = |p: &Path| File::options().read(true).write(true).open(p);
        let (mut ctl, mut ack) = (rw(&ctl_path)?, rw(&ack_path)?);
        let control = format!(
            "fifo:{},{}",
            ctl_path.to_string_lossy(),
            ack_path.to_string_lossy()
        );
        let mut perf = Command::new("perf")
            .args(["stat", "-x", ",", "--control", &control, "-D", "-1", "-o"])
            .arg(&out)
            .arg("-e")
            .arg(self.events.join(","))
            .args(["-p", pid])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io::Error::other(format!("perf stat: {e}")))?;
        let counted = command(&mut perf, &mut ctl, &mut ack, "enable")
            .and_then(|()| op())
            .and_then(|()| command(&mut perf, &mut ctl, &mut ack, "disable"));
        // SIGINT: perf writes its counts and exits.
        if let Some(p) = rustix::process::Pid::from_raw(perf.id() as i32) {
            let _ = rustix::process::kill_process(p, rustix::process::Signal::INT);
        }
        let mut stderr = String::new();
        if let Some(mut e) = perf.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let status = perf.wait()?;
        counted?;
        let text = std::fs::read_to_string(&out).map_err(|e| {
            io::Error::other(format!("perf stat wrote nothing ({e}; {status}): {stderr}"))
        })?;
        self.parse(&text)
    }

    /// The counts from `perf stat -x,`'s output: `COUNT,UNIT,EVENT,…` per event.
    fn parse(&self, text: &str) -> io::Result<Counts> {
        let mut by_event = BTreeMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split(',').collect();
            if let [count, _, event, ..] = f[..] {
                let n = count.parse::<u64>().map_err(|_| {
                    io::Error::other(format!("perf stat did not count {event}: {line}"))
                })?;
                by_event.insert(event.to_string(), n);
            }
        }
        let get = |e: &str| {
            by_event
                .get(e)
                .copied()
                .ok_or_else(|| io::Error::other(format!("perf stat gave no count for {e}")))
        };
        let mut c = Counts::default();
        for f in ALLOC_FUNCTIONS {
            c.allocations += get(&format!("probe_libc:{f}"))?;
        }
        c.syscalls = get(ALL_SYSCALLS)?;
        for &call in &self.named {
            let n = get(&format!("syscalls:sys_enter_{call}"))?;
            if n > 0 {
                c.by_call.insert(call, n);
            }
        }
        Ok(c)
    }
}

impl Drop for Probes {
    fn drop(&mut self) {
        for event in &self.added {
            let _ = run_perf(&["probe", "-d", event]);
        }
    }
}

/// Sends `cmd` to perf's control FIFO and waits for its acknowledgement.
fn command(perf: &mut Child, ctl: &mut File, ack: &mut File, cmd: &str) -> io::Result<()> {
    ctl.write_all(format!("{cmd}\n").as_bytes())?;
    let fd = ack.as_fd();
    let step = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: ACK_POLL.as_nanos() as i64,
    };
    let deadline = std::time::Instant::now() + ACK_TIMEOUT;
    loop {
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        if rustix::event::poll(&mut fds, Some(&step))? > 0 {
            break;
        }
        // perf that exited (a bad event, a process gone) never answers: say so at once.
        let exited = perf.try_wait()?;
        if exited.is_some() || std::time::Instant::now() > deadline {
            let _ = perf.kill();
            return Err(io::Error::other(format!(
                "perf stat did not acknowledge {cmd:?} ({exited:?})"
            )));
        }
    }
    let mut buf = [0u8; 16];
    let n = ack.read(&mut buf)?;
    if !buf[..n].starts_with(b"ack") {
        return Err(io::Error::other(format!(
            "perf stat answered {cmd:?} with {:?}",
            String::from_utf8_lossy(&buf[..n])
        )));
    }
    Ok(())
}

/// Runs `perf ARGS`, its stdout, or the reason it failed.
fn run_perf(args: &[&str]) -> Result<String, String> {
    let out = Command::new("perf")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("perf {}: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "perf {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Mounts tracefs where perf looks for it, when it is not mounted (root only; a machine
/// without it mounted is common in containers and VMs).
fn mount_tracefs() -> Result<(), String> {
    if Path::new(TRACEFS).join("uprobe_events").exists() {
        return Ok(());
    }
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .status()
        .is_ok_and(|s| s.success());
    if ok && Path::new(TRACEFS).join("uprobe_events").exists() {
        Ok(())
    } else {
        Err(format!(
            "tracefs is not mounted at {TRACEFS} and could not be"
        ))
    }
}

/// The C library process `pid` has mapped (where its `malloc` is).
fn libc_of(pid: &str) -> Result<PathBuf, String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| e.to_string())?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            Path::new(p)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libc.so"))
        })
        .map(PathBuf::from)
        .ok_or_else(|| format!("process {pid} maps no libc.so (a static binary?)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_output_is_summed_per_kind() {
        let probes = Probes {
            events: Vec::new(),
            named: vec!["writev", "futex"],
            added: Vec::new(),
            libc: PathBuf::new(),
        };
        let text = "# started on Mon\n\n\
            7,,probe_libc:malloc,100,100.00,,\n\
            2,,probe_libc:calloc,100,100.00,,\n\
            1,,probe_libc:realloc,100,100.00,,\n\
            40,,raw_syscalls:sys_enter,100,100.00,,\n\
            10,,syscalls:sys_enter_writev,100,100.00,,\n\
            0,,syscalls:sys_enter_futex,100,100.00,,\n";
        let c = probes.parse(text).unwrap();
        assert_eq!(c.allocations, 10);
        assert_eq!(c.syscalls, 40);
        assert_eq!(c.by_call.into_iter().collect::<Vec<_>>(), [("writev", 10)]);
        let uncounted = "<not counted>,,probe_libc:malloc,0,0.00,,\n";
        assert!(probes.parse(uncounted).is_err());
        // Drop must not try to remove probes this run did not add.
        drop(probes);
    }
}
