//! SIGHUP: the TLS certificate and key read again from their files (after a renewal), for the
//! connections that start afterwards; established ones are not touched. A pair that cannot be
//! used (unreadable, malformed, a key that does not match) is one error line and the old
//! certificate stays (weir's `CertReloader`).

/// Waits for SIGHUP, forever, and reloads on each. Spawned on the runtime that binds the
/// listeners, once they are bound. Without TLS (`None`) a SIGHUP is only logged: watched all the
/// same, so that it never ends the process (its default action). The handler is installed when
/// this is called, not when the returned future first runs: a SIGHUP that comes right after the
/// "serving" line (before the spawned task is polled) must not kill the process.
pub(super) fn on_sighup(
    reloader: Option<weir::CertReloader>,
) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let hangups = signal(SignalKind::hangup());
    async move {
        let mut hangups = match hangups {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot watch SIGHUP: the certificate will not be reloaded");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            match reloader.as_ref().map(weir::CertReloader::reload) {
                Some(Ok(())) => tracing::info!("SIGHUP: TLS certificate reloaded"),
                Some(Err(e)) => tracing::error!("SIGHUP: {e}; keeping the certificate in use"),
                None => tracing::info!("SIGHUP: no TLS certificate to reload"),
            }
        }
    }
}
