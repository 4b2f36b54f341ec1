//! TLS for the client: which certificates are trusted, the rustls configuration, and TLS
//! failures as one line.
//!
//! Trust: `--cacert PEM` replaces the system's roots (as curl's `--cacert` does), so a private
//! CA or a self-signed server certificate can be trusted without trusting anything else.
//! Otherwise the operating system's store is read with `rustls-native-certs` (on Linux the
//! distribution's bundle, honouring `SSL_CERT_FILE`/`SSL_CERT_DIR`), so that CAs an operator
//! installed, and the distribution's updates, apply to `weir` as to curl. There is no option to
//! skip verification.
//!
//! The crypto provider is `ring`, like the server's (no C toolchain beyond what `ring` needs).

use super::ClientError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{CertificateError, ClientConfig, RootCertStore};
use std::path::Path;
use std::sync::Arc;

/// The ALPN ids of HTTP/2 and HTTP/1.1.
pub(crate) const ALPN_H2: &[u8] = b"h2";
pub(crate) const ALPN_HTTP11: &[u8] = b"http/1.1";

/// How much ciphertext rustls may queue ahead of the socket. Its default (64 KiB) makes one
/// `writev` per 64 KiB; the plain-text client writes 1 MiB at a time, and with this limit
/// (1 MiB of records plus their 22-byte overheads, rounded up) so does the TLS client: one
/// system call, and one wake-up of the server, per MiB instead of per 64 KiB.
pub(crate) const SEND_BUFFER: usize = (1 << 20) + 64 * 1024;

/// A client configuration trusting `cacert` (or the system's roots) and offering `alpn`.
pub(crate) fn config(cacert: Option<&Path>, alpn: &[u8]) -> Result<Arc<ClientConfig>, ClientError> {
    let roots = match cacert {
        Some(path) => roots_from_file(path)?,
        None => system_roots()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ClientError::new(format!("TLS setup failed: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(config))
}

/// The certificates of a PEM file, as trust anchors.
fn roots_from_file(path: &Path) -> Result<RootCertStore, ClientError> {
    let fail = |what: String| ClientError::new(format!("{}: {what}", path.display()));
    let pem = std::fs::read(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("malformed PEM: {e}")))?;
    if certs.is_empty() {
        return Err(fail(
            "no certificate found (expected a PEM block 'BEGIN CERTIFICATE')".into(),
        ));
    }
    let mut roots = RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| fail(format!("not a usable CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// The operating system's trusted roots.
fn system_roots() -> Result<RootCertStore, ClientError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Err(ClientError::new(format!(
            "no trusted CA certificates found on this system{why}: give one with --cacert"
        )));
    }
    Ok(roots)
}

/// The name the server's certificate must carry: a DNS name or an IP address.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, ClientError> {
    ServerName::try_from(host.to_owned())
        .map_err(|_| ClientError::new(format!("invalid host name for TLS: {host:?}")))
}

/// A TLS failure as one line: what is wrong with the server's certificate says what to do.
pub(crate) fn describe(error: &rustls::Error, host: &str) -> String {
    match error {
        rustls::Error::InvalidCertificate(e) => match e {
            CertificateError::UnknownIssuer => "the server's certificate is not signed by a \
                 trusted CA (give the CA, or a self-signed certificate, with --cacert)"
                .to_owned(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!("the server's certificate is not valid for {host}")
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_owned()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet".to_owned()
            }
            // rustls-webpki's words for a certificate marked as a CA (basicConstraints
            // CA:TRUE, as `openssl req -x509` makes by default) presented as the server's own.
            e if format!("{e:?}").contains("CaUsedAsEndEntity") => {
                "the server's certificate is a CA certificate (basicConstraints CA:TRUE), \
                 which cannot identify a server: issue the server a certificate from it, or \
                 make the self-signed one with CA:FALSE"
                    .to_owned()
            }
            e => format!("the server's certificate was refused: {e:?}"),
        },
        rustls::Error::InvalidMessage(_) => {
            "the server did not answer in TLS (is it an http:// server?)".to_owned()
        }
        rustls::Error::NoApplicationProtocol => {
            "the server speaks none of the offered protocols (ALPN)".to_owned()
        }
        e => e.to_string(),
    }
}

/// The rustls error inside an I/O error, if there is one.
pub(crate) fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cacert_errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let e = config(Some(&missing), ALPN_HTTP11).unwrap_err().to_string();
        assert!(e.contains("missing.pem: cannot read it"), "{e}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no pem here\n").unwrap();
        let e = config(Some(&empty), ALPN_HTTP11).unwrap_err().to_string();
        assert!(e.contains("empty.pem: no certificate found"), "{e}");
    }

    #[test]
    fn names_and_addresses() {
        assert!(matches!(
            server_name("localhost").unwrap(),
            ServerName::DnsName(_)
        ));
        assert!(matches!(
            server_name("127.0.0.1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(matches!(
            server_name("::1").unwrap(),
            ServerName::IpAddress(_)
        ));
        assert!(server_name("bad name").is_err());
    }

    #[test]
    fn certificate_errors_read_as_advice() {
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert!(describe(&unknown, "h").contains("--cacert"));
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForName);
        assert_eq!(
            describe(&name, "example.com"),
            "the server's certificate is not valid for example.com"
        );
    }
}
