//! `weir`: parse the command line, run the command, turn a failure into one line on stderr and
//! a non-zero exit status. Everything else lives in the library (`weir_cli`).
#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;
use weir_cli::cli::{Cli, Command};

fn main() -> ExitCode {
    // HTTP/2 bodies arrive in buffers that glibc's defaults give back to the kernel as soon as
    // they are freed (weir::malloc): keep them for reuse, before any thread starts.
    weir::malloc::tune_for_streaming();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return weir_cli::usage_error(e),
    };
    let result = match cli.command {
        Command::Serve(args) => weir_cli::serve::run(args).map_err(|e| e.to_string()),
        Command::Put(args) => weir_cli::client::put(args).map_err(|e| e.to_string()),
        Command::Get(args) => weir_cli::client::get(args).map_err(|e| e.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir: {e}");
            ExitCode::FAILURE
        }
    }
}
