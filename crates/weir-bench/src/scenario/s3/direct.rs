//! The direct rows' client: `weir-bench __s3_direct`, a child process that uploads or downloads
//! one object with `weir_store::S3Store` alone (no HTTP server in between), so that its peak RSS
//! is its own and comparable with `weir serve`'s.
//!
//! It prints one line, `<seconds> <peak KiB> <sha256 hex or ->`: the time from the first store
//! request to the commit (upload) or the last byte (download), its `VmHWM`, and, for an upload,
//! the SHA-256 the store computed. A download compares every byte with the body pattern (the
//! same comparison the `weir serve` row's client makes) and fails on the first difference.

use super::{CREDENTIALS, Pattern, STORE_BUCKET, STORE_PREFIX};
use crate::procfs;
use clap::{Args, ValueEnum};
use std::time::{Duration, Instant};
use weir_store::{S3Config, S3Store, Store, StoreObject, StorePath, StoreReader, StoreUpload};

/// What the child does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Op {
    /// Upload `--size` bytes of the pattern to `--key`.
    Put,
    /// Download `--key` whole and check it against the pattern.
    Get,
}

/// `weir-bench __s3_direct` options.
#[derive(Args, Clone, Debug)]
pub struct DirectArgs {
    /// Upload or download.
    #[arg(long, value_enum)]
    pub op: Op,
    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    #[arg(long)]
    pub endpoint: String,
    /// The object's path under the bench's prefix.
    #[arg(long)]
    pub key: String,
    /// Bytes to upload, or expected when downloading.
    #[arg(long)]
    pub size: u64,
    /// Multipart part size.
    #[arg(long)]
    pub part_size: usize,
    /// Parts in flight.
    #[arg(long)]
    pub parts_in_flight: usize,
}

/// The bytes one `write` hands the upload: what `weir serve` reads a body with at most (its
/// read buffer's chunks), so both rows feed `S3Upload` alike.
const WRITE: usize = 256 << 10;

/// Runs the child and exits.
pub fn run_child(a: &DirectArgs) -> ! {
    match run(a) {
        Ok(line) => {
            println!("{line}");
            std::process::exit(0)
        }
        Err(e) => {
            eprintln!("weir-bench __s3_direct: {e}");
            std::process::exit(1)
        }
    }
}

/// The bench's store: the bucket and prefix both rows use, with the given part settings.
fn config(endpoint: &str, part_size: usize, parts_in_flight: usize) -> S3Config {
    S3Config {
        prefix: STORE_PREFIX.into(),
        part_size,
        parts_in_flight,
        request_timeout: Duration::from_secs(120),
        ..S3Config::new(endpoint, STORE_BUCKET, CREDENTIALS.0, CREDENTIALS.1)
    }
}

/// Waits (at most 60 s) until the bucket `weed mini` creates in the background exists,
/// creating it if need be: `weir serve` checks it at its start.
pub fn wait_for_bucket(endpoint: &str) -> std::io::Result<()> {
    let store = S3Store::new(config(endpoint, S3Config::DEFAULT_PART_SIZE, 1))
        .map_err(std::io::Error::other)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    runtime.block_on(async {
        loop {
            match store.create_bucket_if_missing().await {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() > deadline => {
                    return Err(std::io::Error::other(format!("bucket {STORE_BUCKET}: {e}")));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
}

fn run(a: &DirectArgs) -> Result<String, String> {
    let config = config(&a.endpoint, a.part_size, a.parts_in_flight);
    let store = S3Store::new(config).map_err(|e| e.to_string())?;
    // A multi-threaded runtime with one worker per CPU, as `weir serve` runs by default.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let path = StorePath::parse(&a.key).map_err(|e| e.to_string())?;
    let pattern = Pattern::new();
    let (seconds, sha) = runtime.block_on(async {
        let start = Instant::now();
        match a.op {
            Op::Put => {
                let options = weir_store::UploadOptions {
                    expected_len: Some(a.size),
                    ..Default::default()
                };
                let mut up = store
                    .begin(&path, options, None)
                    .await
                    .map_err(|e| e.to_string())?;
                let mut at = 0u64;
                while at < a.size {
                    let n = (a.size - at).min(WRITE as u64) as usize;
                    up.write(pattern.at(at, n))
                        .await
                        .map_err(|e| e.to_string())?;
                    at += n as u64;
                }
                let c = up.commit(None).await.map_err(|e| e.to_string())?;
                let sha = c.sha256.map(|d| super::hex(&d));
                Ok::<_, String>((start.elapsed().as_secs_f64(), sha))
            }
            Op::Get => {
                let object = store.open(&path).await.map_err(|e| e.to_string())?;
                let size = object.meta().size;
                if size != a.size {
                    return Err(format!("object has {size} bytes, expected {}", a.size));
                }
                let mut reader = object.read(0..size).await.map_err(|e| e.to_string())?;
                let mut at = 0u64;
                while let Some(chunk) = reader.next_chunk().await.map_err(|e| e.to_string())? {
                    if !pattern.matches(at, &chunk) {
                        return Err(format!("downloaded bytes differ near offset {at}"));
                    }
                    at += chunk.len() as u64;
                }
                if at != size {
                    return Err(format!("downloaded {at} of {size} bytes"));
                }
                Ok((start.elapsed().as_secs_f64(), None))
            }
        }
    })?;
    let peak = procfs::memory("self").map_err(|e| e.to_string())?.peak_kib;
    Ok(format!(
        "{seconds:.6} {peak} {}",
        sha.as_deref().unwrap_or("-")
    ))
}
