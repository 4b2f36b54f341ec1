//! What `/proc` says about a process and the machine: memory, CPU time, pressure, CPU model.
//!
//! Servers run as child processes so that each system's figures are its own. Memory comes from
//! `/proc/<pid>/status` (`VmRSS`, and `VmHWM`, the peak, which `/proc/<pid>/clear_refs` resets so
//! each round has its own peak). CPU time does not come from here: `/proc/<pid>/stat` counts
//! `utime + stime` in 10 ms ticks, too coarse for a 50 MiB POST, so the server reads its own
//! `CLOCK_PROCESS_CPUTIME_ID` (the same user + system time, in ns) when asked over its control
//! pipe (see `server::control`).

use std::fs;
use std::io;

/// Memory figures of one process, in KiB.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident set size now (`VmRSS`).
    pub rss_kib: u64,
    /// Peak resident set size since start or the last [`reset_peak`] (`VmHWM`).
    pub peak_kib: u64,
}

/// Reads `VmRSS` and `VmHWM` of `pid` (`"self"` for this process).
pub fn memory(pid: &str) -> io::Result<Memory> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))?;
    let mut m = Memory::default();
    for line in status.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            m.rss_kib = kib(v);
        } else if let Some(v) = line.strip_prefix("VmHWM:") {
            m.peak_kib = kib(v);
        }
    }
    Ok(m)
}

/// Resident set size of this process in KiB, from `/proc/self/statm` (one short read, cheaper
/// than `status`: used on the server's request path in the timeline scenario).
pub fn self_rss_kib() -> u64 {
    let Ok(statm) = fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * page_size_kib()
}

fn page_size_kib() -> u64 {
    (rustix::param::page_size() / 1024) as u64
}

fn kib(field: &str) -> u64 {
    field
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Resets the peak RSS (`VmHWM`) of `pid` to its current RSS (Linux ≥ 4.0).
pub fn reset_peak(pid: &str) -> io::Result<()> {
    fs::write(format!("/proc/{pid}/clear_refs"), "5")
}

/// CPU time the whole machine has spent busy (every CPU, every state but idle and iowait, steal
/// included), in seconds, from `/proc/stat`. Minus the bench's own processes' CPU time over the
/// same interval, it is what other tenants took.
pub fn machine_busy_seconds() -> Option<f64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal [guest guest_nice, already in user/nice]
    let busy: u64 = ticks.iter().take(8).sum::<u64>() - ticks.get(3)? - ticks.get(4)?;
    Some(busy as f64 / rustix::param::clock_ticks_per_second() as f64)
}

/// CPU time (user + system) of this process's children that have exited and been waited for,
/// in seconds (`cutime + cstime` in `/proc/self/stat`): the server children, once stopped.
pub fn waited_children_cpu_seconds() -> f64 {
    let Ok(stat) = fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name (field 2) may contain spaces; count fields after its closing ')'.
    // There, state is index 0, so cutime (field 16) is index 13 and cstime index 14.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| -> f64 { fields.get(i).and_then(|s| s.parse().ok()).unwrap_or(0.0) };
    (tick(13) + tick(14)) / rustix::param::clock_ticks_per_second() as f64
}

/// CPU time (user + system, every thread, exited ones included) of process `pid`, in ns, from
/// `utime + stime` of `/proc/<pid>/stat`: clock ticks, so 10 ms steps. For processes that
/// cannot be asked for their own `CLOCK_PROCESS_CPUTIME_ID` (the `weir` binary).
pub fn process_cpu_ns(pid: &str) -> io::Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // After the command name's ')', state is field 0: utime is 11, stime 12.
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| -> io::Result<u64> {
        fields
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/{pid}/stat: no field {i}")))
    };
    let ticks = tick(11)? + tick(12)?;
    Ok(ticks * 1_000_000_000 / rustix::param::clock_ticks_per_second())
}

