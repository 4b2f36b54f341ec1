//! DNS rebinding: the `Host` a request names must be one this server answers for.
//!
//! A page of `http://attacker.example:8080` whose name the attacker's DNS then points at
//! 127.0.0.1 reaches a weir listening there as its own origin: the browser sends its
//! `Host: attacker.example:8080`, and no cross-origin rule applies. What gives it away is that
//! name, which a page cannot change (a browser sets `Host`, and HTTP/2's `:authority`, which the
//! server library also gives as `host`).
//!
//! Invariants:
//! - Accepted names: `localhost`, a loopback IP literal (`127.x.y.z`, `[::1]`, and
//!   `[::ffff:127.x.y.z]`), and the `--allowed-host` names, case-insensitively, with any port
//!   or none. `--allowed-host '*'` accepts every name (the check is off).
//! - Which requests are checked: with `--allowed-host` names, every TCP request; without, the
//!   requests from a loopback peer when the server has a loopback listener (the only way a
//!   rebound name reaches a loopback listener is a browser on this machine). Requests over the
//!   Unix socket are never checked: only local processes reach it, and no browser does.
//! - A request without `Host` (HTTP/1.0) passes: a browser always sends one.
//! - Refused requests get `421 Misdirected Request` (RFC 9110 §15.5.20: the server is not
//!   authoritative for the target URI's authority, which is the case here), with a problem
//!   document, before any route: the page, `/metrics`, `/files/`, uploads. `/healthz` is not
//!   checked (in `observe.rs`): its answer is a constant `ok` that tells a page nothing it did
//!   not learn by connecting, and probes (Kubernetes' `httpGet`) name the pod's IP.
//!
//! Only the `Host` field is looked at, not the authority of an absolute-form target: browsers
//! send origin-form to a server, and a client that is not a browser can name any host it likes.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use weir::transport::PeerAddr;

/// The names accepted in `Host`, and which requests are checked.
#[derive(Debug, Default)]
pub struct HostCheck {
    /// `--allowed-host` names, lower-case, IPv6 literals without brackets.
    names: Vec<String>,
    /// `--allowed-host '*'`: no check at all.
    any: bool,
    /// The server has a loopback listener (set once they are bound: `mod.rs`).
    loopback_listener: AtomicBool,
}

impl HostCheck {
    /// Checks each name: a host name or an IP literal, without a scheme or a port.
    pub fn new(names: &[String]) -> Result<Self, String> {
        let mut check = Self::default();
        for name in names {
            if name == "*" {
                check.any = true;
                continue;
            }
            let lower = name.to_ascii_lowercase();
            let bare = lower
                .strip_prefix('[')
                .and_then(|n| n.strip_suffix(']'))
                .unwrap_or(&lower);
            let kept = match bare.parse::<IpAddr>() {
                // The form browsers put in `Host` (RFC 5952 for IPv6).
                Ok(ip) => ip.to_string(),
                Err(_) if !bare.is_empty() && bare.bytes().all(is_name_byte) => bare.to_owned(),
                Err(_) => {
                    return Err(format!(
                        "--allowed-host {name}: a host name or an IP address, without a port"
                    ));
                }
            };
            check.names.push(kept);
        }
        Ok(check)
    }

    /// Notes that the server listens on a loopback address, which turns the check on for
    /// clients on this machine.
    pub(super) fn set_loopback_listener(&self) {
        self.loopback_listener.store(true, Ordering::Relaxed);
    }

    /// Whether a request from `peer` with this `Host` field may be served.
    pub(super) fn admits(&self, host: Option<&[u8]>, peer: PeerAddr) -> bool {
        let PeerAddr::Tcp(peer) = peer else {
            return true;
        };
        let checked = !self.any
            && (!self.names.is_empty()
                || (self.loopback_listener.load(Ordering::Relaxed)
                    && peer.ip().to_canonical().is_loopback()));
        let Some(host) = host.filter(|_| checked) else {
            return true;
        };
        let name = host_name(host);
        name.eq_ignore_ascii_case(b"localhost")
            || std::str::from_utf8(name)
                .ok()
                .and_then(|n| n.parse::<IpAddr>().ok())
                .is_some_and(|ip| ip.to_canonical().is_loopback())
            || self
                .names
                .iter()
                .any(|n| n.as_bytes().eq_ignore_ascii_case(name))
    }
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')
}

/// The host of a `Host` field: without its port, an IPv6 literal without its brackets.
fn host_name(host: &[u8]) -> &[u8] {
    if let Some(rest) = host.strip_prefix(b"[") {
        let end = rest.iter().position(|&b| b == b']').unwrap_or(rest.len());
        return &rest[..end];
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(colon) => &host[..colon],
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> PeerAddr {
        PeerAddr::Tcp("127.0.0.1:50000".parse().unwrap())
    }

    #[test]
    fn loopback_names_pass_others_are_refused_on_a_loopback_listener() {
        let check = HostCheck::new(&[]).unwrap();
        // No loopback listener: nothing is checked.
        assert!(check.admits(Some(b"attacker.example"), local()));
        check.set_loopback_listener();
        for ok in [
            "localhost",
            "LocalHost:8080",
            "127.0.0.1",
            "127.9.8.7:1",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(check.admits(Some(ok.as_bytes()), local()), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "10.0.0.1:8080",
            "[::2]",
            "",
        ] {
            assert!(!check.admits(Some(bad.as_bytes()), local()), "{bad}");
        }
        // No Host (HTTP/1.0), the Unix socket, a client elsewhere: not checked.
        assert!(check.admits(None, local()));
        assert!(check.admits(Some(b"attacker.example"), PeerAddr::Unix));
        let remote = PeerAddr::Tcp("192.0.2.1:50000".parse().unwrap());
        assert!(check.admits(Some(b"attacker.example"), remote));
    }

    #[test]
    fn configured_names_are_checked_everywhere() {
        let check = HostCheck::new(&["Files.Example".into(), "[2001:DB8::1]".into()]).unwrap();
        let remote = PeerAddr::Tcp("192.0.2.1:50000".parse().unwrap());
        for ok in [
            "files.example",
            "FILES.example:8443",
            "[2001:db8::1]:80",
            "localhost",
        ] {
            assert!(check.admits(Some(ok.as_bytes()), remote), "{ok}");
        }
        assert!(!check.admits(Some(b"other.example"), remote));
        let any = HostCheck::new(&["*".into()]).unwrap();
        any.set_loopback_listener();
        assert!(any.admits(Some(b"attacker.example"), local()));
        for bad in ["files.example:8080", "http://files.example", "a b", ""] {
            assert!(HostCheck::new(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
