//! The shipped unit (`contrib/systemd/weir.service`) run for real: a systemd manager (Debian's
//! `/lib/systemd/systemd`) booted as PID 1 of a new PID and mount namespace, starts, reloads
//! and stops `weir serve` through the unit exactly as shipped, with the install steps its
//! header comment gives (a system user `weir`, `/etc/weir/tokens` mode 0640 root:weir, the
//! binary at `/usr/local/bin/weir`) and the documented `access-log` path.
//!
//! Nothing of the host is changed: in the namespace `/etc`, `/usr` and `/var` are overlays whose
//! upper layers are this test's directory (the user, the config, the binary, the state and the
//! log land there), `/run` and `/tmp` are fresh tmpfs, and the manager sees only a unit
//! directory of its own (`SYSTEMD_UNIT_PATH`): the weir unit and empty stand-ins for the
//! targets it is ordered after, so no `sysinit.target` service (tmpfiles, udev, sysctl) of the
//! host's runs. The network namespace is the host's, so the test reaches the service on
//! 127.0.0.1. The manager makes cgroups at the root of the host's hierarchies: the ones it
//! adds are removed at the end.
//!
//! Needs root (namespaces, overlay mounts) and the `systemd`, `util-linux` (unshare, nsenter)
//! and `passwd` (useradd) packages: missing, the test is skipped with a loud line, or fails
//! under `WEIR_REQUIRE_TOOLS=1` (`scripts/test`, which installs systemd, runs as root).

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use weir_testkit::tools;

const SYSTEMD: &str = "/lib/systemd/systemd";
const TOKEN: &str = "s3cret-alice";
const TOKEN_NEW: &str = "n3w-bob";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The script that prepares the namespace, as the unit's install lines say, then becomes the
/// manager. `$1` is the test's directory, `$2` the port.
const BOOT: &str = r#"#!/bin/bash
set -euo pipefail
T=$1
PORT=$2
mount --make-rprivate /
for d in etc usr var; do
    mkdir -p "$T/$d/upper" "$T/$d/work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/$d/upper,workdir=$T/$d/work" "/$d"
done
mount -t tmpfs tmpfs /run
install -d /run/weir-test-units
cp "$T/units/"* /run/weir-test-units/
# The unit's header: the user, /etc/weir (750 root:weir), the tokens (640 root:weir).
useradd --system --home /var/lib/weir weir
install -d -m 750 -g weir /etc/weir
install -m 640 -o root -g weir "$T/tokens" /etc/weir/tokens
printf 'listen = ["127.0.0.1:%s"]\naccess-log = "/var/log/weir/access.log"\n' "$PORT" > /etc/weir/weir.toml
install -m 755 "$T/weir" /usr/local/bin/weir
# Last: the test's own directory is under /tmp; everything above has been read from it.
mount -t tmpfs tmpfs /tmp
export SYSTEMD_UNIT_PATH=/run/weir-test-units
exec /lib/systemd/systemd --system --unit=weir-test.target
"#;

/// The cgroup directories under each hierarchy root (`/sys/fs/cgroup/*/` or, on a unified
/// host, `/sys/fs/cgroup/`), to remove the ones the manager adds.
fn cgroup_dirs() -> Vec<PathBuf> {
    let mut roots = vec![PathBuf::from("/sys/fs/cgroup")];
    if let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") {
        roots.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut all = Vec::new();
    for root in roots {
        collect_dirs(&root, &mut all, 3);
    }
    all
}

fn collect_dirs(dir: &Path, all: &mut Vec<PathBuf>, depth: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.flatten().map(|e| e.path()) {
        if path.is_dir() && !path.is_symlink() {
            if depth > 0 {
                collect_dirs(&path, all, depth - 1);
            }
            all.push(path);
        }
    }
}

/// The booted manager; killed on drop (the PID namespace and everything in it go with it).
struct Manager {
    unshare: Child,
    pid: u32,
    cgroups_before: Vec<PathBuf>,
}

