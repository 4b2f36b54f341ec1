//! HTTP/2 requests refused before any handler ran, told to
//! [`Config::on_refused`](crate::Config::on_refused) as HTTP/1.1's are.
//!
//! Four kinds: a head `h2` finds malformed (RFC 9113 §8.1.1; reset with PROTOCOL_ERROR, no
//! answer), a head over SETTINGS_MAX_HEADER_LIST_SIZE (`h2` answers 431), a head weir's own
//! checks find malformed (`validate`; reset with PROTOCOL_ERROR), and an `Expect` the limits
//! refuse (answered 417, as over HTTP/1.1). A reset carries no
//! status: it is reported as 400, the status HTTP/1.1 answers a malformed head with, and the
//! reason says it was a reset. `h2` keeps counts of its refusals (weir-h2 patch,
//! `RecvAccounting`); the connection task reads them after each of its turns with the body
//! gauges (the same lock) and reports each new one, without method or target: `h2` has dropped
//! the head. Nothing is allocated; with no callback set, two integer comparisons per turn.

use super::validate::Malformed;
use crate::config::Config;
use crate::transport::PeerAddr;
use h2::server::RecvAccounting;
use http::{Method, StatusCode, Uri};

/// The reason given for a head `h2` reset as malformed.
pub(crate) const MALFORMED: &str = "malformed HTTP/2 request (stream reset PROTOCOL_ERROR)";
/// The reason given for a head `h2` answered with 431.
pub(crate) const OVERSIZE: &str = "request header fields too large";

/// The counts of `h2`'s refusals already reported, for one connection.
#[derive(Debug, Default)]
pub(crate) struct Refusals {
    malformed: u64,
    oversize: u64,
}

impl Refusals {
    /// Reports the refusals `h2` counted since the last call.
    pub(crate) fn report(&mut self, seen: &RecvAccounting, peer: PeerAddr, config: &Config) {
        if seen.malformed_heads == self.malformed && seen.oversize_heads == self.oversize {
            return;
        }
        if let Some(on_refused) = &config.on_refused {
            let tell = |status, reason| {
                on_refused.call(&crate::Refused {
                    peer,
                    status,
                    reason,
                    method: None,
                    target: None,
                })
            };
            for _ in self.malformed..seen.malformed_heads {
                tell(StatusCode::BAD_REQUEST, MALFORMED);
            }
            for _ in self.oversize..seen.oversize_heads {
                tell(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, OVERSIZE);
            }
        }
        self.malformed = seen.malformed_heads;
        self.oversize = seen.oversize_heads;
    }
}

/// Reports a head weir's own checks found malformed (its stream was reset with PROTOCOL_ERROR).
pub(crate) fn malformed(
    fault: Malformed,
    method: &Method,
    uri: &Uri,
    peer: PeerAddr,
    config: &Config,
) {
    let Some(on_refused) = &config.on_refused else {
        return;
    };
    let reason = match fault {
        Malformed::NoPath => "malformed HTTP/2 request: no :path (stream reset PROTOCOL_ERROR)",
        Malformed::ConnectWithoutAuthority => {
            "malformed HTTP/2 request: CONNECT without :authority (stream reset PROTOCOL_ERROR)"
        }
        Malformed::ValueWhitespace => {
            "malformed HTTP/2 request: a field value padded with whitespace (stream reset PROTOCOL_ERROR)"
        }
        Malformed::HostMismatch => {
            "malformed HTTP/2 request: host differs from :authority (stream reset PROTOCOL_ERROR)"
        }
    };
    tell_head(
        StatusCode::BAD_REQUEST,
        reason,
        method,
        uri,
        peer,
        on_refused,
    );
}

/// Reports a head answered `417` for an `Expect` other than `100-continue`
/// ([`Limits::refuse_unknown_expectations`](crate::Limits::refuse_unknown_expectations)).
pub(crate) fn expectation(method: &Method, uri: &Uri, peer: PeerAddr, config: &Config) {
    if let Some(on_refused) = &config.on_refused {
        let error = weir_proto::ProtoError::UnsupportedExpectation;
        tell_head(
            error.status(),
            error.as_str(),
            method,
            uri,
            peer,
            on_refused,
        );
    }
}

/// Tells `on_refused` of a head refused with `status`, with its method and target.
fn tell_head(
    status: StatusCode,
    reason: &'static str,
    method: &Method,
    uri: &Uri,
    peer: PeerAddr,
    on_refused: &crate::OnRefused,
) {
    let target = uri.path_and_query().map(|p| p.as_str().as_bytes());
    on_refused.call(&crate::Refused {
        peer,
        status,
        reason,
        method: Some(method.as_str()).filter(|m| m.len() <= 32),
        target,
    });
}
