//! Credentials: bearer tokens, each with a name, scopes (read, create, write, delete) and an
//! optional path prefix. `--token` / `WEIR_TOKEN` is one token named `token` with every scope
//! and no prefix; `--token-file` adds any number (format: [`parse_token_file`]). Once any
//! credential is configured, every request on the store needs one: writes (PUT, POST, PATCH),
//! deletes, and reads too unless `--public-read` makes reads open. Private reads are the
//! default because a token file on `0.0.0.0` used to leave the whole store world-readable
//! (issue 35); public reads are a choice the operator states.
//!
//! A request that presents an `Authorization` the service does not know is refused (401) even
//! where no credential is needed (public reads): a client with a wrong token learns it at once
//! rather than being served as anonymous.
//!
//! `create` allows uploads that cannot replace a file: the upload must be conditional on the
//! target's absence (`If-None-Match: *`, judged by the store atomically with the commit, as for
//! any client that sends it); one without it is refused with 403 before its body
//! (`Credential::may_replace`, checked in `service.rs`). `write` is `create` and replacing.
//!
//! The name is what the access log, the hooks and the webhooks show of who made a request
//! (`name=` in the token file; `line-N` when absent); never the token or its hash.
//!
//! Matching takes the same time whatever the presented value: it is hashed with SHA-256 first
//! (so neither the length nor a common prefix of a token shows in the timing), then compared
//! with every configured hash with `subtle`'s constant-time equality, without stopping at a
//! match. The file may hold the hashes only (`sha256:HEX`), so that reading it does not give
//! the tokens away.
//!
//! The service answers 401 (no or unknown credential) or 403 (a credential without the scope,
//! or outside its prefix) before reading any of the body, and so never sends `100 Continue` to
//! a refused upload.
//!
//! `Authorization` is a singleton field (RFC 9110 §11.6.2): a request with two is refused with
//! 400 ([`authorization`]) rather than judged by one of them, so that weir and any proxy in front
//! of it cannot disagree about which credential a request carried.
//!
//! The S3 API (`routes/s3/`) takes the same credentials: a token file line with the token in
//! clear and a `name=` is also an access key (id: the name; secret: the token), judged by the
//! same scopes and prefix (`Auth::s3_credential`).
//!
//! The browser page's download links cannot send a header, so for reads of `/files/` (and
//! nothing else) the token is also accepted from the cookie [`COOKIE`], which the page sets
//! (`Path=/files/; SameSite=Strict`) when the token is entered. Reads only: a cookie is sent
//! with requests the user did not make from the page, and `SameSite=Strict` keeps other sites'
//! requests from carrying it, but a write must never depend on that (no cross-site request
//! forgery of uploads or deletes). A short-lived signed URL was the other way; it would need a
//! server-side key and would put a credential into URLs (history, logs, `Referer`).

use sha2::{Digest, Sha256};
use subtle::{ConditionallySelectable, ConstantTimeEq};

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// GET, HEAD.
    Read,
    /// PUT, POST, PATCH.
    Write,
    /// DELETE.
    Delete,
}

impl Access {
    fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Write => 2,
            Self::Delete => 4,
        }
    }

    /// The scope bits any of which allows this access: a write is allowed by `write` and, for
    /// uploads that cannot replace, by `create` ([`Credential::may_replace`]).
    fn bits(self) -> u8 {
        match self {
            Self::Write => Self::Write.bit() | CREATE,
            other => other.bit(),
        }
    }
}

/// The `create` scope's bit: uploads that may not replace a file.
const CREATE: u8 = 8;

/// One token: its hash, its scopes, the part of the store it may touch.
#[derive(Clone)]
pub struct Credential {
    /// What logs and hooks show of who made a request; never the token.
    name: std::sync::Arc<str>,
    sha256: [u8; 32],
    /// `Access::bit`s.
    scopes: u8,
    /// A store path prefix, whole segments, without a trailing `/`; `None`: everywhere.
    prefix: Option<String>,
    /// The token itself, kept only for a line that gives it in clear with a `name=`: the S3
    /// API's secret access key for the access key id `name` (`routes/s3/access.rs`). SigV4
    /// signs with the secret, so a `sha256:` line cannot be an S3 credential.
    s3_secret: Option<std::sync::Arc<str>>,
}

