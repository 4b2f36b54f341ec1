//! Listings of the bucket: `ListObjectsV2` pages as [`ListPage`]s (`Store::list_page`), the
//! usage sum over every page, and the keys as stored: rusty-s3 asks for `encoding-type=url`
//! and hands keys back encoded, so they are decoded here, once, for every caller.

use super::*;

impl S3Store {
    /// Sends a `ListObjectsV2` (`op` names it in errors) and parses its page.
    pub(super) async fn list_objects(
        &self,
        op: &'static str,
        action: rusty_s3::actions::ListObjectsV2<'_>,
    ) -> Result<rusty_s3::actions::ListObjectsV2Response, StoreError> {
        let url = action.sign(SIGNED_FOR);
        let resp = self.send(op, Method::GET, url, &[], Bytes::new()).await?;
        if !resp.status().is_success() {
            return Err(failure(op, resp).await);
        }
        let body = collect(op, resp).await?;
        let backend = |message: String| StoreError::Backend { op, message };
        let mut page = rusty_s3::actions::ListObjectsV2::parse_response(&body)
            .map_err(|e| backend(e.to_string()))?;
        // rusty-s3 asks for `encoding-type=url` (so that any key survives XML 1.0) and hands the
        // keys back as sent. A server that honoured it says so in the answer; one that did not
        // sent them raw, and those must not be decoded.
        if body
            .windows(URL_ENCODED.len())
            .any(|w| w == URL_ENCODED.as_bytes())
        {
            for c in &mut page.contents {
                c.key = listed_key(&c.key).map_err(backend)?;
            }
            for p in &mut page.common_prefixes {
                p.prefix = listed_key(&p.prefix).map_err(backend)?;
            }
        }
        Ok(page)
    }

    /// Sums the objects under the prefix (`ListObjectsV2`, every page; [`ENTRY_COST`] each, as
    /// `LocalStore` counts a file): what [`S3Store::set_listed_usage`] takes. weir's own objects
    /// (`.weir-…`: locks, digest sidecars) are not counted, nor are other clients' multipart
    /// uploads in progress (their parts are not listed).
    pub async fn list_usage(&self) -> Result<u64, StoreError> {
        let i = &self.inner;
        let mut total = 0u64;
        let mut token: Option<String> = None;
        loop {
            let mut action = i.bucket.list_objects_v2(Some(&i.credentials));
            action.with_prefix(i.prefix.as_str());
            action.with_max_keys(i.list_page);
            if let Some(t) = &token {
                action.with_continuation_token(t.as_str());
            }
            let parsed = self.list_objects("list objects", action).await?;
            for c in &parsed.contents {
                let path = c.key.strip_prefix(&i.prefix).unwrap_or(&c.key);
                if !path.starts_with(".weir-") {
                    total = total.saturating_add(c.size).saturating_add(ENTRY_COST);
                }
            }
            match parsed.next_continuation_token {
                Some(t) if !parsed.contents.is_empty() => token = Some(t),
                _ => return Ok(total),
            }
        }
    }

    /// One `ListObjectsV2` page as a [`ListPage`] (see [`Store::list_page`]).
    pub(super) async fn list_page_once(
        &self,
        dir: Option<&StorePath>,
        after: Option<&str>,
        limit: NonZeroUsize,
    ) -> Result<ListPage, StoreError> {
        let i = &self.inner;
        let base = match dir {
            Some(d) => format!("{}{}/", i.prefix, d.as_str()),
            None => i.prefix.clone(),
        };
        let mut action = i.bucket.list_objects_v2(Some(&i.credentials));
        action.with_prefix(base.as_str());
        action.with_delimiter("/");
        action.with_max_keys(limit.get().min(1000));
        // The page is in key order, where a directory sorts as `name/` (S3 gives no other
        // order), and its cursor is that key's end: `name` for a file, `name/` for a directory.
        // After a directory's cursor, listing starts past every key below it.
        let start_after = after.map(|a| match a.strip_suffix('/') {
            Some(_) => format!("{base}{a}\u{10FFFF}"),
            None => format!("{base}{a}"),
        });
        if let Some(s) = &start_after {
            action.with_start_after(s.as_str());
        }
        let parsed = self.list_objects("list objects", action).await?;
        // (key end, entry): files and directories, in key order.
        let mut found: Vec<(&str, Option<Entry>)> =
            Vec::with_capacity(parsed.contents.len() + parsed.common_prefixes.len());
        for c in &parsed.contents {
            let Some(end) = c.key.strip_prefix(&base) else {
                continue;
            };
            let entry = validate_name(end).is_ok().then(|| Entry {
                name: end.to_owned(),
                size: c.size,
                modified: parse_iso8601(&c.last_modified).unwrap_or(UNIX_EPOCH),
                is_dir: false,
            });
            found.push((end, entry));
        }
        for p in &parsed.common_prefixes {
            let Some(end) = p.prefix.strip_prefix(&base) else {
                continue;
            };
            let name = end.strip_suffix('/').unwrap_or(end);
            let entry = validate_name(name).is_ok().then(|| Entry {
                name: name.to_owned(),
                size: 0,
                modified: UNIX_EPOCH,
                is_dir: true,
            });
            found.push((end, entry));
        }
        found.sort_by(|a, b| a.0.cmp(b.0));
        // When more keys follow, the cursor is the last key end considered, even one whose
        // name is not served (so a page of such names still moves on).
        let next = match (&parsed.next_continuation_token, found.last()) {
            (Some(_), Some((end, _))) => Some((*end).to_owned()),
            _ => None,
        };
        let entries: Vec<Entry> = found.into_iter().filter_map(|(_, e)| e).collect();
        Ok(ListPage { entries, next })
    }
}

/// `2026-11-30T22:40:12.000Z` (ListObjects' `LastModified`) as a time; `None` if malformed.
pub(super) fn parse_iso8601(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// How a `ListObjectsV2` answer says its keys are URL-encoded.
const URL_ENCODED: &str = "<EncodingType>url</EncodingType>";

/// A key of a listing asked with `encoding-type=url`: percent-encoded, a space also as `+` (as
/// S3 and SeaweedFS send it, and botocore decodes it; a `+` of the key itself comes as `%2B`).
/// ALLOCATION: the decoded key, replacing the one the listing parsed.
fn listed_key(encoded: &str) -> Result<String, String> {
    let spaced = encoded.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|key| key.into_owned())
        .map_err(|_| format!("a listed key that is not UTF-8 once decoded: {encoded:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listed_keys_are_decoded() {
        assert_eq!(listed_key("z+1.txt").unwrap(), "z 1.txt");
        assert_eq!(listed_key("a%2Bb%20c%25").unwrap(), "a+b c%");
        assert_eq!(listed_key("%C3%A9").unwrap(), "é");
        assert!(listed_key("%FF").is_err());
    }

    #[test]
    fn list_times_parse() {
        let t = parse_iso8601("1970-01-02T00:00:01.000Z").unwrap();
        assert_eq!(t, UNIX_EPOCH + Duration::from_secs(86_401));
        let t = parse_iso8601("2024-03-01T12:00:00Z").unwrap();
        assert_eq!(httpdate::fmt_http_date(t), "Fri, 01 Mar 2024 12:00:00 GMT");
        assert!(parse_iso8601("garbage").is_none());
    }
}