/// Bytes process `pid` (every thread, exited ones included) sent to the storage layer, from
/// `/proc/<pid>/io`: `write_bytes`, counted when a page is dirtied (a `write`, a splice or
/// `copy_file_range` into a file), less `cancelled_write_bytes` (dirty pages that never reached
/// the disk: a file truncated or unlinked first). What a server made the disk write, whoever
/// wrote the pages back.
pub fn written_bytes(pid: &str) -> io::Result<u64> {
    let text = fs::read_to_string(format!("/proc/{pid}/io"))?;
    let field = |name: &str| -> io::Result<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/{pid}/io: no {name}")))
    };
    Ok(field("write_bytes")?.saturating_sub(field("cancelled_write_bytes")?))
}

/// `pid` and every process below it (children, their children, …), from the parent pid of
/// each `/proc/<n>/stat`: a server that forks workers (nginx's master and its workers) is
/// measured as a whole. A process that exits during the scan is left out.
pub fn tree(pid: &str) -> io::Result<Vec<String>> {
    let mut parents = Vec::new();
    for entry in fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(n) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{n}/stat")) else {
            continue;
        };
        // After the command name's ')', state is field 0 and the parent pid field 1.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .unwrap_or("")
            .to_string();
        parents.push((n.to_string(), ppid));
    }
    let mut out = vec![pid.to_string()];
    let mut at = 0;
    while at < out.len() {
        let parent = out[at].clone();
        out.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(n, _)| n.clone()),
        );
        at += 1;
    }
    Ok(out)
}

/// [`process_cpu_ns`] summed over `pids` (a [`tree`]).
pub fn tree_cpu_ns(pids: &[String]) -> io::Result<u64> {
    pids.iter().map(|p| process_cpu_ns(p)).sum()
}

/// [`reset_peak`] of each of `pids`.
pub fn tree_reset_peak(pids: &[String]) -> io::Result<()> {
    pids.iter().try_for_each(|p| reset_peak(p))
}

/// The peaks (`VmHWM`) of `pids` summed, in KiB: an upper bound of the tree's peak, since the
/// processes need not peak at the same moment (for one process, exactly its peak).
pub fn tree_peak_kib(pids: &[String]) -> io::Result<u64> {
    pids.iter().map(|p| Ok(memory(p)?.peak_kib)).sum()
}

/// CPU pressure: the `some` line of `/proc/pressure/cpu`, if the kernel has PSI.
#[derive(Clone, Copy, Debug)]
pub struct Pressure {
    /// Share of the last 10 s in which some runnable task waited for a CPU, in percent.
    pub avg10: f64,
    /// Same over 60 s.
    pub avg60: f64,
    /// Total waiting time in µs since boot.
    pub total_us: u64,
}

/// Reads `/proc/pressure/cpu`; `None` where it does not exist.
pub fn cpu_pressure() -> Option<Pressure> {
    let text = fs::read_to_string("/proc/pressure/cpu").ok()?;
    let line = text.lines().find(|l| l.starts_with("some"))?;
    let field = |name: &str| -> Option<&str> {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
    };
    Some(Pressure {
        avg10: field("avg10")?.parse().ok()?,
        avg60: field("avg60")?.parse().ok()?,
        total_us: field("total")?.parse().ok()?,
    })
}

/// The CPU model from `/proc/cpuinfo`, or `"unknown"`.
pub fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Online CPUs, as `nproc` counts them.
pub fn nproc() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_figures() {
        let m = memory("self").unwrap();
        assert!(m.rss_kib > 0 && m.peak_kib >= m.rss_kib);
        assert!(self_rss_kib() > 0);
        assert!(machine_busy_seconds().unwrap() > 0.0);
        // This test has run for a while: some ticks, and not more than the process clock.
        let ticks_ns = process_cpu_ns("self").unwrap();
        assert!(ticks_ns <= crate::clock::process_cpu_ns() + 20_000_000);
    }

    #[test]
    fn a_tree_holds_the_process_and_its_children() {
        let me = std::process::id().to_string();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pids = tree(&me).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(pids[0], me);
        assert!(pids.contains(&child.id().to_string()), "{pids:?}");
        assert!(tree_peak_kib(&pids[..1]).unwrap() > 0);
    }
}
