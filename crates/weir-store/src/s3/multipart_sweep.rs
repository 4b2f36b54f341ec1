//! Multipart uploads left behind (by a node that died mid-upload): listed page by page
//! (`ListMultipartUploads` markers) and aborted by the sweep once older than its age.

use super::list::parse_iso8601;
use super::*;

/// Where a page of `ListMultipartUploads` starts: the key and upload id markers.
type Markers = (Option<String>, Option<String>);

/// A multipart upload neither completed nor aborted.
#[derive(Debug)]
pub(super) struct PendingUpload {
    key: String,
    upload_id: String,
    initiated: Option<SystemTime>,
}

impl S3Store {
    /// The keys (under the prefix) with multipart uploads begun and neither completed nor
    /// aborted: what a sweep would abort. Empty when every upload cleaned up after itself.
    pub async fn pending_multipart_keys(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .pending_multipart()
            .await?
            .into_iter()
            .map(|p| p.key)
            .collect())
    }

    /// Aborts the multipart uploads under the prefix begun more than `older_than` ago: those
    /// a process that died (SIGKILL, power loss) could not abort itself; not those a live
    /// resumable upload's manifest names. Uploads still being
    /// received by a live node are younger than any sensible `older_than` (hours). Returns how
    /// many were aborted: every page of the listing is read first, then they are aborted.
    pub async fn sweep_multipart(&self, older_than: Duration) -> Result<usize, StoreError> {
        let cutoff = SystemTime::now()
            .checked_sub(older_than)
            .unwrap_or(UNIX_EPOCH);
        let mut aborted = 0;
        let pending = self.pending_multipart().await?;
        // Resumable uploads' multipart uploads live as long as their manifests, whatever
        // their age: only an expired manifest's removal aborts them (`resumable.rs`).
        let live = if pending.is_empty() {
            Default::default()
        } else {
            self.live_resumable_uploads().await?
        };
        for p in pending {
            // Uploads with no parseable start time are left alone.
            if p.initiated.is_some_and(|t| t <= cutoff) && !live.contains(&p.upload_id) {
                abort_request(self, &p.key, &p.upload_id).await?;
                aborted += 1;
            }
        }
        Ok(aborted)
    }

    /// `ListMultipartUploads` under the prefix, every page (of [`S3Store::with_list_page`]
    /// uploads): each page's `NextKeyMarker` and `NextUploadIdMarker` are sent back as they
    /// were answered (AWS pages by both; SeaweedFS 4.48 answers the upload id alone, and takes
    /// a key marker as "this key only", so none is sent that it did not give).
    async fn pending_multipart(&self) -> Result<Vec<PendingUpload>, StoreError> {
        let mut all = Vec::new();
        let mut markers: Markers = (None, None);
        loop {
            let (page, next) = self.pending_multipart_page(&markers).await?;
            let empty = page.is_empty();
            all.extend(page);
            match next {
                // An empty page, or markers that do not move, end the walk: never a loop.
                Some(next) if !empty && next != markers => markers = next,
                _ => return Ok(all),
            }
        }
    }

    /// One page of `ListMultipartUploads` after `markers` (key, upload id), and the markers of
    /// the next page when the answer says it is truncated.
    async fn pending_multipart_page(
        &self,
        markers: &Markers,
    ) -> Result<(Vec<PendingUpload>, Option<Markers>), StoreError> {
        let i = &self.inner;
        let mut url = i.bucket.base_url().clone();
        url.set_query(None);
        let max = i.list_page.to_string();
        // Sorted by name: `sign` canonicalizes the query in the order given.
        let mut query: Vec<(&str, &str)> = Vec::with_capacity(5);
        if let Some(k) = &markers.0 {
            query.push(("key-marker", k.as_str()));
        }
        query.push(("max-uploads", max.as_str()));
        query.push(("prefix", i.prefix.as_str()));
        if let Some(u) = &markers.1 {
            query.push(("upload-id-marker", u.as_str()));
        }
        query.push(("uploads", ""));
        let url = rusty_s3::signing::sign(
            &jiff_now(),
            rusty_s3::Method::Get,
            url,
            i.credentials.key(),
            i.credentials.secret(),
            i.credentials.token(),
            i.bucket.region(),
            SIGNED_FOR.as_secs(),
            query.iter().copied(),
            std::iter::empty(),
        );
        let resp = self
            .send(
                "list multipart uploads",
                Method::GET,
                url,
                &[],
                Bytes::new(),
            )
            .await?;
        if !resp.status().is_success() {
            return Err(failure("list multipart uploads", resp).await);
        }
        let body = collect("list multipart uploads", resp).await?;
        // rusty-s3 has no parser for this answer: its `<Upload>` elements hold `<Key>`,
        // `<UploadId>` and `<Initiated>`, each text without markup; the page's own elements
        // come before the first of them.
        let text = String::from_utf8_lossy(&body);
        let element = |within: &str, name: &str| -> Option<String> {
            let open = format!("<{name}>");
            let close = format!("</{name}>");
            let (_, rest) = within.split_once(open.as_str())?;
            let (value, _) = rest.split_once(close.as_str())?;
            Some(xml_unescape(value)).filter(|v| !v.is_empty())
        };
        let mut uploads = text.split("<Upload>");
        let head = uploads.next().unwrap_or_default();
        let page = uploads
            .filter_map(|u| {
                Some(PendingUpload {
                    key: element(u, "Key")?,
                    upload_id: element(u, "UploadId")?,
                    initiated: element(u, "Initiated").and_then(|t| parse_iso8601(&t)),
                })
            })
            .collect();
        let truncated = element(head, "IsTruncated").is_some_and(|t| t == "true");
        let next = (
            element(head, "NextKeyMarker"),
            element(head, "NextUploadIdMarker"),
        );
        let more = truncated && (next.0.is_some() || next.1.is_some());
        Ok((page, more.then_some(next)))
    }
}
