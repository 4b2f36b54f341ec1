//! Helpers shared by the unit tests of `local` and `upload`.

use crate::{LocalOptions, LocalStore, StorePath};
use std::path::{Path, PathBuf};

pub(crate) fn p(s: &str) -> StorePath {
    StorePath::parse(s).unwrap()
}

/// A store in a fresh temporary directory (kept alive by the returned guard).
pub(crate) fn store_with(options: LocalOptions) -> (tempfile::TempDir, LocalStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path().join("root"), options).unwrap();
    (dir, store)
}

pub(crate) fn store() -> (tempfile::TempDir, LocalStore) {
    store_with(LocalOptions::default())
}

/// Every file under `root` whose name starts with `.weir-upload-`.
pub(crate) fn temps(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                dirs.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with(".weir-upload-") {
                out.push(e.path());
            }
        }
    }
    out
}

/// Reads a stored file back through the store.
pub(crate) fn read(store: &LocalStore, path: &str) -> Vec<u8> {
    use std::io::Read;
    let (mut f, meta) = store.open_file(&p(path)).unwrap();
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).unwrap();
    assert_eq!(buf.len() as u64, meta.size);
    buf
}

/// SHA-256 of `data`.
pub(crate) fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

/// Deterministic, non-repeating-looking test data: `seed` makes bodies of the same length
/// differ.
pub(crate) fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// A test hook the store runs at a chosen point (see `Shared::after_resolve`): empty by
/// default; [`Hook::set`] installs a function that runs once per call until cleared.
#[derive(Default)]
pub(crate) struct Hook(std::sync::Mutex<Option<Box<dyn FnMut() + Send>>>);

impl Hook {
    pub(crate) fn set(&self, f: impl FnMut() + Send + 'static) {
        *self.0.lock().unwrap() = Some(Box::new(f));
    }

    pub(crate) fn run(&self) {
        if let Some(f) = self.0.lock().unwrap().as_mut() {
            f();
        }
    }
}

impl std::fmt::Debug for Hook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hook")
    }
}
