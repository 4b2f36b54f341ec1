//! What `weir serve`'s access log (on by default) costs, at answers as small as plaintext's:
//! the same `weir serve` twice, once logging to a file (`--access-log FILE`) and once with
//! `--no-access-log`, `GET` of a 13-byte file (`Hello, World!`: `weir serve` has no
//! `/plaintext` route; this is the nearest request it serves) at 64 keep-alive connections,
//! depth 1 and 16 (pipelined as `scenario::plaintext` drives it: the same load generator),
//! the two interleaved round by round. The cost is the median of the round-by-round ratios of
//! requests/s, logging over not.

use super::Sizes;
use super::many::small_gets;
use crate::scenario::Settings;
use crate::scenario::child::{Server, free_port, spawn, weir_serve};
use crate::scenario::order;
use crate::stats::Samples;
use std::io;
use std::net::SocketAddr;
use std::path::Path;

/// The file served, and its body.
pub(in crate::scenario) const PATH: &str = "/files/hello.txt";
pub(in crate::scenario) const BODY: &[u8] = b"Hello, World!";
/// Connections, as the plaintext scenario's.
const CONNS: usize = 64;
/// Depths, as the figures.
pub const DEPTHS: [usize; 2] = [1, 16];

/// Per depth: requests/s logging and not, and their round-by-round ratio.
#[derive(Default)]
pub struct LogCost {
    pub logging: [Samples; 2],
    pub silent: [Samples; 2],
    pub ratio: [Samples; 2],
}

fn start(weir: &Path, root: &Path, log: Option<&Path>) -> io::Result<Server> {
    let addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    std::fs::create_dir_all(root)?;
    let mut c = weir_serve(weir, root, addr);
    match log {
        Some(file) => c.arg("--access-log").arg(file),
        None => c.arg("--no-access-log"),
    };
    let server = spawn(c, addr, "/files/", None)?;
    put_hello(addr)?;
    Ok(server)
}

/// Stores the small file ([`BODY`] at [`PATH`]) in the `weir serve` at `addr`.
pub(in crate::scenario) fn put_hello(addr: SocketAddr) -> io::Result<()> {
    let head = format!(
        "PUT {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        BODY.len()
    );
    match crate::scenario::transfer::small(addr, &head, BODY)? {
        200 | 201 => Ok(()),
        status => Err(io::Error::other(format!("PUT {PATH}: {status}"))),
    }
}

/// Measures the access log's cost over `rounds` rounds.
pub fn run(
    s: &Settings,
    weir: &Path,
    scratch: &Path,
    rounds: usize,
    z: &Sizes,
) -> io::Result<LogCost> {
    let servers = [
        start(
            weir,
            &scratch.join("log-on"),
            Some(&scratch.join("access.log")),
        )?,
        start(weir, &scratch.join("log-off"), None)?,
    ];
    let mut cost = LogCost::default();
    for round in 0..rounds {
        for (d, &depth) in DEPTHS.iter().enumerate() {
            let mut rps = [0.0; 2];
            for i in order(2, round) {
                let load = (CONNS, depth, s.client_threads);
                let (win, _) = small_gets(&servers[i], PATH, BODY, load, (z.warmup, z.window))?;
                if win.errors > 0 {
                    return Err(io::Error::other(format!(
                        "access log: {} GETs failed at depth {depth}",
                        win.errors
                    )));
                }
                rps[i] = win.rps;
            }
            cost.logging[d].push(rps[0]);
            cost.silent[d].push(rps[1]);
            cost.ratio[d].push(rps[0] / rps[1]);
        }
    }
    eprintln!("services: access log measured");
    Ok(cost)
}
