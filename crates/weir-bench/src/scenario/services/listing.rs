//! A folder's listing in each service's own format, fetched whole (page after page where the
//! service pages) and counted: the listing row checks that every entry is there.
//!
//! | format | request | counted |
//! | --- | --- | --- |
//! | weir | `GET /files/DIR/?limit=10000[&after=NEXT]` (JSON pages, weir's largest) | `entries`; `next` to the next page |
//! | nginx | `GET /DIR/` (`autoindex on`: HTML) | one `<a href=` line per entry, `../` not |
//! | dufs | `GET /DIR/?json` | `paths` |
//! | copyparty | `GET /DIR/?ls` (JSON) | `dirs` and `files` |
//! | SeaweedFS filer | `GET /DIR/?limit=10000[&lastFileName=LAST]`, `Accept: application/json` | `Entries`; `ShouldDisplayLoadMore` to the next page |
//! | rclone serve http | `GET /DIR/` (HTML) | one `class="name"` link per entry, `..` not |
//!
//! Parsing keeps nothing of a page but its count and its cursor; each page's body is held
//! whole while it is counted (a few MiB at most: the listing row's cost is the server's).

use crate::scenario::transfer::fetch;
use std::io;
use std::net::SocketAddr;

/// How a service lists a folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Weir,
    NginxHtml,
    DufsJson,
    CopypartyJson,
    SeaweedJson,
    RcloneHtml,
}

/// Entries per page asked of the services that page (weir's largest `limit`).
const PAGE: usize = 10_000;

/// One page: its entries, and the cursor of the next page if there is one.
#[derive(Debug, PartialEq, Eq)]
pub struct Page {
    pub entries: usize,
    pub next: Option<String>,
}

impl Format {
    /// The request for the page after `cursor` of folder `dir` (ending in `/`) under `prefix`.
    fn request(self, prefix: &str, dir: &str, cursor: Option<&str>) -> String {
        let target = match (self, cursor) {
            (Format::Weir, None) => format!("{prefix}{dir}?limit={PAGE}"),
            (Format::Weir, Some(c)) => format!("{prefix}{dir}?limit={PAGE}&after={c}"),
            (Format::SeaweedJson, None) => format!("{prefix}{dir}?limit={PAGE}"),
            (Format::SeaweedJson, Some(c)) => {
                format!("{prefix}{dir}?limit={PAGE}&lastFileName={c}")
            }
            (Format::DufsJson, _) => format!("{prefix}{dir}?json"),
            (Format::CopypartyJson, _) => format!("{prefix}{dir}?ls"),
            (Format::NginxHtml | Format::RcloneHtml, _) => format!("{prefix}{dir}"),
        };
        format!(
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
             Connection: close\r\n\r\n"
        )
    }

    /// Counts one page's entries and finds its cursor.
    pub fn parse(self, body: &[u8]) -> io::Result<Page> {
        let bad = |why: &str| io::Error::other(format!("{self:?} listing: {why}"));
        let json = || -> io::Result<serde_json::Value> {
            serde_json::from_slice(body).map_err(|e| bad(&e.to_string()))
        };
        let len = |v: &serde_json::Value, key: &str| -> usize {
            v.get(key).and_then(|a| a.as_array()).map_or(0, |a| a.len())
        };
        Ok(match self {
            Format::Weir => {
                let v = json()?;
                if v.get("entries").and_then(|e| e.as_array()).is_none() {
                    return Err(bad("no `entries`"));
                }
                Page {
                    entries: len(&v, "entries"),
                    next: v.get("next").and_then(|n| n.as_str()).map(String::from),
                }
            }
            Format::SeaweedJson => {
                let v = json()?;
                let more = v.get("ShouldDisplayLoadMore").and_then(|m| m.as_bool());
                let last = v.get("LastFileName").and_then(|n| n.as_str());
                Page {
                    // `null` when the page is empty.
                    entries: len(&v, "Entries"),
                    next: match (more, last) {
                        (Some(true), Some(l)) if !l.is_empty() => Some(l.to_string()),
                        _ => None,
                    },
                }
            }
            Format::DufsJson => {
                let v = json()?;
                if v.get("paths").is_none() {
                    return Err(bad("no `paths`"));
                }
                Page {
                    entries: len(&v, "paths"),
                    next: None,
                }
            }
            Format::CopypartyJson => {
                let v = json()?;
                if v.get("files").is_none() {
                    return Err(bad("no `files`"));
                }
                Page {
                    entries: len(&v, "files") + len(&v, "dirs"),
                    next: None,
                }
            }
            // Each entry is a line starting with its link; the parent's follows `<pre>`.
            Format::NginxHtml => Page {
                entries: memchr::memmem::find_iter(body, b"\n<a href=\"").count(),
                next: None,
            },
            // Each entry's name cell; the parent's link (`..`) is in a cell of its own.
            Format::RcloneHtml => Page {
                entries: memchr::memmem::find_iter(body, b"<span class=\"name\"><a href=\"")
                    .count(),
                next: None,
            },
        })
    }
}

