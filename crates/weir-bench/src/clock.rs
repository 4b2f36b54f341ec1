//! Timestamps comparable across processes: raw `CLOCK_MONOTONIC` nanoseconds.
//!
//! The timeline scenario compares instants taken in the client (the bench process) with instants
//! taken in the server child. `std::time::Instant` cannot cross a process boundary, but on Linux
//! `CLOCK_MONOTONIC` is one system-wide clock, so its raw values can be subtracted across
//! processes.

use rustix::time::{ClockId, clock_gettime};

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let t = clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time consumed by this process so far, every thread included, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// CPU time consumed by the calling thread so far, in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
