//! TLS with rustls: certificates from PEM files, ALPN (`h2`, `http/1.1`), and the server side
//! of the handshake under a timeout and a concurrency bound.
//!
//! The handshake runs on the connection's own task (never in the accept loop, so a slow client
//! cannot hold up accepting). A server-wide semaphore bounds how many handshakes are in
//! progress at once ([`Config::max_tls_handshakes`](crate::Config::max_tls_handshakes)). A
//! connection takes a slot only once its whole `ClientHello` has arrived, within
//! [`Config::tls_client_hello_timeout`](crate::Config::tls_client_hello_timeout): connections
//! that send nothing, or a `ClientHello` slowly, hold no slot and no buffer, so they cannot keep
//! real clients waiting. A client that stalls later in the handshake holds its slot for at most
//! [`Config::tls_handshake_timeout`](crate::Config::tls_handshake_timeout), counted from when it
//! got the slot.
//!
//! The crypto provider is `ring`, named explicitly so that the process-wide default provider
//! (which another crate in the same program may have installed) does not matter.

use super::Stream;
use super::tls_records::RecordBuf;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// The ALPN protocol id of HTTP/2 (RFC 9113 §3.2).
pub(crate) const ALPN_H2: &[u8] = b"h2";
/// The ALPN protocol id of HTTP/1.1.
pub(crate) const ALPN_HTTP11: &[u8] = b"http/1.1";

/// A server certificate chain and its private key, ready to serve TLS.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let tls = weir::TlsConfig::from_pem_files("cert.pem", "key.pem")?;
/// let mut server = weir::Server::new(weir::Config::default());
/// server.listen_tls("127.0.0.1:8443", tls).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct TlsConfig {
    server: Arc<ServerConfig>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("alpn", &self.server.alpn_protocols)
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Loads a certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, PKCS#1 or
    /// SEC1) from files. Errors name the file and say what is wrong with it: unreadable, no
    /// certificate or key in it, malformed, or a key that does not belong to the certificate.
    pub fn from_pem_files(
        cert_path: impl AsRef<Path>,
        key_path: impl AsRef<Path>,
    ) -> Result<Self, TlsError> {
        let (cert_path, key_path) = (cert_path.as_ref(), key_path.as_ref());
        let (cert_pem, key_pem) = read_pem_files(cert_path, key_path)?;
        Self::build(&cert_pem, Some(cert_path), &key_pem, Some(key_path))
    }

    /// A user's own rustls configuration: SNI with several certificates
    /// (`with_cert_resolver`), client certificates (`with_client_cert_verifier`), certificates
    /// from an ACME crate's resolver, another crypto provider. weir sets its ALPN protocols
    /// (`h2` when HTTP/2 is enabled, then `http/1.1`) on a copy at each listener; everything
    /// else is used as given, except that secret extraction is turned on in that copy: after
    /// the handshake, weir's record layer (`TlsStream`) protects the records with the
    /// configuration's own provider (AES-GCM and ChaCha20-Poly1305 suites; a suite rustls cannot
    /// extract keys for fails the handshake).
    ///
    /// ```no_run
    /// # fn f(certs: Vec<rustls_pki_types::CertificateDer<'static>>,
    /// #      key: rustls_pki_types::PrivateKeyDer<'static>) -> Result<(), rustls::Error> {
    /// let provider = std::sync::Arc::new(weir::TlsConfig::crypto_provider());
    /// let server = rustls::ServerConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions()?
    ///     .with_no_client_auth()
    ///     .with_single_cert(certs, key)?;
    /// let tls = weir::TlsConfig::from_rustls(server);
    /// # let _ = tls; Ok(()) }
    /// ```
    pub fn from_rustls(server: impl Into<Arc<ServerConfig>>) -> Self {
        Self {
            server: server.into(),
        }
    }

    /// Like [`TlsConfig::from_pem_files`], from PEM text in memory.
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        Self::build(cert_pem, None, key_pem, None)
    }

    fn build(
        cert_pem: &[u8],
        cert_path: Option<&Path>,
        key_pem: &[u8],
        key_path: Option<&Path>,
    ) -> Result<Self, TlsError> {
        let (certs, key) = parse_pem(cert_pem, cert_path, key_pem, key_path)?;
        let server = server_config()?
            .with_single_cert(certs, key)
            .map_err(|e| key_error(e, key_path.or(cert_path)))?;
        Ok(Self::finish(server))
    }

    /// Sets what every configuration weir builds has, and wraps it.
    pub(super) fn finish(mut server: ServerConfig) -> Self {
        // The server's order of cipher suites decides (see `throughput_first`).
        server.ignore_client_order = true;
        Self {
            server: Arc::new(server),
        }
    }

    /// The rustls crypto provider weir's servers use: ring, with AES-128-GCM ahead of
    /// AES-256-GCM (both secure; with AES-NI the 128-bit key needs fewer rounds, so bulk
    /// uploads decrypt faster) and ChaCha20 after them. The server's order decides. Public so
    /// that a peer measured beside weir (weir-bench's hyper) can negotiate the same suite.
    pub fn crypto_provider() -> rustls::crypto::CryptoProvider {
        throughput_first(rustls::crypto::ring::default_provider())
    }

    /// The configuration for a listener: this one with the ALPN protocols the server speaks
    /// (`h2` first when HTTP/2 is enabled, then `http/1.1`), and the traffic keys extractable
    /// for weir's record layer (`tls_stream`).
    pub(crate) fn acceptor(&self, http2: bool) -> Arc<ServerConfig> {
        let mut server = (*self.server).clone();
        server.alpn_protocols = if http2 {
            vec![ALPN_H2.to_vec(), ALPN_HTTP11.to_vec()]
        } else {
            vec![ALPN_HTTP11.to_vec()]
        };
        server.enable_secret_extraction = true;
        Arc::new(server)
    }
}

