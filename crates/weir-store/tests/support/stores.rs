//! What this crate's tests of both stores share: an `S3Store` on a fresh `weed mini`
//! (weir-testkit's launcher; one configuration, and the wait for the bucket, which `weed mini`
//! creates shortly after its S3 port opens), and an object read back whole through the
//! storage interface. Included by each test file that needs it (`#[path]`).

use std::time::Duration;
use weir_store::{S3Config, S3Store, Store, StoreObject, StorePath, StoreReader};
use weir_testkit::seaweed::{self, Seaweed};

/// The store's part size: S3's least, so that a few MiB make a multipart object.
pub const PART: usize = 5 << 20;

/// How many times the bucket is asked for, 200 ms apart, before the test fails: a bound that
/// turns a `weed` that never comes up into a failure instead of a hang, not a measure.
const BUCKET_TRIES: u32 = 150;

/// The store's configuration on `weed`, under `prefix`.
pub fn config(weed: &Seaweed, prefix: &str) -> S3Config {
    S3Config {
        prefix: prefix.into(),
        part_size: PART,
        parts_in_flight: 2,
        ..S3Config::new(
            &weed.endpoint,
            seaweed::BUCKET,
            seaweed::ACCESS_KEY,
            seaweed::SECRET_KEY,
        )
    }
}

/// A store on a fresh `weed mini` with its bucket there; `None` when `weed` is missing and the
/// tools are not required (weir-testkit says so loudly).
pub async fn weed_store(prefix: &str) -> Option<(Seaweed, S3Store)> {
    let weed = Seaweed::start()?;
    let store = S3Store::new(config(&weed, prefix)).unwrap();
    let mut tries = 0;
    loop {
        match store.create_bucket_if_missing().await {
            Ok(()) => return Some((weed, store)),
            Err(e) if tries == BUCKET_TRIES => panic!("bucket: {e}\n{}", weed.log()),
            Err(_) => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// The bytes of the object at `path`, read back through the storage interface.
pub async fn read_all<S: Store>(store: &S, path: &str) -> Vec<u8> {
    let object = store.open(&StorePath::parse(path).unwrap()).await.unwrap();
    let size = object.meta().size;
    let mut reader = object.read(0..size).await.unwrap();
    let mut out = Vec::new();
    while let Some(chunk) = reader.next_chunk().await.unwrap() {
        out.extend_from_slice(&chunk);
    }
    out
}
