//! The manifest of an S3 resumable upload: its recorded state (target, length, offset, parts,
//! tail, hash state, lease, kept conditions) as lines of text, written whole and parsed
//! strictly: a manifest that is not consistent is no upload rather than a wrong one.

use super::*;

/// The manifest: the recorded state of an upload (see the module doc). Serialized as lines
/// `name value`; `-` for an absent value; one `part NUMBER ETAG` line per part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Manifest {
    pub(super) target: String,
    pub(super) length: Option<u64>,
    pub(super) offset: u64,
    pub(super) part_size: u64,
    /// Seconds since the epoch.
    pub(super) expires: u64,
    /// Bumped by every write.
    pub(super) generation: u64,
    pub(super) media_type: Option<String>,
    /// The `Repr-Digest` announced at creation, as its header value.
    pub(super) digest: Option<String>,
    pub(super) upload_id: Option<String>,
    /// The tail object's name (under the upload's directory), when `offset % part_size > 0`.
    pub(super) tail: Option<String>,
    pub(super) sha256: [u8; SAVED_LEN],
    pub(super) parts: Vec<(u16, String)>,
    /// Completed: kept (without parts, tail or multipart upload) so that a `HEAD` says so.
    pub(super) complete: bool,
    /// tus's `Upload-Metadata`, verbatim (one line): written only when there is one, so
    /// manifests from before it still parse.
    pub(super) metadata: Option<String>,
    /// The creating request's preconditions, a line `condition NAME VALUE` each: written only
    /// when there are some, so manifests from before them still parse (and a node from before
    /// them refuses a manifest that has some, as damaged, rather than complete it unchecked).
    pub(super) condition: Vec<(String, String)>,
}

const MANIFEST_VERSION: &str = "weir-upload 1";

impl Manifest {
    pub(super) fn to_text(&self) -> String {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
        // ALLOCATION: the manifest's text, once per write (per part, per request end).
        let mut s = String::with_capacity(512 + self.parts.len() * 48);
        let _ = writeln!(s, "{MANIFEST_VERSION}");
        let _ = writeln!(s, "target {}", self.target);
        let _ = writeln!(
            s,
            "length {}",
            self.length
                .map_or_else(|| "-".to_owned(), |l| l.to_string())
        );
        let _ = writeln!(s, "offset {}", self.offset);
        let _ = writeln!(s, "part-size {}", self.part_size);
        let _ = writeln!(s, "expires {}", self.expires);
        let _ = writeln!(s, "generation {}", self.generation);
        let _ = writeln!(s, "media-type {}", opt(&self.media_type));
        let _ = writeln!(s, "digest {}", opt(&self.digest));
        let _ = writeln!(s, "upload-id {}", opt(&self.upload_id));
        let _ = writeln!(s, "tail {}", opt(&self.tail));
        let _ = writeln!(s, "sha256 {}", hex(&self.sha256));
        let _ = writeln!(s, "complete {}", u8::from(self.complete));
        if let Some(m) = &self.metadata {
            let _ = writeln!(s, "metadata {m}");
        }
        for (name, value) in &self.condition {
            let _ = writeln!(s, "condition {name} {value}");
        }
        for (n, etag) in &self.parts {
            let _ = writeln!(s, "part {n} {etag}");
        }
        s
    }

    /// Parses a manifest; `None` for anything malformed or inconsistent (a damaged manifest
    /// is no upload, never a wrong one).
    pub(super) fn parse(text: &str) -> Option<Manifest> {
        let mut lines = text.lines();
        if lines.next()? != MANIFEST_VERSION {
            return None;
        }
        let mut m = Manifest {
            target: String::new(),
            length: None,
            offset: 0,
            part_size: 0,
            expires: 0,
            generation: 0,
            media_type: None,
            digest: None,
            upload_id: None,
            tail: None,
            sha256: [0; SAVED_LEN],
            parts: Vec::new(),
            complete: false,
            metadata: None,
            condition: Vec::new(),
        };
        let opt = |v: &str| (v != "-").then(|| v.to_owned());
        let mut sha = None;
        for line in lines {
            let (name, value) = line.split_once(' ')?;
            match name {
                "target" => m.target = value.to_owned(),
                "length" => m.length = opt(value).map(|v| v.parse()).transpose().ok()?,
                "offset" => m.offset = value.parse().ok()?,
                "part-size" => m.part_size = value.parse().ok()?,
                "expires" => m.expires = value.parse().ok()?,
                "generation" => m.generation = value.parse().ok()?,
                "media-type" => m.media_type = opt(value),
                "digest" => m.digest = opt(value),
                "upload-id" => m.upload_id = opt(value),
                "tail" => m.tail = opt(value),
                "sha256" => sha = parse_state(value),
                "complete" => m.complete = value == "1",
                "metadata" => m.metadata = Some(value.to_owned()),
                "condition" => {
                    let (field, v) = value.split_once(' ')?;
                    if !valid_condition(field, v) {
                        return None;
                    }
                    m.condition.push((field.to_owned(), v.to_owned()));
                }
                "part" => {
                    let (n, etag) = value.split_once(' ')?;
                    m.parts.push((n.parse().ok()?, etag.to_owned()));
                }
                _ => return None,
            }
        }
        m.sha256 = sha?;
        let state = ResumableSha256::from_bytes(&m.sha256)?;
        let whole = m.offset.checked_div(m.part_size)?;
        if m.complete {
            let done = state.len() == m.offset
                && StorePath::parse(&m.target).is_ok()
                && m.parts.is_empty()
                && m.tail.is_none()
                && m.upload_id.is_none();
            return done.then_some(m);
        }
        let consistent = state.len() == m.offset
            && StorePath::parse(&m.target).is_ok()
            && m.parts.len() as u64 == whole
            && m.parts
                .iter()
                .enumerate()
                .all(|(i, p)| usize::from(p.0) == i + 1)
            && (m.offset % m.part_size == 0) == m.tail.is_none()
            && (m.parts.is_empty() || m.upload_id.is_some());
        consistent.then_some(m)
    }

