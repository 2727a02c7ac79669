//! The one place that touches Kubernetes objects: server-side apply, get, wait (watch-based, with timeout and
//! cancellation) and delete-and-wait. Resources describe *what* they want; this module owns *how*, so retries,
//! field ownership and error shapes are the same everywhere.
use crate::protocol::Ctx;
use futures::StreamExt;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Field manager for every server-side apply: fields written by Liqo's controllers stay theirs, so they never
/// show up as drift and we never fight over them.
pub const FIELD_MANAGER: &str = "terraform-provider-liqo";

/// How long transient failures (API server restarting, 409 conflicts, 429/5xx) are retried before giving up.
const RETRY_BUDGET: Duration = Duration::from_secs(30);

/// What went wrong while operating on one object. Turned into diagnostics in `crate::errors`.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("{action} {object}: {source}")]
    Api { action: &'static str, object: String, source: kube::Error },
    #[error("timed out after {after:?} waiting for {object}: {waiting_for}")]
    Timeout { object: String, waiting_for: String, last_seen: String, after: Duration },
    #[error("{object}: {reason}")]
    Failed { object: String, reason: String, hint: String },
    #[error("cancelled while waiting for {object}: {waiting_for}")]
    Cancelled { object: String, waiting_for: String },
    #[error("{object} is still present after {after:?}, held by {}", holds.summary())]
    StuckDelete { object: String, holds: Holds, after: Duration },
}

impl OpError {
    /// True when the error is an HTTP 404 from the API server.
    pub fn is_not_found(&self) -> bool {
        matches!(self, OpError::Api { source: kube::Error::Api(s), .. } if s.code == 404)
    }
}

/// `Kind namespace/name` (or `Kind name` for cluster-scoped objects), the way errors name objects.
pub fn describe<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{} {ns}/{name}", K::kind(&())),
        None => format!("{} {name}", K::kind(&())),
    }
}

fn describe_api<K: Resource<DynamicType = ()>>(api: &Api<K>, name: &str) -> String {
    describe::<K>(api.namespace(), name)
}

/// Errors worth retrying: the API server is briefly unreachable, overloaded, or another writer raced us.
fn is_transient(e: &kube::Error) -> bool {
    match e {
        // AlreadyExists is also a 409 but permanent: retrying a create that hit it only delays the error.
        kube::Error::Api(s) if s.is_already_exists() => false,
        kube::Error::Api(s) => matches!(s.code, 409 | 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Runs `op` until it succeeds, fails permanently, the retry budget is spent, or the user cancels.
async fn with_retry<T, F, Fut>(ctx: &Ctx, action: &'static str, object: &str, mut op: F) -> Result<T, OpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let start = Instant::now();
    let mut delay = Duration::from_millis(100);
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if is_transient(&e) && start.elapsed() + delay < RETRY_BUDGET => {
                tokio::select! {
                    _ = ctx.cancel.cancelled() => {
                        return Err(OpError::Cancelled { object: object.to_string(), waiting_for: format!("{action} to succeed") });
                    }
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(source) => return Err(OpError::Api { action, object: object.to_string(), source }),
        }
    }
}

/// Server-side apply of `obj` (which must carry apiVersion, kind and name) as [`FIELD_MANAGER`], forcing
/// ownership of the fields we set: an out-of-band edit of one of our fields is repaired, not reported as a
/// conflict.
pub async fn apply<K>(ctx: &Ctx, api: &Api<K>, obj: &K) -> Result<K, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let object = describe_api(api, &name);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let patch = Patch::Apply(obj);
    with_retry(ctx, "apply", &object, || api.patch(&name, &params, &patch)).await
}

/// Creates `obj`; used where an object must be written once and never overwritten (e.g. a CSR).
pub async fn create<K>(ctx: &Ctx, api: &Api<K>, obj: &K) -> Result<K, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    let object = describe_api(api, &name);
    let params = PostParams::default();
    with_retry(ctx, "create", &object, || api.create(&params, obj)).await
}

/// Reads one object; `None` when it does not exist.
pub async fn get_opt<K>(ctx: &Ctx, api: &Api<K>, name: &str) -> Result<Option<K>, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let object = describe_api(api, name);
    with_retry(ctx, "read", &object, || api.get_opt(name)).await
}

