//! The provider writes with server-side apply (never conflicts: it forces ownership), creates CSRs under a
//! fresh random name, and approves them with a merge patch of the `approval` subresource — the one write
//! that another writer (an approver controller, the signer) can race. No write carries a resourceVersion
//! and the provider never edits finalizers, so a 409 can only come from such a race; these tests prove it
//! is retried, against a fake API server that answers the first request with a 409.
use super::probe::{TlsProbeError, probe_tls};
use super::*;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const CONFLICT: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on certificatesigningrequests.certificates.k8s.io \"c\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","code":409}"#;
const CSR: &str = r#"{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"request":"","signerName":"kubernetes.io/kube-apiserver-client"}}"#;

/// Serves `answers` in order, one per connection (`Connection: close`), and records each request's head (request
/// line and headers); then stops listening, so a request beyond them fails.
pub(crate) async fn fake_api_server(answers: Vec<(u16, &'static str)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        for (code, body) in answers {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Headers, then as much body as Content-Length says.
            loop {
                let n = socket.read(&mut buf).await.unwrap();
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                        })
                        .and_then(|v| v.parse::<usize>().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length || n == 0 {
                        log.lock().unwrap().push(text[..end].to_owned());
                        break;
                    }
                }
            }
            let answer = format!(
                "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            socket.write_all(answer.as_bytes()).await.unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    (url, seen)
}

async fn csr_api(url: &str) -> Api<CertificateSigningRequest> {
    let config = kube::Config::new(url.parse().unwrap());
    Api::all(client::build(config).unwrap())
}

const UNAVAILABLE: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"unavailable","reason":"ServiceUnavailable","code":503}"#;

#[tokio::test]
async fn the_client_keeps_kubes_credentials_and_extra_headers_and_retries_once() {
    // `client::build` assembles kube's stack itself (for TCP_NODELAY); what kube's own builder adds must be there,
    // but not its retry layer: `with_retry` is the one place a request is retried.
    let (url, seen) = fake_api_server(vec![(503, UNAVAILABLE), (503, UNAVAILABLE), (200, CSR)]).await;
    let mut config = kube::Config::new(url.parse().unwrap());
    config.auth_info.token = Some(secrecy::SecretString::from("t0ken"));
    config.headers.push((http::HeaderName::from_static("impersonate-user"), http::HeaderValue::from_static("someone")));
    let api: Api<CertificateSigningRequest> = Api::all(client::build(config).unwrap());
    api.get("c").await.expect_err("the client itself does not retry the 503");
    assert_eq!(seen.lock().unwrap().len(), 1);
    let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    crate::kube::get_opt(&ctx, &api, "c").await.expect("with_retry answers the 503 with a second request");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    for head in seen.iter().map(|h| h.to_ascii_lowercase()) {
        assert!(head.starts_with("get /apis/certificates.k8s.io/v1/certificatesigningrequests/c "), "{head}");
        assert!(head.contains("authorization: bearer t0ken") && head.contains("impersonate-user: someone"), "{head}");
    }
}

#[tokio::test]
async fn a_conflicting_csr_approval_is_retried() {
    let (url, seen) = fake_api_server(vec![(409, CONFLICT), (200, CSR)]).await;
    let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    approve_csr(&ctx, &csr_api(&url).await, "c", "Reason", "message").await.expect("approved after a retry");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one conflict, one retry: {seen:?}");
    assert!(
        seen.iter().all(|l| l.starts_with("PATCH /apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval")),
        "{seen:?}"
    );
}

#[tokio::test]
async fn cancelling_while_retrying_a_conflict_names_the_object() {
    // Cancelled while backing off: the error names the object and what it was doing.
    let (url, _) = fake_api_server(vec![(409, CONFLICT); 4]).await;
    let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(250)).await;
        cancel.cancel();
    });
    let err = approve_csr(&ctx, &csr_api(&url).await, "c", "Reason", "message").await.unwrap_err();
    assert!(matches!(&err, OpError::Cancelled { object, .. } if object == "CertificateSigningRequest c"), "{err:?}");
}

/// A loopback TLS server presenting a certificate for `san` signed by a CA of its own; returns its URL and
/// that CA (PEM).
async fn tls_server(san: &str) -> (String, String) {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![san.to_string()]).unwrap().signed_by(&key, &issuer).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move { drop(acceptor.accept(socket).await) });
        }
    });
    (url, ca.pem())
}

#[tokio::test]
async fn the_tls_probe_tells_an_untrusted_certificate_from_an_unreachable_url() {
    let (url, ca) = tls_server("127.0.0.1").await;
    let t = Duration::from_secs(5);
    assert_eq!(probe_tls(&url, ca.as_bytes(), t).await, Ok(()));

    let (_, other_ca) = tls_server("127.0.0.1").await;
    let err = probe_tls(&url, other_ca.as_bytes(), t).await.unwrap_err();
    // Both CAs carry rcgen's default name, so webpki reports the other CA's signature as bad.
    assert!(matches!(&err, TlsProbeError::Untrusted(why) if why.contains("BadSignature")), "{err:?}");

    // The right CA, but a certificate for another address (e.g. a port-forward to a server named otherwise).
    let (elsewhere, elsewhere_ca) = tls_server("192.0.2.1").await;
    let err = probe_tls(&elsewhere, elsewhere_ca.as_bytes(), t).await.unwrap_err();
    assert!(matches!(&err, TlsProbeError::Untrusted(why) if why.contains("NotValidForName")), "{err:?}");

    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closed_url = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    assert!(matches!(probe_tls(&closed_url, ca.as_bytes(), t).await, Err(TlsProbeError::Unreachable(_))));
    assert!(matches!(probe_tls(&url, b"not pem", t).await, Err(TlsProbeError::Untrusted(_))));
}

#[tokio::test]
async fn an_existing_object_fails_a_create_at_once() {
    const EXISTS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"certificatesigningrequests.certificates.k8s.io \"c\" already exists","reason":"AlreadyExists","code":409}"#;
    let (url, seen) = fake_api_server(vec![(409, EXISTS), (201, CSR)]).await;
    let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
    let csr: CertificateSigningRequest = serde_json::from_str(CSR).unwrap();
    let err = create(&ctx, &csr_api(&url).await, &csr).await.unwrap_err();
    assert!(matches!(&err, OpError::Api { action: "create", .. }), "{err:?}");
    assert_eq!(seen.lock().unwrap().len(), 1, "AlreadyExists is permanent and must not be retried");
}
