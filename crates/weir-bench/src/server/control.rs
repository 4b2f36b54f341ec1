//! The child's side of the control pipe: readiness on stdout, commands on stdin.
//!
//! Protocol, one line each way:
//! - child, once: `ready <endpoint>` | `unavailable <reason>` | `failed <reason>`;
//! - parent `stats` → child `stats <allocations> <cpu_ns> <rss_kib> <peak_kib>`;
//! - parent `reset-peak` → child `ok` (the peak RSS restarts from the current RSS);
//! - parent `quit`, or end of input → the child exits with status 0.
//!
//! The server's threads run in the background; the main thread only serves this loop, so the
//! queries cost the server nothing while no query is made. The allocations the loop itself makes
//! (a line buffer, the formatted answer) are counted too: the parent queries before and after a
//! window, so each window includes one query's worth, a handful against hundreds of thousands of
//! requests.

use super::{Endpoint, StartError};
use crate::{clock, procfs};
use std::io::{BufRead, Write};

/// Reports how the start went, then answers commands until told to quit.
pub fn serve_commands(started: Result<Endpoint, StartError>) -> ! {
    let mut out = std::io::stdout().lock();
    match started {
        Ok(endpoint) => {
            let _ = writeln!(out, "ready {endpoint}");
        }
        Err(StartError::Unavailable(why)) => {
            let _ = writeln!(out, "unavailable {why}");
            std::process::exit(0);
        }
        Err(StartError::Failed(why)) => {
            let _ = writeln!(out, "failed {why}");
            std::process::exit(1);
        }
    }
    let _ = out.flush();
    let stdin = std::io::stdin().lock();
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let answer = match line.trim() {
            "stats" => {
                let mem = procfs::memory("self").unwrap_or_default();
                format!(
                    "stats {} {} {} {}",
                    weir_testkit::alloc::allocations(),
                    clock::process_cpu_ns(),
                    mem.rss_kib,
                    mem.peak_kib
                )
            }
            "reset-peak" => match procfs::reset_peak("self") {
                Ok(()) => "ok".to_string(),
                Err(e) => format!("error {e}"),
            },
            "quit" => break,
            other => format!("error unknown command {other:?}"),
        };
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
    std::process::exit(0)
}
