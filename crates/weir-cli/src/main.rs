//! `weir`: parse the command line, run the command, turn a failure into one line on stderr and
//! a non-zero exit status. Everything else lives in the library (`weir_cli`).
#![forbid(unsafe_code)]

use std::process::ExitCode;
use weir_cli::cli::Command;
use weir_cli::config_file::ConfigError;

fn main() -> ExitCode {
    // HTTP/2 bodies arrive in buffers that glibc's defaults give back to the kernel as soon as
    // they are freed (weir::malloc): keep them for reuse, before any thread starts.
    weir::malloc::tune_for_streaming();
    let cli = match weir_cli::config_file::parse_from(std::env::args_os().collect()) {
        Ok(cli) => cli,
        Err(ConfigError::Usage(e)) => return weir_cli::usage_error(e),
        Err(ConfigError::File(mistakes)) => {
            for mistake in mistakes {
                eprintln!("weir: {mistake}");
            }
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Serve(args) => weir_cli::serve::run(*args).map_err(|e| e.to_string()),
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
