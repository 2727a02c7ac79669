//! An HTTP CONNECT proxy on loopback: what a user puts between the consumer's Liqo and the provider's API server
//! (`liqoctl peer --proxy-url`, liqo_tenant and liqo_peer `proxy_url`). It records each CONNECT it is asked for, so a
//! test can tell which clients went through it, and connects only to loopback (the ground's API servers listen there;
//! the tests send traffic nowhere else): any other target is refused and recorded as such.
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::ground::liqo::pod_network::read_head;

/// One CONNECT the proxy was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connect {
    /// `host:port` as the client asked.
    pub target: String,
    /// Whether the proxy connected it (a loopback address that answered).
    pub connected: bool,
}

/// A running proxy; dropping it stops it (open tunnels end with their clients).
pub struct ConnectProxy {
    address: SocketAddr,
    seen: Arc<Mutex<Vec<Connect>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ConnectProxy {
    /// Listens on a free port of 127.0.0.1.
    pub async fn start() -> Result<ConnectProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("binding the proxy")?;
        let address = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let record = record.clone();
                tokio::spawn(async move {
                    if let Err(err) = tunnel(stream, &record).await {
                        eprintln!("[proxy] {err:#}");
                    }
                });
            }
        });
        Ok(ConnectProxy { address, seen, task })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Every CONNECT so far, in order.
    pub fn seen(&self) -> Vec<Connect> {
        self.seen.lock().expect("proxy record").clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn tunnel(mut stream: TcpStream, record: &Mutex<Vec<Connect>>) -> Result<()> {
    let request = read_head(&mut stream, "the client closed the connection before its request ended").await?;
    let first = request.lines().next().unwrap_or_default().to_owned();
    let Some(target) = first.strip_prefix("CONNECT ").and_then(|rest| rest.split(' ').next()) else {
        let _ = stream.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n").await;
        anyhow::bail!("not a CONNECT request: {first:?}");
    };
    let upstream = match target.parse::<SocketAddr>() {
        Ok(address) if address.ip().is_loopback() => TcpStream::connect(address).await.ok(),
        _ => None,
    };
    record.lock().expect("proxy record").push(Connect { target: target.to_owned(), connected: upstream.is_some() });
    let Some(mut upstream) = upstream else {
        let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\n\r\n").await;
        anyhow::bail!("CONNECT {target}: refused (only loopback addresses that answer)");
    };
    stream.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await?;
    let _ = tokio::io::copy_bidirectional(&mut stream, &mut upstream).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn it_tunnels_to_loopback_records_each_connect_and_refuses_other_targets() {
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let echo_address = echo.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = echo.accept().await.unwrap();
            let mut buf = [0u8; 5];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(&buf).await.unwrap();
        });
        let proxy = ConnectProxy::start().await.unwrap();
        let mut client = TcpStream::connect(proxy.address).await.unwrap();
        client.write_all(format!("CONNECT {echo_address} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
        let head = read_head(&mut client, "no answer").await.unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        client.write_all(b"hello").await.unwrap();
        let mut back = [0u8; 5];
        client.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"hello");

        let mut refused = TcpStream::connect(proxy.address).await.unwrap();
        refused.write_all(b"CONNECT 192.0.2.1:443 HTTP/1.1\r\n\r\n").await.unwrap();
        let head = read_head(&mut refused, "no answer").await.unwrap();
        assert!(head.starts_with("HTTP/1.1 403"), "{head}");
        assert_eq!(
            proxy.seen(),
            [
                Connect { target: echo_address.to_string(), connected: true },
                Connect { target: "192.0.2.1:443".into(), connected: false }
            ]
        );
        assert!(proxy.url().starts_with("http://127.0.0.1:"));
    }
}