/// Reads a certificate file and a key file; errors name the file.
pub(super) fn read_pem_files(
    cert_path: &Path,
    key_path: &Path,
) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let cert_pem = std::fs::read(cert_path)
        .map_err(|e| TlsError::new(Some(cert_path), format!("cannot read it: {e}")))?;
    let key_pem = std::fs::read(key_path)
        .map_err(|e| TlsError::new(Some(key_path), format!("cannot read it: {e}")))?;
    Ok((cert_pem, key_pem))
}

/// The certificate chain and private key in PEM text; errors say what is missing or malformed.
pub(super) fn parse_pem(
    cert_pem: &[u8],
    cert_path: Option<&Path>,
    key_pem: &[u8],
    key_path: Option<&Path>,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::new(cert_path, format!("malformed PEM: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::new(
            cert_path,
            "no certificate found (expected a PEM block 'BEGIN CERTIFICATE')".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| match e {
        rustls_pki_types::pem::Error::NoItemsFound => TlsError::new(
            key_path,
            "no private key found (expected a PEM block 'BEGIN PRIVATE KEY', \
             'BEGIN RSA PRIVATE KEY' or 'BEGIN EC PRIVATE KEY')"
                .into(),
        ),
        e => TlsError::new(key_path, format!("malformed PEM: {e}")),
    })?;
    Ok((certs, key))
}

/// A server configuration on weir's provider, up to the choice of certificate.
pub(super) fn server_config()
-> Result<rustls::ConfigBuilder<ServerConfig, rustls::server::WantsServerCert>, TlsError> {
    let provider = Arc::new(TlsConfig::crypto_provider());
    Ok(ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::new(None, format!("TLS setup failed: {e}")))?
        .with_no_client_auth())
}

/// A certificate and key rustls refused, said plainly.
pub(super) fn key_error(e: rustls::Error, path: Option<&Path>) -> TlsError {
    let what = match e {
        rustls::Error::InconsistentKeys(_) => {
            "the private key does not match the certificate".to_string()
        }
        e => format!("unusable certificate or key: {e}"),
    };
    TlsError::new(path, what)
}

