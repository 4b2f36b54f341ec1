//! The `weir` command: `weir serve` (an upload/download service on top of `weir` and
//! `weir-store`) and its client, `weir put` / `weir get`.
//!
//! A library so that tests can run the service in-process (for fault injection) and the binary
//! stays a few lines (`main.rs`).
#![forbid(unsafe_code)]

pub mod cli;
pub mod client;
pub mod serve;
mod size;

use std::process::ExitCode;

/// Reports a command-line error as one line on stderr (clap's own output spans several), or
/// prints help and version as asked.
pub fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("weir: {first} (see 'weir --help')");
            ExitCode::from(2)
        }
    }
}
