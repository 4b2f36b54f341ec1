//! A certificate and key replaced while serving (`weir serve` on SIGHUP), without dropping a
//! connection.
//!
//! The server configuration chooses its certificate through a resolver
//! ([`rustls::server::ResolvesServerCert`]) that hands out the current one: each handshake takes
//! a clone of an `Arc` under a read lock, so a reload affects only the handshakes that start
//! after it. Connections already established keep their session (a TLS connection never
//! changes certificate). A reload reads and checks both files completely (PEM, a key that
//! matches the certificate) before swapping: a bad pair is an error and the old certificate
//! stays.

use super::tls::{TlsConfig, TlsError, key_error, parse_pem, read_pem_files, server_config};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// Reloads the certificate of a [`TlsConfig`] made by
/// [`TlsConfig::from_pem_files_reloadable`] from its files. Cheap to clone; every clone
/// reloads the same configuration.
#[derive(Clone)]
pub struct CertReloader {
    resolver: Arc<Resolver>,
}

impl fmt::Debug for CertReloader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertReloader")
            .field("cert", &self.resolver.cert_path)
            .field("key", &self.resolver.key_path)
            .finish_non_exhaustive()
    }
}

struct Resolver {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolver")
            .field("cert", &self.cert_path)
            .finish_non_exhaustive()
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        // A poisoned lock still holds a whole certificate (the swap is one assignment).
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        Some(Arc::clone(&current))
    }
}

/// The certificate and key in the files, checked as [`TlsConfig::from_pem_files`] checks them.
fn load(cert_path: &Path, key_path: &Path) -> Result<CertifiedKey, TlsError> {
    let (cert_pem, key_pem) = read_pem_files(cert_path, key_path)?;
    let (certs, key) = parse_pem(&cert_pem, Some(cert_path), &key_pem, Some(key_path))?;
    CertifiedKey::from_der(certs, key, &TlsConfig::crypto_provider())
        .map_err(|e| key_error(e, Some(key_path)))
}

impl TlsConfig {
    /// Like [`TlsConfig::from_pem_files`], and a [`CertReloader`] that replaces the certificate
    /// and key with what the same files hold later (after a renewal), for new connections.
    pub fn from_pem_files_reloadable(
        cert_path: impl AsRef<Path>,
        key_path: impl AsRef<Path>,
    ) -> Result<(Self, CertReloader), TlsError> {
        let (cert_path, key_path) = (cert_path.as_ref(), key_path.as_ref());
        let certified = load(cert_path, key_path)?;
        let resolver = Arc::new(Resolver {
            cert_path: cert_path.to_owned(),
            key_path: key_path.to_owned(),
            current: RwLock::new(Arc::new(certified)),
        });
        let server = server_config()?.with_cert_resolver(Arc::clone(&resolver) as _);
        Ok((Self::finish(server), CertReloader { resolver }))
    }
}

impl CertReloader {
    /// Reads the files again; when they hold a usable certificate and key, new handshakes use
    /// them. On error nothing changes.
    pub fn reload(&self) -> Result<(), TlsError> {
        let r = &self.resolver;
        let certified = Arc::new(load(&r.cert_path, &r.key_path)?);
        *r.current.write().unwrap_or_else(|p| p.into_inner()) = certified;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TlsConfig;

    fn pair(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn a_reload_swaps_only_a_good_pair() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        let (a_cert, a_key) = pair("a.test");
        std::fs::write(&cert, &a_cert).unwrap();
        std::fs::write(&key, &a_key).unwrap();
        let (_tls, reloader) = TlsConfig::from_pem_files_reloadable(&cert, &key).unwrap();
        let leaf = || reloader.resolver.current.read().unwrap().cert[0].clone();
        let a = leaf();
        // A certificate whose key is not the one in the key file: refused, A stays.
        let (b_cert, b_key) = pair("b.test");
        std::fs::write(&cert, &b_cert).unwrap();
        let e = reloader.reload().unwrap_err();
        assert!(e.to_string().contains("does not match"), "{e}");
        assert_eq!(leaf(), a);
        std::fs::write(&key, &b_key).unwrap();
        reloader.reload().unwrap();
        assert_ne!(leaf(), a);
    }
}
