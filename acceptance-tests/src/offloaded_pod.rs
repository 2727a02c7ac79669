//! A pod run through a real Liqo peering: created on the consumer in an offloaded namespace, scheduled on the
//! virtual node, and followed to the provider (its ShadowPod and the remote pod kwok runs). The demo shows it; the
//! real-ground tests assert it.
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use liqo_schema::liqo::NamespaceOffloading;
use serde_json::json;

use crate::observe::eventually;

/// Where the pod ran, as read back from both clusters.
#[derive(Debug)]
pub struct OffloadedPod {
    pub namespace: String,
    pub name: String,
    /// The consumer's node the pod was bound to (the virtual node).
    pub node: String,
    pub phase: String,
    /// The namespace Liqo made for it on the provider (NamespaceOffloading `status.remoteNamespaceName`).
    pub remote_namespace: String,
    /// Whether the provider holds the ShadowPod Liqo's virtual kubelet made for it.
    pub shadow_pod: bool,
    pub remote_node: String,
    pub remote_phase: String,
}

impl std::fmt::Display for OffloadedPod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "consumer: pod {}/{} {} on node {}", self.namespace, self.name, self.phase, self.node)?;
        writeln!(
            f,
            "provider: ShadowPod {}/{} {}",
            self.remote_namespace,
            self.name,
            if self.shadow_pod { "present" } else { "MISSING" }
        )?;
        write!(
            f,
            "provider: pod {}/{} {} on node {}",
            self.remote_namespace, self.name, self.remote_phase, self.remote_node
        )
    }
}

/// ShadowPods (offloading.liqo.io) in `namespace` of the provider cluster: what the consumer's virtual kubelet asks
/// the provider to run.
pub fn shadow_pods(client: Client, namespace: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        client,
        namespace,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("offloading.liqo.io", "v1beta1", "ShadowPod"),
            "shadowpods",
        ),
    )
}

/// The name Liqo gave the offloaded `namespace` on the provider (its NamespaceOffloading's status), within a minute.
pub async fn remote_namespace(consumer: &Client, namespace: &str) -> Result<String> {
    let offloadings: Api<NamespaceOffloading> = Api::namespaced(consumer.clone(), namespace);
    eventually(
        Duration::from_secs(60),
        &format!("NamespaceOffloading {namespace}/offloading to report its remote namespace"),
        || async {
            let offloading = offloadings.get_opt("offloading").await?;
            Ok(offloading.and_then(|o| o.status).and_then(|s| s.remote_namespace_name))
        },
    )
    .await
}

/// Creates pod `name` in `namespace` on the consumer, pinned to Liqo's virtual nodes by their `liqo.io/type`
/// label (Liqo's webhook adds the virtual node's toleration in an offloaded namespace), waits for it to run there
/// and for its remote copy to run on the provider. `namespace` must be offloaded already.
pub async fn run(consumer: &Client, provider: &Client, namespace: &str, name: &str) -> Result<OffloadedPod> {
    let remote_namespace = remote_namespace(consumer, namespace).await?;

    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeSelector": {"liqo.io/type": "virtual-node"},
            "containers": [{"name": name, "image": "nginx"}],
        },
    }))?;
    let pods: Api<Pod> = Api::namespaced(consumer.clone(), namespace);
    pods.create(&PostParams::default(), &pod).await.with_context(|| format!("creating pod {namespace}/{name}"))?;
    let (node, phase) =
        eventually(Duration::from_secs(90), &format!("pod {namespace}/{name} to run on a virtual node"), || async {
            let pod = pods.get(name).await?;
            let node = pod.spec.and_then(|s| s.node_name);
            let phase = pod.status.and_then(|s| s.phase);
            Ok(match (node, phase) {
                (Some(node), Some(phase)) if phase == "Running" => Some((node, phase)),
                _ => None,
            })
        })
        .await?;

    let shadow_pod = shadow_pods(provider.clone(), &remote_namespace).get_opt(name).await?.is_some();
    let remote: Api<Pod> = Api::namespaced(provider.clone(), &remote_namespace);
    let (remote_node, remote_phase) = eventually(
        Duration::from_secs(60),
        &format!("the remote pod {remote_namespace}/{name} to run on the provider"),
        || async {
            let pod = remote.get_opt(name).await?;
            Ok(pod.and_then(|p| {
                let node = p.spec.and_then(|s| s.node_name)?;
                let phase = p.status.and_then(|s| s.phase).filter(|phase| phase == "Running")?;
                Some((node, phase))
            }))
        },
    )
    .await?;
    Ok(OffloadedPod {
        namespace: namespace.into(),
        name: name.into(),
        node,
        phase,
        remote_namespace,
        shadow_pod,
        remote_node,
        remote_phase,
    })
}
