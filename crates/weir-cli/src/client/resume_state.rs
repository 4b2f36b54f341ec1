//! The state `weir put` keeps so that an upload interrupted by killing the client continues
//! where the server stopped: one small JSON file per upload in flight, in
//! `$XDG_STATE_HOME/weir/uploads/` (else `~/.local/state/weir/uploads/`).
//!
//! A file is keyed by (absolute file path, size, modification time, URL): a file that changed
//! since is a different upload and starts over. It holds the upload resource's URL, is written
//! (temporary file + rename) as soon as the server announces the resource (its `104`), and is
//! removed when the upload completes or the server no longer knows the resource (404/410).

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// One upload's state file.
pub(crate) struct ResumeState {
    /// The state file; `None` when there is no state directory (no `$HOME`): the upload still
    /// resumes within this run, only not across runs.
    path: Option<PathBuf>,
    key: serde_json::Value,
}

impl ResumeState {
    /// The state of uploading `file` (`size` bytes, modified at `mtime`) to `url`.
    pub(crate) fn new(file: &Path, meta: &std::fs::Metadata, url: &str) -> Self {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let key = serde_json::json!({
            "file": absolute.to_string_lossy(),
            "size": meta.len(),
            "mtime_ns": mtime.to_string(),
            "url": url,
        });
        let name = crate::serve::hex(&Sha256::digest(key.to_string().as_bytes()));
        let path = state_dir().map(|dir| dir.join(format!("{}.json", &name[..32])));
        Self { path, key }
    }

    /// The upload resource recorded for this key by an earlier run, if any.
    pub(crate) fn load(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.path.as_ref()?).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        if value.get("key") != Some(&self.key) {
            return None;
        }
        value.get("upload")?.as_str().map(str::to_owned)
    }

    /// Records `upload` (an absolute URL). Failing to is not fatal: the upload goes on, it
    /// only cannot be resumed by another run.
    pub(crate) fn save(&self, upload: &str) {
        let Some(path) = &self.path else { return };
        let text = serde_json::json!({ "key": self.key, "upload": upload }).to_string();
        let temp = path.with_extension("tmp");
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&temp, text))
            .and_then(|()| std::fs::rename(&temp, path));
        if let Err(e) = written {
            eprintln!(
                "weir: cannot record the upload's state in {}: {e}",
                path.display()
            );
        }
    }

    /// Forgets the upload (completed, or unknown to the server).
    pub(crate) fn remove(&self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// `$XDG_STATE_HOME/weir/uploads`, else `$HOME/.local/state/weir/uploads`.
fn state_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(base.join("weir/uploads"))
}
