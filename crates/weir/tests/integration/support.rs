//! Test support: a server on a background runtime, the kit's raw HTTP/1.1 client, and a handler with
//! routes for every behaviour under test.

use http::{Method, StatusCode};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;
use weir::{Config, Exchange, Handler, ServerHandle};
pub use weir_testkit::h1::{Client, Resp};
use weir_testkit::server::ServerThread;
use weir_testkit::server::query_u64;

/// A server running on its own thread and runtime, shut down on drop.
pub struct TestServer {
    pub addr: SocketAddr,
    pub handle: ServerHandle,
    server: ServerThread,
}

impl TestServer {
    pub fn start(config: Config) -> Self {
        Self::start_with(config, Routes, None)
    }

    pub fn start_with<H: Handler>(
        config: Config,
        handler: H,
        unix: Option<std::path::PathBuf>,
    ) -> Self {
        let (server, addr) =
            ServerThread::start(config, handler, async move |s: &mut weir::Server| {
                let addr = s.listen_tcp("127.0.0.1:0").await.unwrap();
                if let Some(path) = unix {
                    s.listen_unix(path).unwrap();
                }
                addr
            });
        Self {
            addr,
            handle: server.handle.clone(),
            server,
        }
    }

    pub fn connect(&self) -> Client {
        Client::new(TcpStream::connect(self.addr).unwrap())
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Shuts down and waits for `serve` to return.
    pub fn stop(self) {
        self.server.stop();
    }
}

/// One request over a fresh connection.
pub fn request(server: &TestServer, raw: &[u8]) -> Resp {
    server.connect().send(raw).read_response()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Deterministic pseudo-random bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Outcomes recorded by the `/observe` route, by request id: how a handler saw its body end.
pub static OBSERVED: std::sync::Mutex<Vec<(u64, String)>> = std::sync::Mutex::new(Vec::new());

/// Waits (up to 10 s) for the `/observe` route to record request `id`.
pub fn observed(id: u64) -> String {
    for _ in 0..1000 {
        if let Some((_, v)) = OBSERVED.lock().unwrap().iter().find(|(i, _)| *i == id) {
            return v.clone();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("request {id} was not observed");
}

/// The routes the tests use.
pub struct Routes;

impl Handler for Routes {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), weir::Error> {
        if let Some(max) = query_u64(ex, "max") {
            ex.set_max_body_size(Some(max));
        }
        if let Some(threshold) = query_u64(ex, "threshold") {
            ex.set_pause_threshold(threshold as usize);
        }
        let path = ex.request().path().to_owned();
        match (ex.request().method().clone(), path.as_str()) {
            (Method::GET | Method::HEAD, "/hello") => {
                ex.respond(StatusCode::OK)
                    .header("content-type", "text/plain")
                    .body("Hello, World!")
                    .await
            }
            (_, "/echo") => {
                let mut body = Vec::new();
                ex.read_body_to_end(&mut body).await?;
                ex.respond(StatusCode::OK).body(&body).await
            }
            (_, "/sha") => {
                // Streams the body through SHA-256 with a buffer size chosen by the client;
                // `sleep` (ms) delays the first read, to test backpressure.
                if let Some(ms) = query_u64(ex, "sleep") {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                let size = query_u64(ex, "buf").unwrap_or(256 * 1024) as usize;
                let mut buf = vec![0u8; size];
                let mut hasher = Sha256::new();
                loop {
                    match ex.read_body(&mut buf).await {
                        Ok(0) => break,
                        Ok(n) => hasher.update(&buf[..n]),
                        Err(e) if e.is_too_large() => {
                            return ex
                                .respond(StatusCode::PAYLOAD_TOO_LARGE)
                                .body("too large\n")
                                .await;
                        }
                        Err(e) => return Err(e),
                    }
                }
                let s = ex.body_stats();
                let text = format!(
                    "{} received={} copied={} direct={} spliced={} peak={}\n",
                    hex(&hasher.finalize()),
                    s.received,
                    s.copied,
                    s.direct,
                    s.spliced,
                    s.peak_buffered
                );
                ex.respond(StatusCode::OK).body(text).await
            }
            (_, "/at-hand") => {
                // What `body_at_hand` says once `want` body bytes are at hand (waiting for
                // them: the client sends them and stops) and after reading `take` of them,
                // recorded under `id` (`observed`) before the rest is read; answered: what it
                // says once the body ended.
                let id = query_u64(ex, "id").unwrap_or(0);
                let want = query_u64(ex, "want").unwrap_or(0);
                let take = query_u64(ex, "take").unwrap_or(0) as usize;
                for _ in 0..1000 {
                    if ex.body_at_hand() >= want {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                let before = ex.body_at_hand();
                let mut buf = vec![0u8; take];
                let mut got = 0;
                while got < take {
                    match ex.read_body(&mut buf[got..]).await? {
                        0 => break,
                        n => got += n,
                    }
                }
                let after = ex.body_at_hand();
                OBSERVED
                    .lock()
                    .unwrap()
                    .push((id, format!("before={before} after={after}")));
                let mut rest = Vec::new();
                ex.read_body_to_end(&mut rest).await?;
                let text = format!("end={} read={}\n", ex.body_at_hand(), got + rest.len());
                ex.respond(StatusCode::OK).body(text).await
            }
            (_, "/chunks") => {
                let mut hasher = Sha256::new();
                let mut largest = 0;
                while let Some(chunk) = ex.read_body_chunk().await? {
                    largest = largest.max(chunk.len());
                    hasher.update(&chunk);
                }
                let text = format!("{} largest={largest}\n", hex(&hasher.finalize()));
                ex.respond(StatusCode::OK).body(text).await
            }
            (_, "/file") => {
                let dir = tempfile::tempdir()?;
                let path = dir.path().join("body");
                let mut file = std::fs::File::create(&path)?;
                let n = ex.body_to_file(&mut file).await?;
                drop(file);
                let data = std::fs::read(&path)?;
                let s = ex.body_stats();
                let text = format!(
                    "{} len={n} spliced={} copied={}\n",
                    sha256_hex(&data),
                    s.spliced,
                    s.copied
                );
                ex.respond(StatusCode::OK).body(text).await
            }
            (_, "/observe") => {
                let id = query_u64(ex, "id").unwrap_or(0);
                let mut buf = vec![0u8; 4096];
                let mut total = 0;
                let outcome = loop {
                    match ex.read_body(&mut buf).await {
                        Ok(0) => break format!("complete {total}"),
                        Ok(n) => total += n,
                        Err(e) if e.is_disconnect() => break "disconnect".to_string(),
                        Err(e) if e.is_timeout() => break "timeout".to_string(),
                        Err(e) if e.is_too_large() => break "too large".to_string(),
                        Err(e) if e.is_protocol() => break "protocol".to_string(),
                        Err(e) => break format!("other {e}"),
                    }
                };
                OBSERVED.lock().unwrap().push((id, outcome.clone()));
                ex.respond(StatusCode::OK).body(outcome).await
            }
            (_, "/file-at") => {
                // The test names the file (`?path=`) so it can watch it while the body arrives.
                let path = ex
                    .request()
                    .query()
                    .and_then(|q| q.strip_prefix("path="))
                    .map(std::path::PathBuf::from)
                    .ok_or_else(|| weir::Error::from(std::io::Error::other("no path")))?;
                let mut file = std::fs::File::create(path)?;
                let n = ex.body_to_file(&mut file).await?;
                ex.respond(StatusCode::OK).body(format!("len={n}\n")).await
            }
            (_, "/file-pieces") => {
                let piece = query_u64(ex, "piece").unwrap_or(1 << 20);
                let mut file = tempfile::tempfile()?;
                let (mut total, mut pieces, mut largest) = (0u64, 0u64, 0u64);
                loop {
                    let n = ex.body_to_file_at_most(&mut file, piece).await?;
                    if n == 0 {
                        break;
                    }
                    total += n;
                    pieces += 1;
                    largest = largest.max(n);
                }
                use std::io::{Read, Seek};
                file.rewind()?;
                let mut data = Vec::new();
                file.read_to_end(&mut data)?;
                let text = format!(
                    "{} len={total} pieces={pieces} largest={largest}\n",
                    sha256_hex(&data)
                );
                ex.respond(StatusCode::OK).body(text).await
            }
            (_, "/ignore") => ex.respond(StatusCode::OK).body("ignored\n").await,
            (_, "/unauthorized") => ex.respond(StatusCode::UNAUTHORIZED).empty().await,
            (_, "/stream") => {
                let n = query_u64(ex, "n").unwrap_or(3);
                let mut w = ex.respond(StatusCode::OK).stream(None).await?;
                for i in 0..n {
                    w.write(format!("part {i}\n").as_bytes()).await?;
                }
                w.write(&vec![b'x'; 100_000]).await?;
                w.finish().await
            }
            (_, "/hints") => {
                ex.send_informational(
                    StatusCode::from_u16(103).unwrap(),
                    &[("link", b"</a.css>; rel=preload")],
                )
                .await?;
                ex.respond(StatusCode::OK).body("after hints").await
            }
            (_, "/no-content") => ex.respond(StatusCode::NO_CONTENT).empty().await,
            (_, "/not-modified") => ex.respond(StatusCode::NOT_MODIFIED).empty().await,
            (_, "/forget") => Ok(()),
            (_, "/fail") => Err(weir::Error::status(StatusCode::IM_A_TEAPOT)),
            (_, "/bad-header") => {
                ex.respond(StatusCode::OK)
                    .header("x-evil", "a\r\nset-cookie: x=1")
                    .body("no")
                    .await
            }
            (_, "/big") => {
                let len = query_u64(ex, "len").unwrap_or(1 << 20) as usize;
                ex.respond(StatusCode::OK).body(pattern(len, 7)).await
            }
            (_, "/sendfile") => {
                // `?short=1`: the file is 5 bytes shorter than the length announced.
                let len = query_u64(ex, "len").unwrap_or(1 << 20) as usize;
                let mut file = tempfile::tempfile()?;
                file.write_all(&pattern(len, 9))?;
                let ask = len as u64
                    + if query_u64(ex, "short").is_some() {
                        5
                    } else {
                        0
                    };
                ex.respond(StatusCode::OK).file(&file, 0, ask).await
            }
            (_, "/sendfile-in-body") => {
                // A streamed body with a file's bytes in its middle (`BodyWriter::send_file`):
                // "head", bytes 3.. of the file, "tail". `?short=1`: the file is shorter than
                // the bytes asked for, and the handler returns the error with the body open.
                let len = query_u64(ex, "len").unwrap_or(1 << 20) as usize;
                let mut file = tempfile::tempfile()?;
                file.write_all(&pattern(len, 9))?;
                let ask = if query_u64(ex, "short").is_some() {
                    len as u64
                } else {
                    len as u64 - 3
                };
                let mut w = ex.respond(StatusCode::OK).stream(None).await?;
                w.write(b"head").await?;
                w.send_file(&file, 3, ask).await?;
                w.write(b"tail").await?;
                w.finish().await
            }
            _ => ex.respond(StatusCode::NOT_FOUND).body("not found\n").await,
        }
    }
}
