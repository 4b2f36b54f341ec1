//! One behaviour, shown by one test body: the storage semantics of `weir serve`'s `/files/`,
//! `/tus/` and resumable routes (atomicity, preconditions, ranges, digests, forms, the resumable
//! draft, tus, listings, folders, quotas), each test written once over a [`Backend`] and run
//! against both stores by [`both!`]: `local::NAME` on `weir serve --root DIR`, `s3::NAME` on
//! `weir serve --store s3://weir/NAME/` over SeaweedFS (`weed mini`, one per run of this binary
//! while its tests overlap, each test under its own prefix). The real `weir` binary, over real
//! sockets, raw HTTP/1.1.
//!
//! Where the stores keep different promises the test branches on a property named for the
//! promise ([`Backend::forms_atomic`], [`Backend::folders_have_times`],
//! [`Backend::paths_are_a_tree`]) and asserts each
//! store's documented one (docs/OPERATING.md, "S3-compatible storage").

#[allow(dead_code)] // only `start_weed` is used here
#[path = "../s3_nodes/mod.rs"]
mod s3_nodes;

mod cases;

use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use weir_testkit::h1::{Client, Resp};
use weir_testkit::seaweed::{self, Seaweed};

/// Which store a test runs on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `weir serve --root DIR`.
    Local,
    /// `weir serve --store s3://weir/PREFIX` on `weed mini`.
    S3,
}

/// A store for one test: the local kind, or a prefix of the shared SeaweedFS bucket.
pub struct Backend {
    pub kind: Kind,
    prefix: String,
    weed: Option<Arc<Seaweed>>,
}

/// The `weed mini` the S3 tests share while any of them runs: started by the first, stopped
/// when the last one running lets it go (tests run in name order, so the `s3::` ones overlap
/// and it is started about once).
fn shared_weed() -> Option<Arc<Seaweed>> {
    static SHARED: Mutex<Weak<Seaweed>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(weed) = shared.upgrade() {
        return Some(weed);
    }
    let weed = Arc::new(s3_nodes::start_weed()?);
    *shared = Arc::downgrade(&weed);
    Some(weed)
}

impl Backend {
    /// The backend of `kind` for the test `name`; `None` (skipped, with a line saying so) for
    /// S3 without `weed`, unless `WEIR_REQUIRE_TOOLS=1`, which makes that a failure.
    pub fn new(kind: Kind, name: &str) -> Option<Backend> {
        let weed = match kind {
            Kind::Local => None,
            Kind::S3 => Some(shared_weed()?),
        };
        Some(Backend {
            kind,
            prefix: name.to_owned(),
            weed,
        })
    }

    /// A form's files are all stored or none, also when a commit fails midway (the local store:
    /// `Store::ATOMIC_COMMIT_ALL`). Without it (S3) the files a failed form *created* are deleted
    /// again and the ones it *replaced* stay replaced.
    pub fn forms_atomic(&self) -> bool {
        self.kind == Kind::Local
    }

    /// Paths form a tree: a file and a folder cannot share a name (`path-conflict`). Not in a
    /// bucket, whose keys `a` and `a/b` coexist.
    pub fn paths_are_a_tree(&self) -> bool {
        self.kind == Kind::Local
    }

    /// A folder in a listing has a modification time (a directory's); in a bucket a folder is a
    /// common prefix of keys and has none (`"modified": null`).
    pub fn folders_have_times(&self) -> bool {
        self.kind == Kind::Local
    }

    /// Starts `weir serve` on this backend with `args`.
    pub fn serve(&self, args: &[&str]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let mut all: Vec<&str> = Vec::new();
        let store;
        let mut env = vec![("WEIR_ALLOWED_HOST", "t,test")];
        if let Some(weed) = &self.weed {
            store = format!("s3://{}/{}/", seaweed::BUCKET, self.prefix);
            all.extend(["--store", &store, "--s3-endpoint", &weed.endpoint]);
            env.push(("AWS_ACCESS_KEY_ID", seaweed::ACCESS_KEY));
            env.push(("AWS_SECRET_ACCESS_KEY", seaweed::SECRET_KEY));
        }
        all.extend_from_slice(args);
        let (child, addr) = weir_testkit::serve_binary::spawn(
            Path::new(s3_nodes::WEIR),
            &root,
            dir.path(),
            &all,
            &env,
        )
        .unwrap_or_else(|stderr| panic!("weir serve did not start: {stderr}"));
        Serve {
            child,
            addr,
            root,
            prefix: format!("{}/", self.prefix),
            _dir: dir,
            weed: self.weed.clone(),
        }
    }
}

