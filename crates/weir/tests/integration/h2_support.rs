//! Test support for TLS and HTTP/2: a server with a plain and a TLS listener, a self-signed
//! certificate, curl with HTTP/2, and clients built on the `h2` crate (cleartext and TLS).

use crate::support::Routes;
use bytes::Bytes;
use h2::client::SendRequest;
use http::{Method, Request, StatusCode};
use std::net::SocketAddr;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use weir::{Config, Exchange, Handler, ServerHandle};
pub use weir_testkit::cert::TestCert;
use weir_testkit::server::ServerThread;

/// A server with a plain TCP listener (HTTP/1.1 and h2c) and a TLS listener, on its own thread
/// and runtime; shut down on drop.
pub struct TlsTestServer {
    pub addr: SocketAddr,
    pub tls_addr: SocketAddr,
    pub cert: TestCert,
    pub handle: ServerHandle,
    server: ServerThread,
}

impl TlsTestServer {
    pub fn start(config: Config) -> Self {
        Self::start_with(config, H2Routes)
    }

    pub fn start_with<H: Handler>(config: Config, handler: H) -> Self {
        let cert = TestCert::new();
        let tls = cert.tls_config();
        let (server, (addr, tls_addr)) =
            ServerThread::start(config, handler, async move |s: &mut weir::Server| {
                let addr = s.listen_tcp("127.0.0.1:0").await.unwrap();
                let tls_addr = s.listen_tls("127.0.0.1:0", tls).await.unwrap();
                (addr, tls_addr)
            });
        Self {
            addr,
            tls_addr,
            cert,
            handle: server.handle.clone(),
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    pub fn tls_url(&self, path: &str) -> String {
        format!("https://localhost:{}{path}", self.tls_addr.port())
    }

    /// Shuts down and waits for `serve` to return.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// Fails loudly (never skips) if this machine's curl cannot speak HTTP/2.
pub fn assert_curl_has_http2() {
    let out = Command::new("curl")
        .arg("-V")
        .output()
        .expect("curl is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Features:") && l.split_whitespace().any(|f| f == "HTTP2")),
        "this curl has no HTTP/2 support (curl -V):\n{text}"
    );
}

/// Runs curl; returns stdout. `--write-out` output ends it when asked for.
/// The four ways in for curl: (name, base URL, flags): HTTP/1.1, h2c, and TLS with HTTP/1.1
/// and with HTTP/2.
pub fn protocols(server: &TlsTestServer) -> Vec<(&'static str, String, Vec<String>)> {
    let cacert = server.cert.cert_path.to_str().unwrap().to_owned();
    vec![
        ("HTTP/1.1", server.url(""), vec!["--http1.1".into()]),
        (
            "h2c",
            server.url(""),
            vec!["--http2-prior-knowledge".into()],
        ),
        (
            "HTTPS HTTP/1.1",
            server.tls_url(""),
            vec!["--http1.1".into(), "--cacert".into(), cacert.clone()],
        ),
        (
            "HTTPS HTTP/2",
            server.tls_url(""),
            vec!["--http2".into(), "--cacert".into(), cacert],
        ),
    ]
}

pub fn curl(args: &[&str]) -> String {
    let out = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--fail-with-body",
            "--max-time",
            "300",
        ])
        .args(args)
        .output()
        .expect("curl is installed");
    assert!(
        out.status.success(),
        "curl {args:?}: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).unwrap()
}

// ---- h2 clients ----

/// An h2c (prior knowledge) client connection; the connection is driven by a spawned task.
pub async fn h2c(addr: SocketAddr) -> SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(8 << 20)
        .initial_connection_window_size(64 << 20)
        .handshake(tcp)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// An HTTP/2 over TLS client connection (ALPN `h2`).
