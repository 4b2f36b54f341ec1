//! Uploads a file to an S3 bucket with `S3Store` alone (no HTTP server in between): the direct
//! baseline that `weir serve --store s3://` is compared with (docs/BENCHMARKS.md, "s3"; the first
//! comparison: docs/archive/BENCHMARKS-history.md, "S3: `weir serve --store s3://` against the S3
//! client alone").
//!
//! `cargo run --release -p weir-store --features s3 --example s3_put -- FILE KEY` with
//! `S3_ENDPOINT`, `S3_BUCKET`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, and optionally
//! `S3_PART_SIZE` (bytes, default 8 MiB) and `S3_PARTS_IN_FLIGHT` (default 2). Prints the seconds
//! the upload took (from the first byte read to the completed commit).

use std::io::Read;
use std::time::{Duration, Instant};
use weir_store::{S3Config, S3Store, Store, StorePath, StoreUpload, UploadOptions};

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, file, key] = args.as_slice() else {
        panic!("usage: s3_put FILE KEY");
    };
    let config = S3Config {
        part_size: std::env::var("S3_PART_SIZE").map_or(S3Config::DEFAULT_PART_SIZE, |v| {
            v.parse().expect("S3_PART_SIZE: bytes")
        }),
        parts_in_flight: std::env::var("S3_PARTS_IN_FLIGHT")
            .map_or(S3Config::DEFAULT_PARTS_IN_FLIGHT, |v| {
                v.parse().expect("S3_PARTS_IN_FLIGHT")
            }),
        request_timeout: Duration::from_secs(120),
        ..S3Config::new(
            &env("S3_ENDPOINT"),
            &env("S3_BUCKET"),
            &env("AWS_ACCESS_KEY_ID"),
            &env("AWS_SECRET_ACCESS_KEY"),
        )
    };
    let store = S3Store::new(config).expect("store");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let path = StorePath::parse(key).expect("key");
    let mut file = std::fs::File::open(file).expect("open");
    let seconds = runtime.block_on(async {
        let start = Instant::now();
        let mut up = store
            .begin(&path, UploadOptions::default(), None)
            .await
            .expect("begin");
        // The buffer size `weir serve` reads a body with at most (its read buffer's chunks).
        let mut buf = vec![0; 256 << 10];
        loop {
            let n = file.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            up.write(&buf[..n]).await.expect("write");
        }
        up.commit(None).await.expect("commit");
        start.elapsed().as_secs_f64()
    });
    println!("{seconds:.3}");
}