impl Credential {
    /// Whether this credential may do `access` on `path` (a decoded store path; `None` for a
    /// request not on a path: resumable uploads, `/metrics`, which a prefix does not cover).
    pub fn allows(&self, access: Access, path: Option<&str>) -> bool {
        if self.scopes & access.bits() == 0 {
            return false;
        }
        match (&self.prefix, path) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(prefix), Some(path)) => path
                .strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        }
    }
}

impl Credential {
    /// The scopes' names (for the pre-upload hook).
    pub fn scope_names(&self) -> Vec<&'static str> {
        [
            (Access::Read.bit(), "read"),
            (CREATE, "create"),
            (Access::Write.bit(), "write"),
            (Access::Delete.bit(), "delete"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.scopes & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }

    /// Whether its uploads may replace a file (`write`); a `create`-only credential's must be
    /// conditional on the target's absence (`If-None-Match: *`).
    pub fn may_replace(&self) -> bool {
        self.scopes & Access::Write.bit() != 0
    }

    /// Its name, for logs and hooks.
    pub fn name(&self) -> &std::sync::Arc<str> {
        &self.name
    }

    /// The path prefix the credential is confined to, if any.
    pub fn prefix(&self) -> Option<&str> {
        self.prefix.as_deref()
    }

    /// The S3 API's secret access key of this credential (its access key id is its name), if
    /// it has one: a token file line with the token in clear and a `name=`.
    pub fn s3_secret(&self) -> Option<&str> {
        self.s3_secret.as_deref()
    }
}

/// Who sent a request, for routes whose store path is known only after a look at the request
/// or the store (tus creation, uploads by id).
#[derive(Clone, Copy, Debug)]
pub enum Caller<'a> {
    /// No credential is needed for the access.
    Open,
    /// A configured credential.
    Known(&'a Credential),
    /// None, or an unknown one: 401.
    Unknown,
}

impl Caller<'_> {
    /// Judges `access` on `path` (`None`: not known yet: only the scope is judged).
    pub fn check(self, access: Access, path: Option<&str>) -> Verdict {
        match self {
            Self::Open => Verdict::Allowed,
            Self::Unknown => Verdict::Unauthorized,
            Self::Known(c) if c.scopes & access.bits() == 0 => Verdict::Forbidden,
            Self::Known(_) if path.is_none() => Verdict::Allowed,
            Self::Known(c) if c.allows(access, path) => Verdict::Allowed,
            Self::Known(_) => Verdict::Forbidden,
        }
    }

    /// Whether the caller is confined to a path prefix.
    pub fn confined(self) -> bool {
        matches!(self, Self::Known(c) if c.prefix.is_some())
    }
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the hash.
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("scopes", &self.scopes)
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// Who may do what.
#[derive(Clone, Default)]
pub struct Auth {
    credentials: Vec<Credential>,
    /// How many of `credentials` come first from `--token` (the rest from `--token-file`,
    /// which SIGHUP reads again: [`Auth::with_file_credentials`]).
    fixed: usize,
    /// `--public-read`: reads need no credential even when some are configured.
    public_reads: bool,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a token, not even its hash.
        f.debug_struct("Auth")
            .field("credentials", &self.credentials.len())
            .field("public_reads", &self.public_reads)
            .finish()
    }
}

/// The outcome of a credential check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// No credential, or an unknown one: 401.
    Unauthorized,
    /// A known credential without the scope or outside its prefix: 403.
    Forbidden,
}

impl Auth {
    /// `token`: one token with every scope, named `token`, if any; `public_reads`: reads need
    /// no credential (`--public-read`).
    pub fn new(token: Option<&str>, public_reads: bool) -> Self {
        let credentials = token
            .map(|t| Credential {
                name: "token".into(),
                sha256: Sha256::digest(t.as_bytes()).into(),
                scopes: 15,
                prefix: None,
                s3_secret: None,
            })
            .into_iter()
            .collect::<Vec<_>>();
        let fixed = credentials.len();
        Self {
            credentials,
            fixed,
            public_reads,
        }
    }

    /// Adds the credentials of a token file.
    pub fn with_credentials(mut self, credentials: Vec<Credential>) -> Self {
        self.credentials.extend(credentials);
        self
    }

    /// These requirements with the token file's credentials replaced by `credentials` (a
    /// reload of the file; `--token`'s credential and `--public-read` stay).
    pub fn with_file_credentials(&self, credentials: Vec<Credential>) -> Self {
        let mut all = self.credentials[..self.fixed].to_vec();
        all.extend(credentials);
        Self {
            credentials: all,
            fixed: self.fixed,
            public_reads: self.public_reads,
        }
    }

