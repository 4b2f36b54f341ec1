//! [`Server`]: listeners, accept loops, connection limits and graceful shutdown.
//!
//! Each listener has an accept loop; each accepted connection gets one task that serves all its
//! requests. That task first completes the TLS handshake (TLS listeners), then picks the
//! protocol: HTTP/2 when ALPN chose `h2` or a cleartext connection starts with the HTTP/2
//! preface (`h2::serve_h2`, which runs a task per stream), HTTP/1.1 otherwise
//! (`h1::serve_connection`). A semaphore bounds the connections: at the bound the
//! accept loop stops accepting (clients wait in the kernel's backlog) while the others are
//! served. Shutdown stops the accept loops, closes idle connections at once, lets in-flight
//! exchanges finish (announcing `Connection: close`) up to `Config::shutdown_grace`, then aborts
//! what is left.

use crate::exchange::Shared;
use crate::h1::serve_connection;
#[cfg(feature = "http2")]
use crate::h2::{PREFACE, Sniffed, serve_h2, sniff_preface};
use crate::stats::Stats;
#[cfg(all(feature = "tls", feature = "http2"))]
use crate::transport::ALPN_H2;
use crate::transport::{DetachedListener, Listener, PeerAddr, Stream};
#[cfg(feature = "tls")]
use crate::transport::{TlsAccept, TlsConfig};
use crate::{Config, Handler};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// Without the `tls` feature no listener has TLS: the type of its (always absent) acceptor.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum TlsAccept {}

/// An HTTP server: configuration and listeners, until [`Server::serve`] runs it.
pub struct Server {
    shared: Arc<Shared>,
    listeners: Vec<(Listener, Option<TlsAccept>)>,
    shutdown: Arc<watch::Sender<bool>>,
    /// Bounds TLS handshakes in progress, across all TLS listeners.
    #[cfg(feature = "tls")]
    handshakes: Arc<Semaphore>,
}

/// Controls a running server from elsewhere: shutdown, statistics.
#[derive(Clone)]
pub struct ServerHandle {
    shared: Arc<Shared>,
    shutdown: Arc<watch::Sender<bool>>,
}

impl Server {
    /// A server with `config` and no listeners yet.
    pub fn new(config: Config) -> Self {
        let (shutdown, _) = watch::channel(false);
        Self {
            #[cfg(feature = "tls")]
            handshakes: Arc::new(Semaphore::new(config.max_tls_handshakes.max(1))),
            shared: Arc::new(Shared::new(config)),
            listeners: Vec::new(),
            shutdown: Arc::new(shutdown),
        }
    }

    /// A server with `config` listening on a TCP address (`"127.0.0.1:8080"`, port 0 for any).
    pub async fn bind(addr: impl tokio::net::ToSocketAddrs, config: Config) -> io::Result<Self> {
        let mut server = Self::new(config);
        server.listen_tcp(addr).await?;
        Ok(server)
    }

    /// Adds a TCP listener; returns its bound address.
    pub async fn listen_tcp(
        &mut self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> io::Result<SocketAddr> {
        let listener = Listener::bind_tcp_with(addr, self.shared.config.reuse_port).await?;
        let addr = listener
            .local_addr()
            .ok_or_else(|| io::Error::other("no local address"))?;
        self.listeners.push((listener, None));
        Ok(addr)
    }

    /// Adds a TLS listener on a TCP address; returns its bound address. ALPN offers `h2`
    /// (unless [`Http2Config::enabled`](crate::Http2Config::enabled) is off) and `http/1.1`.
    /// (Cargo feature `tls`.)
    #[cfg(feature = "tls")]
    pub async fn listen_tls(
        &mut self,
        addr: impl tokio::net::ToSocketAddrs,
        tls: TlsConfig,
    ) -> io::Result<SocketAddr> {
        let listener = Listener::bind_tcp_with(addr, self.shared.config.reuse_port).await?;
        let addr = listener
            .local_addr()
            .ok_or_else(|| io::Error::other("no local address"))?;
        self.add_tls_listener(listener, tls);
        Ok(addr)
    }

    /// Adds a listener bound elsewhere whose connections speak TLS (TCP or Unix socket).
    /// (Cargo feature `tls`.)
    #[cfg(feature = "tls")]
    pub fn add_tls_listener(&mut self, listener: Listener, tls: TlsConfig) {
        let accept = TlsAccept {
            acceptor: tls.acceptor(cfg!(feature = "http2") && self.shared.config.http2.enabled),
            handshakes: self.handshakes.clone(),
            client_hello_timeout: self.shared.config.tls_client_hello_timeout,
            timeout: self.shared.config.tls_handshake_timeout,
        };
        self.listeners.push((listener, Some(accept)));
    }

    /// Adds a Unix domain socket listener at `path`.
    pub fn listen_unix(&mut self, path: impl AsRef<Path>) -> io::Result<()> {
        self.listeners.push((Listener::bind_unix(path)?, None));
        Ok(())
    }

    /// Adds a listener bound elsewhere.
    pub fn add_listener(&mut self, listener: Listener) {
        self.listeners.push((listener, None));
    }

    /// The address of the first TCP listener.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listeners.iter().find_map(|(l, _)| l.local_addr())
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// A handle to shut the server down and read its statistics.
    pub fn handle(&self) -> ServerHandle {
        ServerHandle {
            shared: self.shared.clone(),
            shutdown: self.shutdown.clone(),
        }
    }

    /// Serves until [`ServerHandle::shutdown`] is called and the shutdown has completed, on
    /// the caller's tokio runtime (usually multi-threaded: connections are tasks that idle
    /// workers can steal).
    pub async fn serve<H: Handler>(self, handler: H) -> io::Result<()> {
        if self.listeners.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no listener"));
        }
        let context = ServeContext {
            handler: Arc::new(handler),
            permits: Arc::new(Semaphore::new(self.shared.config.max_connections.max(1))),
            shared: self.shared,
            shutdown: self.shutdown,
        };
        context.run(self.listeners).await
    }

