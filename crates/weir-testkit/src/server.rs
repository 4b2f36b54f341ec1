//! weir's library server on a thread of its own, for tests that talk to it over real sockets.

use weir::Exchange;

/// The number in `key=N` of the request's query, if there is one.
pub fn query_u64(ex: &Exchange<'_>, key: &str) -> Option<u64> {
    ex.request().query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

/// A `weir::Server` serving `handler` on its own 2-worker runtime thread. Dropping it shuts the
/// server down; [`ServerThread::stop`] also waits for `serve` to return.
pub struct ServerThread {
    /// Shuts the server down, and more.
    pub handle: weir::ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    /// Starts the server once `listen` has added its listeners; returns with what `listen`
    /// returned (their addresses) when it is accepting.
    pub fn start<H, T>(
        config: weir::Config,
        handler: H,
        listen: impl AsyncFnOnce(&mut weir::Server) -> T + Send + 'static,
    ) -> (Self, T)
    where
        H: weir::Handler,
        T: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let mut server = weir::Server::new(config);
                let listening = listen(&mut server).await;
                tx.send((listening, server.handle()))
                    .expect("send addresses");
                server.serve(handler).await.expect("serve");
            });
        });
        let (listening, handle) = rx.recv().expect("server started");
        let server = Self {
            handle,
            thread: Some(thread),
        };
        (server, listening)
    }

    /// Shuts down and waits for `serve` to return; fails if the server's thread panicked.
    pub fn stop(self) {
        self.join().expect("server thread");
    }

    /// Shuts down and waits for `serve` to return; `Err` if the server's thread panicked (for
    /// `Drop` impls, which must not panic again).
    pub fn join(mut self) -> std::thread::Result<()> {
        self.handle.shutdown();
        self.thread.take().map_or(Ok(()), |t| t.join())
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.handle.shutdown();
    }
}
