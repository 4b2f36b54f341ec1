//! The conformance harness: a `weir::Server` on 127.0.0.1 with probe routes, and a raw client
//! that sends bytes exactly as given and reads everything the server sends until it closes.
//!
//! Reading to EOF (rather than one response) is what lets a case prove the negative: the server
//! answered exactly once and then closed, and no byte after the bad request was ever served.

use http::StatusCode;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use weir::{Config, Exchange, Handler, ServerHandle};
pub use weir_testkit::h1::{Resp, parse_responses};
use weir_testkit::server::{ServerThread, query_u64};

/// Appended after every request: if it is ever answered, the server parsed bytes it should not
/// have. It asks to close, so a server that keeps the connection answers it and then closes.
pub const SENTINEL: &[u8] = b"GET /sentinel HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n";
/// What `/sentinel` answers.
pub const SENTINEL_BODY: &str = "SENTINEL";
/// A request hidden in a body: answered only by a server that got the framing wrong.
pub const SMUGGLED: &[u8] = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
/// What `/smuggled` answers.
pub const SMUGGLED_BODY: &str = "SMUGGLED";

/// How long a client waits for the server to close before the case fails.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// A server on its own runtime thread; shut down on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    pub handle: ServerHandle,
    _server: ServerThread,
}

impl TestServer {
    pub fn start(config: Config) -> Self {
        Self::start_with(config, Probe)
    }

    /// A server with another handler than [`Probe`]: [`TowerProbe`] through the tower adapter.
    pub fn start_with(config: Config, handler: impl Handler) -> Self {
        let (server, addr) = ServerThread::start(config, handler, async |s: &mut weir::Server| {
            s.listen_tcp("127.0.0.1:0").await.expect("bind")
        });
        Self {
            addr,
            handle: server.handle.clone(),
            _server: server,
        }
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.addr).expect("connect");
        stream.set_read_timeout(Some(READ_LIMIT)).expect("timeout");
        stream
    }

    /// Waits (up to 20 s) until the server has no open connection: every connection task has
    /// ended. Returns whether that happened.
    pub fn wait_idle(&self) -> bool {
        self.wait_active(|n| n == 0)
    }

    /// Waits (up to 20 s) until the count of open connections satisfies `ok`.
    pub fn wait_active(&self, ok: impl Fn(usize) -> bool) -> bool {
        let until = Instant::now() + Duration::from_secs(20);
        while Instant::now() < until {
            if ok(self.handle.stats().active_connections()) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

/// The probe routes.
///
/// - `/echo`: reads the whole body, answers it back; a body error is returned to weir, which
///   answers with the error's status (400, 408, 413, 431) and closes.
/// - `/ignore`: answers without reading the body (weir must drain or close).
/// - `/sentinel`, `/smuggled`: fixed answers, see the constants.
/// - `/big?len=N`: N bytes of response in 64 KiB writes; `/big-one?len=N`: one N-byte write.
/// - `/count`: reads the body and answers `received N` or `timeout after N`.
pub struct Probe;

impl Handler for Probe {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        let path = ex.request().path().to_owned();
        match path.as_str() {
            "/echo" => {
                let mut body = Vec::new();
                ex.read_body_to_end(&mut body).await?;
                ex.respond(StatusCode::OK).body(&body).await
            }
            "/ignore" => ex.respond(StatusCode::OK).body("ignored").await,
            "/sentinel" => ex.respond(StatusCode::OK).body(SENTINEL_BODY).await,
            "/smuggled" => ex.respond(StatusCode::OK).body(SMUGGLED_BODY).await,
            "/big" => {
                static BLOCK: [u8; 64 * 1024] = [b'z'; 64 * 1024];
                let len = query_u64(ex, "len").unwrap_or(1 << 20);
                let mut w = ex.respond(StatusCode::OK).stream(Some(len)).await?;
                let mut left = len;
                while left > 0 {
                    let n = left.min(BLOCK.len() as u64) as usize;
                    w.write(&BLOCK[..n]).await?;
                    left -= n as u64;
                }
                w.finish().await
            }
            "/big-one" => {
                let len = query_u64(ex, "len").unwrap_or(1 << 20) as usize;
                ex.respond(StatusCode::OK).body(vec![b'z'; len]).await
            }
            "/count" => {
                let mut buf = [0u8; 4096];
                let mut total = 0u64;
                loop {
                    match ex.read_body(&mut buf).await {
                        Ok(0) => break,
                        Ok(n) => total += n as u64,
                        Err(e) if e.is_timeout() => {
                            return ex
                                .respond(StatusCode::REQUEST_TIMEOUT)
                                .body(format!("timeout after {total}"))
                                .await;
                        }
                        Err(e) => return Err(e),
                    }
                }
                ex.respond(StatusCode::OK)
                    .body(format!("received {total}"))
                    .await
            }
            _ => ex.respond(StatusCode::NOT_FOUND).body("not found").await,
        }
    }
}

/// [`Probe`]'s `/echo`, `/ignore`, `/sentinel` and `/smuggled` as a tower service, served through
/// `weir::ServiceHandler` (the path an axum app takes): the body read as `http_body` frames of
/// `weir::Body`; a body error is the service's error, which weir answers as it answers a native
/// handler's (400, 408, 413, 431, and close).
#[cfg(feature = "tower")]
#[derive(Clone)]
pub struct TowerProbe;

#[cfg(feature = "tower")]
impl tower_service::Service<http::Request<weir::Body>> for TowerProbe {
    type Response = http::Response<http_body_util::Full<bytes::Bytes>>;
    type Error = weir::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, weir::Error>> + Send + 'static>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), weir::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<weir::Body>) -> Self::Future {
        Box::pin(async move {
            let answer = |status: StatusCode, body: Vec<u8>| {
                let mut response = http::Response::new(http_body_util::Full::from(body));
                *response.status_mut() = status;
                Ok(response)
            };
            match request.uri().path() {
                "/echo" => {
                    use http_body_util::BodyExt;
                    let mut body = request.into_body();
                    let mut out = Vec::new();
                    while let Some(frame) = body.frame().await {
                        if let Ok(data) = frame?.into_data() {
                            out.extend_from_slice(&data);
                        }
                    }
                    answer(StatusCode::OK, out)
                }
                "/ignore" => answer(StatusCode::OK, b"ignored".to_vec()),
                "/sentinel" => answer(StatusCode::OK, SENTINEL_BODY.into()),
                "/smuggled" => answer(StatusCode::OK, SMUGGLED_BODY.into()),
                _ => answer(StatusCode::NOT_FOUND, b"not found".to_vec()),
            }
        })
    }
}