    /// Serves with one single-threaded runtime per thread (`threads` of them, usually one per
    /// core), each accepting from its own `SO_REUSEPORT` listener: no work stealing and no
    /// cross-thread wake-ups; the kernel spreads connections over the listeners. Blocks until
    /// shutdown completes; call it from a plain thread, not from inside a runtime.
    ///
    /// TCP listeners must have been bound with [`Config::reuse_port`]. A Unix socket listener
    /// is shared: every thread waits on the same socket, and the thread that accepts first
    /// serves the connection.
    pub fn serve_per_core<H: Handler>(self, handler: H, threads: usize) -> io::Result<()> {
        if self.listeners.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no listener"));
        }
        let threads = threads.max(1);
        let mut per_thread: Vec<Vec<(DetachedListener, Option<TlsAccept>)>> =
            (0..threads).map(|_| Vec::new()).collect();
        for (listener, tls) in self.listeners {
            let (first, siblings) = listener.detach(threads - 1)?;
            for (i, sibling) in siblings.into_iter().enumerate() {
                per_thread[i + 1].push((sibling, tls.clone()));
            }
            per_thread[0].push((first, tls));
        }
        let context = ServeContext {
            handler: Arc::new(handler),
            permits: Arc::new(Semaphore::new(self.shared.config.max_connections.max(1))),
            shared: self.shared,
            shutdown: self.shutdown,
        };
        let workers = per_thread
            .into_iter()
            .enumerate()
            .map(|(i, listeners)| {
                let context = context.clone();
                std::thread::Builder::new()
                    .name(format!("weir-core-{i}"))
                    .spawn(move || {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()?;
                        runtime.block_on(async move {
                            let listeners = listeners
                                .into_iter()
                                .map(|(l, tls)| Ok((l.attach()?, tls)))
                                .collect::<io::Result<Vec<_>>>()?;
                            context.run(listeners).await
                        })
                    })
            })
            .collect::<io::Result<Vec<_>>>()?;
        let mut result = Ok(());
        for worker in workers {
            let outcome = worker
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("worker panicked")));
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    }

    /// Serves until `signal` completes (for example `tokio::signal::ctrl_c()`), then shuts down
    /// gracefully.
    pub async fn serve_until<H: Handler>(
        self,
        handler: H,
        signal: impl Future<Output = ()> + Send,
    ) -> io::Result<()> {
        let handle = self.handle();
        let serve = self.serve(handler);
        tokio::pin!(serve);
        tokio::select! {
            result = &mut serve => return result,
            () = signal => handle.shutdown(),
        }
        serve.await
    }
}

impl ServerHandle {
    /// Starts a graceful shutdown: stop accepting, close idle connections, finish in-flight
    /// requests (up to `Config::shutdown_grace`).
    pub fn shutdown(&self) {
        self.shared.begin_shutdown();
        self.shutdown.send_replace(true);
    }

    /// The server's counters.
    pub fn stats(&self) -> &Stats {
        &self.shared.stats
    }

    /// The server's configuration.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }
}

/// What serving needs, shared by every accept loop (on one runtime or one per core).
struct ServeContext<H> {
    handler: Arc<H>,
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    shutdown: Arc<watch::Sender<bool>>,
}

impl<H> Clone for ServeContext<H> {
    fn clone(&self) -> Self {
        Self {
            handler: self.handler.clone(),
            shared: self.shared.clone(),
            permits: self.permits.clone(),
            shutdown: self.shutdown.clone(),
        }
    }
}

