//! The draft's request fields as the resumable route reads them (`Upload-Complete`,
//! `Upload-Length`, integers on one field line) and the size checks made on them before any of
//! the body is read.

use crate::serve::reply::Problem;
use crate::serve::service::Service;
use weir::Exchange;
use weir_proto::upload_fields;

/// The `Upload-Complete` of a request: `Some` only for a valid Boolean Item on one line.
pub(in crate::serve) fn upload_complete(ex: &Exchange<'_>) -> Option<bool> {
    single(ex, "upload-complete").and_then(upload_fields::parse_boolean)
}

/// The one field line named `name`; `None` when absent or repeated.
fn single<'a>(ex: &'a Exchange<'_>, name: &'a str) -> Option<&'a [u8]> {
    let mut all = ex.request().header_all(name);
    let first = all.next()?;
    all.next().is_none().then_some(first)
}

pub(in crate::serve) fn integer(ex: &Exchange<'_>, name: &str) -> Option<u64> {
    single(ex, name).and_then(upload_fields::parse_non_negative_integer)
}

/// `Upload-Length`: `Ok(None)` when absent; `Err` when present but not one non-negative
/// Integer Item. The draft would have such a field ignored, but ignoring it creates an upload
/// of unknown length from a request that meant a known one: refused instead (400).
fn declared_length(ex: &Exchange<'_>) -> Result<Option<u64>, &'static str> {
    if ex.request().header_all("upload-length").next().is_none() {
        return Ok(None);
    }
    integer(ex, "upload-length")
        .map(Some)
        .ok_or("Upload-Length is not a non-negative Integer (one field line, 1 to 15 digits)")
}

/// The length checks shared by creation and append; `Err` is the 400 to answer (a malformed
/// `Upload-Length`, or inconsistent-upload-length). `offset`: where this request's content
/// starts.
pub(in crate::serve) fn request_length(
    ex: &Exchange<'_>,
    complete: bool,
    offset: u64,
    known: Option<u64>,
) -> Result<Option<u64>, (Problem, &'static str)> {
    let declared = declared_length(ex).map_err(|m| (Problem::BadRequest, m))?;
    let inconsistent = |message| Err((Problem::DraftInconsistentLength, message));
    let by_content = complete
        .then(|| ex.request().content_length())
        .flatten()
        .map(|n| offset.saturating_add(n));
    let mut length = known;
    for l in [declared, by_content].into_iter().flatten() {
        match length {
            Some(k) if k != l => return inconsistent("inconsistent length values for upload"),
            _ => length = Some(l),
        }
    }
    if let (Some(len), Some(n)) = (length, ex.request().content_length()) {
        if offset.saturating_add(n) > len {
            return inconsistent("the content goes past the upload's length");
        }
    }
    Ok(length)
}

/// Checks the body size against the limits, before any is read: `Err` is the 413 or 400 to
/// send. Sets the body limit for a body without `Content-Length`.
pub(in crate::serve) fn check_sizes(
    svc: &Service,
    ex: &mut Exchange<'_>,
    offset: u64,
    complete: bool,
    length: Option<u64>,
) -> Result<(), (Problem, String)> {
    let max = svc.options.max_upload;
    let max_append = svc.resumable_options.max_append.unwrap_or(max);
    let declared = ex.request().content_length();
    if length.is_some_and(|l| l > max) {
        return Err((
            Problem::TooLarge,
            format!("upload larger than the limit of {max} bytes"),
        ));
    }
    if declared.is_some_and(|n| n > max_append) {
        return Err((
            Problem::TooLarge,
            format!("request content larger than max-append-size={max_append}"),
        ));
    }
    if declared.is_some_and(|n| offset.saturating_add(n) > max) {
        return Err((
            Problem::TooLarge,
            format!("upload larger than the limit of {max} bytes"),
        ));
    }
    if let (Some(min), Some(n), false) = (svc.resumable_options.min_append, declared, complete) {
        // An empty creation is how a careful client learns the upload's URL first (draft
        // §10.2): it appends nothing, so no limit on appends is at stake.
        let empty_creation = offset == 0 && n == 0;
        if n < min && !empty_creation {
            return Err((
                Problem::BadRequest,
                format!("request content smaller than min-append-size={min}"),
            ));
        }
    }
    let room = max.saturating_sub(offset).min(max_append);
    let room = length.map_or(room, |l| room.min(l.saturating_sub(offset)));
    ex.set_max_body_size(Some(room));
    Ok(())
}