/// Everything a connection produced: the responses, bytes that did not parse as one, and
/// whether the server closed (EOF or reset) rather than the read limit expiring.
#[derive(Debug)]
pub struct Transcript {
    pub responses: Vec<Resp>,
    pub garbage: Vec<u8>,
    pub closed: bool,
}

impl Transcript {
    /// Whether any response body is `body`.
    pub fn answered(&self, body: &str) -> bool {
        self.responses.iter().any(|r| r.text() == body)
    }
}

/// Sends `bytes` (from another thread, so a server that answers and closes early cannot
/// deadlock the client), then reads until the server closes.
pub fn exchange(server: &TestServer, bytes: Vec<u8>) -> Transcript {
    let stream = server.connect();
    let mut writer = stream.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        // The server may close before it has read everything: that is allowed.
        let _ = writer.write_all(&bytes);
    });
    let transcript = read_until_closed(stream);
    let _ = sender.join();
    transcript
}

/// Reads until EOF, a reset, or the read limit; parses what arrived.
pub fn read_until_closed(mut stream: TcpStream) -> Transcript {
    let mut data = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let started = Instant::now();
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break false,
        }
        if started.elapsed() > READ_LIMIT {
            break false;
        }
    };
    let _ = stream.shutdown(Shutdown::Both);
    let (responses, garbage) = parse_responses(&data);
    Transcript {
        responses,
        garbage,
        closed,
    }
}