/// Approves a CertificateSigningRequest through its `approval` subresource (the signer then issues it).
pub async fn approve_csr(
    ctx: &Ctx,
    api: &Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest>,
    name: &str,
    reason: &str,
    message: &str,
) -> Result<(), OpError> {
    let object = describe_api(api, name);
    let patch = Patch::Merge(serde_json::json!({
        "status": {"conditions": [{"type": "Approved", "status": "True", "reason": reason, "message": message}]}
    }));
    let params = PatchParams::default();
    with_retry(ctx, "approve", &object, || api.patch_approval(name, &params, &patch)).await.map(|_| ())
}

/// Lists objects matching a label selector.
pub async fn list<K>(ctx: &Ctx, api: &Api<K>, label_selector: &str) -> Result<Vec<K>, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let object = format!("{} objects labelled {label_selector}", K::kind(&()));
    let lp = kube::api::ListParams::default().labels(label_selector);
    with_retry(ctx, "list", &object, || api.list(&lp)).await.map(|l| l.items)
}

/// The answer of a wait check on the objects seen so far.
pub enum Check<T> {
    /// Done; the wait returns this value.
    Ready(T),
    /// Not yet; the text says what is seen now (it ends up in the timeout error).
    Pending(String),
    /// Liqo reported a failure: stop waiting. `hint` is the next step for the user.
    Failed { reason: String, hint: String },
}

/// What a wait is about: the object (for messages) and how to watch it.
pub struct WaitTarget {
    pub object: String,
    pub waiting_for: String,
    pub config: watcher::Config,
}

impl WaitTarget {
    /// One object by name.
    pub fn named<K: Resource<DynamicType = ()>>(
        api: &Api<K>,
        name: &str,
        waiting_for: impl Into<String>,
    ) -> WaitTarget {
        WaitTarget {
            object: describe_api(api, name),
            waiting_for: waiting_for.into(),
            config: watcher::Config::default().fields(&format!("metadata.name={name}")),
        }
    }
    /// All objects with a label selector (e.g. the Connection of a peer, found by label as Liqo does).
    pub fn labelled<K: Resource<DynamicType = ()>>(
        api: &Api<K>,
        selector: &str,
        waiting_for: impl Into<String>,
    ) -> WaitTarget {
        let scope = api.namespace().map(|ns| format!(" in namespace {ns}")).unwrap_or_default();
        WaitTarget {
            object: format!("{} labelled {selector}{scope}", K::kind(&())),
            waiting_for: waiting_for.into(),
            config: watcher::Config::default().labels(selector),
        }
    }
}

/// Watches the target until `check` says Ready or Failed, the timeout passes, or the user cancels. The check sees
/// every matching object currently present (an empty slice when none exists yet). Watch-based, so a status change
/// is seen within one event round trip; a dropped watch is re-established by the watcher's backoff.
pub async fn wait_until<K, T>(
    ctx: &Ctx,
    api: &Api<K>,
    target: WaitTarget,
    timeout: Duration,
    check: impl Fn(&[K]) -> Check<T>,
) -> Result<T, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let start = Instant::now();
    let mut stream = watcher(api.clone(), target.config.clone()).default_backoff().boxed();
    let mut seen: BTreeMap<String, K> = BTreeMap::new();
    let mut init: BTreeMap<String, K> = BTreeMap::new();
    let mut last_seen = String::from("no matching object yet");
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    loop {
        let event = tokio::select! {
            _ = ctx.cancel.cancelled() => {
                return Err(OpError::Cancelled { object: target.object, waiting_for: target.waiting_for });
            }
            _ = &mut deadline => {
                return Err(OpError::Timeout { object: target.object, waiting_for: target.waiting_for, last_seen, after: start.elapsed() });
            }
            e = stream.next() => e,
        };
        let key = |o: &K| o.meta().name.clone().unwrap_or_default();
        match event {
            None => {
                return Err(OpError::Timeout {
                    object: target.object,
                    waiting_for: target.waiting_for,
                    last_seen,
                    after: start.elapsed(),
                });
            }
            // Transient watch errors: the watcher retries with backoff; keep the last known objects.
            Some(Err(_)) => continue,
            Some(Ok(watcher::Event::Init)) => {
                init.clear();
                continue;
            }
            Some(Ok(watcher::Event::InitApply(o))) => {
                init.insert(key(&o), o);
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => seen = std::mem::take(&mut init),
            Some(Ok(watcher::Event::Apply(o))) => {
                seen.insert(key(&o), o);
            }
            Some(Ok(watcher::Event::Delete(o))) => {
                seen.remove(&key(&o));
            }
        }
        let objects: Vec<K> = seen.values().cloned().collect();
        match check(&objects) {
            Check::Ready(v) => return Ok(v),
            Check::Pending(now) => last_seen = now,
            Check::Failed { reason, hint } => return Err(OpError::Failed { object: target.object, reason, hint }),
        }
    }
}