pub async fn h2_tls(addr: SocketAddr, cert: &TestCert) -> SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let connector = tokio_rustls::TlsConnector::from(cert.client_config(&[b"h2"]));
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(8 << 20)
        .initial_connection_window_size(64 << 20)
        .handshake(tls)
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A response read in full.
#[derive(Debug)]
pub struct H2Resp {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl H2Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Sends a request with `body` (flow-controlled, in pieces of at most 1 MiB) and reads the
/// whole response.
pub async fn h2_request(
    client: &mut SendRequest<Bytes>,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Result<H2Resp, h2::Error> {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://localhost{path}"));
    for (n, v) in headers {
        builder = builder.header(*n, *v);
    }
    let request = builder.body(()).unwrap();
    let mut ready = client.clone().ready().await?;
    let (response, mut send) = ready.send_request(request, body.is_empty())?;
    let upload = async move {
        send_all(&mut send, body).await?;
        Ok::<_, h2::Error>(())
    };
    let download = async move {
        let response = response.await?;
        let (parts, mut recv) = response.into_parts();
        let mut out = Vec::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk?;
            recv.flow_control().release_capacity(chunk.len())?;
            out.extend_from_slice(&chunk);
        }
        Ok::<_, h2::Error>(H2Resp {
            status: parts.status,
            headers: parts.headers,
            body: out,
        })
    };
    // The upload may fail once the server has answered (it resets the rest): the response
    // is what counts.
    let (up, down) = tokio::join!(upload, download);
    let resp = down?;
    if resp.status.is_success() {
        up?;
    }
    Ok(resp)
}

/// Sends `body` on `send` as flow control allows, then ends the stream.
pub async fn send_all(send: &mut h2::SendStream<Bytes>, mut body: Bytes) -> Result<(), h2::Error> {
    if body.is_empty() {
        return Ok(());
    }
    while !body.is_empty() {
        send.reserve_capacity(body.len().min(1 << 20));
        let cap = match std::future::poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(cap) => cap?,
            None => return Err(h2::Error::from(h2::Reason::CANCEL)),
        };
        if cap == 0 {
            continue;
        }
        let piece = body.split_to(cap.min(body.len()));
        send.send_data(piece, body.is_empty())?;
    }
    Ok(())
}

// ---- routes ----

/// Handlers blocked in `/hold?g=N` until `hold_release(N)` is notified, and the most seen at
/// once, per group (one group per test, so tests running in parallel do not mix).
pub static HOLDING: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
pub static MAX_HOLDING: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

pub fn hold_release(group: usize) -> &'static Notify {
    static RELEASE: OnceLock<[Notify; 4]> = OnceLock::new();
    &RELEASE.get_or_init(|| std::array::from_fn(|_| Notify::new()))[group]
}

/// The shared routes, plus `/hold` (waits for a release without reading the body) and
/// `/version` (the request's version and target, as the handler sees them).
pub struct H2Routes;

impl Handler for H2Routes {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        match ex.request().path() {
            "/hold" => {
                let g = ex
                    .request()
                    .query()
                    .and_then(|q| q.strip_prefix("g="))
                    .and_then(|g| g.parse::<usize>().ok())
                    .unwrap_or(0)
                    .min(3);
                let release = hold_release(g).notified();
                let now = HOLDING[g].fetch_add(1, Ordering::SeqCst) + 1;
                MAX_HOLDING[g].fetch_max(now, Ordering::SeqCst);
                let _ = tokio::time::timeout(Duration::from_secs(20), release).await;
                HOLDING[g].fetch_sub(1, Ordering::SeqCst);
                ex.respond(StatusCode::OK).body("released\n").await
            }
            "/version" => {
                let text = format!(
                    "{:?} {} {} host={}\n",
                    ex.request().version(),
                    ex.request().method(),
                    ex.request().target(),
                    ex.request().header_str("host").unwrap_or("-"),
                );
                ex.respond(StatusCode::OK).body(text).await
            }
            _ => Routes.handle(ex).await,
        }
    }
}
