//! The scenarios, one per seed document, and what they share: run settings and the peers.
//!
//! Every scenario follows the same shape: start every server it compares (each a child process),
//! run the systems interleaved round by round (A B C, C B A, …: see [`order`]) so that drift in
//! the machine hits every system alike, summarise each row as median and min–max, take ratios round by
//! round against the baseline, publish the section, and stop every server (dropping a
//! [`Peer`] stops its child).

pub mod child;
pub mod local;
pub mod plaintext;
pub mod resume;
pub mod s3;
pub mod s3api;
pub mod scale;
pub mod services;
pub mod timeline;
pub mod transfer;
pub mod upload;
pub mod versions;
pub mod webdav;

use crate::report;
use crate::server::spawn::ServerProc;
use crate::server::{ServeArgs, Sink, StartError, System};
use std::io;
use std::path::Path;
use std::time::Duration;

/// How big a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The seeds' sizes, enough rounds to trust the medians.
    Full,
    /// Smaller sizes, fewer rounds: each scenario in under a minute.
    Quick,
    /// Tiny sizes, one round, debug-build friendly: the smoke test. Figures mean nothing.
    Tiny,
}

/// Settings every scenario takes.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Run size.
    pub mode: Mode,
    /// Rounds, overriding the mode's default.
    pub rounds: Option<usize>,
    /// Worker threads of every server.
    pub server_threads: usize,
    /// Load-generator threads.
    pub client_threads: usize,
    /// Where the report goes.
    pub target: report::Target,
}

impl Settings {
    /// The number of rounds: the override, or the mode's default.
    pub fn rounds(&self, full: usize, quick: usize) -> usize {
        self.rounds.unwrap_or(match self.mode {
            Mode::Full => full,
            Mode::Quick => quick,
            Mode::Tiny => 1,
        })
    }

    /// Picks a value by mode.
    pub fn pick<T>(&self, full: T, quick: T, tiny: T) -> T {
        match self.mode {
            Mode::Full => full,
            Mode::Quick => quick,
            Mode::Tiny => tiny,
        }
    }

    /// Server arguments with this run's thread count and the given system and sink.
    pub fn serve_args(&self, system: System, sink: Sink, data_dir: &Path) -> ServeArgs {
        ServeArgs {
            system,
            sink,
            unix: None,
            data_dir: data_dir.to_path_buf(),
            threads: self.server_threads,
            pause_threshold: None,
            pipeline_flush: false,
            per_core: false,
            read_buf: None,
            tls_cert: None,
            tls_key: None,
            h2c: false,
            sha256: false,
            fsync: false,
            sha256_thread: false,
        }
    }
}

/// One system under test: its row label and its server, or why it has none.
pub struct Peer {
    /// Row label.
    pub label: String,
    /// The running server, or the reason it is not available in this build.
    pub server: Result<ServerProc, String>,
}

impl Peer {
    /// Starts the server for a row. A server that is unavailable (weir before it exists)
    /// becomes a row without figures; one that fails to start fails the scenario.
    pub fn start(label: impl Into<String>, args: &ServeArgs) -> io::Result<Self> {
        Self::start_in(label, args, None)
    }

    /// [`Peer::start`] with the child's working directory and `TMPDIR`.
    pub fn start_in(
        label: impl Into<String>,
        args: &ServeArgs,
        dirs: Option<(&Path, &Path)>,
    ) -> io::Result<Self> {
        let label = label.into();
        let server = match ServerProc::start_in(args, dirs) {
            Ok(p) => Ok(p),
            Err(StartError::Unavailable(why)) => Err(why),
            Err(e @ StartError::Failed(_)) => {
                return Err(io::Error::other(format!("{label}: {e}")));
            }
        };
        Ok(Self { label, server })
    }
}

impl Peer {
    /// A row served by the real service: `weir serve` from the `weir` binary at `weir`, storing
    /// into `root`. Fails the scenario if it does not start.
    pub fn start_weir_serve(
        label: impl Into<String>,
        weir: &Path,
        root: &Path,
        args: &[&str],
    ) -> io::Result<Self> {
        let label = label.into();
        let server = ServerProc::start_weir_serve(weir, root, args)
            .map_err(|e| io::Error::other(format!("{label}: {e}")))?;
        Ok(Self {
            label,
            server: Ok(server),
        })
    }
}

/// The order in which to run `n` systems in round `round`: forward in even rounds, backward in
/// odd ones (A B C, C B A, …), so that no system always runs first after a round's clean-up or
/// always follows the same neighbour.
pub fn order(n: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| if round % 2 == 0 { i } else { n - 1 - i })
}

/// Formats a byte count as MiB with no decimals, or KiB below 1 MiB.
pub fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} B")
    }
}

/// Parses `60s`, `2m`, `500ms` or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = num.parse().map_err(|_| format!("bad duration {s:?}"))?;
    let secs = match unit {
        "ms" => n / 1e3,
        "s" => n,
        "m" | "min" => n * 60.0,
        _ => return Err(format!("bad duration unit in {s:?}")),
    };
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `64K`, `1M`, `1MiB` or a plain number of bytes.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let i = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n: usize = s[..i].parse().map_err(|_| format!("bad size {s:?}"))?;
    let mult = match s[i..].to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" | "kb" => 1 << 10,
        "m" | "mib" | "mb" => 1 << 20,
        "g" | "gib" | "gb" => 1 << 30,
        _ => return Err(format!("bad size unit in {s:?}")),
    };
    Ok(n * mult)
}

/// The note shown in place of figures for a row without a server.
pub fn unavailable_note(why: &str) -> String {
    format!("not available: {why}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_durations() {
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("4MiB"), Ok(4 << 20));
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(size_label(700 << 20), "700 MiB");
        assert_eq!(order(3, 0).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(order(3, 1).collect::<Vec<_>>(), [2, 1, 0]);
    }
}
