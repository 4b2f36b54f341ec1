//! Touching the machine's free memory once before the file rows, so that no row pays for the
//! hypervisor's first touch of a page.
//!
//! Why: on a VM whose guest memory the host backs lazily (this 2-core Firecracker VM), the first
//! write to a guest page costs a fault in the host. Page-cache writes land on whatever free
//! pages the kernel hands out; when those had never been touched since boot, the copy into the
//! page cache ran several times slower, nearly all of it the kernel's `memcpy` into new
//! page-cache folios (figures in docs/archive/BENCHMARKS-history.md, "Figures once quoted in source
//! comments"). Which row met fresh pages was luck, so the file rows of one run varied widely from
//! round to round. Touching free memory once makes every row meet pages the host already backs; on
//! bare metal it only costs the time of the touch.
//!
//! It helps only until the guest frees memory again: this VM also has virtio-balloon free page
//! reporting (feature REPORTING, `page_reporting_order` 9, `min_free_ms` 0), which hands free
//! 2 MiB blocks back to the host soon after they are freed, so a row that frees and refills much
//! page cache can still meet pages the host must fault in again. The report says when this ran.
//!
//! So the upload scenario can also pause that reporting for its run ([`ReportingPause`],
//! `--pause-page-reporting`, root only): raising `page_reporting_order` above the largest block
//! the kernel's allocator has (order 10) means no block qualifies. With reporting on, the same
//! page-cache copy varied several-fold from one try to the next; paused, it did not (figures in
//! docs/archive/BENCHMARKS-history.md, "Figures once quoted in source comments"). It is a setting
//! of the machine, like a CPU governor: the previous value is restored when the run ends (not if
//! the process is killed).

use std::fs;

/// Leave this much free memory untouched, for everything else on the machine.
const SPARE: u64 = 2 << 30;

/// At most this much is touched (the upload scenario's files, a few at a time, fit well within).
const AT_MOST: u64 = 16 << 30;

/// Touches (writes one byte per page of) up to [`AT_MOST`] of the free memory, then releases
/// it; returns the bytes touched (0 when `/proc/meminfo` cannot be read).
pub fn touch_free_memory() -> u64 {
    let Some(free) = mem_free() else {
        return 0;
    };
    let len = free.saturating_sub(SPARE).min(AT_MOST);
    if len == 0 {
        return 0;
    }
    // A filled `Vec` writes every page (a zeroed one would be mapped lazily, untouched), in
    // pieces so that a failed allocation ends the touch instead of the process.
    const PIECE: usize = 256 << 20;
    let mut held: Vec<Vec<u8>> = Vec::new();
    let mut touched = 0u64;
    while touched < len {
        let mut piece = Vec::new();
        if piece.try_reserve_exact(PIECE).is_err() {
            break;
        }
        piece.resize(PIECE, 1u8);
        touched += PIECE as u64;
        held.push(piece);
    }
    drop(held);
    touched
}

/// The module parameter of the kernel's free page reporting (absent without it).
const REPORTING_ORDER: &str = "/sys/module/page_reporting/parameters/page_reporting_order";

/// Above the largest order of the buddy allocator (10 on x86-64 and arm64 with 4 KiB pages).
const NO_REPORTING_ORDER: &str = "11";

/// The smallest block order the kernel reports to the host, if free page reporting is present
/// and on.
pub fn reporting_order() -> Option<u32> {
    let order: u32 = fs::read_to_string(REPORTING_ORDER)
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (order <= 10).then_some(order)
}

/// Free page reporting paused while this lives; the previous order is restored on drop.
pub struct ReportingPause {
    previous: u32,
}

impl ReportingPause {
    /// Pauses reporting; `Err` says why it could not (not present, already off, not root).
    pub fn start() -> Result<Self, String> {
        let previous = reporting_order().ok_or("free page reporting is not on")?;
        fs::write(REPORTING_ORDER, NO_REPORTING_ORDER)
            .map_err(|e| format!("cannot write {REPORTING_ORDER}: {e}"))?;
        Ok(Self { previous })
    }

    /// The order in force before the pause.
    pub fn previous(&self) -> u32 {
        self.previous
    }
}

impl Drop for ReportingPause {
    fn drop(&mut self) {
        if let Err(e) = fs::write(REPORTING_ORDER, self.previous.to_string()) {
            eprintln!(
                "weir-bench: could not restore {REPORTING_ORDER} to {}: {e}",
                self.previous
            );
        }
    }
}

/// `MemFree` of `/proc/meminfo`, in bytes.
fn mem_free() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemFree:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Pauses free page reporting if asked (the pause lasts as long as the returned guard), and
/// says in the report whether it was on.
pub fn pause_page_reporting(asked: bool) -> std::io::Result<(Option<ReportingPause>, String)> {
    if asked {
        let pause = ReportingPause::start().map_err(std::io::Error::other)?;
        let note = format!(
            " The kernel's free page reporting (virtio-balloon) was paused for the run \
             (`--pause-page-reporting`: `page_reporting_order` {} → 11, restored after): with it \
             on, page cache freed between rounds goes back to the host and is faulted in again \
             when reused, and the file rows swing several-fold from round to round.",
            pause.previous()
        );
        return Ok((Some(pause), note));
    }
    let note = match reporting_order() {
        Some(order) => format!(
            " The kernel's free page reporting was on (`page_reporting_order` {order}): page \
             cache freed between rounds may go back to the host and be faulted in again, so \
             file rows can swing several-fold; `--pause-page-reporting` pauses it."
        ),
        None => String::new(),
    };
    Ok((None, note))
}

/// What a scenario whose rows write much page cache does first: free page reporting paused if
/// `pause` ([`pause_page_reporting`]), then, if `touch`, the free memory touched once
/// ([`touch_free_memory`]). Returns the pause's guard and the report's note on both.
pub fn prepare(pause: bool, touch: bool) -> std::io::Result<(Option<ReportingPause>, String)> {
    let (guard, reporting_note) = pause_page_reporting(pause)?;
    let touched = if touch { touch_free_memory() } else { 0 };
    let prefault_note = if touched > 0 {
        format!(
            " Before the rounds, {:.1} GiB of the machine's free memory was written once and \
             released (`prefault.rs`): on this VM the host backs guest memory lazily, and \
             page-cache writes into never-touched pages were measured about 8× slower, so \
             whichever row met them first lost.",
            touched as f64 / (1u64 << 30) as f64
        )
    } else {
        String::new()
    };
    Ok((guard, format!("{prefault_note}{reporting_note}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_memory_is_read() {
        let free = mem_free().expect("MemFree in /proc/meminfo");
        assert!(free > 0);
    }
}
