//! The Kubernetes client: kube's stack, assembled from kube's public layers so that the API server connections
//! set TCP_NODELAY, which kube 5's own builder (`Client::try_from(Config)`) leaves off (kube-rs/kube#2056).
//!
//! Why it matters here: with Nagle's algorithm on, a new TLS connection with a client certificate stalls about
//! 40 ms (the client's handshake writes wait for an ACK the API server delays). The provider opens a new
//! connection after every wait, because a watch stream dropped mid-way cannot go back to the pool: measured on the
//! ground, a list right after a dropped watch took 47–55 ms with kube's builder and 5–8 ms with this one, and a
//! real Liqo status flip reached the end of the provider's wait ~45 ms later than the watch delivered it.
//!
//! Same layers and settings as kube's builder: rustls with the config's CA, client identity, server name and
//! `accept_invalid_certs`; connect, read and write timeouts; the base URI; the config's authentication (tokens,
//! exec plugins, refresh) and extra headers (impersonation). What differs:
//! - no retry layer (kube's `default_retry` of 429/503/504): every request goes through [`super::with_retry`],
//!   which retries those and more within a budget and ends on Terraform's stop signal, and watches through the
//!   watcher's backoff; a second layer would retry one request twice over;
//! - a `proxy_url` (HTTP CONNECT or SOCKS5) is left to kube's builder, whose proxy connectors it needs; through a
//!   proxy the API server is remote, where a few tens of milliseconds per connection matter less;
//! - no HTTP tracing spans: the provider logs through Terraform (`crate::protocol::log`), not `tracing`;
//! - no `valid_until` on the client (kube sets it from the expiry of a certificate an exec plugin issued, for
//!   callers that rebuild clients): nothing here reads it, and a provider process lives for one command.
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;
use tower::{BoxError, ServiceBuilder};

/// A client for `config`'s API server (see the module comment for how it differs from kube's builder).
pub fn build(mut config: kube::Config) -> Result<kube::Client, kube::Error> {
    if config.proxy_url.is_some() {
        config.default_retry = false;
        return kube::Client::try_from(config);
    }
    let mut http = HttpConnector::new();
    // The scheme is checked by the TLS connector wrapping this one (https, or http without TLS).
    http.enforce_http(false);
    http.set_nodelay(true);
    let mut connector = TimeoutConnector::new(config.rustls_https_connector_with_connector(http)?);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(hyper);
    Ok(kube::Client::new(service, config.default_namespace))
}
