//! `weir serve --config FILE`: options from a TOML file, under the environment and the flags.
//!
//! Precedence, per option: a flag beats its environment variable (`WEIR_…`, clap's `env`),
//! which beats the file, which beats the default. The file's keys are the long flag names
//! (`max-upload = "10GiB"`, `no-hash = true`, `listen = ["localhost:8080", ":9000"]`), and each
//! value goes through the flag's own parser, so a file cannot mean anything a flag cannot and
//! every check lives in one place (`cli.rs`, then `ServeConfig::from_args`).
//!
//! How: the command line is parsed once (flags and environment); for every key of the file
//! whose option was set by neither, `--key=value` is appended, and the whole is parsed again.
//! Mistakes in the file (unknown key, wrong type, invalid value) are all reported, one line
//! each, naming the file and the key, before anything starts.

use crate::cli::Cli;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why the command line (with its config file) cannot be used.
#[derive(Debug)]
pub enum ConfigError {
    /// Flags or environment (clap's error: help and version requests too).
    Usage(clap::Error),
    /// The config file: one line per mistake.
    File(Vec<String>),
}

impl From<clap::Error> for ConfigError {
    fn from(e: clap::Error) -> Self {
        Self::Usage(e)
    }
}

/// Parses `args` (the program name first), the environment and the `--config` file.
pub fn parse_from(args: Vec<OsString>) -> Result<Cli, ConfigError> {
    let matches = Cli::command().try_get_matches_from(&args)?;
    let file = match matches.subcommand() {
        Some(("serve", serve)) => serve
            .get_one::<PathBuf>("config")
            .map(|p| (p.clone(), serve)),
        _ => None,
    };
    let Some((path, serve)) = file else {
        return Ok(Cli::from_arg_matches(&matches)?);
    };
    let extra = file_args(&path, serve).map_err(ConfigError::File)?;
    if extra.is_empty() {
        return Ok(Cli::from_arg_matches(&matches)?);
    }
    let mut all = args;
    all.extend(extra.into_iter().map(OsString::from));
    let matches = Cli::command().try_get_matches_from(all)?;
    Ok(Cli::from_arg_matches(&matches)?)
}

/// The file's options not set by a flag or the environment, as `--key=value` arguments; or its
/// mistakes.
fn file_args(path: &Path, given: &clap::ArgMatches) -> Result<Vec<String>, Vec<String>> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![format!("cannot read the config file {name}: {e}")])?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let line = e
            .span()
            .map_or(0, |s| text[..s.start].lines().count().max(1));
        vec![format!("{name}:{line}: {}", e.message().trim())]
    })?;
    let command = Cli::command();
    let serve = command
        .find_subcommand("serve")
        .expect("cli.rs declares serve");
    let mut args = Vec::new();
    let mut mistakes = Vec::new();
    for (key, value) in &table {
        let arg = serve
            .get_arguments()
            .find(|a| a.get_long() == Some(key.as_str()) && key != "config");
        let Some(arg) = arg else {
            mistakes.push(format!("{name}: unknown option `{key}`"));
            continue;
        };
        if matches!(
            given.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let takes_values = arg.get_action().takes_values();
        let values = match value {
            toml::Value::Boolean(on) if !takes_values => {
                if *on {
                    args.push(format!("--{key}"));
                }
                continue;
            }
            toml::Value::Array(items) => items.iter().map(scalar).collect(),
            other => vec![scalar(other)],
        };
        for value in values {
            let checked = value
                .ok_or("must be a string, a number or a list of them")
                .and_then(|value| {
                    if !takes_values {
                        return Err("must be true or false");
                    }
                    Ok(value)
                });
            match checked {
                Ok(value) => match check_value(key, &value) {
                    Ok(()) => args.push(format!("--{key}={value}")),
                    Err(e) => mistakes.push(format!("{name}: {key}: {e}")),
                },
                Err(e) => mistakes.push(format!("{name}: {key} {e}")),
            }
        }
    }
    if mistakes.is_empty() {
        Ok(args)
    } else {
        Err(mistakes)
    }
}

/// A TOML scalar as the text a flag would take.
fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Runs one value through its flag's parser alone, so that a bad value is reported with its
/// key (the errors of options that need others, such as --tls-cert's key, are left to the
/// whole parse).
fn check_value(key: &str, value: &str) -> Result<(), String> {
    use clap::error::ErrorKind;
    let flag = format!("--{key}={value}");
    match Cli::command().try_get_matches_from(["weir", "serve", flag.as_str()]) {
        Ok(_) => Ok(()),
        Err(e) => match e.kind() {
            ErrorKind::MissingRequiredArgument | ErrorKind::ArgumentConflict => Ok(()),
            _ => Err(crate::one_line(&e)),
        },
    }
}
