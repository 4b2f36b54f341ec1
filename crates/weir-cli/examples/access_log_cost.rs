//! What the access log costs `weir serve` on small requests: requests/s and server CPU time per
//! request with the log off, as text, and as JSON, interleaved in one run.
//!
//! ```sh
//! cargo build --release -p weir-cli --bin weir --example access_log_cost
//! target/release/examples/access_log_cost [WEIR_BINARY] [ROUNDS] [SECONDS] [CONNECTIONS] [DEPTH]
//! ```
//!
//! Defaults: `target/release/weir`, 5 rounds, 3 s per run, 16 connections, 16 requests in
//! flight per connection (pipelined `GET /healthz`). Each round starts a fresh server per mode,
//! in an order that alternates between rounds, and runs the same load against it; the log goes
//! to a file (on the same disk as the temporary directory). Reported per mode: the median over
//! rounds of requests/s, of requests/s over the log-off run of the same round, and of server
//! CPU time (user + system, from `/proc/PID/stat`) per request. Loopback only; one client
//! thread per connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const MODES: [(&str, &[&str]); 3] = [
    ("log off", &["--no-access-log"]),
    ("log, text", &["--log-format", "text"]),
    ("log, JSON", &["--log-format", "json"]),
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let weir = PathBuf::from(arg(1, "target/release/weir"));
    let rounds: usize = arg(2, "5").parse().expect("rounds");
    let seconds: f64 = arg(3, "3").parse().expect("seconds");
    let connections: usize = arg(4, "16").parse().expect("connections");
    let depth: usize = arg(5, "16").parse().expect("depth");
    let dir = tempfile_dir();
    // Per mode: (requests/s, ratio to log off, CPU µs per request), one per round.
    let mut results = vec![Vec::new(); MODES.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..MODES.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut rps = [0.0; MODES.len()];
        let mut cpu = [0.0; MODES.len()];
        for &m in &order {
            let (mut child, addr) = start(&weir, &dir, round, m);
            let cpu0 = cpu_seconds(child.id());
            let (n, elapsed) = load(addr, connections, depth, seconds);
            let cpu1 = cpu_seconds(child.id());
            let _ = child.kill();
            let _ = child.wait();
            rps[m] = n as f64 / elapsed;
            cpu[m] = (cpu1 - cpu0) * 1e6 / n as f64;
        }
        for m in 0..MODES.len() {
            results[m].push((rps[m], rps[m] / rps[0], cpu[m]));
        }
        eprintln!(
            "round {}/{rounds}: {rps:.0?} req/s, {cpu:.2?} µs/req",
            round + 1
        );
    }
    println!("| mode | requests/s | × log off, same round | server CPU µs/request |");
    println!("| --- | --- | --- | --- |");
    for (m, (name, _)) in MODES.iter().enumerate() {
        let col = |f: fn(&(f64, f64, f64)) -> f64| {
            let mut v: Vec<f64> = results[m].iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[0], v[v.len() - 1])
        };
        let (r, rmin, rmax) = col(|r| r.0);
        let (x, xmin, xmax) = col(|r| r.1);
        let (c, cmin, cmax) = col(|r| r.2);
        println!(
            "| {name} | {r:.0} ({rmin:.0}–{rmax:.0}) | {x:.3} ({xmin:.3}–{xmax:.3}) | \
             {c:.2} ({cmin:.2}–{cmax:.2}) |"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("weir-access-log-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    dir
}

/// Starts `weir serve` in `mode` on a free port; returns it and its address.
fn start(weir: &Path, dir: &Path, round: usize, mode: usize) -> (Child, SocketAddr) {
    let root = dir.join("root");
    let log = dir.join(format!("access-{round}-{mode}.log"));
    let mut cmd = Command::new(weir);
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&root)
        .args(MODES[mode].1)
        .env_remove("WEIR_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if mode != 0 {
        cmd.arg("--access-log").arg(&log);
    }
    let mut child = cmd.spawn().expect("weir serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("serving line");
    let addr = line
        .trim()
        .rsplit_once("http://")
        .and_then(|(_, a)| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    (child, addr)
}

/// Pipelined `GET /healthz` on `connections` connections (a thread each) for `seconds`;
/// returns the responses received and the time taken.
fn load(addr: SocketAddr, connections: usize, depth: usize, seconds: f64) -> (u64, f64) {
    let request = b"GET /healthz HTTP/1.1\r\nhost: bench\r\n\r\n";
    let response_len = {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.write_all(request).expect("write");
        read_response_len(&mut s)
    };
    let batch = request.repeat(depth);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..connections)
        .map(|_| {
            let (stop, done, batch) = (stop.clone(), done.clone(), batch.clone());
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).expect("connect");
                s.set_nodelay(true).expect("nodelay");
                let mut buf = vec![0; response_len * depth];
                while !stop.load(Ordering::Relaxed) {
                    s.write_all(&batch).expect("write");
                    s.read_exact(&mut buf).expect("responses");
                    done.fetch_add(depth as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    let n = done.load(Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    for t in threads {
        t.join().expect("client thread");
    }
    (n, elapsed)
}

/// Reads one response (head with `content-length`, then the body) and returns its length:
/// every `/healthz` answer has the same length (the `Date` field is fixed-width).
fn read_response_len(s: &mut TcpStream) -> usize {
    let mut got = Vec::new();
    let mut byte = [0; 1];
    while !got.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).expect("head");
        got.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&got).to_ascii_lowercase();
    let body: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("content-length");
    got.len() + body
}

/// User + system CPU seconds of a process, from `/proc/PID/stat` (clock ticks of 1/100 s).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    ticks as f64 / 100.0
}
