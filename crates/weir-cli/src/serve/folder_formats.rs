//! What a `GET` of a folder's URL (`/files/` or `/files/{dir}/`) asks for, besides the JSON
//! listing and the browser page: the folder as an archive, or a plain HTML index. Shared by
//! the page's route (which must not answer these with the page) and the `/files/` routes.
//!
//! | request | answer |
//! | --- | --- |
//! | `?tar` | the folder as a tar stream (`routes/files/archive/`) |
//! | `?zip` | the folder as a zip stream (`?zip=64`: zip64 structures everywhere) |
//! | `?html` | a plain HTML index of the folder (`routes/files/html_listing.rs`) |
//! | `User-Agent: Wget/...` or `rclone/...`, no `?json`, `Accept` not naming JSON | the HTML index: what `wget -r` and rclone's `http` backend walk (they send no query, and `*/*` or no `Accept`) |
//! | anything else | as before: the browser page for a navigation (`page.rs`), else JSON |
//!
//! Query keys are matched whole (`?tar`, `?tar=1`); the first of `tar`, `zip`, `html`, `json`
//! in the query decides.

use weir::Request;

/// What a folder's URL answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FolderFormat {
    /// The JSON listing (or, for a browser's navigation, the page).
    Default,
    Tar,
    Zip,
    /// `?zip=64`: a zip with every zip64 structure, whatever the sizes (for old readers'
    /// tests and for checking a reader's zip64 support on small folders).
    Zip64,
    Html,
}

/// The format the query names, if any.
fn from_query(query: Option<&str>) -> Option<FolderFormat> {
    for pair in query.unwrap_or("").split('&') {
        let key = pair.split_once('=').map_or(pair, |(k, _)| k);
        match key {
            "tar" => return Some(FolderFormat::Tar),
            "zip" if pair == "zip=64" => return Some(FolderFormat::Zip64),
            "zip" => return Some(FolderFormat::Zip),
            "html" => return Some(FolderFormat::Html),
            "json" => return Some(FolderFormat::Default),
            _ => {}
        }
    }
    None
}

/// What `request` (a `GET`/`HEAD` of a folder's URL) asks for (see the module doc).
pub(crate) fn requested(request: &Request) -> FolderFormat {
    if let Some(format) = from_query(request.query()) {
        return format;
    }
    let accept = request.header("accept").unwrap_or_default();
    let names_json = accept.windows(4).any(|w| w.eq_ignore_ascii_case(b"json"));
    if !names_json && is_walker(request.header("user-agent").unwrap_or_default()) {
        return FolderFormat::Html;
    }
    FolderFormat::Default
}

/// Whether the query alone asks for something other than the default (the page's route
/// leaves such requests to the `/files/` routes, whatever their `Accept`).
pub(crate) fn query_names_format(request: &Request) -> bool {
    matches!(
        from_query(request.query()),
        Some(FolderFormat::Tar | FolderFormat::Zip | FolderFormat::Zip64 | FolderFormat::Html)
    )
}

/// A client that walks HTML indexes: GNU Wget (`Wget/1.21.3`) or rclone (`rclone/v1.60.1`).
fn is_walker(user_agent: &[u8]) -> bool {
    let starts = |prefix: &[u8]| {
        user_agent.len() >= prefix.len() && user_agent[..prefix.len()].eq_ignore_ascii_case(prefix)
    };
    starts(b"wget/") || starts(b"rclone/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_name_formats() {
        assert_eq!(from_query(Some("tar")), Some(FolderFormat::Tar));
        assert_eq!(from_query(Some("zip=1")), Some(FolderFormat::Zip));
        assert_eq!(from_query(Some("zip=64")), Some(FolderFormat::Zip64));
        assert_eq!(from_query(Some("limit=5&html")), Some(FolderFormat::Html));
        assert_eq!(from_query(Some("json&html")), Some(FolderFormat::Default));
        assert_eq!(from_query(Some("tarball")), None);
        assert_eq!(from_query(Some("after=tar")), None);
        assert_eq!(from_query(None), None);
    }

    #[test]
    fn walkers_by_user_agent() {
        assert!(is_walker(b"Wget/1.21.3"));
        assert!(is_walker(b"rclone/v1.60.1-DEV"));
        assert!(!is_walker(b"curl/8.0"));
        assert!(!is_walker(b"Mozilla/5.0 (X11; Linux x86_64)"));
        assert!(!is_walker(b""));
    }
}