    /// Whether any credential is configured.
    pub fn any(&self) -> bool {
        !self.credentials.is_empty()
    }

    /// Whether `access` needs a credential: everything when one is configured, but reads
    /// with `--public-read`.
    pub fn required(&self, access: Access) -> bool {
        self.any() && (access != Access::Read || !self.public_reads)
    }

    /// Whether reads are open to anyone: no credential configured, or `--public-read`.
    pub fn public_reads(&self) -> bool {
        !self.any() || self.public_reads
    }

    /// Whether `authorization` is a credential this service does not know (answer 401 even
    /// where none is needed: see the module's documentation). `false` without credentials
    /// configured: there is nothing to judge it by.
    pub fn rejects(&self, authorization: Option<&[u8]>) -> bool {
        self.any() && authorization.is_some() && self.identify(authorization).is_none()
    }

    /// The credential whose S3 access key id is `access_key_id` ([`Credential::s3_secret`]).
    /// The id is not secret (it travels in clear in every signed request), so a plain search
    /// is fine; the signature check that follows is constant-time (weir-s3api).
    pub fn s3_credential(&self, access_key_id: &str) -> Option<&Credential> {
        self.credentials
            .iter()
            .find(|c| c.s3_secret.is_some() && &*c.name == access_key_id)
    }

    /// The configured credential an `Authorization` value carries, if any.
    pub fn identify(&self, authorization: Option<&[u8]>) -> Option<&Credential> {
        if self.credentials.is_empty() {
            return None;
        }
        self.find(authorization.and_then(bearer_token)?)
    }

    /// The configured credential an `Authorization` value carries as WebDAV clients send it:
    /// `Bearer TOKEN`, or `Basic` with the token as the password and any user name (file
    /// managers speak nothing else; `routes/webdav/`).
    pub fn identify_bearer_or_basic(&self, authorization: Option<&[u8]>) -> Option<&Credential> {
        if self.credentials.is_empty() {
            return None;
        }
        let value = authorization?;
        if let Some(token) = bearer_token(value) {
            return self.find(token);
        }
        // ALLOCATION: the decoded `user:password`, once per request that sends Basic.
        let decoded = basic_credentials(value)?;
        let colon = decoded.iter().position(|&b| b == b':')?;
        self.find(&decoded[colon + 1..])
    }

    /// Judges a WebDAV request doing `access` on `path` as [`Auth::check`], with the
    /// credential read by [`Auth::identify_bearer_or_basic`].
    pub fn check_bearer_or_basic(
        &self,
        authorization: Option<&[u8]>,
        access: Access,
        path: Option<&str>,
    ) -> Verdict {
        let credential = self.identify_bearer_or_basic(authorization);
        if self.any() && authorization.is_some() && credential.is_none() {
            return Verdict::Unauthorized;
        }
        if !self.required(access) {
            return Verdict::Allowed;
        }
        match credential {
            None => Verdict::Unauthorized,
            Some(c) if c.allows(access, path) => Verdict::Allowed,
            Some(_) => Verdict::Forbidden,
        }
    }

    /// The credential whose token is `presented`. Every entry is compared; the index of a
    /// match is selected without a branch.
    fn find(&self, presented: &[u8]) -> Option<&Credential> {
        let presented: [u8; 32] = Sha256::digest(presented).into();
        let mut found = subtle::Choice::from(0);
        let mut index = 0u32;
        for (i, c) in self.credentials.iter().enumerate() {
            let equal = presented.ct_eq(&c.sha256);
            index = u32::conditional_select(&index, &(i as u32), equal);
            found |= equal;
        }
        bool::from(found).then(|| &self.credentials[index as usize])
    }

    /// Judges a request doing `access` on `path` (see [`Credential::allows`]). A read that
    /// needs no credential is allowed unless it carries an unknown one.
    pub fn check(
        &self,
        authorization: Option<&[u8]>,
        access: Access,
        path: Option<&str>,
    ) -> Verdict {
        if self.rejects(authorization) {
            return Verdict::Unauthorized;
        }
        if !self.required(access) {
            return Verdict::Allowed;
        }
        match self.identify(authorization) {
            None => Verdict::Unauthorized,
            Some(c) if c.allows(access, path) => Verdict::Allowed,
            Some(_) => Verdict::Forbidden,
        }
    }
}

