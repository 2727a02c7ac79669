//! How the provider process meets Terraform: go-plugin's handshake (magic cookie, protocol version, port
//! range, mTLS), the TCP listener, and debug mode for `TF_REATTACH_PROVIDERS`.
use super::controller::ControllerServer;
use super::server::ProviderService;
use super::{Provider, log, tls};
use base64::Engine;
use magma_protocol::tfplugin6::provider_server::ProviderServer;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// The value every Terraform-compatible plugin checks (terraform-plugin-go's handshake config).
const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
const MAGIC_COOKIE_VALUE: &str = "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";
/// tfplugin major version this provider speaks.
const PROTOCOL_VERSION: u32 = 6;
/// How long connections may drain after Terraform's Shutdown before the process exits anyway: Terraform
/// kills a provider that has not exited two seconds after Shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
/// A client that has not completed its TLS handshake by then is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// terraform-plugin-go's limit; Terraform's own client allows as much.
const MAX_MESSAGE_SIZE: usize = 256 << 20;

/// How to serve.
#[derive(Clone, Debug)]
pub enum Mode {
    /// Started by Terraform or OpenTofu: go-plugin handshake on stdout, mTLS, exit on Shutdown.
    Plugin,
    /// Started by hand: plaintext on loopback, print a `TF_REATTACH_PROVIDERS` value for the provider
    /// `address` (e.g. `registry.terraform.io/liqotech/liqo`, announced under registry.opentofu.org too),
    /// serve until Ctrl-C.
    Debug { address: String },
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// go-plugin's exact message, for people who run the binary by hand.
    #[error(
        "This binary is a plugin. These are not meant to be executed directly.\nPlease execute the program that consumes these plugins, which will\nload any plugins automatically"
    )]
    NotLaunchedByPluginHost,
    #[error(
        "Terraform offered plugin protocol versions {offered:?}, but this provider speaks only protocol 6. Use Terraform 1.0 or later, or OpenTofu."
    )]
    UnsupportedProtocol { offered: String },
    #[error("invalid plugin environment: {0}")]
    Environment(String),
    #[error("cannot listen on 127.0.0.1 ports {min}-{max}: {source}")]
    Listen { min: u16, max: u16, source: io::Error },
    #[error("cannot set up TLS for the plugin connection: {0}")]
    Tls(String),
    #[error("gRPC server failed: {0}")]
    Serve(#[from] tonic::transport::Error),
    #[error("cannot write the handshake to stdout: {0}")]
    Handshake(io::Error),
}

/// What go-plugin passes a plugin in its environment.
#[derive(Clone, Debug, Default)]
pub(crate) struct PluginEnv {
    pub(crate) magic_cookie: Option<String>,
    pub(crate) protocol_versions: Option<String>,
    pub(crate) min_port: Option<String>,
    pub(crate) max_port: Option<String>,
    pub(crate) client_cert: Option<String>,
}

impl PluginEnv {
    fn from_process() -> PluginEnv {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        PluginEnv {
            magic_cookie: var(MAGIC_COOKIE_KEY),
            protocol_versions: var("PLUGIN_PROTOCOL_VERSIONS"),
            min_port: var("PLUGIN_MIN_PORT"),
            max_port: var("PLUGIN_MAX_PORT"),
            client_cert: var("PLUGIN_CLIENT_CERT"),
        }
    }

    fn check(&self) -> Result<(), ServeError> {
        if self.magic_cookie.as_deref() != Some(MAGIC_COOKIE_VALUE) {
            return Err(ServeError::NotLaunchedByPluginHost);
        }
        // Absent means the host only knows the version of its handshake config, which is ours.
        if let Some(offered) = &self.protocol_versions
            && !offered.split(',').any(|v| v.trim().parse() == Ok(PROTOCOL_VERSION))
        {
            return Err(ServeError::UnsupportedProtocol { offered: offered.clone() });
        }
        Ok(())
    }

    /// go-plugin's rule: both unset means any free port; otherwise the first free port in the range.
    fn port_range(&self) -> Result<(u16, u16), ServeError> {
        let parse = |name: &str, v: &Option<String>, default: u16| match v {
            None => Ok(default),
            Some(s) => s
                .trim()
                .parse::<u16>()
                .map_err(|_| ServeError::Environment(format!("{name}={s:?} is not a port number"))),
        };
        let min = parse("PLUGIN_MIN_PORT", &self.min_port, 0)?;
        let max = parse("PLUGIN_MAX_PORT", &self.max_port, if self.min_port.is_some() { u16::MAX } else { 0 })?;
        if min > max {
            return Err(ServeError::Environment(format!(
                "PLUGIN_MIN_PORT {min} is greater than PLUGIN_MAX_PORT {max}"
            )));
        }
        Ok((min, max))
    }
}

async fn listen(min: u16, max: u16) -> Result<TcpListener, ServeError> {
    let mut last = io::Error::new(io::ErrorKind::AddrNotAvailable, "no port in range");
    for port in min..=max {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => return Ok(l),
            Err(e) => last = e,
        }
    }
    Err(ServeError::Listen { min, max, source: last })
}

