//! The TLS check of an API server URL, as client-go on the consumer will make it with the kubeconfig it gets.
use std::sync::Arc;
use std::time::Duration;

/// Why an API server URL failed the TLS check of [`probe_tls`].
#[derive(Debug, PartialEq)]
pub enum TlsProbeError {
    /// No TLS answer could be had from here (bad URL, DNS, refused, timed out): the URL may still work from the
    /// consumer's network.
    Unreachable(String),
    /// The server answered with a certificate the CA does not verify (or not for that host name).
    Untrusted(String),
}

/// Connects to `server` (`https://host[:port]`) and completes a TLS handshake trusting only the certificates in
/// `ca_pem`, checking the host name as client-go does: what the consumer's Liqo will do with the kubeconfig.
pub async fn probe_tls(server: &str, ca_pem: &[u8], timeout: Duration) -> Result<(), TlsProbeError> {
    use TlsProbeError::{Unreachable, Untrusted};
    use rustls::pki_types::{CertificateDer, ServerName};
    let uri: http::Uri = server.parse().map_err(|e| Unreachable(format!("`{server}` is not a URL: {e}")))?;
    let host = uri.host().ok_or_else(|| Unreachable(format!("`{server}` has no host")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    let port = uri.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for der in crate::crypto::certificates(ca_pem).map_err(|why| Untrusted(format!("the CA is unusable: {why}")))? {
        roots
            .add(CertificateDer::from(der))
            .map_err(|e| Untrusted(format!("the CA holds an unusable certificate: {e}")))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| Unreachable(format!("TLS setup failed: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(host.clone())
        .map_err(|e| Unreachable(format!("`{host}` is not a valid host name: {e}")))?;
    let handshake = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| Unreachable(format!("cannot connect to {host}:{port}: {e}")))?;
        tokio_rustls::TlsConnector::from(Arc::new(config)).connect(name, tcp).await.map_err(|e| {
            match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
                Some(rustls::Error::InvalidCertificate(why)) => Untrusted(format!("{why:?}")),
                Some(other) => Untrusted(other.to_string()),
                None => Unreachable(format!("the TLS handshake with {host}:{port} failed: {e}")),
            }
        })
    };
    match tokio::time::timeout(timeout, handshake).await {
        Ok(result) => result.map(|_| ()),
        Err(_) => Err(Unreachable(format!("no TLS answer from {host}:{port} within {timeout:?}"))),
    }
}
