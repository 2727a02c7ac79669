//! The one place that touches Kubernetes objects: server-side apply, get, list, waits on conditions
//! (watch-based, with timeout and cancellation), delete-and-wait and event lookups. Resources describe *what*
//! they want; this module owns *how*, so retries, field ownership and error shapes are the same everywhere. Its
//! errors ([`OpError`]) become diagnostics only in `crate::errors`.
//!
//! - [`wait`]: wait for a verdict on one named object or on every object of a selector; the conditions
//!   compose kube-runtime's (`is_deleted(uid)`), and the bookkeeping of what is present is kube-runtime's
//!   reflector store.
//! - [`delete`]: delete-and-wait (by UID: a recreated object with the same name is gone, not "still there"),
//!   waiting out a deletion in progress, and what holds an object that does not go.
//! - [`events`]: Liqo's Warning events about an object, quoted when a status has no message.
//! - [`probe`]: the TLS check of an API server URL a consumer will use.
//! - [`client`]: the client itself, kube's stack with TCP_NODELAY on its connections.
use crate::protocol::Ctx;
use kube::Resource;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::{Duration, Instant};

pub mod client;
pub mod delete;
pub mod events;
pub mod probe;
#[cfg(test)]
pub(crate) mod tests;
pub mod wait;

pub use delete::{Holds, delete_and_wait, is_terminating, settle, wait_deleted};
pub use wait::{Verdict, WaitTarget, wait_for, wait_until};

/// Field manager for every server-side apply: fields written by Liqo's controllers stay theirs, so they never
/// show up as drift and we never fight over them.
pub const FIELD_MANAGER: &str = "terraform-provider-liqo";

/// The label that marks an object this provider created (`app.kubernetes.io/managed-by=terraform-provider-liqo`),
/// so destroy deletes only what it made and adopts the rest. Recorded on the object, not in private state, which
/// is lost exactly when it matters (a resource dropped by Read, an import).
pub fn provider_mark() -> (String, String) {
    (liqo_schema::liqo::labels::MANAGED_BY.to_string(), FIELD_MANAGER.to_string())
}

/// True when the object carries [`provider_mark`]: this provider created it.
pub fn created_by_provider<K: Resource>(o: &K) -> bool {
    o.meta()
        .labels
        .as_ref()
        .and_then(|l| l.get(liqo_schema::liqo::labels::MANAGED_BY))
        .is_some_and(|v| v == FIELD_MANAGER)
}

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
    #[error("{object} is held by {} while peer {peer} is unreachable ({peer_seen})", holds.summary())]
    WaitsForUnreachablePeer { object: String, holds: Box<Holds>, peer: String, peer_seen: String },
}

/// `Kind namespace/name` (or `Kind name` for cluster-scoped objects), the way errors name objects.
pub fn describe<K: Resource<DynamicType = ()>>(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{} {ns}/{name}", K::kind(&())),
        None => format!("{} {name}", K::kind(&())),
    }
}

pub(crate) fn describe_api<K: Resource<DynamicType = ()>>(api: &Api<K>, name: &str) -> String {
    describe::<K>(api.namespace(), name)
}

/// The request never reached an API server that answered (connection refused, reset, TLS or read timeout).
pub fn is_unreachable(e: &kube::Error) -> bool {
    matches!(e, kube::Error::HyperError(_) | kube::Error::Service(_))
}

/// Errors worth retrying: the API server is briefly unreachable, overloaded, or another writer raced us.
fn is_transient(e: &kube::Error) -> bool {
    if is_unreachable(e) {
        return true;
    }
    match e {
        // AlreadyExists is also a 409 but permanent: retrying a create that hit it only delays the error.
        kube::Error::Api(s) if s.is_already_exists() => false,
        kube::Error::Api(s) => matches!(s.code, 409 | 429 | 500 | 502 | 503 | 504),
        _ => false,
    }
}

/// Runs `op` until it succeeds, fails permanently, the retry budget is spent, or the user cancels.
pub(crate) async fn with_retry<T, F, Fut>(
    ctx: &Ctx,
    action: &'static str,
    object: &str,
    mut op: F,
) -> Result<T, OpError>
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

/// Sets the annotation `key` of an object to `value`, or removes it (`None`), leaving the rest of the object as it
/// is: a merge patch, as `kubectl annotate` sends.
pub async fn annotate<K>(ctx: &Ctx, api: &Api<K>, name: &str, key: &str, value: Option<&str>) -> Result<(), OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let object = describe_api(api, name);
    let patch = Patch::Merge(serde_json::json!({"metadata": {"annotations": {key: value}}}));
    let params = PatchParams::default();
    with_retry(ctx, "annotate", &object, || api.patch(name, &params, &patch)).await.map(|_| ())
}

/// Lists objects matching a label selector.
pub async fn list<K>(ctx: &Ctx, api: &Api<K>, label_selector: &str) -> Result<Vec<K>, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    // The namespace says which peering's objects (tenant namespaces are per peer).
    let object = match api.namespace() {
        Some(namespace) => format!("{} objects labelled {label_selector} in namespace {namespace}", K::kind(&())),
        None => format!("{} objects labelled {label_selector}", K::kind(&())),
    };
    let lp = kube::api::ListParams::default().labels(label_selector);
    crate::protocol::log::trace("list", &[("object", &object)]);
    with_retry(ctx, "list", &object, || api.list(&lp)).await.map(|l| l.items)
}