/// Serves `provider` until Terraform shuts the plugin down (or Ctrl-C in debug mode).
pub async fn serve<P: Provider>(provider: P, mode: Mode) -> Result<(), ServeError> {
    let provider: Arc<dyn Provider> = Arc::new(provider);
    match mode {
        Mode::Plugin => {
            let env = PluginEnv::from_process();
            env.check()?;
            let (min, max) = env.port_range()?;
            let listener = listen(min, max).await?;
            let shutdown = CancellationToken::new();
            let server = PluginServer::new(provider, listener, env.client_cert.as_deref(), shutdown.clone())?;
            write_line(&server.handshake_line())?;
            server.run(shutdown.cancelled_owned()).await
        }
        Mode::Debug { address } => {
            let listener = listen(0, 0).await?;
            let server = PluginServer::new(provider, listener, None, CancellationToken::new())?;
            write_line(&format!("TF_REATTACH_PROVIDERS='{}'", reattach_json(&address, server.addr)))?;
            eprintln!(
                "Provider started in debug mode (no TLS). Export the line above in the shell that runs terraform or tofu; press Ctrl-C to stop."
            );
            server.run(async { tokio::signal::ctrl_c().await.unwrap_or(()) }).await
        }
    }
}

fn write_line(line: &str) -> Result<(), ServeError> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}").and_then(|_| out.flush()).map_err(ServeError::Handshake)
}

/// Terraform and OpenTofu look a reattached provider up by its full address, and a bare `source = "ns/type"`
/// means registry.terraform.io/ns/type to Terraform but registry.opentofu.org/ns/type to OpenTofu. Announcing
/// a provider of either public registry under both hosts lets one exported line serve both clients; each
/// ignores the entry it does not need.
const PUBLIC_REGISTRIES: [&str; 2] = ["registry.terraform.io", "registry.opentofu.org"];

fn reattach_json(address: &str, addr: SocketAddr) -> String {
    let config = serde_json::json!({
        "Protocol": "grpc",
        "ProtocolVersion": PROTOCOL_VERSION,
        "Pid": std::process::id(),
        "Test": true,
        "Addr": { "Network": "tcp", "String": addr.to_string() }
    });
    let addresses: Vec<String> = match address.split_once('/') {
        Some((host, rest)) if PUBLIC_REGISTRIES.contains(&host) => {
            PUBLIC_REGISTRIES.iter().map(|registry| format!("{registry}/{rest}")).collect()
        }
        _ => vec![address.to_owned()],
    };
    serde_json::Value::Object(addresses.into_iter().map(|a| (a, config.clone())).collect()).to_string()
}

/// A bound listener with its TLS setup, ready to serve.
pub(crate) struct PluginServer {
    service: Arc<ProviderService>,
    listener: TcpListener,
    addr: SocketAddr,
    tls: Option<(TlsAcceptor, Vec<u8>)>,
    /// Cancelled by GRPCController.Shutdown.
    shutdown: CancellationToken,
}

impl PluginServer {
    /// With `client_cert_pem` the server requires TLS with exactly that client certificate.
    pub(crate) fn new(
        provider: Arc<dyn Provider>,
        listener: TcpListener,
        client_cert_pem: Option<&str>,
        shutdown: CancellationToken,
    ) -> Result<PluginServer, ServeError> {
        let addr = listener.local_addr().map_err(|e| ServeError::Listen { min: 0, max: 0, source: e })?;
        let tls = match client_cert_pem {
            None => None,
            Some(pem) => {
                let client_cert = tls::parse_client_cert(pem).map_err(ServeError::Tls)?;
                let identity = tls::server_identity().map_err(|e| ServeError::Tls(e.to_string()))?;
                let config = tls::server_config(&identity, client_cert).map_err(|e| ServeError::Tls(e.to_string()))?;
                Some((TlsAcceptor::from(Arc::new(config)), identity.cert.to_vec()))
            }
        };
        Ok(PluginServer { service: Arc::new(ProviderService::new(provider)), listener, addr, tls, shutdown })
    }

    /// `1|6|tcp|127.0.0.1:PORT|grpc[|CERT]`: go-plugin core version 1, tfplugin 6, and with mTLS the server
    /// certificate as unpadded standard base64 DER.
    pub(crate) fn handshake_line(&self) -> String {
        let mut line = format!("1|{PROTOCOL_VERSION}|tcp|{}|grpc", self.addr);
        if let Some((_, cert)) = &self.tls {
            line.push('|');
            line.push_str(&base64::engine::general_purpose::STANDARD_NO_PAD.encode(cert));
        }
        line
    }

