//! The plugin server against real gRPC clients: mTLS must let in only Terraform's client certificate, and
//! GRPCController.Shutdown must end the server promptly.
use super::*;
use crate::protocol::{DataSource, Resource};
use async_trait::async_trait;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use hyper_util::rt::TokioIo;
use liqo_schema::tf::{Block, Diagnostics, Schema, Value};
use magma_protocol::tfplugin6 as pb;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tonic::codegen::{BoxFuture, Service};
use tonic::transport::{Endpoint, Uri};

struct EmptyProvider;

#[async_trait]
impl Provider for EmptyProvider {
    fn provider_schema(&self) -> Schema {
        Schema { version: 0, block: Block::new("test provider", vec![]) }
    }
    fn resources(&self) -> Vec<Arc<dyn Resource>> {
        vec![]
    }
    fn data_sources(&self) -> Vec<Arc<dyn DataSource>> {
        vec![]
    }
    fn validate_config(&self, _: &Value) -> Diagnostics {
        Diagnostics::new()
    }
    async fn configure(&self, _: Value, _: &str) -> Diagnostics {
        Diagnostics::new()
    }
}

fn ring() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// Trusts exactly the certificate from the handshake line, as go-plugin's client does.
#[derive(Debug)]
struct PinnedServer(CertificateDer<'static>);

impl ServerCertVerifier for PinnedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.0.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer))
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &ring().signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &ring().signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        ring().signature_verification_algorithms.supported_schemes()
    }
}

fn pem(der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let lines: Vec<&str> = b64.as_bytes().chunks(64).map(|c| std::str::from_utf8(c).unwrap()).collect();
    format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", lines.join("\n"))
}

struct Started {
    addr: SocketAddr,
    server_cert: Option<CertificateDer<'static>>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), ServeError>>,
}

async fn start(client_cert_pem: Option<&str>) -> Started {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let shutdown = CancellationToken::new();
    let server = PluginServer::new(Arc::new(EmptyProvider), listener, client_cert_pem, shutdown.clone()).unwrap();
    let line = server.handshake_line();
    let fields: Vec<&str> = line.split('|').collect();
    assert_eq!(&fields[..3], ["1", "6", "tcp"], "{line}");
    assert_eq!(fields[4], "grpc", "{line}");
    let server_cert = fields.get(5).map(|c| CertificateDer::from(STANDARD_NO_PAD.decode(c).expect("unpadded base64")));
    Started {
        addr: fields[3].parse().unwrap(),
        server_cert,
        shutdown,
        task: tokio::spawn(server.run(std::future::pending())),
    }
}

#[derive(Clone)]
struct TlsConnect {
    addr: SocketAddr,
    connector: tokio_rustls::TlsConnector,
}

impl Service<Uri> for TlsConnect {
    type Response = TokioIo<tokio_rustls::client::TlsStream<TcpStream>>;
    type Error = io::Error;
    type Future = BoxFuture<Self::Response, io::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let (addr, connector) = (self.addr, self.connector.clone());
        Box::pin(async move {
            let tcp = TcpStream::connect(addr).await?;
            let name = ServerName::try_from("localhost").expect("valid name");
            Ok(TokioIo::new(connector.connect(name, tcp).await?))
        })
    }
}

fn client_tls(server_cert: &CertificateDer<'static>, client: Option<&tls::ServerIdentity>) -> ClientConfig {
    let builder = ClientConfig::builder_with_provider(Arc::new(ring()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedServer(server_cert.clone())));
    let mut config = match client {
        Some(id) => builder.with_client_auth_cert(vec![id.cert.clone()], id.key.clone_key()).unwrap(),
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    config
}

/// GetProviderSchema over a fresh connection; any failure (TLS, HTTP/2, gRPC) as text.
async fn get_schema(addr: SocketAddr, tls: Option<ClientConfig>) -> Result<pb::get_provider_schema::Response, String> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}")).unwrap().connect_timeout(Duration::from_secs(5));
    let channel = match tls {
        None => endpoint.connect().await,
        Some(config) => {
            endpoint
                .connect_with_connector(TlsConnect {
                    addr,
                    connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
                })
                .await
        }
    }
    .map_err(|e| format!("connect: {e:?}"))?;
    let mut client = pb::provider_client::ProviderClient::new(channel);
    let call = client.get_provider_schema(pb::get_provider_schema::Request {});
    match tokio::time::timeout(Duration::from_secs(5), call).await {
        Ok(r) => r.map(|r| r.into_inner()).map_err(|s| format!("rpc: {s}")),
        Err(_) => Err("rpc timed out".into()),
    }
}

#[tokio::test]
async fn mtls_admits_only_terraforms_client_certificate() {
    let terraform = tls::server_identity().unwrap();
    let intruder = tls::server_identity().unwrap();
    let s = start(Some(&pem(&terraform.cert))).await;
    let server_cert = s.server_cert.clone().expect("the handshake line carries the server certificate");

    let no_cert = get_schema(s.addr, Some(client_tls(&server_cert, None))).await;
    assert!(no_cert.is_err(), "a client without a certificate got the schema");

    let wrong_cert = get_schema(s.addr, Some(client_tls(&server_cert, Some(&intruder)))).await;
    assert!(wrong_cert.is_err(), "a client with another certificate got the schema");

    let plaintext = get_schema(s.addr, None).await;
    assert!(plaintext.is_err(), "a plaintext client got the schema");

    let schema = get_schema(s.addr, Some(client_tls(&server_cert, Some(&terraform))))
        .await
        .expect("Terraform's certificate is accepted");
    assert_eq!(schema.provider.unwrap().block.unwrap().description, "test provider");
    assert!(schema.server_capabilities.unwrap().get_provider_schema_optional);
    s.task.abort();
}

#[tokio::test]
async fn controller_shutdown_ends_the_server() {
    let s = start(None).await;
    assert!(s.server_cert.is_none(), "no TLS without PLUGIN_CLIENT_CERT");
    let channel = Endpoint::from_shared(format!("http://{}", s.addr)).unwrap().connect().await.unwrap();

    // Plugin side services Terraform probes but does not need answer UNIMPLEMENTED.
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.unwrap();
    let stdio = grpc
        .unary(
            tonic::Request::new(super::super::controller::Empty {}),
            tonic::codegen::http::uri::PathAndQuery::from_static("/plugin.GRPCStdio/StreamStdio"),
            tonic::codec::ProstCodec::<super::super::controller::Empty, super::super::controller::Empty>::default(),
        )
        .await;
    assert_eq!(stdio.unwrap_err().code(), tonic::Code::Unimplemented);

    grpc.ready().await.unwrap();
    let started = std::time::Instant::now();
    grpc.unary(
        tonic::Request::new(super::super::controller::Empty {}),
        tonic::codegen::http::uri::PathAndQuery::from_static("/plugin.GRPCController/Shutdown"),
        tonic::codec::ProstCodec::<super::super::controller::Empty, super::super::controller::Empty>::default(),
    )
    .await
    .expect("Shutdown answers");
    assert!(s.shutdown.is_cancelled());
    let result =
        tokio::time::timeout(Duration::from_secs(2), s.task).await.expect("server stops within Terraform's 2 s");
    assert!(result.unwrap().is_ok());
    assert!(started.elapsed() < Duration::from_secs(1), "took {:?}", started.elapsed());
}
