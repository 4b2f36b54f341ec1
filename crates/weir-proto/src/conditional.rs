//! Preconditions (RFC 9110 §13): `If-Match`, `If-None-Match`, `If-Unmodified-Since`,
//! `If-Modified-Since` and `If-Range`, evaluated against the validators of the selected
//! representation, for every method.
//!
//! No I/O and no clock: the caller reads the current representation's validators (under
//! whatever lock makes "check, then act" atomic) and acts on the [`Outcome`].
//!
//! Order (RFC 9110 §13.2.2), each step only when its field is present:
//! 1. `If-Match` (strong comparison; `*` needs a current representation): false → 412;
//! 2. else `If-Unmodified-Since` (only with a current representation): modified since → 412;
//! 3. `If-None-Match` (weak comparison; `*` matches any current representation): a match →
//!    304 for `GET`/`HEAD`, 412 for any other method;
//! 4. else `If-Modified-Since`, for `GET`/`HEAD` with a current representation: not modified
//!    since → 304;
//! 5. `If-Range` ([`if_range_holds`]) is for the `Range` evaluation that follows.
//!
//! A field that cannot be parsed is treated as a list with no usable member (an `If-Match`
//! that names no tag fails, an `If-None-Match` that names none holds); a date field with
//! several values or an invalid date is ignored, as §13.1.3–4 require.
//!
//! Dates are weak validators when another version of the same target had the same
//! `Last-Modified` second ([`Validators::date_shared`], RFC 9110 §8.8.2.2): such a date never
//! matches `If-Range`, and "not modified since" then needs a date strictly after it, so a
//! client holding the earlier version's date is never told that the later one is unchanged.
//!
//! Which request is answered before preconditions (RFC 9110 §13.2.1: a response that would not
//! be 2xx or 412 without them, such as 404 for a `GET` of nothing) is the caller's business:
//! call [`evaluate`] only where the unconditional request would succeed.

use crate::RequestHead;
use http::Method;

/// What the preconditions read of a request: its method and its header fields. Implemented for
/// the core's [`RequestHead`]; a server that keeps its own request type implements it there
/// (weir-cli for `weir::Request`), so this module's callers need no core type.
pub trait RequestFields {
    /// The request method.
    fn method(&self) -> &Method;
    /// Every value of the field `name` (case-insensitive), in order.
    fn field_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a;
    /// The first value of the field `name`.
    fn field<'a>(&'a self, name: &'a str) -> Option<&'a [u8]> {
        self.field_values(name).next()
    }
}

impl RequestFields for RequestHead {
    fn method(&self) -> &Method {
        RequestHead::method(self)
    }

    fn field_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.header_all(name)
    }
}
use std::time::{SystemTime, UNIX_EPOCH};

/// The validators of the selected (current) representation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validators<'a> {
    /// Its strong entity tag, quotes included (`"abc"`).
    pub etag: &'a str,
    /// Its `Last-Modified`, in whole seconds since the Unix epoch.
    pub last_modified: u64,
    /// Another, earlier version of the same target may have carried the same `Last-Modified`
    /// second: the date does not tell them apart.
    pub date_shared: bool,
}

/// What to do with the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every precondition holds (or none was sent): perform the method.
    Proceed,
    /// `304 Not Modified` (only for `GET` and `HEAD`).
    NotModified,
    /// `412 Precondition Failed`: the method must not be performed.
    PreconditionFailed,
}

/// The precondition fields this module evaluates (not `If-Range`, which only qualifies a
/// `Range`).
const FIELDS: [&str; 4] = [
    "if-match",
    "if-none-match",
    "if-unmodified-since",
    "if-modified-since",
];

/// Whether the request carries any precondition: callers skip reading the current
/// representation's validators when it does not.
pub fn has_preconditions(head: &impl RequestFields) -> bool {
    FIELDS.iter().any(|name| head.field(name).is_some())
}

