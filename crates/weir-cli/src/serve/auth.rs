//! Bearer tokens (`--token`, `WEIR_TOKEN`): writes need `Authorization: Bearer TOKEN`, and
//! reads too with `--token-read`.
//!
//! The comparison takes the same time whatever the presented value: both sides are hashed with
//! SHA-256 first (so neither the length nor a common prefix of the token shows in the timing),
//! then the digests are compared with `subtle`'s constant-time equality. The service answers
//! 401 before reading any of the body (and so never sends `100 Continue` to an unauthorised
//! upload).
//!
//! `Authorization` is a singleton field (RFC 9110 §11.6.2): a request with two is refused with
//! 400 ([`authorization`]) rather than judged by one of them, so that weir and any proxy in front
//! of it cannot disagree about which credential a request carried.
//!
//! The browser page's download links cannot send a header, so for reads of `/files/` (and
//! nothing else) the token is also accepted from the cookie [`COOKIE`], which the page sets
//! (`Path=/files/; SameSite=Strict`) when the token is entered. Reads only: a cookie is sent
//! with requests the user did not make from the page, and `SameSite=Strict` keeps other sites'
//! requests from carrying it, but a write must never depend on that (no cross-site request
//! forgery of uploads or deletes). A short-lived signed URL was the other way; it would need a
//! server-side key and would put a credential into URLs (history, logs, `Referer`).

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Who may do what.
#[derive(Clone)]
pub struct Auth {
    /// SHA-256 of the token; `None`: no token configured, everything is allowed.
    token_sha256: Option<[u8; 32]>,
    /// Reads need the token too.
    reads: bool,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token, not even its hash.
        f.debug_struct("Auth")
            .field("token", &self.token_sha256.map(|_| "<set>"))
            .field("reads", &self.reads)
            .finish()
    }
}

impl Auth {
    /// `token`: the required token, if any; `reads`: whether reads need it too.
    pub fn new(token: Option<&str>, reads: bool) -> Self {
        Self {
            token_sha256: token.map(|t| Sha256::digest(t.as_bytes()).into()),
            reads,
        }
    }

    /// Whether a request needs the token: writes when a token is set, reads with `--token-read`.
    pub fn required(&self, write: bool) -> bool {
        self.token_sha256.is_some() && (write || self.reads)
    }

    /// Whether an `Authorization` header value carries the token.
    pub fn accepts(&self, authorization: Option<&[u8]>) -> bool {
        let Some(expected) = &self.token_sha256 else {
            return true;
        };
        let Some(presented) = authorization.and_then(bearer_token) else {
            return false;
        };
        let presented: [u8; 32] = Sha256::digest(presented).into();
        presented.ct_eq(expected).into()
    }
}

/// The cookie the browser page sets for its download links (its value percent-encoded).
pub const COOKIE: &str = "weir-token";

impl Auth {
    /// Whether the request's `weir-token` cookie carries the token. For reads only (see the module's
    /// documentation); `Cookie` may come as several fields (HTTP/2 splits it).
    pub fn accepts_cookie(&self, request: &weir::Request) -> bool {
        let Some(expected) = &self.token_sha256 else {
            return true;
        };
        request
            .header_all("cookie")
            .flat_map(|field| field.split(|&b| b == b';'))
            .filter_map(|pair| {
                let pair = std::str::from_utf8(pair.trim_ascii()).ok()?;
                let value = pair.strip_prefix(COOKIE)?.strip_prefix('=')?;
                // ALLOCATION: the decoded token, once per read that carries the cookie.
                super::percent_decode(value).ok()
            })
            .any(|presented| {
                let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
                bool::from(presented.ct_eq(expected))
            })
    }
}

/// The request's one `Authorization` field value, if any; an error (answer 400) when it has
/// several.
pub fn authorization(request: &weir::Request) -> Result<Option<&[u8]>, &'static str> {
    let mut values = request.header_all("authorization");
    let first = values.next();
    if values.next().is_some() {
        return Err("more than one Authorization field");
    }
    Ok(first)
}

/// The token of a `Bearer` credential (scheme case-insensitive, RFC 6750 §2.1).
fn bearer_token(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at(value.iter().position(|&b| b == b' ')?);
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.trim_ascii();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_token_allows_everything() {
        let a = Auth::new(None, true);
        assert!(!a.required(true));
        assert!(a.accepts(None));
    }

    #[test]
    fn token_checks() {
        let a = Auth::new(Some("s3cret"), false);
        assert!(a.required(true));
        assert!(!a.required(false));
        assert!(a.accepts(Some(b"Bearer s3cret")));
        assert!(a.accepts(Some(b"bearer   s3cret ")));
        assert!(!a.accepts(Some(b"Bearer s3cre")));
        assert!(!a.accepts(Some(b"Bearer s3cret2")));
        assert!(!a.accepts(Some(b"Basic s3cret")));
        assert!(!a.accepts(Some(b"Bearer")));
        assert!(!a.accepts(Some(b"s3cret")));
        assert!(!a.accepts(None));
        assert!(Auth::new(Some("x"), true).required(false));
        assert!(!format!("{a:?}").contains("s3cret"));
    }
}
