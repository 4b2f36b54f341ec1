//! A server with large responses, for slow-read tests (`scripts/slow-clients.sh` uses it while
//! `weir serve` has no download route): `GET /bulk?len=N` answers N bytes (default 64 MiB) in
//! 64 KiB writes, anything else `ok`. Default configuration: the minimum response rate is what
//! protects it from clients that read slowly or not at all.
//!
//! ```sh
//! cargo run --release -p weir --example bulk -- 127.0.0.1:8081
//! ```

use weir::http::StatusCode;
use weir::{Config, Error, Exchange, Handler, Server};

struct Bulk;

impl Handler for Bulk {
    async fn handle(&self, ex: &mut Exchange<'_>) -> Result<(), Error> {
        if ex.request().path() != "/bulk" {
            return ex.respond(StatusCode::OK).body("ok\n").await;
        }
        let len = ex
            .request()
            .query()
            .and_then(|q| q.strip_prefix("len="))
            .and_then(|n| n.parse().ok())
            .unwrap_or(64u64 << 20);
        static BLOCK: [u8; 64 * 1024] = [b'w'; 64 * 1024];
        let mut w = ex.respond(StatusCode::OK).stream(Some(len)).await?;
        let mut left = len;
        while left > 0 {
            let n = left.min(BLOCK.len() as u64) as usize;
            w.write(&BLOCK[..n]).await?;
            left -= n as u64;
        }
        w.finish().await
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8081".into());
    let server = Server::bind(addr.as_str(), Config::default()).await?;
    eprintln!("bulk: serving on {addr}");
    server
        .serve_until(Bulk, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
