//! Deleting objects and waiting for them to be gone, and what holds an object that does not go.
use super::wait::{self, Verdict, wait_for};
use super::{OpError, describe_api, get_opt, with_retry};
use crate::protocol::Ctx;
use kube::Resource;
use kube::api::{Api, DeleteParams};
use kube::runtime::wait::Condition;
use kube::runtime::wait::conditions::is_deleted;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use std::time::{Duration, Instant};

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

/// The one "is it deleted" verdict: the object with this UID no longer exists (kube-runtime's
/// `conditions::is_deleted`), so a new object under the same name counts as deleted. Without a UID (the object was
/// never seen), any object of that name counts as present. Pending says what holds it.
pub fn deleted<'a, K: Resource + Serialize + 'a>(uid: Option<&'a str>) -> impl Fn(Option<&K>) -> Verdict<()> + 'a {
    let present = |o: Option<&K>| match o {
        None => "no longer present".to_string(),
        Some(o) => format!(
            "still present ({}; held by {})",
            if is_terminating(o) { "being deleted" } else { "not being deleted yet" },
            Holds::of(o).summary()
        ),
    };
    wait::on(move |o: Option<&K>| uid.map_or(o.is_none(), |uid| is_deleted(uid).matches_object(o)), present)
}

/// Waits until the object named `name` that is live now is gone (deleted by Liqo, or by someone else); at once
/// when none is.
pub async fn wait_deleted<K>(
    ctx: &Ctx,
    api: &Api<K>,
    name: &str,
    waiting_for: &str,
    timeout: Duration,
) -> Result<(), OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
{
    match get_opt(ctx, api, name).await? {
        None => Ok(()),
        Some(o) => wait_for(ctx, api, name, waiting_for, timeout, deleted(o.meta().uid.as_deref())).await,
    }
}

/// The live object, after waiting out a deletion in progress (e.g. after an out-of-band delete). Call it before
/// applying an object that may be dying: an apply would land on the dying object and vanish with it. `None` when
/// the name is free.
pub async fn settle<K>(ctx: &Ctx, api: &Api<K>, name: &str, timeout: Duration) -> Result<Option<K>, OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
{
    match get_opt(ctx, api, name).await? {
        Some(o) if is_terminating(&o) => {
            let uid = o.meta().uid.as_deref();
            wait_for(ctx, api, name, "the deletion in progress to finish", timeout, deleted(uid)).await?;
            Ok(None)
        }
        other => Ok(other),
    }
}

/// Deletes an object (if present) and waits until that very object (by UID) is gone. Finalizers are never
/// stripped: Liqo's controllers release them; a delete that cannot finish names the object and what holds it
/// (finalizers, or for a namespace the objects and finalizers its deletion conditions report).
pub async fn delete_and_wait<K>(ctx: &Ctx, api: &Api<K>, name: &str, timeout: Duration) -> Result<(), OpError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static,
{
    let object = describe_api(api, name);
    let params = DeleteParams::background();
    let remaining = with_retry(ctx, "delete", &object, || async {
        match api.delete(name, &params).await {
            // Left: still there (finalizers, background deletion), so wait for this object, by its UID.
            // Right: a Status, the object is gone already.
            Ok(answer) => Ok(answer.left().map(|o| o.meta().uid.clone())),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    })
    .await?;
    let Some(uid) = remaining else {
        return Ok(());
    };
    let start = Instant::now();
    let verdict = deleted(uid.as_deref());
    // The wait is cut in slices: between two, a deletion still held is checked for a peer that Liqo reports
    // unreachable, whose finalizers would hold it until the whole timeout is spent.
    let mut slice = PEER_CHECK_AFTER;
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        let last = left <= slice;
        match wait_for(ctx, api, name, "deletion to finish", left.min(slice), &verdict).await {
            Err(OpError::Timeout { .. }) => match get_opt(ctx, api, name).await? {
                Some(o) if !matches!(verdict(Some(&o)), Verdict::Ready(())) => {
                    let holds = Holds::of(&o);
                    if last {
                        return Err(OpError::StuckDelete { object, holds, after: start.elapsed() });
                    }
                    let client = api.clone().into_client();
                    if let Some((peer, peer_seen)) = crate::gone::unreachable_peer_of(ctx, &client, &o).await {
                        return Err(OpError::WaitsForUnreachablePeer {
                            object,
                            holds: Box::new(holds),
                            peer,
                            peer_seen,
                        });
                    }
                    slice = PEER_CHECK_EVERY;
                }
                // Gone between the timeout and the last look.
                _ => return Ok(()),
            },
            other => return other,
        }
    }
}

/// How long a deletion may be held before the peers it may wait for are checked, and how often after that. Liqo
/// pings a provider's API server every few seconds, so an unreachable peer shows within the first check.
const PEER_CHECK_AFTER: Duration = Duration::from_secs(20);
const PEER_CHECK_EVERY: Duration = Duration::from_secs(15);
