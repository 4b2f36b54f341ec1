//! SIGHUP: the TLS certificate and key read again from their files (after a renewal), for the
//! connections that start afterwards; established ones are not touched. A pair that cannot be
//! used (unreadable, malformed, a key that does not match) is one error line and the old
//! certificate stays (weir's `CertReloader`).
//!
//! The token file (`--token-file`) is read again too, for the requests that start afterwards
//! (`current_auth.rs`): a token taken out of it stops working without a restart. A file that
//! cannot be used (unreadable, a mistake on any line) is one error line and the tokens in use
//! stay, as a bad certificate does; so does a file left with no token at all when tokens were
//! required, which would otherwise open writes and deletes to anyone.

use super::service::Service;
use std::path::PathBuf;
use std::sync::Arc;

/// What a SIGHUP reloads besides the certificate: the token file at `path`, into `service`.
pub(super) struct TokenReload {
    pub path: PathBuf,
    pub service: Arc<Service>,
}

/// Waits for SIGHUP, forever, and reloads on each. Spawned on the runtime that binds the
/// listeners, once they are bound. With nothing to reload a SIGHUP is only logged: watched all
/// the same, so that it never ends the process (its default action). The handler is installed
/// when this is called, not when the returned future first runs: a SIGHUP that comes right
/// after the "serving" line (before the spawned task is polled) must not kill the process.
pub(super) fn on_sighup(
    reloader: Option<weir::CertReloader>,
    tokens: Option<TokenReload>,
) -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let hangups = signal(SignalKind::hangup());
    async move {
        let mut hangups = match hangups {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot watch SIGHUP: the certificate and tokens will not be reloaded");
                return;
            }
        };
        while hangups.recv().await.is_some() {
            match reloader.as_ref().map(weir::CertReloader::reload) {
                Some(Ok(())) => tracing::info!("SIGHUP: TLS certificate reloaded"),
                Some(Err(e)) => tracing::error!("SIGHUP: {e}; keeping the certificate in use"),
                None => tracing::info!("SIGHUP: no TLS certificate to reload"),
            }
            if let Some(tokens) = &tokens {
                // A small file; read off the runtime all the same (it may be on a slow disk).
                let path = tokens.path.clone();
                let read = tokio::task::spawn_blocking(move || super::auth::read_token_file(&path));
                match read.await {
                    Ok(Ok(credentials)) => reload_tokens(&tokens.service, credentials),
                    Ok(Err(e)) => {
                        let e = e.replace('\n', "; ");
                        tracing::error!("SIGHUP: {e}; keeping the tokens in use");
                    }
                    Err(e) => tracing::error!("SIGHUP: {e}; keeping the tokens in use"),
                }
            }
        }
    }
}

/// Puts the token file's `credentials` in force, unless that would leave none where some were
/// required.
fn reload_tokens(service: &Service, credentials: Vec<super::auth::Credential>) {
    let count = credentials.len();
    let current = service.auth();
    let next = current.with_file_credentials(credentials);
    if current.any() && !next.any() {
        tracing::error!(
            "SIGHUP: the token file has no token, which would let anyone write; keeping the \
             tokens in use"
        );
        return;
    }
    service.current_auth.replace(next);
    tracing::info!(tokens = count, "SIGHUP: token file reloaded");
}