/// `provider` with AES-128-GCM ahead of AES-256-GCM, ChaCha20 after them (see
/// [`TlsConfig::crypto_provider`]).
fn throughput_first(
    mut provider: rustls::crypto::CryptoProvider,
) -> rustls::crypto::CryptoProvider {
    use rustls::CipherSuite::*;
    let rank = |s: &rustls::SupportedCipherSuite| match s.suite() {
        TLS13_AES_128_GCM_SHA256 => 0,
        TLS13_AES_256_GCM_SHA384 => 1,
        TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 | TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 2,
        TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 | TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 3,
        _ => 4,
    };
    provider.cipher_suites.sort_by_key(rank);
    provider
}

/// A certificate or key that cannot be used, with the file it came from.
#[derive(Debug)]
pub struct TlsError {
    path: Option<PathBuf>,
    what: String,
}

impl TlsError {
    pub(super) fn new(path: Option<&Path>, what: String) -> Self {
        Self {
            path: path.map(Path::to_owned),
            what,
        }
    }

    /// The file at fault, if the error is about one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "TLS: {}: {}", path.display(), self.what),
            None => write!(f, "TLS: {}", self.what),
        }
    }
}

impl std::error::Error for TlsError {}

impl From<TlsError> for io::Error {
    fn from(e: TlsError) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
    }
}

/// What a TLS listener needs to accept: its configuration and the server-wide handshake bound.
#[derive(Clone)]
pub(crate) struct TlsAccept {
    pub(crate) acceptor: Arc<ServerConfig>,
    pub(crate) handshakes: Arc<Semaphore>,
    /// [`Config::tls_client_hello_timeout`](crate::Config::tls_client_hello_timeout).
    pub(crate) client_hello_timeout: Duration,
    /// [`Config::tls_handshake_timeout`](crate::Config::tls_handshake_timeout).
    pub(crate) timeout: Duration,
}

impl TlsAccept {
    /// Runs the server side of the handshake on `stream`: waits for the client's whole
    /// `ClientHello` (within the `ClientHello` timeout, holding no slot), then for a handshake
    /// slot (the server's wait, not charged to the client), then handshakes within the
    /// handshake timeout. `None` if the client failed, stalled or spoke something other than
    /// TLS (nothing can be answered to it).
    pub(crate) async fn handshake(&self, mut stream: Stream) -> Option<Stream> {
        let mut rx = RecordBuf::new();
        let hello = super::tls_handshake::receive_client_hello(&mut stream, &mut rx);
        match tokio::time::timeout(self.client_hello_timeout, hello).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "TLS connection closed before its ClientHello");
                return None;
            }
            Err(_) => {
                tracing::debug!("no ClientHello within the timeout");
                return None;
            }
        }
        let _slot = self.handshakes.acquire().await.ok()?;
        let handshake = async {
            match super::tls_handshake::accept(stream, rx, Arc::clone(&self.acceptor)).await {
                Ok(tls) => Some(Stream::Tls(Box::new(tls))),
                Err(e) => {
                    tracing::debug!(error = %e, "TLS handshake failed");
                    None
                }
            }
        };
        match tokio::time::timeout(self.timeout, handshake).await {
            Ok(stream) => stream,
            Err(_) => {
                tracing::debug!("TLS handshake timed out");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed() -> (String, String) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
        (cert.cert.pem(), cert.signing_key.serialize_pem())
    }

    #[test]
    fn loads_a_matching_pair() {
        let (cert, key) = self_signed();
        let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
        let acceptor = tls.acceptor(true);
        assert_eq!(
            acceptor.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
        assert!(acceptor.enable_secret_extraction);
        assert_eq!(
            tls.acceptor(false).alpn_protocols,
            vec![b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let (cert, key) = self_signed();
        let (_, other_key) = self_signed();
        let e = TlsConfig::from_pem(b"", key.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no certificate found"), "{e}");
        let e = TlsConfig::from_pem(cert.as_bytes(), cert.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("no private key found"), "{e}");
        let e = TlsConfig::from_pem(cert.as_bytes(), other_key.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("does not match"), "{e}");
        let e =
            TlsConfig::from_pem_files("/nonexistent/cert.pem", "/nonexistent/key.pem").unwrap_err();
        assert!(
            e.to_string()
                .contains("/nonexistent/cert.pem: cannot read it"),
            "{e}"
        );
        assert_eq!(e.path(), Some(Path::new("/nonexistent/cert.pem")));
    }
}