/// Evaluates the preconditions of `head` (RFC 9110 §13.2.2) against the current representation
/// of its target (`None`: there is none).
pub fn evaluate(head: &impl RequestFields, current: Option<&Validators<'_>>) -> Outcome {
    let safe = matches!(*head.method(), Method::GET | Method::HEAD);
    let mut if_match = head.field_values("if-match").peekable();
    if if_match.peek().is_some() {
        let holds = current.is_some_and(|v| {
            if_match.any(|value| {
                EntityTags::new(value).any(|member| match member {
                    Member::Any => true,
                    Member::Tag { weak, opaque } => !weak && opaque == v.etag.as_bytes(),
                    Member::Invalid => false,
                })
            })
        });
        if !holds {
            return Outcome::PreconditionFailed;
        }
    } else if let (Some(v), Some(since)) = (current, single_date(head, "if-unmodified-since")) {
        if modified_since(v, since) {
            return Outcome::PreconditionFailed;
        }
    }
    let mut if_none_match = head.field_values("if-none-match").peekable();
    if if_none_match.peek().is_some() {
        let matched = current.is_some_and(|v| {
            if_none_match.any(|value| {
                EntityTags::new(value).any(|member| match member {
                    Member::Any => true,
                    Member::Tag { opaque, .. } => opaque == v.etag.as_bytes(),
                    Member::Invalid => false,
                })
            })
        });
        if matched {
            return if safe {
                Outcome::NotModified
            } else {
                Outcome::PreconditionFailed
            };
        }
    } else if safe {
        if let (Some(v), Some(since)) = (current, single_date(head, "if-modified-since")) {
            if !modified_since(v, since) {
                return Outcome::NotModified;
            }
        }
    }
    Outcome::Proceed
}

/// Whether `If-Range` (if any) lets a `Range` apply to `current` (RFC 9110 §13.1.5): an
/// entity tag must match strongly (a weak one never does); a date must equal `Last-Modified`
/// exactly and be a strong validator (not [`Validators::date_shared`]).
pub fn if_range_holds(head: &impl RequestFields, current: &Validators<'_>) -> bool {
    let Some(value) = head.field("if-range") else {
        return true;
    };
    let value = value.trim_ascii();
    if value.starts_with(b"\"") || value.starts_with(b"W/") {
        return value == current.etag.as_bytes();
    }
    !current.date_shared
        && std::str::from_utf8(value)
            .ok()
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|date| seconds(date) == current.last_modified)
}

/// Whether the representation changed after `since` (seconds). A shared second may hold an
/// earlier version too, so it counts as a change after any date in that second.
fn modified_since(v: &Validators<'_>, since: u64) -> bool {
    if v.date_shared {
        v.last_modified >= since
    } else {
        v.last_modified > since
    }
}

/// The date of a field sent exactly once with a valid HTTP-date; else `None` (ignored).
fn single_date(head: &impl RequestFields, name: &str) -> Option<u64> {
    let mut values = head.field_values(name);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let value = std::str::from_utf8(value).ok()?.trim();
    httpdate::parse_http_date(value).ok().map(seconds)
}

/// Whole seconds since the epoch (HTTP dates have one-second resolution).
pub fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// One member of an `If-Match`/`If-None-Match` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member<'a> {
    /// `*`.
    Any,
    /// An entity tag; `opaque` keeps its quotes.
    Tag { weak: bool, opaque: &'a [u8] },
    /// Anything else, up to the next comma.
    Invalid,
}

/// The members of one field value: `#entity-tag` or `*` (RFC 9110 §8.8.3, §13.1.1). Commas
/// inside a quoted tag belong to the tag.
struct EntityTags<'a> {
    rest: &'a [u8],
}

impl<'a> EntityTags<'a> {
    fn new(value: &'a [u8]) -> Self {
        Self { rest: value }
    }
}

impl<'a> Iterator for EntityTags<'a> {
    type Item = Member<'a>;

    fn next(&mut self) -> Option<Member<'a>> {
        let start = self
            .rest
            .iter()
            .position(|&b| !matches!(b, b' ' | b'\t' | b','))?;
        let rest = &self.rest[start..];
        self.rest = rest;
        let (weak, body) = match rest.strip_prefix(b"W/") {
            Some(body) => (true, body),
            None => (false, rest),
        };
        let member = if body.first() == Some(&b'"') {
            // etagc = %x21 / %x23-7E / obs-text: anything visible but DQUOTE.
            match body[1..].iter().position(|&b| b == b'"') {
                Some(close) if body[1..=close].iter().all(|&b| crate::chars::is_etagc(b)) => {
                    let opaque = &body[..close + 2];
                    self.rest = &body[close + 2..];
                    if self.at_member_end() {
                        return Some(Member::Tag { weak, opaque });
                    }
                    Member::Invalid
                }
                _ => Member::Invalid,
            }
        } else if !weak && rest.first() == Some(&b'*') {
            self.rest = &rest[1..];
            if self.at_member_end() {
                return Some(Member::Any);
            }
            Member::Invalid
        } else {
            Member::Invalid
        };
        // Skip the rest of an invalid member, from where its well-formed start ended (a comma
        // inside its quoted tag is the tag's).
        let end = self
            .rest
            .iter()
            .position(|&b| b == b',')
            .unwrap_or(self.rest.len());
        self.rest = &self.rest[end..];
        Some(member)
    }
}

impl EntityTags<'_> {
    /// After a member: only whitespace up to a comma or the end.
    fn at_member_end(&self) -> bool {
        self.rest
            .iter()
            .find(|&&b| !matches!(b, b' ' | b'\t'))
            .is_none_or(|&b| b == b',')
    }
}