/// A `weir serve` process, killed on drop (and holding the shared `weed` while it runs).
pub struct Serve {
    child: Child,
    pub addr: SocketAddr,
    root: PathBuf,
    prefix: String,
    _dir: tempfile::TempDir,
    weed: Option<Arc<Seaweed>>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// `head` (request line and fields, no final CRLF) and `body` on a new connection
    /// (`Host`, `Connection: close` and `Content-Length` added); the final response, interim
    /// ones (104) skipped.
    pub fn req(&self, head: &str, body: &[u8]) -> Resp {
        let mut client = Client::new(TcpStream::connect(self.addr).unwrap());
        client
            .stream()
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut text = format!("{head}\r\nhost: test\r\nconnection: close\r\n");
        let lower = head.to_ascii_lowercase();
        if !lower.contains("content-length") && !head.starts_with("HEAD ") {
            text.push_str(&format!("content-length: {}\r\n", body.len()));
        }
        text.push_str("\r\n");
        client.send(text.as_bytes());
        let _ = client.try_send(body);
        loop {
            let r = client.read_response_for(head.starts_with("HEAD "));
            if r.status >= 200 {
                return r;
            }
        }
    }

    /// The local store's temporary upload files (`.weir-upload-*` anywhere under the root).
    pub fn local_temps(&self) -> usize {
        let mut n = 0;
        let mut dirs = vec![self.root.clone()];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                } else if e.file_name().to_string_lossy().starts_with(".weir-upload-") {
                    n += 1;
                }
            }
        }
        n
    }

    /// The bucket's multipart uploads neither completed nor aborted under this test's prefix
    /// (keys relative to it).
    pub fn pending_uploads(&self) -> Vec<String> {
        let weed = self.weed.as_ref().expect("an S3 backend");
        let keys = s3_nodes::runtime()
            .block_on(s3_nodes::direct(weed).pending_multipart_keys())
            .unwrap();
        keys.into_iter()
            .filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_owned))
            .collect()
    }

    /// `GET /files/{path}`.
    pub fn get(&self, path: &str) -> Resp {
        self.req(&format!("GET /files/{path} HTTP/1.1"), b"")
    }

    /// `PUT /files/{path}` of `body`, asserting 201 or 200; the answer.
    pub fn put(&self, path: &str, body: &[u8]) -> Resp {
        let r = self.req(&format!("PUT /files/{path} HTTP/1.1"), body);
        assert!(
            r.status == 201 || r.status == 200,
            "PUT {path}: {} {}",
            r.status,
            r.text()
        );
        r
    }

    /// The entries of the listing at `GET /files/{dir}?{query}` and its `next`.
    pub fn list(&self, dir: &str, query: &str) -> serde_json::Value {
        let r = self.req(&format!("GET /files/{dir}?{query} HTTP/1.1"), b"");
        assert_eq!(r.status, 200, "{}", r.text());
        json(&r)
    }
}

/// An answer's body as JSON (panics with the body when it is not).
pub fn json(r: &Resp) -> serde_json::Value {
    s3_nodes::json(r)
}

/// The names in a listing.
pub fn names(listing: &serde_json::Value) -> Vec<String> {
    listing["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("no entries: {listing}"))
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Instantiates each named test body (`cases::NAME(&Backend)`) for both stores:
/// `local::NAME` and `s3::NAME`.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod local {
            $(
                #[test]
                fn $name() {
                    let backend = $crate::Backend::new($crate::Kind::Local, stringify!($name))
                        .unwrap();
                    $crate::cases::$name(&backend);
                }
            )*
        }
        mod s3 {
            $(
                #[test]
                fn $name() {
                    let Some(backend) = $crate::Backend::new($crate::Kind::S3, stringify!($name))
                    else {
                        return;
                    };
                    $crate::cases::$name(&backend);
                }
            )*
        }
    };
}

both!(
    a_put_cut_midway_leaves_nothing_visible,
    preconditions_on_put_and_delete,
    ranges,
    digests,
    a_form_is_stored_whole,
    a_form_with_an_existing_target_under_if_none_match_stores_none,
    a_form_failing_at_commit_keeps_each_stores_promise,
    a_form_failing_after_a_replacement_keeps_each_stores_promise,
    resumable_draft_create_append_complete,
    resumable_draft_interrupted_append_resumes,
    tus_create_patch_in_two_pieces,
    tus_interrupted_patch_resumes,
    listings_paginate_each_entry_once,
    folders_create_and_delete,
    quota_holds,
    a_file_where_a_folder_is,
);