    pub(super) fn state(&self) -> S3UploadState {
        S3UploadState {
            target: StorePath::parse(&self.target).expect("checked when parsed or created"),
            offset: self.offset,
            length: self.length,
            expires: self.expires,
            complete: self.complete,
            metadata: self.metadata.clone(),
            expected_digest: self.digest.clone(),
            condition: self.condition.clone(),
        }
    }
}

pub(super) fn parse_state(text: &str) -> Option<[u8; SAVED_LEN]> {
    let text = text.as_bytes();
    if text.len() != 2 * SAVED_LEN {
        return None;
    }
    let mut out = [0u8; SAVED_LEN];
    for (b, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *b = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut h = ResumableSha256::new();
        h.update(&[7u8; 12]);
        Manifest {
            target: "a/b c.bin".into(),
            length: Some(30),
            offset: 12,
            part_size: 5,
            expires: 99,
            generation: 4,
            media_type: Some("text/plain; charset=utf-8".into()),
            digest: Some("sha-256=:AAAA:".into()),
            upload_id: Some("u-1".into()),
            tail: Some("tail-4-abcd".into()),
            sha256: h.to_bytes(),
            parts: vec![(1, "\"e1\"".into()), (2, "\"e2\"".into())],
            complete: false,
            metadata: Some("filename aGk=,dir ZA==".into()),
            condition: vec![
                ("if-none-match".into(), "*".into()),
                (
                    "if-unmodified-since".into(),
                    "Sat, 29 Oct 1994 19:43:31 GMT".into(),
                ),
            ],
        }
    }

    #[test]
    fn manifest_round_trips() {
        let m = sample();
        assert_eq!(Manifest::parse(&m.to_text()), Some(m));
        let mut done = sample();
        (done.complete, done.tail, done.upload_id) = (true, None, None);
        done.parts.clear();
        assert_eq!(Manifest::parse(&done.to_text()), Some(done));
    }

    #[test]
    fn conditions_are_kept_and_parsed_strictly() {
        // A manifest from before conditions (no `condition` line) still parses, with none.
        let mut old = sample();
        old.condition.clear();
        let text = old.to_text();
        assert!(!text.contains("condition"), "{text}");
        assert_eq!(Manifest::parse(&text), Some(old));
        // Each kept field comes back, value spaces and all, and reaches the state.
        let m = sample();
        let parsed = Manifest::parse(&m.to_text()).unwrap();
        assert_eq!(parsed.state().condition, m.condition);
        assert_eq!(
            parsed.state().expected_digest.as_deref(),
            Some("sha-256=:AAAA:")
        );
        // A line without a value, an upper-case or empty name, a control byte: no upload.
        let base = sample().to_text();
        for bad in [
            "condition if-match\n",
            "condition If-Match \"a\"\n",
            "condition  *\n",
            "condition if-match \"a\u{7}\"\n",
        ] {
            let text = format!("{base}{bad}");
            assert_eq!(Manifest::parse(&text), None, "{bad:?}");
        }
        assert!(valid_condition("if-none-match", "*"));
        assert!(!valid_condition("if-match", "a\rb"));
    }

    #[test]
    fn inconsistent_manifests_are_refused() {
        // Parts that do not cover offset / part size, a tail at a part boundary, a hash state
        // of another length: each is no upload rather than a wrong one.
        let mut m = sample();
        m.parts.pop();
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let mut m = sample();
        m.tail = None;
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let mut m = sample();
        m.offset = 13;
        assert_eq!(Manifest::parse(&m.to_text()), None);
        let text = sample()
            .to_text()
            .replace("target a/b c.bin", "target ../x");
        assert_eq!(Manifest::parse(&text), None);
        assert_eq!(Manifest::parse("garbage"), None);
    }
}
