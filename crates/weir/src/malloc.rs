//! Process-wide tuning of glibc's `malloc` for streamed bodies. Optional: a library has no
//! business changing the allocator of the program it is linked into, and programs using weir
//! need not call it; the `weir` and `weir-bench` binaries still call [`tune_for_streaming`] once
//! at start-up, for the buffers of other crates. Linux with glibc only; elsewhere it does nothing.
//!
//! Why it was needed: an HTTP/2 upload arrives in DATA frames that upstream `h2` read into a new
//! buffer of up to a frame each (256 KiB by default), alive until the handler has consumed them;
//! under a handler that writes to a file several are alive at once, so each new one was a new
//! allocation and each consumed one was freed. weir's h2 (`crates/weir-h2`, `read_buffer.rs`)
//! now reuses those buffers instead. With glibc's defaults those frees handed the memory back to
//! the kernel (`munmap` for blocks above the mmap threshold, `madvise(MADV_DONTNEED)` when a thread
//! arena's free top exceeds the trim threshold), and the next buffer takes page faults and kernel
//! zeroing on every page (strace counted one `madvise` per MiB received), which cost an HTTP/2
//! upload to a file far more server CPU than the same upload with the settings below (figures
//! in docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments"). HTTP/1.1
//! bodies in weir allocate nothing per read and are unaffected.
//!
//! The settings: blocks up to [`MMAP_THRESHOLD`] come from the arenas (not `mmap`), and an arena
//! keeps up to [`TRIM_THRESHOLD`] of free memory at its top instead of returning it. That bounds
//! what is kept; the price is that much resident memory per arena after a burst. Setting either
//! also stops glibc from moving both thresholds by itself.

/// Blocks smaller than this are served from the arenas: above a frame (256 KiB) and the pooled
/// 1 MiB upload buffers of `weir serve`, with room.
pub const MMAP_THRESHOLD: usize = 4 << 20;

/// Free memory an arena keeps at its top before giving it back to the kernel: two of the largest
/// blocks that skip `mmap`.
pub const TRIM_THRESHOLD: usize = 8 << 20;

/// Applies the settings above to glibc's `malloc`; call before spawning threads. Returns whether
/// they were applied (`false` when not on glibc, or if glibc refused them).
pub fn tune_for_streaming() -> bool {
    imp::tune()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
mod imp {
    use super::{MMAP_THRESHOLD, TRIM_THRESHOLD};

    pub(super) fn tune() -> bool {
        let set = |param, value: usize| {
            let value = libc::c_int::try_from(value).expect("threshold fits a C int");
            // SAFETY: `mallopt` takes two integers and changes allocator parameters under
            // glibc's own lock; it reads and writes no memory of ours. Both parameters are
            // documented (mallopt(3)) and the values are within their ranges.
            unsafe { libc::mallopt(param, value) == 1 }
        };
        set(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) & set(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub(super) fn tune() -> bool {
        false
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Minor page faults of the calling thread so far (`/proc/thread-self/stat`, field 10).
    fn minor_faults() -> u64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // Fields after the command name, which is in parentheses and may hold spaces.
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(7).unwrap().parse().unwrap()
    }

    /// As a connection's frames under a slow handler: six frame-sized buffers alive at once,
    /// every page touched, then all freed.
    fn churn() {
        let frames: Vec<Vec<u8>> = (0..6).map(|_| vec![1u8; 256 << 10]).collect();
        std::hint::black_box(&frames);
    }

    #[test]
    fn freed_frame_buffers_are_reused_without_page_faults() {
        assert!(super::tune_for_streaming());
        // A thread of its own: its own arena (as a runtime worker's), its own fault count.
        let faults = std::thread::spawn(|| {
            churn(); // the first use faults its pages in
            let before = minor_faults();
            for _ in 0..100 {
                churn();
            }
            minor_faults() - before
        })
        .join()
        .unwrap();
        // With glibc's defaults the 1.5 MiB freed at the arena's top exceeds the trim threshold
        // and goes back to the kernel: every round faults its 384 pages in again (tens of
        // thousands of faults in 100 rounds). Tuned, the freed blocks are reused; the bound leaves
        // room for other test threads sharing the arena, and is still a tenth of the untuned count.
        assert!(faults < 10 * 384, "{faults} minor faults in 100 rounds");
    }
}
