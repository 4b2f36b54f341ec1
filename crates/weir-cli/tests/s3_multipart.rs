//! Multipart uploads through weir's S3 API (`weir serve --s3-api`), with real clients, on both
//! stores: boto3 (`s3_multipart/client.py`: parts out of order and resent, listings, the
//! completion byte-exact with HeadObject's ETag, every refusal with S3's code and nothing
//! stored, conditional completions, UploadPartCopy with a range, boto3's CRC32 checksums; the
//! object's composite or full-object checksum formed at completion kept and answered by
//! HeadObject, GetObject (whole and by part) and GetObjectAttributes, checked against values
//! the script computes with zlib and hashlib) and
//! a completion answered `200` at once and kept alive (`--s3-api-keep-alive 0`), its result or
//! `<Error>` document after, and its spaces read on the wire while a proxy holds the bucket
//! store's backend; aws-cli (`aws s3 cp` of a 20 MiB file over an 8 MB multipart threshold, both ways,
//! byte-exact); an abandoned upload swept (`--s3-api-multipart-expiry 1`); weir `SIGKILL`ed
//! during a completion, leaving the old object or the new one, never a part of one. The bucket
//! store runs on SeaweedFS's `weed mini`. Each test skips with a loud message without boto3,
//! aws-cli or `weed`, and fails under `WEIR_REQUIRE_TOOLS=1` (weir-testkit's `tools`).

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use weir_testkit::seaweed::Seaweed;
use weir_testkit::tools;

// The shared node helpers this test does not all use.
#[allow(dead_code)]
mod s3_nodes;
use s3_nodes::{WEIR, start_weed};

const ACCESS_KEY: &str = "AKIDWEIRTEST";
const SECRET: &str = "weir-test-secret-key";
const BUCKET: &str = "photos";

/// Which store the server runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Local,
    Bucket,
}

/// A `weir serve` with its S3 API, on a root (local) or on `weed`'s bucket; killed on drop.
struct Server {
    child: Option<Child>,
    s3: SocketAddr,
    dir: tempfile::TempDir,
    root: PathBuf,
    /// The bucket store's node (owns its process).
    node: Option<s3_nodes::Node>,
    /// The certificate of an HTTPS server (`None`: plain HTTP).
    ca: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    fn endpoint(&self) -> String {
        let scheme = if self.ca.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.s3)
    }

    fn pid(&self) -> u32 {
        match (&self.child, &self.node) {
            (Some(c), _) => c.id(),
            (None, Some(n)) => n.child.id(),
            _ => unreachable!(),
        }
    }
}

fn tools_present(aws: bool) -> bool {
    let boto3 = tools::require("boto3", tools::python_imports("boto3"), "pip install boto3");
    boto3 && (!aws || tools::require("aws", tools::on_path("aws").is_some(), "pip install awscli"))
}

/// A port free now, for `--s3-api` (the listener's address is not printed where the test
/// reads it). Another process taking it in between fails the start, loudly.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "the S3 API never listened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts weir on a fresh root (`Kind::Local`, or `root` given again after a kill) or on
/// `weed`'s bucket, with the test's credential and `extra` arguments.
fn start(kind: Kind, weed: Option<&Seaweed>, root: Option<&Path>, extra: &[&str]) -> Server {
    start_at(kind, weed.map(|w| w.endpoint.as_str()), root, extra)
}