impl Auth {
    /// Who a request doing `access` is (a `Caller`).
    pub fn caller(&self, authorization: Option<&[u8]>, access: Access) -> Caller<'_> {
        if !self.required(access) {
            return Caller::Open;
        }
        match self.identify(authorization) {
            Some(c) => Caller::Known(c),
            None => Caller::Unknown,
        }
    }
}

/// Reads and parses the token file at `path` ([`parse_token_file`]); the error is every
/// mistake, one per line, each with the file's name.
pub fn read_token_file(path: &std::path::Path) -> Result<Vec<Credential>, String> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the token file {name}: {e}"))?;
    parse_token_file(&text).map_err(|mistakes| {
        mistakes
            .iter()
            .map(|m| format!("{name}: {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// Parses a token file: one credential per line, `TOKEN SCOPES [PREFIX] [name=NAME]`, blank
/// lines and lines starting with `#` ignored.
///
/// - `TOKEN`: the token itself, or `sha256:` and the 64 hex digits of its SHA-256 (so the file
///   need not hold the token: `printf %s TOKEN | sha256sum`);
/// - `SCOPES`: `read`, `create`, `write`, `delete`, comma-separated;
/// - `PREFIX`: a store path (`photos/2024`) the token is confined to, whole segments;
/// - `name=NAME`: who the token is, in logs and hooks (`line-N` when absent). A line with the
///   token in clear and a name is also an S3 credential of `--s3-api` (access key id `NAME`,
///   secret access key `TOKEN`: [`Credential::s3_secret`]); a `sha256:` line cannot be one,
///   since Signature V4 signs with the secret itself.
///
/// Errors: one line per mistake, with its line number.
pub fn parse_token_file(text: &str) -> Result<Vec<Credential>, Vec<String>> {
    let mut credentials = Vec::new();
    let mut mistakes = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line, n + 1) {
            Ok(c) => credentials.push(c),
            Err(e) => mistakes.push(format!("line {}: {e}", n + 1)),
        }
    }
    if mistakes.is_empty() {
        Ok(credentials)
    } else {
        Err(mistakes)
    }
}

fn parse_line(line: &str, number: usize) -> Result<Credential, String> {
    let mut fields = line.split_ascii_whitespace();
    let token = fields.next().unwrap_or_default();
    let scopes_text = fields.next().ok_or(
        "expected TOKEN SCOPES [PREFIX] [name=NAME] (scopes: read, create, write, delete)",
    )?;
    let (mut prefix, mut name) = (None, None);
    for field in fields {
        match field.strip_prefix("name=") {
            Some(_) if name.is_some() => return Err("name= given twice".into()),
            Some(n) => name = Some(n),
            None if prefix.is_none() => prefix = Some(field),
            None => {
                return Err("expected TOKEN SCOPES [PREFIX] [name=NAME]: too many fields".into());
            }
        }
    }
    // Logged as is: visible ASCII without quotes or backslashes, so a name never needs escaping
    // in a log line or a hook's environment.
    let named = name.is_some();
    let name = match name {
        None => format!("line-{number}"),
        Some(n) => {
            let valid = !n.is_empty()
                && n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._@+-".contains(&b));
            if !valid {
                return Err(format!(
                    "invalid name {n:?} (1 to 64 of letters, digits and . _ @ + -)"
                ));
            }
            n.to_owned()
        }
    };
    let sha256 = match token.strip_prefix("sha256:") {
        Some(hex) => parse_hex(hex).ok_or("sha256: must be followed by 64 hex digits")?,
        None => Sha256::digest(token.as_bytes()).into(),
    };
    // A token in clear with a name is also an S3 credential (access key id = the name).
    let s3_secret = (named && !token.starts_with("sha256:")).then(|| token.into());
    let mut scopes = 0;
    for scope in scopes_text.split(',') {
        scopes |= match scope {
            "read" => Access::Read.bit(),
            "create" => CREATE,
            "write" => Access::Write.bit(),
            "delete" => Access::Delete.bit(),
            other => {
                return Err(format!(
                    "unknown scope {other:?} (read, create, write, delete)"
                ));
            }
        };
    }
    let prefix = match prefix {
        None => None,
        Some(p) => {
            let p = p.trim_matches('/');
            let valid =
                !p.is_empty() && p.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
            if !valid {
                return Err(format!("invalid path prefix {p:?}"));
            }
            Some(p.to_owned())
        }
    };
    Ok(Credential {
        name: name.into(),
        sha256,
        scopes,
        prefix,
        s3_secret,
    })
}

fn parse_hex(text: &str) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let mut out = [0; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The cookie the browser page sets for its download links (its value percent-encoded).
pub const COOKIE: &str = "weir-token";

impl Auth {
    /// The credential the request's `weir-token` cookie carries, if any. For reads only (see
    /// the module's documentation); `Cookie` may come as several fields (HTTP/2 splits it).
    pub fn identify_cookie(&self, request: &weir::Request) -> Option<&Credential> {
        if self.credentials.is_empty() {
            return None;
        }
        request
            .header_all("cookie")
            .flat_map(|field| field.split(|&b| b == b';'))
            .filter_map(|pair| {
                let pair = std::str::from_utf8(pair.trim_ascii()).ok()?;
                let value = pair.strip_prefix(COOKIE)?.strip_prefix('=')?;
                // ALLOCATION: the decoded token, once per read that carries the cookie.
                super::percent_decode(value).ok()
            })
            .find_map(|presented| self.find(presented.as_bytes()))
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

/// The decoded `user:password` of a `Basic` credential (RFC 7617), scheme case-insensitive.
fn basic_credentials(value: &[u8]) -> Option<Vec<u8>> {
    let value = std::str::from_utf8(value.trim_ascii()).ok()?;
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    super::base64::decode(rest.trim())
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
    use Access::*;

    #[test]
    fn basic_carries_the_token_as_its_password() {
        let a = Auth::new(Some("s3cret"), false);
        // "anyone:s3cret", "x:wrong", and a password with a colon in it.
        assert!(
            a.identify_bearer_or_basic(Some(b"Basic YW55b25lOnMzY3JldA=="))
                .is_some()
        );
        assert!(
            a.identify_bearer_or_basic(Some(b"basic eDp3cm9uZw=="))
                .is_none()
        );
        assert!(a.identify_bearer_or_basic(Some(b"Bearer s3cret")).is_some());
        assert_eq!(
            a.check_bearer_or_basic(Some(b"Basic eDp3cm9uZw=="), Read, None),
            Verdict::Unauthorized
        );
        // The bearer-only check does not take Basic: /files/ is unchanged.
        assert!(a.identify(Some(b"Basic YW55b25lOnMzY3JldA==")).is_none());
    }

    #[test]
    fn no_token_allows_everything() {
        let a = Auth::new(None, true);
        assert!(!a.required(Write));
        assert_eq!(a.check(None, Delete, Some("x")), Verdict::Allowed);
    }

    #[test]
    fn token_checks() {
        let a = Auth::new(Some("s3cret"), true);
        assert!(a.required(Write) && a.required(Delete));
        assert!(!a.required(Read), "--public-read");
        assert!(
            Auth::new(Some("x"), false).required(Read),
            "private reads by default"
        );
        let ok = |v: &[u8]| a.identify(Some(v)).is_some();
        assert!(ok(b"Bearer s3cret"));
        assert!(ok(b"bearer   s3cret "));
        assert!(!ok(b"Bearer s3cre"));
        assert!(!ok(b"Bearer s3cret2"));
        assert!(!ok(b"Basic s3cret"));
        assert!(!ok(b"Bearer"));
        assert!(!ok(b"s3cret"));
        assert!(a.identify(None).is_none());
        assert!(!format!("{a:?}").contains("s3cret"));
    }

    #[test]
    fn scopes_and_prefixes() {
        let hash = hex_of(b"h4sh");
        let file = format!(
            "# comment\n\nreader read name=alice\nwriter read,write photos/2024/\n\
             sha256:{hash} delete\nmaker create name=bob@lab\n"
        );
        let a = Auth::new(Some("admin"), true).with_credentials(parse_token_file(&file).unwrap());
        let v = |token: &str, access, path| {
            a.check(Some(format!("Bearer {token}").as_bytes()), access, path)
        };
        use Verdict::*;
        assert_eq!(v("reader", Read, Some("a")), Allowed);
        assert_eq!(v("reader", Write, Some("a")), Forbidden);
        assert_eq!(v("writer", Write, Some("photos/2024/x.jpg")), Allowed);
        assert_eq!(v("writer", Write, Some("photos/2024")), Allowed);
        assert_eq!(v("writer", Write, Some("photos/2024x/y")), Forbidden);
        assert_eq!(v("writer", Write, Some("photos")), Forbidden);
        assert_eq!(
            v("writer", Write, None),
            Forbidden,
            "uploads by id: no prefix known"
        );
        assert_eq!(v("writer", Delete, Some("photos/2024/x.jpg")), Forbidden);
        assert_eq!(v("h4sh", Delete, Some("anything")), Allowed);
        assert_eq!(v("h4sh", Write, Some("anything")), Forbidden);
        assert_eq!(v("admin", Delete, None), Allowed);
        assert_eq!(v("nobody", Write, Some("a")), Unauthorized);
        assert_eq!(a.check(None, Write, Some("a")), Unauthorized);
        assert_eq!(a.check(None, Read, Some("a")), Allowed, "reads are public");
        assert_eq!(
            v("nobody", Read, Some("a")),
            Unauthorized,
            "a wrong token is refused"
        );
        assert_eq!(v("maker", Write, Some("a")), Allowed);
        assert_eq!(v("maker", Read, Some("a")), Allowed, "public reads");
        assert_eq!(v("maker", Delete, Some("a")), Forbidden);
        let name = |token: &str| {
            let c = a
                .identify(Some(format!("Bearer {token}").as_bytes()))
                .unwrap();
            (c.name().to_string(), c.may_replace(), c.scope_names())
        };
        assert_eq!(name("reader"), ("alice".into(), false, vec!["read"]));
        assert_eq!(
            name("writer"),
            ("line-4".into(), true, vec!["read", "write"])
        );
        assert_eq!(name("maker"), ("bob@lab".into(), false, vec!["create"]));
        assert_eq!(name("admin").0, "token");
        assert!(name("admin").1);
        let private = Auth::new(None, false).with_credentials(parse_token_file(&file).unwrap());
        let v = |token: Option<&str>, access| {
            let header = token.map(|t| format!("Bearer {t}"));
            private.check(header.as_deref().map(str::as_bytes), access, Some("a"))
        };
        assert_eq!(v(None, Read), Unauthorized, "reads are private with tokens");
        assert_eq!(v(Some("nobody"), Read), Unauthorized);
        assert_eq!(v(Some("reader"), Read), Allowed);
        assert_eq!(v(Some("h4sh"), Read), Forbidden);
        assert_eq!(v(Some("maker"), Read), Forbidden, "create is not read");
        assert!(!private.public_reads() && Auth::new(None, false).public_reads());
    }

    fn hex_of(token: &[u8]) -> String {
        Sha256::digest(token)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    #[test]
    fn token_file_mistakes_are_one_line_each() {
        let e = parse_token_file(
            "ok read\nlonely\nt readd\nsha256:abc read\nt read a/../b\nt read a b\n\
             t read name=a\"b\nt read name=a name=b\n",
        )
        .unwrap_err();
        assert_eq!(e.len(), 7, "{e:#?}");
        assert!(e[0].starts_with("line 2: expected TOKEN SCOPES"), "{e:#?}");
        assert!(
            e[1].starts_with("line 3: unknown scope \"readd\""),
            "{e:#?}"
        );
        assert!(e[2].starts_with("line 4: sha256:"), "{e:#?}");
        assert!(e[3].starts_with("line 5: invalid path prefix"), "{e:#?}");
        assert!(
            e[4].starts_with("line 6: expected TOKEN SCOPES [PREFIX] [name=NAME]: too many"),
            "{e:#?}"
        );
        assert!(e[5].starts_with("line 7: invalid name"), "{e:#?}");
        assert!(e[6].starts_with("line 8: name= given twice"), "{e:#?}");
    }

    #[test]
    fn s3_credentials_are_named_clear_tokens() {
        let hash = hex_of(b"hashed");
        let text =
            format!("clear1 read,write name=alice\nclear2 read\nsha256:{hash} read name=bob\n");
        let auth =
            Auth::new(Some("flag-token"), false).with_credentials(parse_token_file(&text).unwrap());
        let alice = auth.s3_credential("alice").expect("a named clear token");
        assert_eq!(alice.s3_secret(), Some("clear1"));
        assert!(alice.allows(Access::Write, Some("bucket/key")));
        // Unnamed (`line-2`), hashed, and `--token`'s: no S3 credential.
        assert!(auth.s3_credential("line-2").is_none());
        assert!(auth.s3_credential("bob").is_none());
        assert!(auth.s3_credential("token").is_none());
    }
}
