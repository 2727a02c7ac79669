//! How the simulator writes: status by server-side apply under its own field manager (fields it stops sending
//! are removed, fields others own are untouched), spec/metadata changes by JSON merge patch guarded by the
//! object's resourceVersion (like Liqo's `Update` calls), creations tolerant of a concurrent creation.
use std::collections::BTreeMap;
use std::fmt::Debug;

use anyhow::{Context, Result};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::context::Cluster;

/// Field manager of every simulator write.
pub const MANAGER: &str = "simulated-liqo";
/// Annotation (value `"true"`) on every object the simulator creates.
pub const SIMULATED_ANNOTATION: &str = "liqo-simulator/simulated";

/// `{SIMULATED_ANNOTATION: "true"}`.
pub fn simulated_annotations() -> BTreeMap<String, String> {
    BTreeMap::from([(SIMULATED_ANNOTATION.to_owned(), "true".to_owned())])
}

/// `Kind namespace/name` (or `Kind name`).
pub fn describe<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    match obj.meta().namespace.as_deref() {
        Some(ns) => format!("{} {ns}/{}", K::kind(&()), obj.name_any()),
        None => format!("{} {}", K::kind(&()), obj.name_any()),
    }
}

pub fn is_deleting<K: Resource>(obj: &K) -> bool {
    obj.meta().deletion_timestamp.is_some()
}

pub fn label<'a, K: Resource>(obj: &'a K, key: &str) -> Option<&'a str> {
    obj.meta().labels.as_ref()?.get(key).map(String::as_str)
}

pub fn annotation<'a, K: Resource>(obj: &'a K, key: &str) -> Option<&'a str> {
    obj.meta().annotations.as_ref()?.get(key).map(String::as_str)
}

pub fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_not_found())
}

fn merge_params() -> PatchParams {
    PatchParams { field_manager: Some(MANAGER.into()), ..Default::default() }
}

/// Server-side applies `status` (honouring the `status-delay-ms` fault of the cluster); returns the object as
/// written, so that a following guarded update does not conflict with this write.
pub async fn apply_status<K>(cluster: &Cluster, api: &Api<K>, obj: &K, status: Value) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    let delay = cluster.faults().status_delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let body = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": obj.name_any()},
        "status": status,
    });
    api.patch_status(&obj.name_any(), &PatchParams::apply(MANAGER).force(), &Patch::Apply(&body))
        .await
        .with_context(|| format!("writing the status of {}", describe(obj)))
}

/// The current status of `obj` as JSON (Null when absent), to compare with a desired one before writing.
pub fn status_json<S: Serialize>(status: Option<&S>) -> Value {
    status.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)).unwrap_or(Value::Null)
}

/// JSON merge patch of `patch` on `obj`, failing with a conflict if `obj` changed since it was read.
pub async fn merge_patch<K>(api: &Api<K>, obj: &K, mut patch: Value) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    if let (Some(rv), Some(map)) = (obj.resource_version(), patch.as_object_mut()) {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        meta["resourceVersion"] = Value::String(rv);
    }
    api.patch(&obj.name_any(), &merge_params(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("updating {}", describe(obj)))
}

pub fn has_finalizer<K: Resource>(obj: &K, finalizer: &str) -> bool {
    obj.finalizers().iter().any(|f| f == finalizer)
}

/// Adds `finalizer` if missing; returns the object as it is now.
pub async fn add_finalizer<K>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    if has_finalizer(obj, finalizer) {
        return Ok(obj.clone());
    }
    let mut finalizers = obj.finalizers().to_vec();
    finalizers.push(finalizer.to_owned());
    merge_patch(api, obj, json!({"metadata": {"finalizers": finalizers}}))
        .await
        .with_context(|| format!("adding finalizer {finalizer}"))
}

pub async fn remove_finalizer<K>(api: &Api<K>, obj: &K, finalizer: &str) -> Result<()>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    if !has_finalizer(obj, finalizer) {
        return Ok(());
    }
    let finalizers: Vec<&String> = obj.finalizers().iter().filter(|f| *f != finalizer).collect();
    match merge_patch(api, obj, json!({"metadata": {"finalizers": finalizers}})).await {
        // Already gone: a reconcile working from a cached copy removed the last finalizer twice.
        Err(err) if err.downcast_ref::<kube::Error>().is_some_and(is_not_found) => Ok(()),
        result => result.map(|_| ()).with_context(|| format!("removing finalizer {finalizer}")),
    }
}

/// A write refused because its namespace is being deleted (the object will be gone soon).
pub fn is_namespace_terminating(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status)
        if status.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

/// Failures every controller working from a cache meets and retries silently: a guarded update that lost a
/// race with another write (409 Conflict), or a write into a namespace being deleted.
pub fn is_expected_race(err: &anyhow::Error) -> bool {
    err.chain()
        .filter_map(|cause| cause.downcast_ref::<kube::Error>())
        .any(|e| is_namespace_terminating(e) || matches!(e, kube::Error::Api(status) if status.is_conflict()))
}

/// Creates `obj`, or returns the existing object of that name (another reconcile may have won the race).
pub async fn create_or_get<K>(api: &Api<K>, obj: &K) -> Result<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug,
{
    match api.create(&PostParams { field_manager: Some(MANAGER.into()), ..Default::default() }, obj).await {
        Ok(created) => Ok(created),
        Err(kube::Error::Api(status)) if status.is_already_exists() => {
            api.get(&obj.name_any()).await.with_context(|| format!("reading {}", describe(obj)))
        }
        Err(err) => Err(err).with_context(|| format!("creating {}", describe(obj))),
    }
}

/// Deletes the named object; `Ok(true)` once it no longer exists (an object with finalizers may linger).
pub async fn delete_and_check<K>(api: &Api<K>, name: &str) -> Result<bool>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(err) if is_not_found(&err) => return Ok(true),
        Err(err) => return Err(err).with_context(|| format!("deleting {} {name}", K::kind(&()))),
    }
    // The response may be the object in its last state or a Status; only a read tells whether it is gone.
    let left = api.get_opt(name).await.with_context(|| format!("reading {} {name}", K::kind(&())))?;
    Ok(left.is_none())
}
