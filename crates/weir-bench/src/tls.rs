//! TLS for the HTTPS and HTTP/2-over-TLS rows: the run's certificate, the client's
//! configuration and the hyper peer's server configuration.
//!
//! The parent generates one self-signed certificate for `localhost` per run ([`BenchCert`],
//! rcgen with ring) and writes it and its key as PEM files into a temporary directory of their
//! own (not the upload data directory, which is emptied after every upload); each TLS server
//! child loads them from the paths on its command line. The client trusts exactly that
//! certificate.
//!
//! Every side uses rustls with the `ring` provider. Both servers put AES-128-GCM first and
//! ignore the client's order, as weir's `TlsConfig` does (`crates/weir/src/transport/tls.rs`),
//! so weir and hyper decrypt with the same cipher suite; the client reports the suite it
//! negotiated and the report prints it.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The ALPN id of HTTP/2.
pub const ALPN_H2: &[u8] = b"h2";
/// The ALPN id of HTTP/1.1.
pub const ALPN_HTTP11: &[u8] = b"http/1.1";

/// The name in the certificate, and the one the client asks for.
pub const SERVER_NAME: &str = "localhost";

/// How much ciphertext the client's rustls may queue ahead of the socket, as `weir put` uses:
/// rustls's default (64 KiB) makes one `writev` per 64 KiB, while the plain-text client writes
/// megabytes at a time; with 1 MiB of records plus their overheads the TLS client makes one
/// system call (and wakes the server once) per MiB.
pub const CLIENT_SEND_BUFFER: usize = (1 << 20) + 64 * 1024;

/// The run's self-signed certificate, as PEM files, and the client configurations that trust it.
pub struct BenchCert {
    /// Holds the PEM files; removed when the run ends.
    _dir: tempfile::TempDir,
    /// The certificate (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
    /// Client configuration offering only `http/1.1`.
    pub client_h1: Arc<ClientConfig>,
    /// Client configuration offering only `h2`.
    pub client_h2: Arc<ClientConfig>,
}

impl BenchCert {
    /// Generates the certificate and writes it out.
    pub fn generate() -> io::Result<Self> {
        let made = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()])
            .map_err(|e| io::Error::other(format!("generating the certificate: {e}")))?;
        let dir = tempfile::Builder::new()
            .prefix("weir-bench-tls")
            .tempdir()?;
        let cert = dir.path().join("cert.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(&cert, made.cert.pem())?;
        std::fs::write(&key, made.signing_key.serialize_pem())?;
        let mut roots = RootCertStore::empty();
        roots
            .add(made.cert.der().clone())
            .map_err(io::Error::other)?;
        Ok(Self {
            _dir: dir,
            cert,
            key,
            client_h1: client_config(roots.clone(), ALPN_HTTP11)?,
            client_h2: client_config(roots, ALPN_H2)?,
        })
    }
}

fn client_config(roots: RootCertStore, alpn: &[u8]) -> io::Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // One protocol per configuration: a row that asks for HTTP/2 must get it or fail.
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(config))
}

/// The hyper peer's server configuration: the certificate and key from PEM files, ALPN `h2`
/// then `http/1.1`, and weir's cipher-suite order.
pub fn server_config(cert: &Path, key: &Path) -> io::Result<Arc<ServerConfig>> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| io::Error::other(format!("{}: {e}", cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| io::Error::other(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(weir::TlsConfig::crypto_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(io::Error::other)?;
    config.ignore_client_order = true;
    config.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_config_loads_the_generated_certificate() {
        let cert = BenchCert::generate().unwrap();
        let config = server_config(&cert.cert, &cert.key).unwrap();
        assert_eq!(config.alpn_protocols[0], ALPN_H2);
        // weir loads the same files.
        assert!(weir::TlsConfig::from_pem_files(&cert.cert, &cert.key).is_ok());
        assert_eq!(cert.client_h2.alpn_protocols, vec![ALPN_H2.to_vec()]);
    }
}
