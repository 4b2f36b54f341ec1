//! systemd's readiness protocol (`Type=notify`, sd_notify(3)): `READY=1` once every listener is
//! bound, `STOPPING=1` when a graceful shutdown starts. Sent as one datagram to the Unix socket
//! named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace); without it, nothing
//! is sent. Failures are logged, never fatal: the service works without a manager.

/// Sends `state` (e.g. `READY=1`) to the service manager, if one asked for it.
#[cfg(unix)]
pub(super) fn notify(state: &str) {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&target, state) {
        tracing::warn!(error = %e, socket = ?target, "cannot notify the service manager");
    }
}

#[cfg(not(unix))]
pub(super) fn notify(_state: &str) {}

#[cfg(unix)]
fn send(target: &std::ffi::OsStr, state: &str) -> std::io::Result<()> {
    let socket = std::os::unix::net::UnixDatagram::unbound()?;
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(target);
    match bytes.strip_prefix(b"@") {
        #[cfg(target_os = "linux")]
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            socket.send_to_addr(state.as_bytes(), &addr)?;
        }
        _ => {
            socket.send_to(state.as_bytes(), target)?;
        }
    }
    Ok(())
}