/// Waits on one named object; the check sees `None` while it does not exist.
pub async fn wait_for<K, T>(
    ctx: &Ctx,
    api: &Api<K>,
    name: &str,
    waiting_for: &str,
    timeout: Duration,
    check: impl Fn(Option<&K>) -> Check<T>,
) -> Result<T, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let target = WaitTarget::named(api, name, waiting_for);
    wait_until(ctx, api, target, timeout, |objs: &[K]| check(objs.first())).await
}

/// Namespace conditions kube-controller-manager's namespace controller sets while it cannot finish a deletion;
/// their messages say which objects remain and which finalizers they carry.
const NAMESPACE_DELETION_CONDITIONS: [&str; 5] = [
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
    "NamespaceDeletionContentFailure",
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
];

/// What keeps an object from disappearing, as the object itself reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holds {
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
    /// A Namespace's `spec.finalizers` (`kubernetes`: released by the namespace controller once it is empty).
    pub spec_finalizers: Vec<String>,
    /// A Namespace's true deletion conditions as `(type, message)`: the objects and finalizers left inside it.
    pub conditions: Vec<(String, String)>,
}

impl Holds {
    /// Reads what holds `o`. A namespace's metadata.finalizers are usually empty while its content holds it,
    /// so its spec finalizers and status conditions are read too.
    pub fn of<K: Serialize>(o: &K) -> Holds {
        let v = serde_json::to_value(o).unwrap_or_default();
        let strings = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
        };
        let conditions = v["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"] == "True")
            .filter_map(|c| {
                let t = c["type"].as_str()?;
                NAMESPACE_DELETION_CONDITIONS
                    .contains(&t)
                    .then(|| (t.to_string(), c["message"].as_str().unwrap_or_default().to_string()))
            })
            .collect();
        Holds {
            finalizers: strings(&v["metadata"]["finalizers"]),
            spec_finalizers: if v["kind"] == "Namespace" { strings(&v["spec"]["finalizers"]) } else { Vec::new() },
            conditions,
        }
    }

    /// One line for progress and timeout messages: finalizers and, for a namespace, what remains in it.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.finalizers.is_empty() {
            parts.push(format!("finalizers {}", quoted(&self.finalizers)));
        }
        for (t, message) in &self.conditions {
            parts.push(format!("{t}: {message}"));
        }
        if parts.is_empty() && !self.spec_finalizers.is_empty() {
            parts.push(format!(
                "namespace finalizers {} (its content is still being deleted)",
                quoted(&self.spec_finalizers)
            ));
        }
        if parts.is_empty() {
            "nothing the object reports (no finalizers, no deletion conditions)".into()
        } else {
            parts.join("; ")
        }
    }
}

fn quoted(items: &[String]) -> String {
    items.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
}

/// True once the API server has accepted a delete of `o` (finalizers may still hold it).
pub fn is_terminating<K: Resource>(o: &K) -> bool {
    o.meta().deletion_timestamp.is_some()
}

