//! Upload throughput of `weir serve` and `weir put` against raw TCP, interleaved in one run.
//!
//! ```sh
//! cargo build --release -p weir-cli --examples
//! target/release/examples/upload_bench [WEIR_BINARY] [SIZE_MIB] [ROUNDS] [DATA_DIR]
//! ```
//!
//! Defaults: `target/release/weir`, 700 MiB, 3 rounds, `/tmp/weir-bench`. Each round runs
//! every scenario once, so that a noisy neighbour slows all of them alike; the report gives the
//! median per scenario and ratios between medians.
//!
//! | scenario | sender | receiver |
//! | --- | --- | --- |
//! | raw TCP → discard | writes from memory, 4 MiB each | reads into 1 MiB, discards |
//! | raw TCP → file | same | 256 KiB reads, `write(2)` to a file (then with `fsync`) |
//! | weir serve --no-hash | raw HTTP PUT from memory | splice to file, fsync, rename |
//! | weir serve (SHA-256) | raw HTTP PUT from memory | read, hash, write, fsync, rename |
//! | weir put → discard | `weir put --no-digest` (1 MiB buffer) | raw HTTP receiver, discards |
//! | weir put --sendfile → discard | `weir put --no-digest --sendfile` | same |
//! | raw sendfile → discard | `sendfile(2)` of the file, 8 MiB per call | reads into 1 MiB, discards |
//! | weir put → weir serve --no-hash | `weir put --no-digest` | splice to file |
//!
//! Loopback only; every transfer is bounded in size and count.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let weir = PathBuf::from(args.get(1).map_or("target/release/weir", String::as_str));
    let size_mib: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(700);
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = PathBuf::from(args.get(4).map_or("/tmp/weir-bench", String::as_str));
    let len = size_mib << 20;
    std::fs::create_dir_all(&dir).expect("data dir");

    let payload = make_payload(len);
    let source = dir.join(format!("source-{size_mib}MiB.bin"));
    if std::fs::metadata(&source).map(|m| m.len() as usize).ok() != Some(len) {
        std::fs::write(&source, &payload).expect("write source file");
    }
    // Read it once so that it is in the page cache, as the brief's measurement asks.
    let _ = std::fs::read(&source);

    let mut plain = Weir::start(&weir, &dir.join("root-nohash"), &["--no-hash"]);
    let mut hashed = Weir::start(&weir, &dir.join("root-hash"), &[]);

    let names = [
        "raw TCP -> discard",
        "raw TCP -> file (write)",
        "raw TCP -> file (write + fsync)",
        "weir serve --no-hash (splice, fsync)",
        "weir serve (SHA-256, fsync)",
        "weir put -> discard receiver",
        "weir put -> weir serve --no-hash",
        "raw TCP sendfile(file) -> discard",
        "weir put --sendfile -> discard receiver",
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        eprintln!("round {}/{rounds}", round + 1);
        times[0].push(raw_tcp(&payload, Sink::Discard));
        times[1].push(raw_tcp(&payload, Sink::File(dir.join("raw.out"), false)));
        times[2].push(raw_tcp(&payload, Sink::File(dir.join("raw.out"), true)));
        plain.delete("bench");
        times[3].push(http_put_from_memory(plain.addr, &payload));
        hashed.delete("bench");
        times[4].push(http_put_from_memory(hashed.addr, &payload));
        times[5].push(weir_put_to_discard(&weir, &source, len));
        plain.delete("bench");
        times[6].push(weir_put(&weir, &source, plain.addr));
        times[7].push(raw_sendfile(&source, len));
        times[8].push(weir_put_to_discard_with(
            &weir,
            &source,
            len,
            &["--sendfile"],
        ));
    }
    plain.stop();
    hashed.stop();
    let _ = std::fs::remove_file(dir.join("raw.out"));

    let median = |v: &Vec<Duration>| {
        let mut v = v.clone();
        v.sort();
        v[v.len() / 2]
    };
    let rate = |d: Duration| len as f64 / d.as_secs_f64() / (1u64 << 20) as f64;
    let medians: Vec<f64> = times.iter().map(|t| rate(median(t))).collect();
    println!("\n{size_mib} MiB over loopback, {rounds} rounds, median MiB/s (all rounds)");
    for (i, name) in names.iter().enumerate() {
        let all: Vec<String> = times[i]
            .iter()
            .map(|d| format!("{:.0}", rate(*d)))
            .collect();
        println!("  {name:<40} {:>7.0}   [{}]", medians[i], all.join(", "));
    }
    let ratio = |a: usize, b: usize| medians[a] / medians[b];
    println!("\nratios (same run):");
    println!(
        "  weir serve --no-hash / raw TCP -> file (write)         {:.2}",
        ratio(3, 1)
    );
    println!(
        "  weir serve --no-hash / raw TCP -> file (write + fsync) {:.2}",
        ratio(3, 2)
    );
    println!(
        "  weir serve SHA-256   / raw TCP -> file (write)         {:.2}",
        ratio(4, 1)
    );
    println!(
        "  weir serve SHA-256   / raw TCP -> file (write + fsync) {:.2}",
        ratio(4, 2)
    );
    println!(
        "  weir put -> discard  / raw TCP -> discard              {:.2}",
        ratio(5, 0)
    );
    println!(
        "  weir put --sendfile -> discard / raw TCP -> discard   {:.2}",
        ratio(8, 0)
    );
    println!(
        "  raw sendfile -> discard / raw TCP -> discard           {:.2}",
        ratio(7, 0)
    );
    println!(
        "  weir put -> weir serve --no-hash / raw TCP -> file (write + fsync) {:.2}",
        ratio(6, 2)
    );
}

