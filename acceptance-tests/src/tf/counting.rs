//! A stand-in API server that only counts: for tests proving that the provider reaches no cluster.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::TcpListener;

/// Listens on loopback and counts every connection it accepts, closing each at once: a provider that tried to
/// reach the API would show up here (its TLS handshake then fails).
pub struct CountingApiServer {
    /// `https://127.0.0.1:<port>`, for a provider block's `host`.
    pub url: String,
    accepted: Arc<AtomicUsize>,
}

impl CountingApiServer {
    pub async fn start() -> Result<CountingApiServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await.context("binding the counting API server")?;
        let url = format!("https://{}", listener.local_addr()?);
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(socket);
            }
        });
        Ok(CountingApiServer { url, accepted })
    }

    /// Connections so far, after a pause long enough for the accept loop to take any connection the kernel
    /// has already completed (the client process has exited by the time this is called).
    pub async fn connections(&self) -> usize {
        tokio::time::sleep(Duration::from_millis(30)).await;
        self.accepted.load(Ordering::SeqCst)
    }
}
