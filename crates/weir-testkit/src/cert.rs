//! A self-signed test certificate (rcgen), with the server and client TLS configurations that
//! use it.

use rustls_pki_types::pem::PemObject;
use std::path::PathBuf;
use std::sync::Arc;
use weir::TlsConfig;

/// A self-signed certificate for `localhost` and `127.0.0.1`, written to a temporary
/// directory (curl reads it with `--cacert`).
pub struct TestCert {
    _dir: tempfile::TempDir,
    /// The certificate, PEM.
    pub cert_path: PathBuf,
    /// Its private key, PEM.
    pub key_path: PathBuf,
    /// The certificate's PEM text.
    pub cert_pem: String,
}

impl TestCert {
    /// Generates the certificate and writes it and its key as PEM files.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let cert = rcgen::generate_simple_self_signed(names).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let cert_path = dir.path().join("cert.pem");
        let key_path = dir.path().join("key.pem");
        let cert_pem = cert.cert.pem();
        std::fs::write(&cert_path, &cert_pem).unwrap();
        std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
        Self {
            _dir: dir,
            cert_path,
            key_path,
            cert_pem,
        }
    }

    /// The server side: weir's TLS configuration with this certificate.
    pub fn tls_config(&self) -> TlsConfig {
        TlsConfig::from_pem_files(&self.cert_path, &self.key_path).unwrap()
    }

    /// A rustls client configuration trusting this certificate, offering `alpn`.
    pub fn client_config(&self, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(self.cert_pem.as_bytes()) {
            roots.add(cert.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}
