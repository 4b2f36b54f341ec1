//! The `weir` command: `weir serve` (an upload/download service on top of `weir` and
//! `weir-store`) and its client, `weir put` / `weir get`.
//!
//! A library so that tests can run the service in-process (for fault injection) and the binary
//! stays a few lines (`main.rs`).
#![forbid(unsafe_code)]

pub mod cli;
pub mod client;
pub mod config_file;
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
            eprintln!("weir: {} (see 'weir --help')", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// clap renders a paragraph (the error, then indented details such as the missing arguments,
/// then usage); this keeps the error and its details on one line.
pub fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let mut message = String::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("Usage:") || line.starts_with("For more") {
            if !message.is_empty() {
                break;
            }
            continue;
        }
        if !message.is_empty() {
            message.push(' ');
        }
        message.push_str(line.strip_prefix("error: ").unwrap_or(line));
    }
    if message.is_empty() {
        message.push_str("invalid arguments");
    }
    message
}