/// [`start`], the bucket store reaching `weed`'s S3 gateway at `backend` (a proxy before it).
fn start_at(kind: Kind, backend: Option<&str>, root: Option<&Path>, extra: &[&str]) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("{SECRET} read,create,write,delete name={ACCESS_KEY}\n"),
    )
    .unwrap();
    let s3: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let s3_arg = s3.to_string();
    let tokens_arg = tokens.to_str().unwrap().to_owned();
    let mut args = vec!["--s3-api", &s3_arg, "--token-file", &tokens_arg];
    args.extend_from_slice(extra);
    let root = root.map_or_else(|| dir.path().join("root"), Path::to_owned);
    let server = match kind {
        Kind::Local => {
            let (child, _) =
                weir_testkit::serve_binary::spawn(Path::new(WEIR), &root, dir.path(), &args, &[])
                    .unwrap_or_else(|stderr| panic!("weir serve did not start: {stderr}"));
            Server {
                child: Some(child),
                s3,
                dir,
                root,
                node: None,
                ca: None,
            }
        }
        Kind::Bucket => {
            let backend = backend.expect("a bucket store needs weed");
            let store = format!("s3://{}", weir_testkit::seaweed::BUCKET);
            let node = s3_nodes::start_node_via(backend, &store, &args);
            Server {
                child: None,
                s3,
                dir,
                root,
                node: Some(node),
                ca: None,
            }
        }
    };
    wait_listening(s3);
    server
}

fn python(server: &Server, scenario: &str, args: &[&str]) -> std::process::Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3_multipart/client.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args([&server.endpoint(), ACCESS_KEY, SECRET, BUCKET, scenario])
        .args(args);
    if let Some(ca) = &server.ca {
        // botocore trusts the test's certificate through this.
        cmd.env("AWS_CA_BUNDLE", ca);
    }
    cmd.output().unwrap()
}

/// Runs a scenario of `client.py`; its failure fails the test with boto3's traceback.
fn boto3(server: &Server, scenario: &str, args: &[&str]) {
    let out = python(server, scenario, args);
    assert!(
        out.status.success(),
        "{scenario}: {}\n{}\nserver log: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server_log(server)
    );
}

fn server_log(server: &Server) -> String {
    std::fs::read_to_string(server.dir.path().join("server-stderr.log")).unwrap_or_default()
}

/// Both stores, each on its own server: `None` for the bucket when `weed` is missing
/// (skipped by `start_weed`).
fn on_both(run: impl Fn(&Server, Kind)) {
    let local = start(Kind::Local, None, None, &[]);
    boto3(&local, "bucket", &[]);
    run(&local, Kind::Local);
    drop(local);
    let Some(weed) = start_weed() else { return };
    let bucket = start(Kind::Bucket, Some(&weed), None, &[]);
    boto3(&bucket, "bucket", &[]);
    run(&bucket, Kind::Bucket);
}

#[test]
fn boto3_multipart_uploads_on_both_stores() {
    if !tools_present(false) {
        return;
    }
    on_both(|server, _| {
        boto3(server, "round_trip", &[]);
        boto3(server, "refusals", &[]);
        boto3(server, "copy_and_checksums", &[]);
        boto3(server, "kept_checksums", &[]);
    });
}

/// A completion still running after `--s3-api-keep-alive` (here 0: every one) is answered
/// `200` at once, kept alive with spaces, and ends with its result or S3's `<Error>` document,
/// which boto3 reads as S3's: the object byte-exact, refusals with their codes, on both stores.
#[test]
fn completions_past_the_keep_alive_answer_200_then_their_result() {
    if !tools_present(false) {
        return;
    }
    let at_once = ["--s3-api-keep-alive", "0"];
    let local = start(Kind::Local, None, None, &at_once);
    boto3(&local, "bucket", &[]);
    boto3(&local, "streamed", &[]);
    drop(local);
    let Some(weed) = start_weed() else { return };
    let bucket = start(Kind::Bucket, Some(&weed), None, &at_once);
    boto3(&bucket, "bucket", &[]);
    boto3(&bucket, "streamed", &[]);
}

/// A TCP proxy in front of `weed`'s S3 gateway whose answers to `CompleteMultipartUpload` can
/// be held: a backend slow to complete, on demand. A connection's answers are held while the
/// hold is on and its latest request is a `POST …uploadId=` (hyper's client writes a request's
/// head in one piece and sends one request at a time per connection); every other request
/// goes through.
struct HoldingProxy {
    addr: SocketAddr,
    held: Arc<(Mutex<bool>, Condvar)>,
}