/// A wait check for an object to be gone (deleted by Liqo, or by someone else): present → what holds it.
pub fn gone_check<K: Resource + Serialize>(o: Option<&K>) -> Check<()> {
    match o {
        None => Check::Ready(()),
        Some(o) => Check::Pending(format!(
            "still present ({}; held by {})",
            if o.meta().deletion_timestamp.is_some() { "being deleted" } else { "not being deleted yet" },
            Holds::of(o).summary()
        )),
    }
}

/// The live object, after waiting out a deletion in progress (e.g. after an out-of-band delete). Call it before
/// applying an object that may be dying: an apply would land on the dying object and vanish with it. `None` when
/// the name is free.
pub async fn settle<K>(ctx: &Ctx, api: &Api<K>, name: &str, timeout: Duration) -> Result<Option<K>, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    match get_opt(ctx, api, name).await? {
        Some(o) if is_terminating(&o) => {
            wait_for(ctx, api, name, "the deletion in progress to finish", timeout, gone_check).await?;
            Ok(None)
        }
        other => Ok(other),
    }
}

/// Deletes an object (if present) and waits until it is gone. Finalizers are never stripped: Liqo's
/// controllers release them; a delete that cannot finish names the object and what holds it (finalizers, or for
/// a namespace the objects and finalizers its deletion conditions report).
pub async fn delete_and_wait<K>(ctx: &Ctx, api: &Api<K>, name: &str, timeout: Duration) -> Result<(), OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    let object = describe_api(api, name);
    let params = DeleteParams::background();
    let deleted = with_retry(ctx, "delete", &object, || async {
        match api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(e) => Err(e),
        }
    })
    .await?;
    if !deleted {
        return Ok(());
    }
    let start = Instant::now();
    let gone = wait_for(ctx, api, name, "deletion to finish", timeout, gone_check).await;
    match gone {
        Err(OpError::Timeout { .. }) => match get_opt(ctx, api, name).await? {
            Some(o) => Err(OpError::StuckDelete { object, holds: Holds::of(&o), after: start.elapsed() }),
            // Gone between the timeout and the last look.
            None => Ok(()),
        },
        other => other,
    }
}

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

#[cfg(test)]
mod tests {
    //! The provider writes with server-side apply (never conflicts: it forces ownership), creates CSRs under a
    //! fresh random name, and approves them with a merge patch of the `approval` subresource — the one write
    //! that another writer (an approver controller, the signer) can race. No write carries a resourceVersion
    //! and the provider never edits finalizers, so a 409 can only come from such a race; these tests prove it
    //! is retried, against a fake API server that answers the first request with a 409.
    use super::*;
    use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
    use std::sync::{Arc, Mutex};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    const CONFLICT: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on certificatesigningrequests.certificates.k8s.io \"c\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","code":409}"#;
    const CSR: &str = r#"{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"c"},"spec":{"request":"","signerName":"kubernetes.io/kube-apiserver-client"}}"#;

    /// Serves `answers` in order, one per connection (`Connection: close`), and records each request line.
    async fn fake_api_server(answers: Vec<(u16, &'static str)>) -> (String, Arc<Mutex<Vec<String>>>) {
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
                            log.lock().unwrap().push(text.lines().next().unwrap_or_default().to_owned());
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
        Api::all(kube::Client::try_from(config).unwrap())
    }

    #[tokio::test]
    async fn a_conflicting_csr_approval_is_retried() {
        let (url, seen) = fake_api_server(vec![(409, CONFLICT), (200, CSR)]).await;
        let ctx = Ctx { cancel: tokio_util::sync::CancellationToken::new() };
        approve_csr(&ctx, &csr_api(&url).await, "c", "Reason", "message").await.expect("approved after a retry");
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "one conflict, one retry: {seen:?}");
        assert!(
            seen.iter()
                .all(|l| l.starts_with("PATCH /apis/certificates.k8s.io/v1/certificatesigningrequests/c/approval")),
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
        assert!(
            matches!(&err, OpError::Cancelled { object, .. } if object == "CertificateSigningRequest c"),
            "{err:?}"
        );
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
}
