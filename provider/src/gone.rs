//! Peers that are gone for good: how the provider sees that Liqo waits for an unreachable peer, and how it unpeers
//! from one the way Liqo's authors do (`liqoctl force unpeer`, Liqo ≥ 1.1, `pkg/liqoctl/force/unpeer`):
//! 1. the peer's ForeignCluster is annotated `liqo.io/foreign-cluster-permanently-unreachable: "true"`: Liqo's
//!    crd-replicator then stops waiting for the remote copies of replicated objects (ResourceSlice, NamespaceMap)
//!    and its virtual-node controller force-deletes the pods of the peer's virtual node instead of evicting them;
//! 2. the tenant namespace of that peer is deleted and awaited: its content (ResourceSlice, identity, NamespaceMap,
//!    VirtualNode, gateway) goes with it, and NamespaceOffloadings waiting for that NamespaceMap are released.
//!
//! liqoctl stops there and leaves the ForeignCluster, still annotated. The provider also deletes it (3.), so that
//! nothing of the peering stays and a new peer of the same cluster ID is not taken for dead.
use crate::cluster_api::ClusterApi;
use crate::kube::OpError;
use crate::protocol::Ctx;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;
use liqo_schema::liqo::core::{API_SERVER_STATUS, STATUS_ESTABLISHED};
use liqo_schema::liqo::labels;
use liqo_schema::liqo::{ForeignCluster, LiqoCondition};
use std::time::Duration;

/// Liqo's verdict on a provider's API server, kept on the consumer's ForeignCluster (Liqo pings it); `None` where
/// Liqo does not check (the provider side, which holds no credentials for its consumers).
pub fn api_server_condition(fc: &ForeignCluster) -> Option<&LiqoCondition> {
    fc.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == API_SERVER_STATUS)
}

/// True when the ForeignCluster carries Liqo's permanently-unreachable annotation (this provider's force unpeer,
/// or liqoctl's).
pub fn marked_gone(fc: &ForeignCluster) -> bool {
    fc.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(labels::FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE))
        .is_some_and(|v| v == labels::TRUE)
}

/// What Liqo reports about `fc`'s API server when it is not reachable (its `APIServerStatus` is anything but
/// Established), in one line; `None` when it is reachable, unchecked, or already marked gone for good (Liqo then
/// stops waiting for it).
pub fn unreachable(fc: &ForeignCluster) -> Option<String> {
    let condition = api_server_condition(fc).filter(|c| c.status != STATUS_ESTABLISHED && !marked_gone(fc))?;
    let peer = fc.metadata.name.as_deref().unwrap_or_default();
    let since = condition.last_transition_time.as_ref().map(|t| format!(" since {}", t.0)).unwrap_or_default();
    let url = fc.status.as_ref().and_then(|s| s.api_server_url.as_deref());
    Some(format!(
        "ForeignCluster {peer} condition {API_SERVER_STATUS} = {}{since}: {}{}",
        condition.status,
        condition.message.as_deref().unwrap_or_default(),
        url.map(|u| format!(" (API server {u})")).unwrap_or_default()
    ))
}

/// [`unreachable`] for the ForeignCluster of `peer` on this cluster (`None` when there is none).
pub async fn unreachable_peer(ctx: &Ctx, client: kube::Client, peer: &str) -> Option<String> {
    let api: Api<ForeignCluster> = Api::all(client);
    unreachable(&crate::kube::get_opt(ctx, &api, peer).await.ok().flatten()?)
}

/// The first peer `object` waits for that Liqo reports unreachable, with what Liqo reports ([`unreachable`]).
pub async fn unreachable_peer_of<K: serde::Serialize>(
    ctx: &Ctx,
    client: &kube::Client,
    object: &K,
) -> Option<(String, String)> {
    let json = serde_json::to_value(object).unwrap_or_default();
    for peer in peers_of(&json) {
        if let Some(seen) = unreachable_peer(ctx, client.clone(), &peer).await {
            return Some((peer, seen));
        }
    }
    None
}

