//! The background work of `--store s3://` (feature `s3`): expired resumable uploads removed,
//! abandoned multipart uploads aborted, and the store's usage listed again, on a thread with
//! its own client and runtime, so the service's workers never wait for it.

use weir_store::{S3ResumableOptions, S3Resumables, S3Store};

/// How often the sweep runs (and once at start).
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);
/// How often the usage is listed again: other nodes' commits and deletes, and objects changed
/// behind weir's back, count from then on.
const LIST_USAGE_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// Starts the thread that removes expired resumable uploads (`resumable.rs`) and aborts
/// abandoned multipart uploads (begun more than `after` ago, `--s3-sweep-after`: left by a node
/// that died mid-upload; a live one aborts its own failures at once; a live resumable upload's
/// are kept) under the store's prefix, at start and every [`SWEEP_EVERY`], and lists the usage
/// of `serving` (the quota's and the metrics' count) again every [`LIST_USAGE_EVERY`]: with its
/// own client and runtime, so the service's workers never wait for it. Several nodes sweeping
/// the same prefix abort the same uploads; an abort of one already gone is not an error.
pub(super) fn start_sweeper(
    config: weir_store::S3Config,
    after: std::time::Duration,
    serving: S3Store,
) -> std::io::Result<()> {
    let store = S3Store::new(config).map_err(std::io::Error::other)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("weir-s3-sweep".into())
        .spawn(move || {
            let uploads = S3Resumables::new(store.clone(), S3ResumableOptions::default());
            runtime.block_on(async {
                let mut swept_at: Option<tokio::time::Instant> = None;
                loop {
                    if swept_at.is_none_or(|t| t.elapsed() >= SWEEP_EVERY) {
                        swept_at = Some(tokio::time::Instant::now());
                        // Expired resumable uploads first (each manifest holds its own expiry),
                        // so that their multipart uploads are no longer "live" below.
                        match uploads.sweep().await {
                            Ok((0, _)) => {}
                            Ok((n, _)) => {
                                tracing::info!(removed = n, "expired resumable uploads removed")
                            }
                            Err(e) => tracing::warn!(error = %e, "resumable upload sweep failed"),
                        }
                        match store.sweep_multipart(after).await {
                            Ok(0) => {}
                            Ok(n) => {
                                tracing::info!(aborted = n, "aborted abandoned multipart uploads")
                            }
                            Err(e) => tracing::warn!(error = %e, "multipart sweep failed"),
                        }
                    }
                    tokio::time::sleep(LIST_USAGE_EVERY).await;
                    match store.list_usage().await {
                        Ok(listed) => serving.set_listed_usage(listed),
                        Err(e) => tracing::warn!(error = %e, "listing the store's usage failed"),
                    }
                }
            });
        })?;
    Ok(())
}