    pub(crate) async fn run(self, stop: impl std::future::Future<Output = ()>) -> Result<(), ServeError> {
        let (tx, rx) = mpsc::channel::<io::Result<Conn>>(16);
        let accept = tokio::spawn(accept_loop(self.listener, self.tls.map(|(a, _)| a), tx));
        let router = tonic::transport::Server::builder()
            .add_service(
                ProviderServer::from_arc(self.service)
                    .max_decoding_message_size(MAX_MESSAGE_SIZE)
                    .max_encoding_message_size(MAX_MESSAGE_SIZE),
            )
            .add_service(ControllerServer::new(self.shutdown.clone()));
        let shutdown = self.shutdown.clone();
        let signal = async move {
            tokio::select! {
                _ = stop => {}
                _ = shutdown.cancelled() => {}
            }
        };
        let serve = router.serve_with_incoming_shutdown(tokio_stream::wrappers::ReceiverStream::new(rx), signal);
        tokio::pin!(serve);
        let result = tokio::select! {
            r = &mut serve => r.map_err(ServeError::from),
            // Graceful shutdown waits for clients to hang up; do not let a lingering one keep the process.
            _ = async { self.shutdown.cancelled().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => Ok(()),
        };
        accept.abort();
        result
    }
}

async fn accept_loop(listener: TcpListener, tls: Option<TlsAcceptor>, tx: mpsc::Sender<io::Result<Conn>>) {
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of file descriptors and similar: back off instead of spinning.
                log::warn("accepting a plugin connection failed", &[("error", &e.to_string())]);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // go-plugin's Go client expects Nagle off; without it each provider process stalls ~40 ms per RPC.
        if let Err(e) = sock.set_nodelay(true) {
            log::warn("cannot set TCP_NODELAY", &[("error", &e.to_string())]);
        }
        match &tls {
            None => {
                if tx.send(Ok(Conn::Plain(sock))).await.is_err() {
                    return;
                }
            }
            Some(acceptor) => {
                let (acceptor, tx) = (acceptor.clone(), tx.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(sock)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send(Ok(Conn::Tls(Box::new(stream)))).await;
                        }
                        Ok(Err(e)) => log::warn(
                            "refused a plugin connection without Terraform's client certificate",
                            &[("peer", &peer.to_string()), ("error", &e.to_string())],
                        ),
                        Err(_) => log::warn("TLS handshake timed out", &[("peer", &peer.to_string())]),
                    }
                });
            }
        }
    }
}

/// An accepted connection, plain (debug mode) or TLS.
pub(crate) enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = ();
    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(s) => s.is_write_vectored(),
            Conn::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod server_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cookie: Option<&str>, versions: Option<&str>) -> PluginEnv {
        PluginEnv {
            magic_cookie: cookie.map(String::from),
            protocol_versions: versions.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn handshake_requires_the_cookie_and_protocol_6() {
        assert!(matches!(env(None, None).check(), Err(ServeError::NotLaunchedByPluginHost)));
        assert!(matches!(env(Some("nope"), None).check(), Err(ServeError::NotLaunchedByPluginHost)));
        assert!(env(Some(MAGIC_COOKIE_VALUE), Some("5,6")).check().is_ok());
        assert!(env(Some(MAGIC_COOKIE_VALUE), None).check().is_ok());
        assert!(matches!(
            env(Some(MAGIC_COOKIE_VALUE), Some("4,5")).check(),
            Err(ServeError::UnsupportedProtocol { .. })
        ));
        assert!(ServeError::NotLaunchedByPluginHost.to_string().starts_with("This binary is a plugin."));
    }

    #[test]
    fn port_range_follows_go_plugin() {
        let mut e = PluginEnv::default();
        assert_eq!(e.port_range().unwrap(), (0, 0));
        e.min_port = Some("10000".into());
        e.max_port = Some("25000".into());
        assert_eq!(e.port_range().unwrap(), (10000, 25000));
        e.max_port = Some("9000".into());
        assert!(e.port_range().is_err());
        e.max_port = Some("x".into());
        assert!(e.port_range().is_err());
    }

    #[tokio::test]
    async fn listen_takes_the_first_free_port_in_range() {
        let taken = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = taken.local_addr().unwrap().port();
        // `port` is busy; the next one is usually free, and a range of one busy port must fail.
        assert!(listen(port, port).await.is_err());
        if let Some(next) = port.checked_add(1)
            && let Ok(l) = listen(port, next).await
        {
            assert_eq!(l.local_addr().unwrap().port(), next);
        }
    }

    #[test]
    fn reattach_line_names_the_provider_under_both_public_registries() {
        let j: serde_json::Value = serde_json::from_str(&reattach_json(
            "registry.terraform.io/liqotech/liqo",
            "127.0.0.1:1234".parse().unwrap(),
        ))
        .unwrap();
        assert_eq!(j.as_object().unwrap().len(), 2, "{j}");
        for address in ["registry.terraform.io/liqotech/liqo", "registry.opentofu.org/liqotech/liqo"] {
            let p = &j[address];
            assert_eq!(p["Protocol"], "grpc", "{address}");
            assert_eq!(p["ProtocolVersion"], 6);
            assert_eq!(p["Test"], true);
            assert_eq!(p["Addr"]["Network"], "tcp");
            assert_eq!(p["Addr"]["String"], "127.0.0.1:1234");
            assert_eq!(p["Pid"], std::process::id());
        }
    }

    #[test]
    fn reattach_line_keeps_a_private_registry_address_as_is() {
        let j: serde_json::Value =
            serde_json::from_str(&reattach_json("example.com/test/dummy", "127.0.0.1:1234".parse().unwrap())).unwrap();
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["example.com/test/dummy"]);
    }
}