/// The peers an object waits for: its `liqo.io/remote-cluster-id` label, and for a NamespaceOffloading the
/// clusters of `status.remoteNamespacesConditions`.
fn peers_of(object: &serde_json::Value) -> Vec<String> {
    let mut peers: Vec<String> =
        object["metadata"]["labels"][labels::REMOTE_CLUSTER_ID].as_str().map(str::to_string).into_iter().collect();
    if let Some(remote) = object["status"]["remoteNamespacesConditions"].as_object() {
        peers.extend(remote.keys().cloned());
    }
    peers.sort();
    peers.dedup();
    peers
}

/// Unpeers this cluster from `peer`, which the provider block lists as gone for good (steps in the module
/// comment). Runs once per peer and provider process: the first resource of the peering to be destroyed does it,
/// the others then find their objects gone.
pub async fn force_unpeer(ctx: &Ctx, cluster: &ClusterApi, peer: &str, timeout: Duration) -> Result<(), OpError> {
    let mut done = cluster.forced_peers().lock().await;
    if done.contains(peer) {
        return Ok(());
    }
    let client = match cluster.client().await {
        Ok(client) => client,
        Err(d) => {
            return Err(OpError::Failed { object: format!("peering with {peer}"), reason: d.summary, hint: d.detail });
        }
    };
    if let Ok(Some(version)) = crate::data_sources::cluster::liqo_version(ctx, cluster).await
        && lacks_force_unpeer(&version)
    {
        return Err(OpError::Failed {
            object: format!("peering with {peer}"),
            reason: format!(
                "Liqo {version} on this cluster cannot be told that a peer is gone for good: the \
                 `{}` annotation (and `liqoctl force unpeer`) arrived in Liqo 1.1.0, and without it Liqo's finalizers \
                 keep waiting for {peer}.",
                labels::FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE
            ),
            hint: "Upgrade Liqo on this cluster to 1.1 or later (`helm upgrade` of its chart), then run the destroy \
                   again."
                .into(),
        });
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
    let foreign: Api<ForeignCluster> = Api::all(client.clone());
    if crate::kube::get_opt(ctx, &foreign, peer).await?.is_some() {
        let (key, value) = (labels::FOREIGN_CLUSTER_PERMANENTLY_UNREACHABLE, Some(labels::TRUE));
        crate::kube::annotate(ctx, &foreign, peer, key, value).await?;
    }
    let namespaces: Api<Namespace> = Api::all(client);
    let selector = format!("{}={peer},{}", labels::REMOTE_CLUSTER_ID, labels::TENANT_NAMESPACE);
    for ns in crate::kube::list(ctx, &namespaces, &selector).await? {
        let name = ns.metadata.name.unwrap_or_default();
        crate::kube::delete_and_wait(ctx, &namespaces, &name, left()).await?;
    }
    crate::kube::delete_and_wait(ctx, &foreign, peer, left()).await?;
    done.insert(peer.to_string());
    Ok(())
}

/// True for a Liqo version before 1.1.0 (`v1.0.3`, `1.0.2`): its controllers ignore the permanently-unreachable
/// annotation. An unparsable tag (a custom build) is given the benefit of the doubt.
fn lacks_force_unpeer(version: &str) -> bool {
    let mut parts = version.trim_start_matches('v').split('.').map(|p| p.parse::<u64>().ok());
    matches!((parts.next().flatten(), parts.next().flatten()), (Some(0), _) | (Some(1), Some(0)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn force_unpeer_needs_liqo_1_1() {
        for old in ["v1.0.3", "1.0.0", "v0.10.3"] {
            assert!(super::lacks_force_unpeer(old), "{old}");
        }
        for new in ["v1.1.0", "v1.2.0", "v2.0.0", "latest", "master-abc"] {
            assert!(!super::lacks_force_unpeer(new), "{new}");
        }
    }
}