impl Manager {
    /// `systemctl ARGS` (or another program) inside the namespace.
    fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
        Command::new("nsenter")
            .args(["-t", &self.pid.to_string(), "-m", "-p", "--"])
            .arg(program)
            .args(args)
            .output()
            .unwrap()
    }

    fn systemctl(&self, args: &[&str]) -> String {
        let out = self.run("systemctl", args);
        assert!(
            out.status.success(),
            "systemctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `systemctl show weir -p KEY --value`.
    fn show(&self, key: &str) -> String {
        self.systemctl(&["show", "weir", "-p", key, "--value"])
            .trim()
            .to_owned()
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        // SIGKILL to the namespace's PID 1 ends every process in it; unshare, its parent,
        // reaps it and exits.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
        let _ = self.unshare.wait();
        // A cgroup is removable only once the last of its tasks is gone, which the kernel
        // finishes after the reaping: try again for a while. Deepest first, so a parent is
        // empty when its turn comes.
        for _ in 0..100 {
            let mut added: Vec<PathBuf> = cgroup_dirs()
                .into_iter()
                .filter(|d| !self.cgroups_before.contains(d))
                .collect();
            if added.is_empty() {
                return;
            }
            added.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for dir in added {
                let _ = std::fs::remove_dir(dir);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        eprintln!("systemd_boot: cgroups the manager made are left (not removable)");
    }
}

/// Whether this machine can boot a manager in a namespace; says what is missing.
fn can_boot() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let found = root
        && Path::new(SYSTEMD).exists()
        && ["unshare", "nsenter", "useradd", "curl"]
            .iter()
            .all(|p| tools::on_path(p).is_some());
    tools::require(
        "systemd manager in a namespace (root, /lib/systemd/systemd, unshare, nsenter, useradd)",
        found,
        "run as root; apt-get install systemd util-linux passwd",
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn boot(dir: &Path, port: u16) -> Manager {
    let units = dir.join("units");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::copy(
        repo().join("contrib/systemd/weir.service"),
        units.join("weir.service"),
    )
    .unwrap();
    // Stand-ins for what the unit is ordered after (sysinit.target and basic.target through
    // its default dependencies, network-online.target by name) and for what a manager itself
    // asks for; empty, so booting starts nothing but the manager.
    for target in [
        "sysinit",
        "basic",
        "network",
        "network-online",
        "multi-user",
        "shutdown",
        "local-fs",
        "sockets",
        "timers",
        "paths",
        "slices",
        "weir-test",
    ] {
        std::fs::write(
            units.join(format!("{target}.target")),
            format!("[Unit]\nDescription={target} (stand-in of the test)\n"),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("tokens"),
        format!("{TOKEN} read,write,delete name=alice\n"),
    )
    .unwrap();
    std::fs::copy(WEIR, dir.join("weir")).unwrap();
    let script = dir.join("boot.sh");
    std::fs::write(&script, BOOT).unwrap();
    let cgroups_before = cgroup_dirs();
    let unshare = Command::new("unshare")
        .args([
            "--pid",
            "--mount",
            "--fork",
            "--mount-proc",
            "--kill-child",
            "bash",
        ])
        .arg(&script)
        .arg(dir)
        .arg(port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // The manager is unshare's child (PID 1 inside).
    let children = format!("/proc/{0}/task/{0}/children", unshare.id());
    let mut pid = 0;
    wait_for("the namespace's first process", || {
        pid = std::fs::read_to_string(&children)
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        pid != 0
    });
    let manager = Manager {
        unshare,
        pid,
        cgroups_before,
    };
    wait_for("the manager to be up", || {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .map(|exe| exe.ends_with("systemd"))
            .unwrap_or(false)
            && manager
                .run("systemctl", &["is-system-running"])
                .stdout
                .starts_with(b"running")
    });
    manager
}

/// The status of `curl ARGS` against the service.
fn status(args: &[&str]) -> u16 {
    curl_status(args).0
}

#[test]
fn the_shipped_unit_runs_under_systemd() {
    if !can_boot() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let manager = boot(dir.path(), port);
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");

    // Type=notify: `start` returns once weir has said READY=1, its listener bound, inside the
    // unit's whole sandbox (ProtectSystem=strict, the system call filter, no capabilities).
    manager.systemctl(&["start", "weir"]);
    assert_eq!(manager.show("ActiveState"), "active");
    let main_pid = manager.show("MainPID");
    let proc_status = manager.run("cat", &[&format!("/proc/{main_pid}/status")]);
    let proc_status = String::from_utf8_lossy(&proc_status.stdout).into_owned();
    let field = |name: &str| {
        proc_status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(|v| v.split_whitespace().next().unwrap_or("").to_owned())
            .unwrap_or_else(|| panic!("no {name} in {proc_status}"))
    };
    let weir_uid = manager.run("id", &["-u", "weir"]);
    let weir_uid = String::from_utf8_lossy(&weir_uid.stdout).trim().to_owned();
    assert_eq!(field("Uid"), weir_uid, "runs as User=weir");
    assert_eq!(field("NoNewPrivs"), "1");
    assert_eq!(field("Seccomp"), "2", "SystemCallFilter= applied");
    assert_eq!(field("CapEff"), "0000000000000000");

    // It reads the token file (0640 root:weir) and stores under its StateDirectory.
    let body = dir.path().join("body");
    std::fs::write(&body, b"instrument data\n").unwrap();
    let body = body.to_str().unwrap();
    let bearer = format!("Authorization: Bearer {TOKEN}");
    assert_eq!(
        status(&["-T", body, "-H", &bearer, &url("/files/run1.dat")]),
        201
    );
    let (code, got) = curl_status(&["-H", &bearer, &url("/files/run1.dat")]);
    assert_eq!((code, got.as_slice()), (200, &b"instrument data\n"[..]));
    let stored = dir.path().join("var/upper/lib/weir/data/run1.dat");
    assert_eq!(std::fs::read(&stored).unwrap(), b"instrument data\n");

    // `systemctl reload weir` (ExecReload: SIGHUP) reads the token file again: a revoked token
    // stops writing without a restart.
    let edit = manager.run(
        "sh",
        &[
            "-c",
            &format!("printf '%s read,write name=bob\\n' {TOKEN_NEW} > /etc/weir/tokens"),
        ],
    );
    assert!(edit.status.success());
    manager.systemctl(&["reload", "weir"]);
    wait_for("the reload to revoke the old token", || {
        status(&["-T", body, "-H", &bearer, &url("/files/run2.dat")]) == 401
    });
    let bearer_new = format!("Authorization: Bearer {TOKEN_NEW}");
    assert_eq!(
        status(&["-T", body, "-H", &bearer_new, &url("/files/run2.dat")]),
        201
    );
    assert_eq!(manager.show("MainPID"), main_pid, "reloaded, not restarted");

    // `stop`: SIGTERM, a graceful drain, and the access log at its documented path (writable
    // in the sandbox through LogsDirectory=) names who stored what.
    manager.systemctl(&["stop", "weir"]);
    assert_eq!(manager.show("ActiveState"), "inactive");
    assert_eq!(manager.show("Result"), "success");
    let log = std::fs::read_to_string(dir.path().join("var/upper/log/weir/access.log")).unwrap();
    let line = |path: &str, status: &str| {
        log.lines()
            .any(|l| l.contains(&format!("path={path} status={status}")))
    };
    assert!(
        line("/files/run1.dat", "201") && log.contains("token=alice"),
        "{log}"
    );
    assert!(
        line("/files/run2.dat", "401") && line("/files/run2.dat", "201"),
        "{log}"
    );
    assert!(log.contains("token=bob"), "{log}");
    drop(manager);
}