impl HoldingProxy {
    fn start(backend: SocketAddr) -> HoldingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = Arc::clone(&held);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                let Ok(server) = TcpStream::connect(backend) else {
                    continue;
                };
                let completing = Arc::new(AtomicBool::new(false));
                let marks = Arc::clone(&completing);
                let (up_from, up_to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    pump(up_from, up_to, |chunk| {
                        let head = |method: &[u8]| chunk.starts_with(method);
                        if head(b"POST ") {
                            let complete = chunk.windows(9).any(|w| w == b"uploadId=");
                            marks.store(complete, Ordering::SeqCst);
                        } else if [&b"GET "[..], b"PUT ", b"HEAD ", b"DELETE "]
                            .iter()
                            .any(|m| head(m))
                        {
                            marks.store(false, Ordering::SeqCst);
                        }
                    });
                });
                let gate = Arc::clone(&gate);
                std::thread::spawn(move || {
                    pump(server, client, |_| {
                        let (lock, released) = &*gate;
                        let mut on = lock.lock().unwrap();
                        while *on && completing.load(Ordering::SeqCst) {
                            on = released.wait(on).unwrap();
                        }
                    });
                });
            }
        });
        HoldingProxy { addr, held }
    }

    fn hold(&self, on: bool) {
        let (lock, released) = &*self.held;
        *lock.lock().unwrap() = on;
        released.notify_all();
    }
}