impl<H: Handler> ServeContext<H> {
    /// Runs accept loops on `listeners` (on the current runtime) until shutdown, then waits for
    /// in-flight connections up to the grace period.
    async fn run(self, listeners: Vec<(Listener, Option<TlsAccept>)>) -> io::Result<()> {
        let mut loops = JoinSet::new();
        for (listener, tls) in listeners {
            loops.spawn(accept_loop(
                listener,
                tls,
                self.handler.clone(),
                self.shared.clone(),
                self.permits.clone(),
                self.shutdown.subscribe(),
            ));
        }
        let mut connections = Vec::new();
        while let Some(joined) = loops.join_next().await {
            connections.push(joined.map_err(io::Error::other)?);
        }
        // Every accept loop has stopped: shutdown was requested. Give in-flight exchanges the
        // grace period, then abort the rest.
        let grace = self.shared.config.shutdown_grace;
        let drained = tokio::time::timeout(grace, async {
            for set in &mut connections {
                while set.join_next().await.is_some() {}
            }
        })
        .await;
        if drained.is_err() {
            tracing::warn!("shutdown grace expired; closing remaining connections");
            for set in &mut connections {
                set.shutdown().await;
            }
        }
        Ok(())
    }
}

/// Accepts connections until shutdown; returns the connections still running.
async fn accept_loop<H: Handler>(
    listener: Listener,
    tls: Option<TlsAccept>,
    handler: Arc<H>,
    shared: Arc<Shared>,
    permits: Arc<Semaphore>,
    mut shutdown: watch::Receiver<bool>,
) -> JoinSet<()> {
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connections so the set does not grow with the server's age.
        while connections.try_join_next().is_some() {}
        if *shutdown.borrow_and_update() {
            break;
        }
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = shutdown.changed() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // EMFILE, ENFILE, ENOBUFS...: back off instead of spinning; the permit is
                // released and the loop retries.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let handler = handler.clone();
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        let tls = tls.clone();
        connections.spawn(async move {
            let _permit = permit;
            shared.stats.connection_opened();
            serve(stream, peer, tls, handler, shared.clone(), shutdown).await;
            shared.stats.connection_closed();
        });
    }
    connections
}

/// Serves one accepted connection: TLS handshake if the listener has TLS, then HTTP/2 or
/// HTTP/1.1.
async fn serve<H: Handler>(
    stream: Stream,
    peer: PeerAddr,
    tls: Option<TlsAccept>,
    handler: Arc<H>,
    shared: Arc<Shared>,
    #[cfg_attr(not(feature = "http2"), allow(unused_mut))] mut shutdown: watch::Receiver<bool>,
) {
    #[cfg_attr(not(feature = "http2"), allow(unused_mut))]
    let mut stream = match tls {
        #[cfg(feature = "tls")]
        Some(tls) => match tls.handshake(stream).await {
            Some(stream) => stream,
            None => return,
        },
        #[cfg(not(feature = "tls"))]
        Some(never) => match never {},
        None => stream,
    };
    #[cfg(feature = "http2")]
    if shared.config.http2.enabled {
        if stream.is_tls() {
            #[cfg(feature = "tls")]
            if stream.alpn_protocol() == Some(ALPN_H2) {
                return serve_h2(stream, peer, &[], handler, shared, shutdown).await;
            }
        } else {
            let deadline = tokio::time::Instant::now() + shared.config.head_timeout;
            // A descriptor passed with the first bytes (an HTTP/1.1 head) is kept for it.
            let mut passed = None;
            let keep = shared.config.accept_passed_fds.then_some(&mut passed);
            match sniff_preface(&mut stream, deadline, &mut shutdown, keep).await {
                Sniffed::Http2 => {
                    return serve_h2(stream, peer, PREFACE, handler, shared, shutdown).await;
                }
                Sniffed::Http1 { read, len } => {
                    let already = (&read[..len], passed);
                    return serve_connection(stream, peer, already, &*handler, shared, shutdown)
                        .await;
                }
                Sniffed::Closed => return,
            }
        }
    }
    serve_connection(stream, peer, (&[], None), &*handler, shared, shutdown).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ok200;

    impl Handler for Ok200 {
        async fn handle(&self, ex: &mut crate::Exchange<'_>) -> Result<(), crate::Error> {
            ex.respond(http::StatusCode::OK).body("ok").await
        }
    }

    /// A connection's future is its task's size, held for the connection's whole life, idle or
    /// not (tokio allocates each task with its future inline): no buffer may live in it. The
    /// lingering closes once kept a 16 KiB scratch array there.
    #[test]
    fn a_connection_future_holds_no_buffer() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap());
            let (accepted, _client) = tokio::join!(listener.accept(), client);
            let (tcp, addr) = accepted.unwrap();
            let stream = Stream::Tcp(tcp);
            let shared = Arc::new(Shared::new(Config::default()));
            let (_tx, rx) = watch::channel(false);
            let fut = serve(
                stream,
                PeerAddr::Tcp(addr),
                None,
                Arc::new(Ok200),
                shared,
                rx,
            );
            let size = std::mem::size_of_val(&fut);
            // Every protocol's state (TLS handshake, HTTP/2 driver, HTTP/1.1 driver) is in it.
            assert!(size <= 8 * 1024, "{size} bytes");
        });
    }
}
