//! A hook's process, run as the leader of a process group of its own, so that a timeout kills
//! everything it started, not only itself. A hook is often a shell script: killing the shell
//! alone left its children running (a `sleep`, a `curl`, a backgrounded job), each holding the
//! hook's pipes, so that the thread reading its output never ended either: 40 uploads refused
//! by a hanging pre-upload hook left 40 processes and 57 more threads in weir.

use std::process::{Child, Command};

/// Makes `command` start a new process group, led by the hook (so that its group id is its
/// pid, and a terminal's or weir's own signals to weir's group do not reach it).
pub(super) fn in_own_group(command: &mut Command) -> &mut Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    command
}

/// Kills `child` (started [`in_own_group`]) and every process of its group with SIGKILL, then
/// reaps `child`. Its group's other members are children of `child`, or of theirs: once it is
/// gone they are reparented, and reaped by init.
pub(super) fn kill_group(child: &mut Child) {
    // Before the leader is reaped: its pid cannot have been reused for another group yet.
    #[cfg(target_os = "linux")]
    {
        let group = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}