#[cfg(test)]
mod tests {
    use super::Outcome::{NotModified, PreconditionFailed, Proceed};
    use super::*;
    use http::Version;

    const TAG: &str = "\"v2\"";
    /// `Last-Modified` of the current version: Sun, 06 Nov 1994 08:49:37 GMT.
    const MODIFIED: u64 = 784_111_777;
    const AT: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
    const BEFORE: &str = "Sun, 06 Nov 1994 08:49:36 GMT";
    const AFTER: &str = "Sun, 06 Nov 1994 08:49:38 GMT";

    fn current(date_shared: bool) -> Validators<'static> {
        Validators {
            etag: TAG,
            last_modified: MODIFIED,
            date_shared,
        }
    }

    fn head(method: Method, fields: &[(&str, &str)]) -> RequestHead {
        let mut head = RequestHead::new();
        head.set_request_line(method, "/files/f", Version::HTTP_11);
        for (name, value) in fields {
            head.push_header(name, value.as_bytes());
        }
        head
    }

    fn eval(method: Method, fields: &[(&str, &str)], current: Option<Validators<'_>>) -> Outcome {
        evaluate(&head(method, fields), current.as_ref())
    }

    fn members(value: &str) -> Vec<Member<'_>> {
        EntityTags::new(value.as_bytes()).collect()
    }

    #[test]
    fn entity_tag_lists() {
        let tag = |weak, s: &'static str| Member::Tag {
            weak,
            opaque: s.as_bytes(),
        };
        assert_eq!(members("*"), [Member::Any]);
        assert_eq!(
            members(" \"a\" , W/\"b\""),
            [tag(false, "\"a\""), tag(true, "\"b\"")]
        );
        assert_eq!(members("\"a,b\""), [tag(false, "\"a,b\"")]);
        assert_eq!(members("\"\""), [tag(false, "\"\"")]);
        assert_eq!(members(",,\"a\",,"), [tag(false, "\"a\"")]);
        assert_eq!(members("a, \"b\""), [Member::Invalid, tag(false, "\"b\"")]);
        assert_eq!(
            members("\"a\"x, \"b\""),
            [Member::Invalid, tag(false, "\"b\"")]
        );
        assert_eq!(members("\"a"), [Member::Invalid]);
        assert_eq!(
            members("\"a,b\"x, \"c\""),
            [Member::Invalid, tag(false, "\"c\"")]
        );
        assert_eq!(members("*x, *"), [Member::Invalid, Member::Any]);
        assert_eq!(members("\"a b\""), [Member::Invalid]);
        assert_eq!(members("W/*"), [Member::Invalid]);
        assert_eq!(members("**"), [Member::Invalid]);
        assert_eq!(members(""), []);
    }

    #[test]
    fn any_precondition_field_is_a_precondition() {
        assert!(!has_preconditions(&head(Method::GET, &[])));
        assert!(!has_preconditions(&head(Method::GET, &[("if-range", TAG)])));
        for name in FIELDS {
            assert!(
                has_preconditions(&head(Method::PUT, &[(name, TAG)])),
                "{name}"
            );
        }
    }

    /// Method, fields, current representation, expected outcome.
    type Case<'a> = (
        &'a Method,
        &'a [(&'a str, &'a str)],
        Option<Validators<'a>>,
        Outcome,
    );

    /// Every rule, for each method kind, with and without a current representation.
    #[test]
    fn evaluation_matrix() {
        let v = Some(current(false));
        let (get, put, delete) = (Method::GET, Method::PUT, Method::DELETE);
        let cases: &[Case<'_>] = &[
            (&get, &[], v, Proceed),
            (&put, &[], None, Proceed),
            // If-Match: strong comparison; `*` needs a current representation.
            (&get, &[("if-match", TAG)], v, Proceed),
            (&get, &[("if-match", "\"v1\"")], v, PreconditionFailed),
            (&get, &[("if-match", "W/\"v2\"")], v, PreconditionFailed),
            (&get, &[("if-match", "\"v1\", \"v2\"")], v, Proceed),
            (
                &get,
                &[("if-match", "\"v1\""), ("if-match", TAG)],
                v,
                Proceed,
            ),
            (&get, &[("if-match", "garbage")], v, PreconditionFailed),
            (&put, &[("if-match", "*")], v, Proceed),
            (&put, &[("if-match", "*")], None, PreconditionFailed),
            (&put, &[("if-match", TAG)], None, PreconditionFailed),
            (&delete, &[("if-match", "\"v1\"")], v, PreconditionFailed),
            // If-Unmodified-Since, only without If-Match and with a current representation.
            (&put, &[("if-unmodified-since", AT)], v, Proceed),
            (&put, &[("if-unmodified-since", AFTER)], v, Proceed),
            (
                &put,
                &[("if-unmodified-since", BEFORE)],
                v,
                PreconditionFailed,
            ),
            (
                &delete,
                &[("if-unmodified-since", BEFORE)],
                v,
                PreconditionFailed,
            ),
            (
                &get,
                &[("if-unmodified-since", BEFORE)],
                v,
                PreconditionFailed,
            ),
            (&put, &[("if-unmodified-since", BEFORE)], None, Proceed),
            (&put, &[("if-unmodified-since", "yesterday")], v, Proceed),
            (
                &put,
                &[("if-unmodified-since", BEFORE), ("if-unmodified-since", AT)],
                v,
                Proceed,
            ),
            (
                &put,
                &[("if-match", TAG), ("if-unmodified-since", BEFORE)],
                v,
                Proceed,
            ),
            // If-None-Match: weak comparison; 304 for GET/HEAD, 412 otherwise.
            (&get, &[("if-none-match", TAG)], v, NotModified),
            (&Method::HEAD, &[("if-none-match", TAG)], v, NotModified),
            (&get, &[("if-none-match", "W/\"v2\"")], v, NotModified),
            (&get, &[("if-none-match", "*")], v, NotModified),
            (&get, &[("if-none-match", "\"v1\"")], v, Proceed),
            (&put, &[("if-none-match", "*")], v, PreconditionFailed),
            (&put, &[("if-none-match", "*")], None, Proceed),
            (&put, &[("if-none-match", TAG)], v, PreconditionFailed),
            (&put, &[("if-none-match", "\"v1\"")], v, Proceed),
            (&delete, &[("if-none-match", "*")], v, PreconditionFailed),
            // If-Modified-Since: GET/HEAD only, ignored after If-None-Match.
            (&get, &[("if-modified-since", AT)], v, NotModified),
            (&get, &[("if-modified-since", AFTER)], v, NotModified),
            (&get, &[("if-modified-since", BEFORE)], v, Proceed),
            (&get, &[("if-modified-since", "nonsense")], v, Proceed),
            (&put, &[("if-modified-since", AT)], v, Proceed),
            (&get, &[("if-modified-since", AT)], None, Proceed),
            (
                &get,
                &[("if-none-match", "\"v1\""), ("if-modified-since", AT)],
                v,
                Proceed,
            ),
            // Order: If-Match fails first (412) even where If-None-Match would say 304.
            (
                &get,
                &[("if-match", "\"v1\""), ("if-none-match", TAG)],
                v,
                PreconditionFailed,
            ),
            (
                &get,
                &[("if-unmodified-since", BEFORE), ("if-modified-since", AT)],
                v,
                PreconditionFailed,
            ),
            (
                &get,
                &[("if-match", TAG), ("if-none-match", TAG)],
                v,
                NotModified,
            ),
        ];
        for (method, fields, current, want) in cases {
            assert_eq!(
                eval((*method).clone(), fields, *current),
                *want,
                "{method} {fields:?} {current:?}"
            );
        }
    }

    /// A date shared with an earlier version is weak: it never says "unchanged".
    #[test]
    fn shared_dates() {
        let v = Some(current(true));
        let get = Method::GET;
        assert_eq!(eval(get.clone(), &[("if-modified-since", AT)], v), Proceed);
        assert_eq!(
            eval(get.clone(), &[("if-modified-since", AFTER)], v),
            NotModified
        );
        assert_eq!(
            eval(Method::PUT, &[("if-unmodified-since", AT)], v),
            PreconditionFailed
        );
        assert_eq!(
            eval(Method::PUT, &[("if-unmodified-since", AFTER)], v),
            Proceed
        );
        // Entity tags are unaffected.
        assert_eq!(eval(get, &[("if-none-match", TAG)], v), NotModified);
    }

    #[test]
    fn if_range() {
        let check = |value: Option<&str>, date_shared| {
            let fields: Vec<_> = value.map(|v| ("if-range", v)).into_iter().collect();
            if_range_holds(&head(Method::GET, &fields), &current(date_shared))
        };
        assert!(check(None, false));
        assert!(check(Some(TAG), false));
        assert!(check(Some(TAG), true));
        assert!(!check(Some("\"v1\""), false));
        assert!(!check(Some("W/\"v2\""), false), "weak tags never match");
        assert!(check(Some(AT), false));
        assert!(!check(Some(AT), true), "a shared date is weak");
        assert!(!check(Some(BEFORE), false));
        assert!(!check(Some(AFTER), false), "a date must match exactly");
        assert!(!check(Some("soon"), false));
    }
}