/// Copies `from` to `to`, calling `each` with every chunk read before it is written.
fn pump(mut from: TcpStream, mut to: TcpStream, mut each: impl FnMut(&[u8])) {
    use std::io::{Read, Write};
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        each(&buf[..n]);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// The spaces themselves: a completion on the bucket store whose backend is held (a slow S3
/// service behind weir, what the keep-alive is for) is answered `200`, the XML declaration and
/// spaces, which the client reads while the backend still holds the answer; once it answers,
/// the result's document follows. `--s3-api-keep-alive 0`: the `200` at once. Deterministic:
/// the backend is let go only after the client has read a space.
#[test]
fn a_completion_held_by_its_backend_is_kept_alive_with_spaces() {
    use std::io::{BufRead, BufReader, Write};
    if !tools_present(false) {
        return;
    }
    let Some(weed) = start_weed() else { return };
    let proxy = HoldingProxy::start(weed.s3_addr);
    let backend = format!("http://{}", proxy.addr);
    let at_once = ["--s3-api-keep-alive", "0"];
    let server = start_at(Kind::Bucket, Some(&backend), None, &at_once);
    boto3(&server, "bucket", &[]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3_multipart/client.py");
    let mut child = Command::new("python3")
        .arg(script)
        .args([&server.endpoint(), ACCESS_KEY, SECRET, BUCKET, "spaces"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_script = child.stdin.take().unwrap();
    let mut from_script = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut next_line = |line: &mut String| {
        line.clear();
        from_script.read_line(line).unwrap();
        line.trim().to_owned()
    };
    let ready = next_line(&mut line);
    let mut space = String::new();
    if ready == "READY" {
        proxy.hold(true);
        writeln!(to_script, "GO").unwrap();
        space = next_line(&mut line);
    }
    proxy.hold(false);
    drop(to_script);
    let out = child.wait_with_output().unwrap();
    assert!(
        ready == "READY" && space == "SPACE" && out.status.success(),
        "spaces ({ready}, {space}): {}\n{}\nserver log: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        server_log(&server)
    );
}

/// Over HTTPS boto3 sends each part as an `aws-chunked` body with a CRC32 trailer (over HTTP it
/// sends plain bodies): the checked path of UploadPart, on both stores.
#[test]
fn boto3_multipart_uploads_over_https() {
    if !tools_present(false) {
        return;
    }
    let cert = weir_testkit::cert::TestCert::new();
    let tls = [
        "--tls-cert",
        cert.cert_path.to_str().unwrap(),
        "--tls-key",
        cert.key_path.to_str().unwrap(),
    ];
    let mut local = start(Kind::Local, None, None, &tls);
    local.ca = Some(cert.cert_path.clone());
    boto3(&local, "bucket", &[]);
    boto3(&local, "round_trip", &[]);
    boto3(&local, "copy_and_checksums", &[]);
    // The parts' checksums come in trailers here: kept and combined all the same.
    boto3(&local, "kept_checksums", &[]);
    drop(local);
    let Some(weed) = start_weed() else { return };
    let mut bucket = start(Kind::Bucket, Some(&weed), None, &tls);
    bucket.ca = Some(cert.cert_path.clone());
    boto3(&bucket, "bucket", &[]);
    boto3(&bucket, "round_trip", &[]);
}

#[test]
fn aws_cli_copies_over_its_multipart_threshold_both_ways() {
    if !tools_present(true) {
        return;
    }
    on_both(|server, kind| {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(
            &config,
            "[default]\nregion = us-east-1\ns3 =\n  multipart_threshold = 8MB\n  multipart_chunksize = 8MB\n  addressing_style = path\n",
        )
        .unwrap();
        // 20 MiB + 1: three parts, the last of one byte.
        let body: Vec<u8> = (0..(20 << 20) + 1u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let up = dir.path().join("up.bin");
        let down = dir.path().join("down.bin");
        std::fs::write(&up, &body).unwrap();
        let aws = |args: &[&str]| {
            let out = Command::new("aws")
                .args(["--endpoint-url", &server.endpoint()])
                .args(args)
                .env("AWS_CONFIG_FILE", &config)
                .env("AWS_SHARED_CREDENTIALS_FILE", dir.path().join("none"))
                .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
                .env("AWS_SECRET_ACCESS_KEY", SECRET)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "aws {args:?} ({kind:?}): {}\n{}\nserver log: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                server_log(server)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let target = format!("s3://{BUCKET}/cli/big.bin");
        aws(&["s3", "cp", up.to_str().unwrap(), &target]);
        aws(&["s3", "cp", &target, down.to_str().unwrap()]);
        assert!(
            std::fs::read(&down).unwrap() == body,
            "aws s3 cp: not byte-exact"
        );
        // It was a multipart upload: nothing of it is left in progress.
        let listed = aws(&["s3api", "list-multipart-uploads", "--bucket", BUCKET]);
        assert!(!listed.contains("UploadId"), "{listed}");
        if kind == Kind::Local {
            let stored = std::fs::read(server.root.join(BUCKET).join("cli/big.bin")).unwrap();
            assert!(stored == body, "the stored file differs");
        }
    });
}

#[test]
fn an_abandoned_upload_is_swept() {
    if !tools_present(false) {
        return;
    }
    let expiry = ["--s3-api-multipart-expiry", "1"];
    let local = start(Kind::Local, None, None, &expiry);
    boto3(&local, "bucket", &[]);
    let uid_file = local.dir.path().join("uid");
    boto3(&local, "start", &["left.bin", uid_file.to_str().unwrap()]);
    boto3(&local, "wait_swept", &[]);
    // Nothing of it on disk either.
    let area = local.root.join(".weir-staging/multipart");
    let left = std::fs::read_dir(&area).unwrap().count();
    assert_eq!(left, 0, "the swept upload's files are left in {area:?}");
    drop(local);
    let Some(weed) = start_weed() else { return };
    let bucket = start(Kind::Bucket, Some(&weed), None, &expiry);
    boto3(&bucket, "bucket", &[]);
    let uid_file = bucket.dir.path().join("uid");
    boto3(&bucket, "start", &["left.bin", uid_file.to_str().unwrap()]);
    boto3(&bucket, "wait_swept", &[]);
}

/// A completion of 40 MiB while weir is `SIGKILL`ed, at moments spread from before the request
/// arrives (boto3 starts slowly) to after its answer: after the restart the key holds the old
/// object or the new one, whole. Which one a round sees depends on timing and is only printed;
/// the property holds for every round.
fn killed_mid_complete(kind: Kind, weed: Option<&Seaweed>) {
    let old = b"the old object".to_vec();
    // The root outlives each server killed on it.
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("root");
    let mut server = start(kind, weed, Some(&root), &[]);
    boto3(&server, "bucket", &[]);
    let new_len = 40usize << 20;
    let mut saw = (false, false);
    for (round, wait_ms) in [300u64, 700, 1200, 2500].into_iter().enumerate() {
        let key = format!("killed-{round}.bin");
        put_small(&server, &key, &old);
        let uid_file = server.dir.path().join(format!("uid-{round}"));
        let file = uid_file.to_str().unwrap().to_owned();
        boto3(&server, "parts_for_kill", &[&key, "40", &file]);
        // The completion in a child process, then the kill at `wait_ms`.
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/s3_multipart/client.py");
        let mut completing = Command::new("python3")
            .arg(script)
            .args([
                &server.endpoint(),
                ACCESS_KEY,
                SECRET,
                BUCKET,
                "complete",
                &key,
                &file,
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(wait_ms));
        let pid = server.pid();
        Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        let _ = completing.wait();
        // Restart on the same root (or bucket), then read the key back.
        drop(server);
        server = start(kind, weed, Some(&root), &[]);
        let got = get(&server, &key);
        let new_ok = got.len() == new_len;
        assert!(
            got == old || new_ok,
            "round {round}: {} bytes, neither the old object nor the new one",
            got.len()
        );
        if new_ok {
            // The new object is whole: each 5 MiB part as sent.
            check_parts(&got);
            saw.1 = true;
        } else {
            saw.0 = true;
        }
    }
    eprintln!(
        "{kind:?}: old object seen {}, new object seen {}",
        saw.0, saw.1
    );
    if kind == Kind::Local {
        // No temporary left in the tree.
        let tree = walk(&root);
        assert!(
            tree.iter()
                .all(|p| !p.contains(".weir-upload-") || p.contains(".weir-staging")),
            "{tree:?}"
        );
    }
}

#[test]
fn a_sigkill_mid_complete_leaves_the_old_object_or_the_new_one() {
    if !tools_present(false) {
        return;
    }
    killed_mid_complete(Kind::Local, None);
    let Some(weed) = start_weed() else { return };
    killed_mid_complete(Kind::Bucket, Some(&weed));
}

fn put_small(server: &Server, key: &str, body: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("body");
    std::fs::write(&file, body).unwrap();
    let code = format!(
        "import boto3,sys\nfrom botocore.config import Config\n\
         s3=boto3.client('s3',endpoint_url='{}',aws_access_key_id='{ACCESS_KEY}',\
         aws_secret_access_key='{SECRET}',region_name='us-east-1',\
         config=Config(s3={{'addressing_style':'path'}}))\n\
         s3.put_object(Bucket='{BUCKET}',Key=sys.argv[1],Body=open(sys.argv[2],'rb').read())\n",
        server.endpoint()
    );
    let out = Command::new("python3")
        .args(["-c", &code, key, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn get(server: &Server, key: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("got");
    let code = format!(
        "import boto3,sys\nfrom botocore.config import Config\n\
         s3=boto3.client('s3',endpoint_url='{}',aws_access_key_id='{ACCESS_KEY}',\
         aws_secret_access_key='{SECRET}',region_name='us-east-1',\
         config=Config(s3={{'addressing_style':'path'}}))\n\
         open(sys.argv[2],'wb').write(s3.get_object(Bucket='{BUCKET}',Key=sys.argv[1])['Body'].read())\n",
        server.endpoint()
    );
    let out = Command::new("python3")
        .args(["-c", &code, key, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(file).unwrap()
}

/// The 40 MiB object's parts are the ones `client.py` sends (`data(5 MiB, 40 + i)`): each
/// part starts with the SHA-256 of its seed byte.
fn check_parts(got: &[u8]) {
    use sha2::{Digest, Sha256};
    for (i, part) in got.chunks(5 << 20).enumerate() {
        let seed: [u8; 32] = Sha256::digest([40 + i as u8]).into();
        assert_eq!(&part[..32], &seed, "part {} is not the one sent", i + 1);
        assert_eq!(&part[(5 << 20) - 32..], &seed[..], "part {} is cut", i + 1);
    }
}

fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p.clone());
            }
            out.push(p.to_string_lossy().into_owned());
        }
    }
    out
}