/// Lists folder `dir` (ending in `/`) of the server at `addr` whole: the number of entries.
pub fn list_all(addr: SocketAddr, prefix: &str, dir: &str, format: Format) -> io::Result<usize> {
    let mut total = 0;
    let mut cursor: Option<String> = None;
    loop {
        let (head, body) = fetch(addr, &format.request(prefix, dir, cursor.as_deref()))?;
        if !head.starts_with(b"HTTP/1.1 200") {
            return Err(io::Error::other(format!(
                "{format:?} listing of {prefix}{dir}: {:?}",
                String::from_utf8_lossy(&head)
            )));
        }
        let page = format.parse(&body)?;
        total += page.entries;
        match page.next {
            // A page without entries that names a next one would loop forever.
            Some(next) if page.entries > 0 => cursor = Some(next),
            _ => return Ok(total),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_weir_pages_and_follows_next() {
        let p = br#"{"path":"many/","entries":[{"name":"a","type":"file","size":1,"modified":1},
            {"name":"b","type":"file","size":1,"modified":1}],"next":"b"}"#;
        assert_eq!(
            Format::Weir.parse(p).unwrap(),
            Page {
                entries: 2,
                next: Some("b".into())
            }
        );
        let last = br#"{"path":"many/","entries":[]}"#;
        assert_eq!(Format::Weir.parse(last).unwrap().next, None);
        assert!(Format::Weir.parse(b"<html>").is_err());
        assert!(
            Format::Weir
                .request("/files/", "many/", Some("b"))
                .starts_with("GET /files/many/?limit=10000&after=b HTTP/1.1\r\n")
        );
    }

    #[test]
    fn counts_seaweed_pages() {
        let p = br#"{"Path":"/many","Entries":[{"FullPath":"/many/a"},{"FullPath":"/many/b"}],
            "Limit":2,"LastFileName":"b","ShouldDisplayLoadMore":true}"#;
        assert_eq!(
            Format::SeaweedJson.parse(p).unwrap(),
            Page {
                entries: 2,
                next: Some("b".into())
            }
        );
        let end =
            br#"{"Path":"/many","Entries":null,"LastFileName":"","ShouldDisplayLoadMore":false}"#;
        assert_eq!(
            Format::SeaweedJson.parse(end).unwrap(),
            Page {
                entries: 0,
                next: None
            }
        );
    }

    #[test]
    fn counts_dufs_and_copyparty_json() {
        let d = br#"{"href":"/many/","paths":[{"path_type":"File","name":"a"},{"path_type":"Dir","name":"d"}]}"#;
        assert_eq!(Format::DufsJson.parse(d).unwrap().entries, 2);
        let c = br#"{"dirs":[{"href":"d/"}],"files":[{"href":"a"},{"href":"b"}],"taglist":[]}"#;
        assert_eq!(Format::CopypartyJson.parse(c).unwrap().entries, 3);
        assert!(Format::DufsJson.parse(b"{}").is_err());
    }

    #[test]
    fn counts_html_indexes_without_the_parent() {
        let nginx = b"<html><body><h1>Index of /many/</h1><hr><pre><a href=\"../\">../</a>\n\
            <a href=\"a\">a</a>          06-Dec-2026 21:21      3\n\
            <a href=\"b\">b</a>          06-Dec-2026 21:21      3\n</pre><hr></body></html>";
        assert_eq!(Format::NginxHtml.parse(nginx).unwrap().entries, 2);
        let rclone = b"<tr><td><a href=\"..\"><span class=\"goup\">Go up</span></a></td></tr>\
            <tr><td><span class=\"name\"><a href=\"a\">a</a></span></td></tr>\
            <tr><td><span class=\"name\"><a href=\"b\">b</a></span></td></tr>";
        assert_eq!(Format::RcloneHtml.parse(rclone).unwrap().entries, 2);
    }
}
