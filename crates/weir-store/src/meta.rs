//! [`FileMeta`]: what the store knows of one version of a stored file, the validators every
//! check and answer is made from.

use std::time::SystemTime;

/// Metadata of a stored file, from the open file itself (so it describes exactly the bytes
/// the file handle reads, even if the path is replaced meanwhile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Size in bytes.
    pub size: u64,
    /// Last modification: the commit time of the upload that wrote it.
    pub modified: SystemTime,
    /// SHA-256 of the content, when it was recorded at commit and the file has not changed
    /// since. `None` means unknown, never "no digest": hash it if you need it.
    pub sha256: Option<[u8; 32]>,
}
