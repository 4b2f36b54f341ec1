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
    }
}
