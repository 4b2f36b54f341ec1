//! The `weir serve` rows: the real service (the `weir` binary, a child process like every
//! server here), storing a `PUT /files/…` upload with SHA-256 (its default) or with
//! `--no-hash` (splice), against the raw receivers in the same rounds.
//!
//! What the service does that the raw file sink does not: it writes to a temporary file, and
//! commits it (`fsync` of the file, rename, `fsync` of the directory) before it answers, so
//! the upload is durable when the client sees the answer. The raw baselines are therefore
//! four: `write` only (the project's baseline), `write + fsync` (the same durability),
//! `write` with SHA-256 inline (what hashing on one core costs), and `write` with SHA-256 on a
//! second thread and `fsync` (the same work as the service, done the simplest way). The ratio table sets the
//! service against each, with the targets that apply.

use super::{RAW_FILE, Row};
use crate::report::table::Table;
use std::io;
use std::path::{Path, PathBuf};

/// The name every `weir serve` upload is stored under (removed after each round).
pub(super) const STORED_NAME: &str = "upload.bin";

/// Which `weir serve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WeirServe {
    /// The default: the body is read into user space, hashed (SHA-256) and written.
    Sha256,
    /// `--no-hash`: the body is spliced socket → pipe → file.
    NoHash,
}

impl WeirServe {
    pub(super) fn label(self) -> &'static str {
        match self {
            WeirServe::Sha256 => "weir serve (SHA-256) → file",
            WeirServe::NoHash => "weir serve --no-hash → file (splice)",
        }
    }

    pub(super) fn args(self) -> &'static [&'static str] {
        match self {
            WeirServe::Sha256 => &[],
            WeirServe::NoHash => &["--no-hash"],
        }
    }

    /// The sink it amounts to, for the main table's grouping.
    pub(super) fn sink(self) -> crate::server::Sink {
        match self {
            WeirServe::Sha256 => crate::server::Sink::File,
            WeirServe::NoHash => crate::server::Sink::Splice,
        }
    }
}

/// The `weir` binary: `explicit`, or `weir` next to this executable. An error that says how to
/// build it when it is not there.
pub(in crate::scenario) fn weir_binary(explicit: Option<&Path>) -> io::Result<PathBuf> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()?
            .parent()
            .map(|d| d.join("weir"))
            .ok_or_else(|| io::Error::other("this executable has no directory"))?,
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(io::Error::other(format!(
            "the `weir serve` rows need the weir binary, and {} does not exist: build it with \
             `cargo build --release -p weir-cli` (the same profile as weir-bench), pass \
             `--weir PATH`, or leave those rows out with `--rows`",
            path.display()
        )))
    }
}

/// Removes the file the last upload stored under `root`.
pub(super) fn remove_stored(root: &Path) -> io::Result<()> {
    match std::fs::remove_file(root.join(STORED_NAME)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// One line of the ratio table: the row labelled `num` over the row labelled `den`.
struct Comparison {
    num: &'static str,
    den: &'static str,
    name: &'static str,
    target: &'static str,
}

const SHA: &str = "weir serve (SHA-256) → file";
const NO_HASH: &str = "weir serve --no-hash → file (splice)";
const RAW_FSYNC: &str = "raw TCP → file (write + fsync)";
const RAW_SHA: &str = "raw TCP → file + SHA-256 (write)";
/// The same work as the hashed `weir serve` done the simplest way (issue 18, item 2).
pub(super) const RAW_SHA_THREAD: &str = "raw TCP → file + SHA-256 thread (write + fsync)";
const HYPER_FILE: &str = "hyper → file (write)";

const COMPARISONS: [Comparison; 10] = [
    Comparison {
        num: SHA,
        den: RAW_FILE,
        name: "weir serve (SHA-256) ÷ raw → file (write)",
        target: "≥ 0.75",
    },
    Comparison {
        num: NO_HASH,
        den: RAW_FILE,
        name: "weir serve --no-hash ÷ raw → file (write)",
        target: "≥ 1.05",
    },
    Comparison {
        num: SHA,
        den: HYPER_FILE,
        name: "weir serve (SHA-256) ÷ hyper → file",
        target: "—",
    },
    Comparison {
        num: NO_HASH,
        den: HYPER_FILE,
        name: "weir serve --no-hash ÷ hyper → file",
        target: "≥ 1.15",
    },
    Comparison {
        num: SHA,
        den: RAW_FSYNC,
        name: "weir serve (SHA-256) ÷ raw → file (write + fsync)",
        target: "≥ 1.0",
    },
    Comparison {
        num: NO_HASH,
        den: RAW_FSYNC,
        name: "weir serve --no-hash ÷ raw → file (write + fsync)",
        target: "—",
    },
    Comparison {
        num: SHA,
        den: RAW_SHA_THREAD,
        name: "weir serve (SHA-256) ÷ raw → file + SHA-256 thread (write + fsync)",
        target: "—",
    },
    Comparison {
        num: RAW_SHA_THREAD,
        den: RAW_FSYNC,
        name: "raw → file + SHA-256 thread (write + fsync) ÷ raw → file (write + fsync)",
        target: "—",
    },
    Comparison {
        num: SHA,
        den: RAW_SHA,
        name: "weir serve (SHA-256) ÷ raw → file + SHA-256",
        target: "—",
    },
    Comparison {
        num: RAW_SHA,
        den: RAW_FILE,
        name: "raw → file + SHA-256 ÷ raw → file (write)",
        target: "—",
    },
];

/// The service's ratio table in Markdown, or `None` when no `weir serve` row ran.
pub(super) fn ratio_table(rows: &[Row]) -> Option<String> {
    let find = |label: &str| {
        rows.iter()
            .find(|r| r.peer.label == label && r.peer.server.is_ok())
    };
    find(SHA).or_else(|| find(NO_HASH))?;
    let mut t = Table::new(&[
        "Comparison (median of round-by-round ratios, min–max)",
        "GiB/s",
        "Server CPU/GiB",
        "Target (GiB/s)",
    ]);
    for c in &COMPARISONS {
        let (Some(n), Some(d)) = (find(c.num), find(c.den)) else {
            continue;
        };
        t.row(vec![
            c.name.into(),
            n.gib_s.ratio_to(&d.gib_s).show(2),
            n.cpu_per_gib.ratio_to(&d.cpu_per_gib).show(2),
            c.target.into(),
        ]);
    }
    Some(t.markdown())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_name_rows_that_exist() {
        for c in &COMPARISONS {
            for label in [c.num, c.den] {
                assert!(
                    [
                        SHA,
                        NO_HASH,
                        RAW_FILE,
                        RAW_FSYNC,
                        RAW_SHA,
                        RAW_SHA_THREAD,
                        HYPER_FILE
                    ]
                    .contains(&label),
                    "{label}"
                );
            }
        }
        assert_eq!(WeirServe::Sha256.label(), SHA);
        assert_eq!(WeirServe::NoHash.label(), NO_HASH);
    }
}