/// Incompressible-looking bytes (xorshift).
fn make_payload(len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for chunk in out.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    out
}

enum Sink {
    Discard,
    /// Write to this file; `true`: fsync at the end.
    File(PathBuf, bool),
}

/// A raw TCP transfer of `payload` to a receiver thread; timed from connect to the receiver's
/// last byte handled.
fn raw_tcp(payload: &[u8], sink: Sink) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    if let Sink::File(path, _) = &sink {
        let _ = std::fs::remove_file(path);
    }
    let receiver = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        match sink {
            Sink::Discard => {
                let mut buf = vec![0u8; 1 << 20];
                while s.read(&mut buf).unwrap() > 0 {}
            }
            Sink::File(path, sync) => {
                let mut f = std::fs::File::create(path).unwrap();
                let mut buf = vec![0u8; 256 << 10];
                loop {
                    let n = s.read(&mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n]).unwrap();
                }
                if sync {
                    f.sync_all().unwrap();
                }
            }
        }
        Instant::now()
    });
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    for piece in payload.chunks(4 << 20) {
        s.write_all(piece).unwrap();
    }
    drop(s);
    receiver.join().unwrap() - start
}

/// A PUT of `payload` written from memory; timed until the response.
fn http_put_from_memory(addr: SocketAddr, payload: &[u8]) -> Duration {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    write!(
        s,
        "PUT /files/bench HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        payload.len()
    )
    .unwrap();
    for piece in payload.chunks(4 << 20) {
        s.write_all(piece).unwrap();
    }
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let elapsed = start.elapsed();
    assert!(
        response.starts_with(b"HTTP/1.1 201") || response.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&response)
    );
    elapsed
}

/// `weir put --no-digest` to an in-process HTTP receiver that discards the body.
fn weir_put_to_discard(weir: &Path, source: &Path, len: usize) -> Duration {
    weir_put_to_discard_with(weir, source, len, &[])
}

/// A raw TCP transfer of the file with `sendfile(2)`, 8 MiB per call, to a discarding receiver.
fn raw_sendfile(source: &Path, len: usize) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        while s.read(&mut buf).unwrap() > 0 {}
        Instant::now()
    });
    let file = std::fs::File::open(source).unwrap();
    let start = Instant::now();
    let s = TcpStream::connect(addr).unwrap();
    let mut offset = 0u64;
    while (offset as usize) < len {
        let piece = (len - offset as usize).min(8 << 20);
        let n = rustix::fs::sendfile(&s, &file, Some(&mut offset), piece).unwrap();
        assert!(n > 0);
    }
    drop(s);
    receiver.join().unwrap() - start
}

fn weir_put_to_discard_with(weir: &Path, source: &Path, len: usize, extra: &[&str]) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || {
        let (s, _) = listener.accept().unwrap();
        let mut r = BufReader::with_capacity(1 << 20, s);
        let mut expect = false;
        loop {
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            expect |= line
                .to_ascii_lowercase()
                .starts_with("expect: 100-continue");
        }
        if expect {
            r.get_mut()
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .unwrap();
        }
        let mut left = len;
        while left > 0 {
            let buf = r.fill_buf().unwrap();
            assert!(!buf.is_empty(), "body ended early");
            let n = buf.len().min(left);
            r.consume(n);
            left -= n;
        }
        r.get_mut()
            .write_all(b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            .unwrap();
    });
    let elapsed = run_put(weir, source, &format!("http://{addr}/files/bench"), extra);
    receiver.join().unwrap();
    elapsed
}

fn weir_put(weir: &Path, source: &Path, addr: SocketAddr) -> Duration {
    run_put(weir, source, &format!("http://{addr}/files/bench"), &[])
}

/// Runs `weir put --no-digest`, timed from spawn to exit (process start included).
fn run_put(weir: &Path, source: &Path, url: &str, extra: &[&str]) -> Duration {
    let start = Instant::now();
    let out = Command::new(weir)
        .args(["put", "--no-digest"])
        .args(extra)
        .arg(source)
        .arg(url)
        .output()
        .unwrap();
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

/// A `weir serve` process.
struct Weir {
    child: Child,
    addr: SocketAddr,
}

impl Weir {
    fn start(weir: &Path, root: &Path, args: &[&str]) -> Weir {
        let mut child = Command::new(weir)
            .arg("serve")
            .arg("--root")
            .arg(root)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start weir serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .rsplit_once(" on http://")
            .expect("weir serve did not start")
            .1
            .parse()
            .unwrap();
        Weir { child, addr }
    }

    fn delete(&self, name: &str) {
        let mut s = TcpStream::connect(self.addr).unwrap();
        write!(
            s,
            "DELETE /files/{name} HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n"
        )
        .unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
