//! The axum example (`examples/axum_upload.rs`), its own code compiled in here: an upload
//! larger than weir's default body limit streams to disk through the handle (the route raises
//! the limit), comes back whole as a `FileBody`, and names that could leave the directory are
//! refused; the app is served as the example serves it, with `ConnectInfo`.

#[allow(dead_code, unreachable_pub)]
#[path = "../../examples/axum_upload.rs"]
mod axum_upload;

use crate::h2_support::*;
use crate::support::*;
use std::net::SocketAddr;
use std::process::Command;
use weir::{Config, MakeServiceHandler};

#[test]
fn the_axum_example_stores_an_upload_and_serves_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let app = axum_upload::app(store.clone()).into_make_service_with_connect_info::<SocketAddr>();
    let server = TestServer::start_with(Config::default(), MakeServiceHandler::new(app), None);
    let data = pattern(40 << 20, 4);
    let upload = dir.path().join("upload.bin");
    std::fs::write(&upload, &data).unwrap();

    let url = server.url("/files/big.bin");
    let put = curl(&["-T", upload.to_str().unwrap(), &url]);
    assert_eq!(put, format!("{} bytes\n", data.len()));
    assert!(
        std::fs::read(store.join("big.bin")).unwrap() == data,
        "stored whole"
    );
    let copy = dir.path().join("copy.bin");
    curl(&["-o", copy.to_str().unwrap(), &url]);
    assert!(std::fs::read(&copy).unwrap() == data, "served back whole");

    let status = |args: &[&str]| {
        let out = Command::new("curl")
            .args([
                "--silent",
                "--output",
                "/dev/null",
                "--write-out",
                "%{http_code}",
            ])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(status(&[&server.url("/files/missing")]), "404");
    assert_eq!(
        status(&[
            "-T",
            upload.to_str().unwrap(),
            &server.url("/files/.hidden")
        ]),
        "400"
    );
    let left: Vec<_> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        ["big.bin"],
        "nothing else stored, no partial file left"
    );
}
