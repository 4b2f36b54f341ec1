//! Command-line arguments.

use crate::size::parse_size;
use clap::{Args, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

/// weir: move large bodies over HTTP without buffering, copies or allocations.
#[derive(Debug, Parser)]
#[command(name = "weir", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve uploads and downloads from a directory.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TCP address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Also listen on this Unix domain socket.
    #[arg(long)]
    pub unix: Option<PathBuf>,
    /// Directory where uploads are stored.
    #[arg(long, default_value = "./weir-data")]
    pub root: PathBuf,
    /// Largest accepted upload (e.g. 100GiB, 512MiB, 1000000).
    #[arg(long, default_value = "100GiB", value_parser = parse_size)]
    pub max_upload: u64,
    /// Request body bytes read ahead of the handler before the server stops reading.
    #[arg(long, default_value = "1MiB", value_parser = parse_size)]
    pub pause_threshold: u64,
    /// Serve HTTPS on --listen with this certificate chain (PEM, leaf first). HTTP/2 is
    /// offered by ALPN.
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}
