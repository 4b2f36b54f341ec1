//! `http://` and `https://host[:port]/path` URLs, just what the client needs.

use super::ClientError;

/// A parsed `http` or `https` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    /// Whether the URL is `https`: TLS, port 443 by default.
    pub(crate) https: bool,
    /// `host:port`, to connect to.
    pub(crate) authority: String,
    /// For the `Host` header.
    pub(crate) host: String,
    /// The path and query, as given (already percent-encoded, or plain ASCII).
    pub(crate) target: String,
}

impl Url {
    pub(crate) fn parse(url: &str) -> Result<Url, ClientError> {
        let bad = |why: &str| ClientError::new(format!("invalid URL {url:?}: {why}"));
        let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(bad("it must start with http:// or https://"));
        };
        let (authority, target) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        if authority.contains('@') {
            return Err(bad("user information is not supported (use --token)"));
        }
        if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(bad(
                "spaces or control characters in the path (percent-encode them)",
            ));
        }
        // A port is present when the part after the last ':' is outside an IPv6 literal.
        let has_port = authority
            .rfind(':')
            .is_some_and(|i| !authority[i..].contains(']'));
        let connect = if has_port {
            authority.to_owned()
        } else {
            format!("{authority}:{}", if https { 443 } else { 80 })
        };
        Ok(Url {
            https,
            authority: connect,
            host: authority.to_owned(),
            target: target.to_owned(),
        })
    }

    /// The host without the port or IPv6 brackets: the name the server's certificate must
    /// carry.
    pub(crate) fn server_name(&self) -> &str {
        let host = match self.host.rfind(':') {
            Some(i) if !self.host[i..].contains(']') => &self.host[..i],
            _ => &self.host,
        };
        host.trim_start_matches('[').trim_end_matches(']')
    }

    /// The path without the query.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("/")
    }
}

/// Percent-encodes a file name for a URL path segment.
pub(crate) fn encode_segment(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let u = Url::parse("http://127.0.0.1:8080/files/a%20b?x=1").unwrap();
        assert_eq!(u.authority, "127.0.0.1:8080");
        assert_eq!(u.host, "127.0.0.1:8080");
        assert_eq!(u.target, "/files/a%20b?x=1");
        assert_eq!(u.path(), "/files/a%20b");
        let u = Url::parse("http://example").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.target.as_str()),
            ("example:80", "/")
        );
        let u = Url::parse("http://[::1]/x").unwrap();
        assert_eq!(u.authority, "[::1]:80");
        let u = Url::parse("http://[::1]:9/x").unwrap();
        assert_eq!(u.authority, "[::1]:9");
        assert_eq!(u.server_name(), "::1");
        assert!(!u.https);
        let u = Url::parse("https://localhost/files/a").unwrap();
        assert!(u.https);
        assert_eq!(u.authority, "localhost:443");
        assert_eq!(u.server_name(), "localhost");
        let u = Url::parse("https://127.0.0.1:8443/").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.server_name()),
            ("127.0.0.1:8443", "127.0.0.1")
        );
        assert_eq!(Url::parse("https://[::1]/").unwrap().authority, "[::1]:443");
        for bad in [
            "ftp://x",
            "http://",
            "http:///x",
            "http://u@x/",
            "http://x/a b",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn encodes_segments() {
        assert_eq!(encode_segment("a b/é.txt"), "a%20b%2F%C3%A9.txt");
    }
}
