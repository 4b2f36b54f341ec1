//! The shipped systemd unit (`contrib/systemd/weir.service`) against what the docs tell an
//! operator to configure: the documented access log path must be writable in the unit's
//! sandbox (`ProtectSystem=strict` makes everything else read-only: the start failed with
//! "cannot open the access log"), the token file must be readable by the user the unit runs
//! as, and `systemd-analyze verify` must find nothing to say. `systemd_boot.rs` runs the unit
//! under a real systemd manager.

use crate::support::*;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn unit() -> String {
    std::fs::read_to_string(repo().join("contrib/systemd/weir.service")).unwrap()
}

/// The values of `key=` lines of the unit (comments left out), space-separated ones split.
fn values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect()
}

/// What the service may write under `ProtectSystem=strict`: `ReadWritePaths=` and the
/// directories systemd makes for it (`StateDirectory=` under /var/lib, `LogsDirectory=` under
/// /var/log, `CacheDirectory=` under /var/cache, `RuntimeDirectory=` under /run).
fn writable(unit: &str) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = values(unit, "ReadWritePaths")
        .into_iter()
        .map(PathBuf::from)
        .collect();
    for (key, base) in [
        ("StateDirectory", "/var/lib"),
        ("LogsDirectory", "/var/log"),
        ("CacheDirectory", "/var/cache"),
        ("RuntimeDirectory", "/run"),
    ] {
        all.extend(values(unit, key).iter().map(|d| Path::new(base).join(d)));
    }
    all
}

#[test]
fn the_documented_access_log_is_writable_in_the_units_sandbox() {
    let unit = unit();
    assert_eq!(values(&unit, "ProtectSystem"), ["strict"]);
    let operating = std::fs::read_to_string(repo().join("docs/OPERATING.md")).unwrap();
    let documented: Vec<&str> = operating
        .lines()
        .filter_map(|l| l.trim().strip_prefix("access-log = \""))
        .filter_map(|l| l.split('"').next())
        .collect();
    assert!(
        !documented.is_empty(),
        "OPERATING.md shows an access-log path"
    );
    let writable = writable(&unit);
    for path in documented {
        assert!(
            writable.iter().any(|dir| Path::new(path).starts_with(dir)),
            "{path} is outside the unit's writable paths {writable:?}"
        );
    }
}

#[test]
fn the_token_file_is_readable_by_the_units_user() {
    let unit = unit();
    let user = values(&unit, "User");
    assert_eq!(user, ["weir"]);
    assert!(values(&unit, "Environment").contains(&"WEIR_TOKEN_FILE=/etc/weir/tokens".to_owned()));
    // The service reads the file as `weir` (at start and on SIGHUP): the unit must not tell
    // the operator to make it readable by root only, and must say how to let `weir` read it.
    let lower = unit.to_lowercase();
    assert!(!lower.contains("readable by root only"), "{unit}");
    assert!(
        unit.contains("install -m 640 -o root -g weir tokens /etc/weir/tokens"),
        "{unit}"
    );
}

#[test]
fn systemd_analyze_verifies_the_unit() {
    use weir_testkit::tools;
    let analyze = tools::on_path("systemd-analyze");
    if !tools::require(
        "systemd-analyze",
        analyze.is_some(),
        "apt-get install systemd",
    ) {
        return;
    }
    let analyze = analyze.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The unit as installed, with this build's binary (verify checks that ExecStart exists).
    let text = unit().replace("/usr/local/bin/weir", WEIR);
    let path = dir.path().join("weir.service");
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(analyze)
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert_eq!(said.trim(), "", "systemd-analyze has remarks");
}
