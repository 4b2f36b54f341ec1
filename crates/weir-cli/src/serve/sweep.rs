//! The service's background sweeps, each on a thread of its own so that the workers never wait
//! for it: the local store's expired resumable uploads ([`start_local`]); with `--store s3://`
//! (feature `s3`, [`start_s3`]) the bucket's expired resumable uploads, abandoned multipart
//! uploads, and its usage listed again, with the sweep's own client and runtime; the S3 API's
//! multipart uploads not touched for their expiry ([`start_multipart`], either store).

use std::time::Duration;
use weir_store::Resumables;
#[cfg(feature = "s3")]
use weir_store::{S3ResumableOptions, S3Resumables, S3Store};

/// Starts the background sweep of expired uploads: a thread that wakes every quarter of the
/// expiry (between 1 s and 60 s) and stops when the service is gone.
pub(super) fn start_local(resumables: &std::sync::Arc<Resumables>) {
    let weak = std::sync::Arc::downgrade(resumables);
    let period = (resumables.expiry() / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    let spawned = std::thread::Builder::new()
        .name("weir-resumable-sweep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(period);
                let Some(r) = weak.upgrade() else { return };
                match r.sweep() {
                    Ok(s) if s.uploads > 0 => {
                        tracing::info!(
                            uploads = s.uploads,
                            bytes = s.bytes,
                            "expired uploads removed"
                        );
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "sweeping expired uploads"),
                }
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "no sweeper thread: expired uploads are removed at start only");
    }
}

/// Starts the sweep of the S3 API's multipart uploads (`routes/s3/multipart.rs`): a task on the
/// runtime that starts it (the S3 API listener's), waking every quarter of `expiry` (between
/// 1 s and an hour), removing the uploads not touched for `expiry`; it stops when the uploads
/// are dropped. Without a runtime (not `weir serve`), none: the uploads stay until removed.
pub(super) fn start_multipart<M: weir_store::MultipartStore>(
    parts: &std::sync::Arc<M>,
    expiry: Duration,
) {
    let weak = std::sync::Arc::downgrade(parts);
    let period = (expiry / 4).clamp(Duration::from_secs(1), Duration::from_secs(3600));
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no runtime: abandoned multipart uploads are not swept");
        return;
    };
    runtime.spawn(async move {
        loop {
            tokio::time::sleep(period).await;
            let Some(parts) = weak.upgrade() else { return };
            match parts.sweep(expiry).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(removed = n, "abandoned multipart uploads removed"),
                Err(e) => tracing::warn!(error = %e, "sweeping multipart uploads"),
            }
        }
    });
}

/// How often the bucket's sweep runs (and once at start).
#[cfg(feature = "s3")]
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
#[cfg(feature = "s3")]
/// How often the usage is listed again: other nodes' commits and deletes, and objects changed
/// behind weir's back, count from then on.
const LIST_USAGE_EVERY: Duration = Duration::from_secs(300);

/// Starts the thread that removes expired resumable uploads (`resumable.rs`) and aborts
/// abandoned multipart uploads (begun more than `after` ago, `--s3-sweep-after`: left by a node
/// that died mid-upload; a live one aborts its own failures at once; a live resumable upload's
/// are kept) under the store's prefix, at start and every [`SWEEP_EVERY`], and lists the usage
/// of `serving` (the quota's and the metrics' count) again every [`LIST_USAGE_EVERY`]: with its
/// own client and runtime, so the service's workers never wait for it. Several nodes sweeping
/// the same prefix abort the same uploads; an abort of one already gone is not an error.
#[cfg(feature = "s3")]
pub(super) fn start_s3(
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
